// Benchmark: peak resident memory and host milliseconds per replica-step as the node count
// grows. Each node count runs in a process of its own, so every peak RSS is that run's.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/engine/engine.h"
#include "sim/output/hdf5_recorder.h"
#include "training/numerics.h"

namespace {

// The process's peak resident set (VmHWM) in MB, as the kernel counts it.
double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  }
  return -1;
}

// One run in this process; prints one table row.
int run_one(const std::string& path, const std::vector<std::string>& sets) {
  using namespace testbed;
  Scenario scenario = load_scenario(path, sets);
  Dataset data = load_dataset(scenario);
  auto out = std::filesystem::temp_directory_path() / ("testbed_scaling_" + std::to_string(::getpid()) + ".h5");
  Engine engine(scenario, data);
  RunSummary summary;
  {
    Hdf5Recorder hdf5(out.string(), engine.run_info());
    summary = engine.run(hdf5);
  }
  std::filesystem::remove(out);
  if (summary.status != testbed::RunStatus::Completed) {
    std::cerr << "testbed_scaling: run " << testbed::status_name(summary.status) << ": " << summary.error << "\n";
    return 1;
  }
  const HostTimes& t = engine.host_times();
  const double replica_steps = double(scenario.nodes) * scenario.workload.steps;
  auto per = [&](double seconds) { return 1e3 * seconds / replica_steps; };
  std::printf("%5d %12.0f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f\n", scenario.nodes, peak_rss_mb(), per(t.run),
              per(t.local_compute), per(t.ns3()), per(t.eval), per(t.testbed() - t.local_compute), t.run);
  return 0;
}

void print_header() {
  std::printf("%5s %12s %10s %10s %10s %10s %10s %10s\n", "N", "peak_RSS_MB", "ms/rstep", "compute", "ns-3", "eval",
              "machinery", "host_s");
  std::printf("%5s %12s %10s %10s %10s %10s %10s %10s\n", "", "(VmHWM)", "(all)", "(ms/rstep)", "(ms/rstep)",
              "(ms/rstep)", "(ms/rstep)", "(run)");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace testbed;
  pin_portable_kernels(false);  // the kernels `testbed run` trains with
  std::vector<std::string> args(argv + 1, argv + argc);
  std::vector<int> sweep;
  if (!args.empty() && args[0] == "--nodes" && args.size() >= 2) {
    std::stringstream list(args[1]);
    for (std::string item; std::getline(list, item, ',');) sweep.push_back(std::stoi(item));
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.empty()) {
    std::cerr << "usage: testbed_scaling [--nodes 4,16,64] SCENARIO [KEY=VALUE...]\n"
                 "  one row per node count: peak RSS and host ms per replica-step (total and split)\n";
    return 2;
  }
  try {
    fflush(stdout);
    if (sweep.empty()) {
      print_header();
      return run_one(args[0], {args.begin() + 1, args.end()});
    }
    print_header();
    fflush(stdout);
    // A child per node count: peak RSS is a per-process high-water mark.
    int failures = 0;
    for (int nodes : sweep) {
      pid_t pid = ::fork();
      if (pid < 0) throw std::runtime_error("fork failed");
      if (pid == 0) {
        std::vector<std::string> sets(args.begin() + 1, args.end());
        sets.push_back("nodes=" + std::to_string(nodes));
        int rc = 1;
        try {
          rc = run_one(args[0], sets);
        } catch (const std::exception& e) {
          std::cerr << "testbed_scaling: N=" << nodes << ": " << e.what() << "\n";
        }
        std::fflush(stdout);
        std::_Exit(rc);
      }
      int status = 0;
      ::waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::printf("%5d   (run failed: %s)\n", nodes, WIFSIGNALED(status) ? "killed by a signal" : "error");
        ++failures;
      }
      fflush(stdout);
    }
    return failures == 0 ? 0 : 1;
  } catch (const ScenarioError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "testbed_scaling: error: " << e.what() << "\n";
    return 1;
  }
}
