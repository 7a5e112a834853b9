// Sweeps on a Slurm cluster: an `sbatch --array` script whose tasks are the sweep's shards.
#pragma once

#include <ostream>
#include <string>

#include "sim/tools/sweep.h"

namespace testbed {

struct SlurmOptions {
  int tasks = 0;          // array tasks, each a shard (0: one per run)
  int jobs = 1;           // runs at once inside a task (`sweep -j`)
  int cpus = 0;           // --cpus-per-task (0: leave to the cluster)
  std::string partition;  // --partition ("": the default)
  std::string time;       // --time, e.g. 01:00:00 ("": the partition's limit)
};

// The script: task I of N runs `binary sweep sweep_file --shard I/N -j jobs` (Slurm's
// SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT), logging to out/slurm/<job>_<task>.log.
// Every task rewrites out/sweep.csv from the run files when it ends, so the last to end leaves
// the whole sweep's manifest. Paths are made absolute: a task may start anywhere.
std::string sbatch_script(const Sweep& sweep, const std::string& binary, const SlurmOptions& options);

// The array size the script in `out` asks for (its `#SBATCH --array=0-K` line), or 0 when there
// is no script.
int slurm_tasks(const std::string& out);

// Where sweep_command writes the script.
std::string sbatch_path(const Sweep& sweep);

// Per shard of an array of `tasks`: how many of its runs sweep.csv in `out` lists as pending,
// running, completed or otherwise (run i is shard i mod tasks), one line each.
void report_shards(const std::string& out, int tasks, std::ostream& log);

}  // namespace testbed
