// The testbed command line: run, validate, sweep, netbench, topology and report, as one function
// (main calls it; tests call it in a forked child, without paying LibTorch's start-up again).
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "sim/core/run.h"
#include "sim/output/hdf5_recorder.h"
#include "sim/output/resume_file.h"
#include "sim/output/run_file.h"
#include "sim/core/error_text.h"
#include "sim/core/memory_estimate.h"
#include "sim/tools/netbench.h"
#include "sim/core/network_factory.h"
#include "topologies/describe.h"
#include "sim/output/report.h"
#include "sim/tools/launch.h"
#include "sim/tools/slurm.h"
#include "sim/dist/process_group.h"
#include "training/algorithms/registry.h"
#include "sim/config/units.h"
#include "sim/config/scenario_loader.h"
#include "sim/tools/cli.h"
#include "sim/tools/fatal_errors.h"
#include "sim/tools/sweep_runner.h"
#include "sim/config/workload.h"
#include "training/numerics.h"

namespace {

// Signal handlers can only reach a global; the engine polls it before every step.
std::atomic<bool> g_interrupted{false};

void on_signal(int) { g_interrupted = true; }

// Checks --pcap and --flowmon against the scenario and makes their folders, before any output
// exists; bad ones are bad input (InputError, exit 2) named by the option.
testbed::NetworkCaptures checked_captures(const testbed::Scenario& scenario, const std::string& pcap_dir,
                                          const std::string& flowmon_file) {
  namespace fs = std::filesystem;
  testbed::NetworkCaptures captures{pcap_dir, flowmon_file};
  for (const auto& [option, value] : {std::pair{"--pcap ", pcap_dir}, std::pair{"--flowmon ", flowmon_file}}) {
    if (value.empty()) continue;
    if (scenario.network.backend != "ns3")
      throw testbed::InputError(option + value + ":1:1: the " + scenario.network.backend +
                                   " backend has no packets to capture; use network.backend ns3");
  }
  std::error_code ec;
  if (!pcap_dir.empty() && !fs::is_directory(pcap_dir, ec) && !fs::create_directories(pcap_dir, ec))
    throw testbed::InputError("--pcap " + pcap_dir + ":1:1: cannot create the folder: " + ec.message());
  if (!flowmon_file.empty()) {
    if (fs::is_directory(flowmon_file, ec))
      throw testbed::InputError("--flowmon " + flowmon_file + ":1:1: is a folder; give a file such as flows.xml");
    const fs::path parent = fs::path(flowmon_file).parent_path();
    if (!parent.empty() && !fs::is_directory(parent, ec) && !fs::create_directories(parent, ec))
      throw testbed::InputError("--flowmon " + flowmon_file + ":1:1: cannot create its folder: " + ec.message());
  }
  return captures;
}

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

// The run's processes from the options, else RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT;
// a world of 1 without either.
testbed::ProcessGroupOptions process_group_options(const RunOptions& options) {
  using testbed::InputError;
  testbed::ProcessGroupOptions o;
  auto number = [](const std::string& name, const std::string& text) {
    char* end = nullptr;
    const long value = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || value < 0 || value > 1000000)
      throw InputError(name + " " + text + ":1:1: expected a whole number");
    return static_cast<int>(value);
  };
  auto env = [](const char* name) { const char* v = std::getenv(name); return std::string(v ? v : ""); };
  o.rank = options.rank >= 0 ? options.rank : env("RANK").empty() ? 0 : number("RANK", env("RANK"));
  o.world = options.world >= 0 ? options.world : env("WORLD_SIZE").empty() ? 1 : number("WORLD_SIZE", env("WORLD_SIZE"));
  std::string master = options.master;
  if (master.empty() && !env("MASTER_ADDR").empty()) master = env("MASTER_ADDR") + ":" + env("MASTER_PORT");
  if (!master.empty()) {
    const size_t colon = master.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == master.size())
      throw InputError("--master " + master + ":1:1: expected ADDR:PORT, such as 127.0.0.1:29500 (or MASTER_ADDR and MASTER_PORT)");
    o.master_addr = master.substr(0, colon);
    o.master_port = number("--master " + master + " port", master.substr(colon + 1));
  }
  if (o.world < 1) throw InputError("--world-size " + std::to_string(o.world) + ":1:1: expected 1 or more processes");
  if (o.rank >= o.world)
    throw InputError("--rank " + std::to_string(o.rank) + ":1:1: expected a rank below the world size " + std::to_string(o.world));
  if (!(options.timeout_s > 0)) throw InputError("--timeout:1:1: expected seconds above 0");
  o.timeout_s = options.timeout_s;
  return o;
}

// What a run over several processes cannot do yet, refused at the key before anything is written.
void check_spread_run(const testbed::Scenario& scenario, const testbed::ProcessGroupOptions& group,
                      const RunOptions& options) {
  using testbed::InputError;
  const std::string processes = std::to_string(group.world) + " processes";
  if (scenario.nodes < group.world)
    throw InputError(scenario.where("nodes") + ": " + std::to_string(scenario.nodes) + " nodes cannot spread over " +
                     processes + "; use at most one process per node");
  const testbed::AlgorithmEntry* algorithm = testbed::find_algorithm(scenario.algorithm.name);
  if (algorithm && algorithm->federated)
    throw InputError(scenario.where("algorithm.name") + ": a federated run (" + scenario.algorithm.name +
                     ") runs in one process; run it without --world-size");
  if (scenario.output.resume_every > 0 || options.resume)
    throw InputError(scenario.where("output.resume_every") + ": checkpoints are not written by a run over " + processes +
                     "; set it to 0 or run in one process");
}

// The checkpoint to continue from, checked before anything is written: it must belong to this
// scenario and its output file must still exist. Nothing (a fresh start) when there is none.
std::optional<testbed::Checkpoint> checkpoint_to_resume(const testbed::Scenario& scenario, const std::string& dir) {
  using namespace testbed;
  auto checkpoint = latest_checkpoint(dir);
  if (!checkpoint) return std::nullopt;  // the caller says so, once
  const std::string here = scenario_fingerprint(scenario);
  if (checkpoint->fingerprint != here)
    throw InputError(dir + ": the checkpoint was made by another scenario (fingerprint " + checkpoint->fingerprint +
                     ", this one " + here + "); nothing was changed (run without --resume to start over)");
  if (!std::filesystem::exists(scenario.output.path))
    throw InputError(scenario.output.path + ": the output file the checkpoint continues is missing; nothing was "
                     "changed (run without --resume to start over)");
  std::fprintf(stderr, "testbed: resuming from step %d (%s)\n", checkpoint->step, dir.c_str());
  return checkpoint;
}

int run_command(const std::string& path, const std::vector<std::string>& sets, const RunOptions& options) {
  using namespace testbed;
  const std::string& out = options.out;
  const bool quiet = options.quiet;
  Scenario scenario = load_scenario(path, sets);
  restart_for_numerics(scenario.numerics, options.argv);  // may start this process again: warn after it
  for (const auto& warning : scenario.warnings) std::fprintf(stderr, "%s\n", warning.c_str());
  if (!out.empty()) scenario.output.path = out;
  Dataset data = load_dataset(scenario);
  // Sized from shapes: a model too large to build here (a 7B decoder) is refused below, not
  // allocated first.
  const ModelShapes shapes = model_shapes(scenario);
  const ModelSize model_size{shapes.parameters, static_cast<int>(shapes.shapes.size()), shapes.second_order,
                             shapes.built_parameters};
  const std::string refusal =
      memory_refusal(estimate_memory(scenario, data, model_size, build_topology(topology_spec(scenario))),
                     machine_memory(), scenario.nodes);
  if (!refusal.empty()) {
    const bool state = refusal.find("client_state: disk") != std::string::npos;
    throw InputError(scenario.where(state ? "algorithm.client_state" : "nodes") + ": " + refusal);
  }
  const ProcessGroupOptions spread = process_group_options(options);
  if (spread.world > 1) check_spread_run(scenario, spread, options);
  const bool writer = spread.rank == 0;  // rank 0 alone writes the file and prints the summary
  const NetworkCaptures captures =
      writer ? checked_captures(scenario, options.pcap_dir, options.flowmon_file) : NetworkCaptures{};
  if (options.resume) {
    // A run that completed leaves no checkpoint: --resume must not start it over.
    const auto earlier = read_run_file(scenario.output.path);
    if (earlier && earlier->status == "completed" && earlier->scenario == to_yaml(scenario)) {
      std::printf("status            completed earlier: nothing to resume\noutput            %s\n",
                  scenario.output.path.c_str());
      return 0;
    }
  }
  const std::string checkpoints = checkpoint_dir(scenario.output.path);
  const std::optional<Checkpoint> resume = options.resume ? checkpoint_to_resume(scenario, checkpoints) : std::nullopt;
  if (options.resume && !resume)
    std::fprintf(stderr, "testbed: --resume: no checkpoint in %s (the run writes them with output.resume_every); "
                         "starting from step 0\n", checkpoints.c_str());

  auto host_start = std::chrono::steady_clock::now();
  EngineHooks hooks;
  hooks.interrupted = &g_interrupted;
  hooks.warn = [](const std::string& warning) { std::fprintf(stderr, "%s\n", warning.c_str()); };
  hooks.captures = captures;
  if (scenario.output.resume_every > 0) hooks.checkpoint_dir = checkpoints;
  if (resume) hooks.resume = &*resume;
  // Tests' fault injection: SIGKILL halfway through writing the n-th checkpoint; an ns-3 fatal
  // error at a simulated time.
  if (const char* n = std::getenv("TESTBED_KILL_IN_CHECKPOINT")) hooks.kill_in_checkpoint = std::atoi(n);
  if (const char* t = std::getenv("TESTBED_NS3_FATAL_AT")) hooks.captures.fatal_error_at_s = std::atof(t);
  bool show_progress = !quiet && isatty(STDERR_FILENO);
  if (show_progress) {
    hooks.progress = [host_start](const Progress& p) {
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
      double eta = elapsed / p.step * (p.steps - p.step);
      if (std::isnan(p.loss))  // a projection
        std::fprintf(stderr, "\rstep %d/%d  projected %.2f s  ETA %.0f s   ", p.step, p.steps, p.projected_time_s, eta);
      else
        std::fprintf(stderr, "\rstep %d/%d  loss %.4f  projected %.2f s  ETA %.0f s   ", p.step, p.steps,
                     p.loss, p.projected_time_s, eta);
    };
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::unique_ptr<ProcessGroup> group;
  if (spread.world > 1) {
    try {
      group = std::make_unique<ProcessGroup>(spread);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "testbed: %s\n", e.what());
      return 1;
    }
    hooks.group = group.get();
    if (!writer) hooks.progress = {};
  }

  const std::unique_ptr<Run> loop = make_run(scenario, data, hooks);
  // A fresh run drops the checkpoints of an earlier one at this path; a resumed one cuts the
  // file back to the rows its checkpoint counted.
  if (!resume) remove_checkpoints(checkpoints);
  std::unique_ptr<Recorder> recorder;
  if (!writer) {
    recorder = std::make_unique<DiscardingRecorder>();
  } else if (resume) {
    recorder = std::make_unique<Hdf5Recorder>(scenario.output.path, loop->run_info(), resume->mark);
  } else {
    RunInfo info = loop->run_info();
    info.numerics = numerics_record(scenario);
    recorder = std::make_unique<Hdf5Recorder>(scenario.output.path, info);
  }
  if (const std::string why = not_portable_reason(scenario.numerics); writer && !why.empty())
    std::fprintf(stderr, "testbed: warning: numerics are not portable (%s): another machine may give other bits\n",
                 why.c_str());
  auto* file = dynamic_cast<Hdf5Recorder*>(recorder.get());
  on_fatal_error([file](const std::string& sentence) { if (file) file->fail(sentence); });
  RunSummary summary = loop->run(*recorder);
  on_fatal_error({});
  if (summary.status == "completed") remove_checkpoints(checkpoints);
  if (show_progress) std::fprintf(stderr, "\n");
  if (!writer) {
    if (summary.status != "completed")
      std::fprintf(stderr, "testbed: rank %d: %s%s%s\n", spread.rank, summary.status.c_str(),
                   summary.error.empty() ? "" : ": ", summary.error.c_str());
    return summary.status == "completed" ? 0 : summary.status == "diverged" ? 3 : 1;
  }

  std::printf("status            %s%s%s\n", summary.status.c_str(), summary.error.empty() ? "" : ": ",
              summary.error.c_str());
  std::printf("steps completed   %d\n", summary.steps_completed);
  // A diverged run's last evaluation is of a model that is no longer a number (as `report` says).
  if (!scenario.workload.train) {
    std::printf("projection        from shapes (workload.train false): times, bytes and messages; no loss or accuracy\n");
  } else if (summary.status == "diverged") {
    std::printf("final accuracy    n/a (diverged)\nfinal eval loss   n/a (diverged)\n");
  } else if (summary.eval_samples == 0) {
    std::printf("final accuracy    n/a (no evaluation ran)\nfinal eval loss   n/a (no evaluation ran)\n");
  } else {
    std::printf("final accuracy    %.4f\n", summary.final_accuracy);
    std::printf("final eval loss   %.4f\n", summary.final_eval_loss);
  }
  if (scenario.workload.train && summary.eval_samples > 0)
    std::printf("eval samples      %lld (the final eval: %lld, the whole test split)\n",
                static_cast<long long>(summary.eval_samples), static_cast<long long>(summary.final_eval_samples));
  if (scenario.workload.train && std::isfinite(summary.final_perplexity)) std::printf("final perplexity  %.3f\n", summary.final_perplexity);
  std::printf("projected time    %.3f s\n", summary.projected_time_s);
  // A run that stopped early counts the messages its last steps had issued, arrived or not.
  std::printf("total bytes       %s%s\n", testbed::bytes_with_units(static_cast<double>(summary.total_bytes)).c_str(),
              summary.status == "completed" ? "" : " (issued, some still in flight when it stopped)");
  std::printf("host time         %.2f s\n", summary.host_time_s);
  std::printf("network host time %.2f s (%.2f ms a step; the backend's share)\n", loop->host_times().ns3(),
              summary.steps_completed > 0 ? 1e3 * loop->host_times().ns3() / summary.steps_completed : 0.0);
  if (group)
    std::printf("processes         %d (rank 0: %.2f s in Gloo sends and waits, %lld tensors received)\n",
                spread.world, loop->host_times().transfers, static_cast<long long>(loop->host_times().receives));
  // Also when none replayed, where memoization was asked for: a researcher who expected the
  // speed-up learns where to read why not.
  if (summary.phases_replayed > 0 || (scenario.network.memoize && scenario.network.backend == "ns3"))
    std::printf("memoized         %lld of %lld steps' communication replayed%s\n", static_cast<long long>(summary.phases_replayed),
                static_cast<long long>(summary.phases_replayed + summary.phases_simulated),
                summary.phases_replayed > 0 ? ""
                                            : " (no step repeated an earlier one exactly, or a condition rules it "
                                              "out: docs/network.md#memoization)");
  std::printf("parameters        %lld\n", static_cast<long long>(summary.model_parameters));
  std::printf("output            %s\n", scenario.output.path.c_str());
  if (summary.status == "completed") return 0;
  return summary.status == "diverged" ? 3 : 1;
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

int netbench_command(const std::string& path, const std::vector<std::string>& sets, const std::vector<std::string>& varies,
                     const std::string& collective, const std::string& size) {
  using namespace testbed;
  const auto bytes = parse_bytes(size);
  if (!bytes || !(*bytes >= 4)) throw InputError("--size " + size + ":1:8: expected a size of 4 bytes or more, such as 10MB");
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
    std::printf("backend           %s\n", scenario.network.backend.c_str());
    std::printf("topology          %s, %d nodes\n", scenario.topology.kind.c_str(), scenario.nodes);
    std::printf("collective        %s of %s (%s, %d slices)\n", collective.c_str(), human_bytes(*bytes).c_str(),
                collective == "p2p" ? "-" : scenario.collective.algorithm.c_str(), scenario.collective.slices);
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
  run->add_option("--pcap", pcap_dir, "ns3: write a pcap per link device into this folder (link-<vertex>-<device>.pcap)");
  bool resume = false;
  run->add_flag("--resume", resume,
                "Continue from the newest checkpoint in OUT.h5.resume/ (output.resume_every); none: start from step 0");
  run->add_option("--flowmon", flowmon_file, "ns3: write ns-3 FlowMonitor statistics (XML) to this file at the end");
  RunOptions run_options;
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
  launch->footer("Then: SCENARIO [testbed run's options: --set KEY=VALUE, -o OUT.h5, -q, --timeout S]\n"
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
  sweep->add_option("--tasks", slurm.tasks, "With --slurm: array tasks (default: one per run)")->check(CLI::Range(1, 100000));
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
      "topology", "Print a scenario's topology and every host pair's route (hops, latency, bottleneck) under network.routing");
  topology->add_option("scenario", scenario_path, "Scenario YAML file")->required();
  topology->add_option("--set", sets, "Override a scenario key: a.b.c=value (repeatable)");
  topology->add_flag("--dot", dot, "Graphviz DOT instead of the summary");
  topology->add_flag("--paths", paths,
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
    return run_command(scenario_path, sets, run_options);
  } catch (const testbed::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "testbed: error: " << testbed::error_sentence(e) << "\n";
    return 1;
  }
}
