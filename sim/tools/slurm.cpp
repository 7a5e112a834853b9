// The array job script, written from the sweep as loaded.
#include "sim/tools/slurm.h"

#include "sim/output/report.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

namespace testbed {

namespace fs = std::filesystem;

namespace {
// Single quotes for the shell, so a path with spaces or $ stays one word.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

std::string sbatch_path(const Sweep& sweep) { return (fs::path(sweep.out) / "sweep.sbatch").string(); }

std::string sbatch_script(const Sweep& sweep, const std::string& binary, const SlurmOptions& options) {
  const int runs = static_cast<int>(sweep.runs.size());
  const int tasks = std::max(1, std::min(options.tasks > 0 ? options.tasks : runs, std::max(runs, 1)));
  const std::string out = fs::absolute(sweep.out).lexically_normal().string();
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# testbed sweep " << sweep.file << " on Slurm: task I of the array runs shard I/N of the sweep's " << runs
    << " runs.\n"
    << "#SBATCH --job-name=testbed-" << fs::path(sweep.out).filename().string() << "\n"
    << "#SBATCH --array=0-" << tasks - 1 << "\n"
    << "#SBATCH --output=" << out << "/slurm/%A_%a.log\n";
  if (!options.partition.empty()) s << "#SBATCH --partition=" << options.partition << "\n";
  if (!options.time.empty()) s << "#SBATCH --time=" << options.time << "\n";
  if (options.cpus > 0) s << "#SBATCH --cpus-per-task=" << options.cpus << "\n";
  s << "set -e\n"
    << "cd " << quoted(fs::current_path().string()) << "\n"
    << "exec " << quoted(fs::absolute(binary).string()) << " sweep " << quoted(fs::absolute(sweep.file).string())
    << " --shard \"$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT\" -j " << std::max(1, options.jobs) << "\n";
  return s.str();
}

int slurm_tasks(const std::string& out) {
  std::ifstream in(fs::path(out) / "sweep.sbatch");
  std::string line;
  static const std::regex array(R"(#SBATCH --array=0-(\d+))");
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_match(line, m, array)) return std::stoi(m[1].str()) + 1;
  return 0;
}

void report_shards(const std::string& out, int tasks, std::ostream& log) {
  std::ifstream in(fs::path(out) / "sweep.csv");
  std::stringstream text;
  text << in.rdbuf();
  const auto rows = parse_csv(text.str());
  if (rows.empty() || tasks <= 0) return;
  const auto status = std::find(rows[0].begin(), rows[0].end(), "status") - rows[0].begin();
  struct Count {
    int pending = 0, running = 0, completed = 0, other = 0;
  };
  std::vector<Count> shard(static_cast<size_t>(tasks));
  for (size_t i = 1; i < rows.size(); ++i) {
    Count& c = shard[(i - 1) % static_cast<size_t>(tasks)];
    const std::string& s = static_cast<size_t>(status) < rows[i].size() ? rows[i][static_cast<size_t>(status)] : "";
    if (s == "pending")
      ++c.pending;
    else if (s == "running")
      ++c.running;
    else if (s == "completed")
      ++c.completed;
    else
      ++c.other;
  }
  log << "slurm array of " << tasks << " tasks (" << (fs::path(out) / "sweep.sbatch").string() << "):\n";
  for (int t = 0; t < tasks; ++t) {
    const Count& c = shard[static_cast<size_t>(t)];
    log << "  shard " << t << "/" << tasks << ": " << c.pending << " pending, " << c.running << " running, "
        << c.completed << " done" << (c.other ? ", " + std::to_string(c.other) + " failed or diverged" : "") << "\n";
  }
}

}  // namespace testbed
