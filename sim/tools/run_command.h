// `testbed run`: one run of a scenario, from its file to its HDF5 file and the printed summary.
#pragma once

#include <string>
#include <vector>

namespace testbed {

struct RunOptions {
  std::string out, pcap_dir, flowmon_file;
  bool quiet = false;
  bool resume = false;  // continue from the newest checkpoint in OUT.h5.resume/ (if there is one)
  // One run over several processes: --rank, --world-size, --master, else torchrun's environment.
  int rank = -1, world = -1;
  std::string master;  // ADDR:PORT
  double timeout_s = 60;
  char** argv = nullptr;  // the command line, to start again with other kernels (training/numerics.h)
};

// Exit code: 0 completed, 1 failed or interrupted, 3 diverged. Bad input throws InputError
// before anything is written.
int run_command(const std::string& path, const std::vector<std::string>& sets, const RunOptions& options);

}  // namespace testbed
