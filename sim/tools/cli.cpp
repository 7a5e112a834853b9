// The testbed command line: run, validate, sweep, netbench, topology and report, as one function
// (main calls it; tests call it in a forked child, without paying LibTorch's start-up again).
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>

#include "sim/config/scenario_loader.h"
#include "sim/config/units.h"
#include "sim/config/workload.h"
#include "sim/core/error_text.h"
#include "sim/core/memory_estimate.h"
#include "sim/core/network_factory.h"
#include "sim/core/run.h"
#include "sim/dist/process_group.h"
#include "sim/output/hdf5_recorder.h"
#include "sim/output/report.h"
#include "sim/output/resume_file.h"
#include "sim/output/run_file.h"
#include "sim/tools/cli.h"
#include "sim/tools/fatal_errors.h"
#include "sim/tools/launch.h"
#include "sim/tools/netbench.h"
#include "sim/tools/run_command.h"
#include "sim/tools/slurm.h"
#include "sim/tools/sweep_runner.h"
#include "topologies/describe.h"
#include "training/algorithms/registry.h"
#include "training/numerics.h"

namespace {

// Bad input as compilers print it, and as the scenario's warnings read ("where:line:col:
// warning: ..."): "where:line:col: error: message". `where` may hold colons of its own
// ("--master 127.0.0.1:1:1: ..."), so the location ends at the first ":line:col: ".
std::string input_error_line(const std::string& what) {
  const std::regex located(R"(^(.*?:\d+:\d+): )");
  std::smatch m;
  if (std::regex_search(what, m, located)) return m[1].str() + ": error: " + what.substr(m.length(0));
  return "error: " + what;
}

// `--vary key=value` options grouped by key (first appearance order): every combination of
// one value per key, each a list of `key=value` overrides. No --vary: one empty combination.
std::vector<std::vector<std::string>> combinations(const std::vector<std::string>& varies) {
  std::vector<std::pair<std::string, std::vector<std::string>>> keys;
  for (const auto& v : varies) {
    const size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0)
      throw testbed::InputError("--vary " + v + ":1:1: expected key=value, such as network.backend=flow");
    const std::string key = v.substr(0, eq);
    auto it = std::find_if(keys.begin(), keys.end(), [&](const auto& k) { return k.first == key; });
    if (it == keys.end()) it = keys.insert(keys.end(), {key, {}});
    it->second.push_back(v);
  }
  std::vector<std::vector<std::string>> out{{}};
  for (const auto& [key, values] : keys) {
    std::vector<std::vector<std::string>> next;
    for (const auto& prefix : out) {
      for (const auto& value : values) {
        next.push_back(prefix);
        next.back().push_back(value);
      }
    }
    out = std::move(next);
  }
  return out;
}

int netbench_command(const std::string& path, const std::vector<std::string>& sets,
                     const std::vector<std::string>& varies, const std::string& collective, const std::string& size) {
  using namespace testbed;
  const auto bytes = parse_bytes(size);
  if (!bytes || !(*bytes >= 4))
    throw InputError("--size " + size + ":1:8: expected a size of 4 bytes or more, such as 10MB");
  if (std::isdigit(static_cast<unsigned char>(size.back())))
    throw InputError("--size " + size + ":1:8: '" + size + "' has no unit: write " + size + "B or " + size + "MB");
  const auto combos = combinations(varies);
  // Every combination is read (and refused) before any is simulated.
  std::vector<Scenario> scenarios;
  for (const auto& combo : combos) {
    std::vector<std::string> all = sets;
    all.insert(all.end(), combo.begin(), combo.end());
    scenarios.push_back(load_scenario(path, all));
  }
  for (size_t i = 0; i < combos.size(); ++i) {
    const Scenario& scenario = scenarios[i];
    const NetbenchResult r = netbench(scenario, collective, *bytes);
    if (i > 0) std::printf("\n");
    if (!varies.empty()) {
      std::string label;
      for (const auto& v : combos[i]) label += (label.empty() ? "" : " ") + v;
      std::printf("vary              %s\n", label.c_str());
    }
    std::printf("backend           %s\n", enum_name(scenario.network.backend).c_str());
    std::printf("topology          %s, %d nodes\n", enum_name(scenario.topology.kind).c_str(), scenario.nodes);
    std::printf("collective        %s of %s (%s, %d slices)\n", collective.c_str(), human_bytes(*bytes).c_str(),
                collective == "p2p" ? "-" : enum_name(scenario.collective.algorithm).c_str(),
                scenario.collective.slices);
    if (const LibraryCosts library = collective_choice(scenario).library; library.any()) {
      // Only the library's costs, not its name: each figure may be overridden.
      auto rate = [](const RateLimit& r) {
        std::string text = r.share < 1 ? ", " + format_number(r.share) + " of line rate" : "";
        return text + (r.cap_bps > 0 ? ", at most " + format_bandwidth(r.cap_bps) : "");
      };
      std::printf("library costs     launch %.1f us; between hosts %.1f us a message at each end%s",
                  library.launch_s * 1e6, library.network.message_s * 1e6, rate(library.network.rate).c_str());
      if (library.machine_of_host)
        std::printf("; inside a host %.1f us%s", library.local.message_s * 1e6, rate(library.local.rate).c_str());
      std::printf(" (not in the bound)\n");
    }
    std::printf("simulated         %.6f s\n", r.simulated_s);
    std::printf("alpha-beta bound  %.6f s\n", r.bound_s);
    std::printf("ratio             %.3f\n", r.bound_s > 0 ? r.simulated_s / r.bound_s : 1.0);
    std::printf("host              %.3f s\n", r.host_s);
    std::printf("payload per host second  %s/s\n",
                human_bytes(r.host_s > 0 ? static_cast<double>(r.payload_bytes) / r.host_s : 0).c_str());
  }
  return 0;
}

// --slurm: the array job script instead of the runs (and with --submit, sbatch's answer).
int slurm_command(const testbed::Sweep& sweep, const testbed::SlurmOptions& slurm, bool submit) {
  using namespace testbed;
  std::filesystem::create_directories(std::filesystem::path(sweep.out) / "slurm");
  const std::string script = sbatch_path(sweep);
  {
    std::ofstream out(script);
    out << sbatch_script(sweep, std::filesystem::read_symlink("/proc/self/exe").string(), slurm);
    if (!out) throw std::runtime_error("cannot write " + script);
  }
  std::printf("wrote %s: an array of %d tasks over %zu runs\n", script.c_str(), slurm_tasks(sweep.out),
              sweep.runs.size());
  if (!submit) return 0;
  std::fflush(stdout);  // before sbatch's own line
  const int status = std::system(("sbatch " + script).c_str());
  if (status != 0) {
    std::fprintf(stderr, "testbed: sbatch %s failed (status %d); is Slurm installed and its controller up?\n",
                 script.c_str(), status);
    return 1;
  }
  return 0;
}

int sweep_command(const std::string& path, int jobs, const std::string& shard, bool dry_run,
                  const std::optional<testbed::SlurmOptions>& slurm, bool submit) {
  using namespace testbed;
  // This process trains nothing, and its runs are forks of it (before validating, which
  // builds models).
  testbed::one_thread_before_forks();
  SweepOptions options;
  options.jobs = jobs;
  try {
    if (!shard.empty()) parse_shard(shard, options);
  } catch (const std::invalid_argument& e) {
    std::cerr << "testbed: " << e.what() << "\n";
    return 2;
  }
  Sweep sweep = load_sweep(path);
  const int threads = child_threads(sweep, options);
  // Every run, not only this shard's: a bad value is a bad sweep wherever it falls.
  validate_sweep(sweep, threads);
  if (slurm) {
    testbed::SlurmOptions o = *slurm;
    o.jobs = jobs;
    return slurm_command(sweep, o, submit);
  }
  auto runs = shard_runs(sweep, options);
  if (dry_run) {
    std::printf("%zu of %zu runs (shard %d/%d) -> %s\n", runs.size(), sweep.runs.size(), options.shard_index,
                options.shard_count, sweep.out.c_str());
    for (const auto* run : runs) {
      std::printf("%s", run->name.c_str());
      for (const auto& set : run_overrides(sweep, *run, threads)) std::printf("  --set %s", set.c_str());
      std::printf("\n");
    }
    return 0;
  }
  // Each run is a fork of this process calling the command line again (its LibTorch is loaded
  // already); see the thread count above.
  options.child_main = [](std::vector<std::string> args) { return testbed::run_cli(std::move(args)); };
  return run_sweep(sweep, options, std::cerr);
}

}  // namespace

void testbed::one_thread_before_forks() { at::set_num_threads(1); }

int testbed::run_cli(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return run_cli(static_cast<int>(args.size()), argv.data());
}

int testbed::run_cli(int argc, char** argv) {
  testbed::catch_fatal_errors();
  CLI::App app{"testbed: real LibTorch training over a simulated ns-3 network"};
  app.require_subcommand(1);

  std::string scenario_path, out;
  std::vector<std::string> sets;
  bool quiet = false;

  auto* run = app.add_subcommand("run", "Train the scenario's replicas over its network and write HDF5");
  run->add_option("scenario", scenario_path, "Scenario YAML file")->required();
  run->add_option("-o,--output", out, "HDF5 output path (overrides output.path)");
  run->add_option("--set", sets, "Override a scenario key: a.b.c=value (repeatable)");
  run->add_flag("-q,--quiet", quiet, "No progress line");
  std::string pcap_dir, flowmon_file;
  run->add_option("--pcap", pcap_dir,
                  "ns3: write a pcap per link device into this folder (link-<vertex>-<device>.pcap)");
  bool resume = false;
  run->add_flag("--resume", resume,
                "Continue from the newest checkpoint in OUT.h5.resume/ (output.resume_every); none: start from step 0");
  run->add_option("--flowmon", flowmon_file, "ns3: write ns-3 FlowMonitor statistics (XML) to this file at the end");
  testbed::RunOptions run_options;
  run->add_option("--rank", run_options.rank, "This process's rank in a run over several processes (else RANK)")
      ->check(CLI::Range(0, 1000000));
  run->add_option("--world-size", run_options.world, "Processes the run's replicas spread over (else WORLD_SIZE; 1)")
      ->check(CLI::Range(1, 1000000));
  run->add_option("--master", run_options.master,
                  "ADDR:PORT where the processes meet (else MASTER_ADDR and MASTER_PORT; 127.0.0.1:29500)");
  run->add_option("--timeout", run_options.timeout_s, "Seconds a process waits for a silent peer before it fails (60)");

  testbed::LaunchOptions launch_options;
  auto* launch = app.add_subcommand("launch", "Run a scenario as K local processes (testbed run's options follow)");
  launch->add_option("-n,--processes", launch_options.processes, "Processes")->required()->check(CLI::Range(1, 4096));
  launch->add_option("--port", launch_options.port, "Rendezvous port on 127.0.0.1 (default: a free one)")
      ->check(CLI::Range(1, 65535));
  launch->allow_extras();
  launch->prefix_command();
  // The scenario and run's options are passed through unparsed, so CLI11 cannot list them.
  launch->footer(
      "Then: SCENARIO [testbed run's options: --set KEY=VALUE, -o OUT.h5, -q, --timeout S]\n"
      "  e.g. testbed launch -n 2 scenarios/100mbps_ring.yaml --set threads=1");

  auto* validate = app.add_subcommand("validate", "Check a scenario and print it resolved, with defaults");
  validate->add_option("scenario", scenario_path, "Scenario YAML file")->required();
  validate->add_option("--set", sets, "Override a scenario key: a.b.c=value (repeatable)");

  std::string sweep_path, shard, report_path;
  int jobs = 1;
  bool dry_run = false;
  auto* sweep = app.add_subcommand("sweep", "Run a grid of scenarios, each as a child process, into a folder");
  sweep->add_option("sweep", sweep_path, "Sweep YAML file")->required();
  sweep->add_option("-j,--jobs", jobs, "Runs at once")->check(CLI::Range(1, 4096));
  sweep->add_option("--shard", shard, "I/N: only runs with index % N == I");
  sweep->add_flag("--dry-run", dry_run, "Print the runs and their overrides; write nothing");
  bool use_slurm = false, submit = false;
  testbed::SlurmOptions slurm;
  sweep->add_flag("--slurm", use_slurm,
                  "Write OUT/sweep.sbatch, a Slurm array job whose task I of N runs --shard I/N, instead of running");
  sweep->add_flag("--submit", submit, "With --slurm: submit the script with sbatch");
  sweep->add_option("--tasks", slurm.tasks, "With --slurm: array tasks (default: one per run)")
      ->check(CLI::Range(1, 100000));
  sweep->add_option("--partition", slurm.partition, "With --slurm: the partition");
  sweep->add_option("--time", slurm.time, "With --slurm: each task's time limit, e.g. 01:00:00");
  sweep->add_option("--cpus", slurm.cpus, "With --slurm: CPUs per task")->check(CLI::Range(1, 4096));

  std::string collective = "allreduce", size = "10MB";
  auto* netbench = app.add_subcommand("netbench", "Time one collective on a scenario's network against alpha-beta");
  netbench->add_option("scenario", scenario_path, "Scenario YAML file (its topology, nodes and network)")->required();
  netbench->add_option("--set", sets, "Override a scenario key: a.b.c=value (repeatable)");
  netbench->add_option("--collective", collective, "allreduce | allgather | p2p")
      ->check(CLI::IsMember({"allreduce", "allgather", "p2p"}));
  netbench->add_option("--size", size, "Bytes (per rank for allgather), e.g. 10MB");
  std::vector<std::string> varies;
  netbench->add_option("--vary", varies,
                       "key=value; repeat a key for its values: every combination of the varied keys is timed, "
                       "one block each, in one process (repeatable)");

  bool dot = false, paths = false;
  auto* topology = app.add_subcommand(
      "topology",
      "Print a scenario's topology and every host pair's route (hops, latency, bottleneck) under network.routing");
  topology->add_option("scenario", scenario_path, "Scenario YAML file")->required();
  topology->add_option("--set", sets, "Override a scenario key: a.b.c=value (repeatable)");
  topology->add_flag("--dot", dot, "Graphviz DOT instead of the summary");
  topology->add_flag(
      "--paths", paths,
      "Also each ordered host pair's path (vertex list; with ecmp the path its connection's hash chose)");

  auto* report = app.add_subcommand("report", "Summarise a run's HDF5 file or a sweep folder's manifest");
  report->add_option("path", report_path, "Run .h5 file or sweep output folder")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Usage errors are bad input like a bad scenario: exit 2, not CLI11's own codes.
    app.exit(e);
    return 2;
  }
  try {
    if (*validate) {
      if (testbed::is_sweep_file(scenario_path)) {
        // A sweep: every run's scenario, checked as `sweep` checks them before it starts.
        testbed::one_thread_before_forks();
        const testbed::Sweep sweep = testbed::load_sweep(scenario_path);
        testbed::validate_sweep(sweep);
        std::cout << scenario_path << ": a sweep of " << sweep.runs.size() << " runs, each a valid scenario; "
                  << "`testbed sweep --dry-run " << scenario_path << "` lists them\n";
        return 0;
      }
      // Everything run checks before it writes: the scenario, then what depends on the data.
      testbed::Scenario scenario = testbed::load_scenario(scenario_path, sets);
      testbed::make_samplers(scenario, testbed::load_dataset(scenario));
      for (const auto& warning : scenario.warnings) std::cerr << warning << "\n";
      std::cout << testbed::to_yaml(scenario);
      return 0;
    }
    if (*sweep) {
      if (submit && !use_slurm) {
        std::cerr << "testbed: --submit goes with --slurm\n";
        return 2;
      }
      return sweep_command(sweep_path, jobs, shard, dry_run, use_slurm ? std::optional(slurm) : std::nullopt, submit);
    }
    if (*launch) {
      launch_options.run_args = launch->remaining();
      const auto& args = launch_options.run_args;
      for (size_t i = 0; i + 1 < args.size(); ++i)
        if (args[i] == "--timeout") launch_options.timeout_s = std::atof(args[i + 1].c_str());
      if (launch_options.run_args.empty()) {
        std::cerr << "testbed: launch needs a scenario: testbed launch -n K SCENARIO [run's options]\n";
        return 2;
      }
      return testbed::launch_processes(launch_options);
    }
    if (*netbench) return netbench_command(scenario_path, sets, varies, collective, size);
    if (*topology) {
      const testbed::Scenario scenario = testbed::load_scenario(scenario_path, sets);
      const auto built = testbed::build_topology(testbed::topology_spec(scenario));
      if (dot) {
        testbed::write_dot(built, std::cout);
      } else {
        testbed::describe_topology(built, std::cout, testbed::routing_options(scenario), paths);
      }
      return 0;
    }
    if (*report) {
      testbed::report(report_path, std::cout);
      if (std::filesystem::is_directory(report_path)) {
        if (const int tasks = testbed::slurm_tasks(report_path); tasks > 0)
          testbed::report_shards(report_path, tasks, std::cout);
      }
      return 0;
    }
    run_options.out = out;
    run_options.pcap_dir = pcap_dir;
    run_options.flowmon_file = flowmon_file;
    run_options.quiet = quiet;
    run_options.resume = resume;
    run_options.argv = argv;
    return testbed::run_command(scenario_path, sets, run_options);
  } catch (const testbed::InputError& e) {
    std::cerr << input_error_line(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "testbed: error: " << testbed::error_sentence(e) << "\n";
    return 1;
  }
}
