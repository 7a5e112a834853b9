// `testbed launch -n K`: one run as K local processes, torchrun-style (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT), each `testbed run` with the same arguments.
#pragma once

#include <string>
#include <vector>

namespace testbed {

struct LaunchOptions {
  int processes = 2;
  int port = 0;                       // the rendezvous port; 0: a free one
  double timeout_s = 60;              // the run's --timeout: how long the others may take to fail after one
  std::vector<std::string> run_args;  // after `testbed run`
};

// Starts the processes, forwards SIGINT and SIGTERM to them, waits for all. The exit code is
// rank 0's when it failed, else the first failed rank's, else 0.
int launch_processes(const LaunchOptions& options);

}  // namespace testbed
