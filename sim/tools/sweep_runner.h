// Runs a sweep's runs as child processes of the testbed binary and keeps out/sweep.csv current.
#pragma once

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "sim/tools/sweep.h"

namespace testbed {

struct SweepOptions {
  int jobs = 1;                           // children at once
  int shard_index = 0, shard_count = 1;   // run only runs whose index % shard_count == shard_index
  int cores = 0;                          // 0: the machine's
  std::string binary = "/proc/self/exe";  // what runs each child: `binary run base --set ... -o ... -q`
  // When set, each child is a fork of this process that calls child_main(argv) (argv[0] is
  // `binary`) instead of starting the binary again: the same code without LibTorch's ~1.3 s
  // start-up a run. Only for a process that has started no OpenMP threads (they do not
  // survive a fork).
  std::function<int(std::vector<std::string>)> child_main;
};

// What this invocation saw of a run it started: a run file's statuses, and interrupted (stopped
// by the sweep's own SIGINT or SIGTERM).
enum class OutcomeStatus { Running, Completed, Diverged, Failed, Interrupted };
const char* outcome_name(OutcomeStatus status);

struct RunOutcome {
  OutcomeStatus status = OutcomeStatus::Running;
  int exit_code = -1;  // -1 while running; 128 + signal when the child was killed
};

// K for `--set threads=K`: max(1, cores / jobs), or 0 when the sweep varies threads itself.
int child_threads(const Sweep& sweep, const SweepOptions& options);

// "I/N" -> options.shard_index, shard_count; throws std::invalid_argument unless 0 <= I < N.
void parse_shard(const std::string& text, SweepOptions& options);

std::vector<const SweepRun*> shard_runs(const Sweep& sweep, const SweepOptions& options);
std::string run_path(const Sweep& sweep, const SweepRun& run);  // out/<name>.h5

// The manifest text: run, each swept key, status, exit_code, then the /summary numbers.
// A run this invocation did not start is described by its .h5 file (or "pending").
std::string manifest_csv(const Sweep& sweep, const std::map<int, RunOutcome>& outcomes);

// Runs the shard's runs that have not completed; returns 0 when all of them completed,
// 1 otherwise. Progress lines go to `log`.
int run_sweep(const Sweep& sweep, const SweepOptions& options, std::ostream& log);

}  // namespace testbed
