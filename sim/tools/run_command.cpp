// `testbed run`: the scenario checked against this machine's memory and the run's processes,
// the engine's hooks (signals, checkpoints, progress, tests' fault injection), the recorder, the
// run, and the summary printed.
#include "sim/tools/run_command.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "sim/config/scenario_loader.h"
#include "sim/config/units.h"
#include "sim/config/workload.h"
#include "sim/core/memory_estimate.h"
#include "sim/core/network_factory.h"
#include "sim/core/run.h"
#include "sim/dist/process_group.h"
#include "sim/output/hdf5_recorder.h"
#include "sim/output/report.h"
#include "sim/output/resume_file.h"
#include "sim/output/run_file.h"
#include "sim/tools/fatal_errors.h"
#include "sim/tools/progress.h"
#include "training/algorithms/registry.h"
#include "training/numerics.h"

namespace testbed {
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
    if (scenario.network.backend != testbed::Backend::Ns3)
      throw testbed::InputError(option + value + ":1:1: the " + testbed::enum_name(scenario.network.backend) +
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
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  o.rank = options.rank >= 0 ? options.rank : env("RANK").empty() ? 0 : number("RANK", env("RANK"));
  o.world = options.world >= 0          ? options.world
            : env("WORLD_SIZE").empty() ? 1
                                        : number("WORLD_SIZE", env("WORLD_SIZE"));
  std::string master = options.master;
  if (master.empty() && !env("MASTER_ADDR").empty()) master = env("MASTER_ADDR") + ":" + env("MASTER_PORT");
  if (!master.empty()) {
    const size_t colon = master.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == master.size())
      throw InputError("--master " + master +
                       ":1:1: expected ADDR:PORT, such as 127.0.0.1:29500 (or MASTER_ADDR and MASTER_PORT)");
    o.master_addr = master.substr(0, colon);
    o.master_port = number("--master " + master + " port", master.substr(colon + 1));
  }
  if (o.world < 1) throw InputError("--world-size " + std::to_string(o.world) + ":1:1: expected 1 or more processes");
  if (o.rank >= o.world)
    throw InputError("--rank " + std::to_string(o.rank) + ":1:1: expected a rank below the world size " +
                     std::to_string(o.world));
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
    throw InputError(scenario.where("output.resume_every") + ": checkpoints are not written by a run over " +
                     processes + "; set it to 0 or run in one process");
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
    throw InputError(scenario.output.path +
                     ": the output file the checkpoint continues is missing; nothing was "
                     "changed (run without --resume to start over)");
  std::fprintf(stderr, "testbed: resuming from step %d (%s)\n", checkpoint->step, dir.c_str());
  return checkpoint;
}

// A run whose replicas, buffers and network would not fit this machine's memory is refused
// before anything is allocated: sized from shapes, so a model too large to build here (a 7B
// decoder) is refused, not allocated first.
void admit_memory(const Scenario& scenario, const Dataset& data) {
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
}

// Tests' fault injection: SIGKILL halfway through writing the n-th checkpoint; an ns-3 fatal
// error at a simulated time.
void inject_faults(EngineHooks& hooks) {
  if (const char* n = std::getenv("TESTBED_KILL_IN_CHECKPOINT")) hooks.kill_in_checkpoint = std::atoi(n);
  if (const char* t = std::getenv("TESTBED_NS3_FATAL_AT")) hooks.captures.fatal_error_at_s = std::atof(t);
}

// Rank 0's HDF5 file (a resumed run's cut back to the rows its checkpoint counted); the other
// ranks write nothing.
std::unique_ptr<Recorder> open_recorder(const Scenario& scenario, const Run& loop,
                                        const std::optional<Checkpoint>& resume, bool writer) {
  if (!writer) return std::make_unique<DiscardingRecorder>();
  if (resume) return std::make_unique<Hdf5Recorder>(scenario.output.path, loop.run_info(), resume->mark);
  RunInfo info = loop.run_info();
  info.numerics = numerics_record(scenario);
  return std::make_unique<Hdf5Recorder>(scenario.output.path, info);
}

// What `testbed run` prints when the run is over (rank 0 only).
void print_summary(const Scenario& scenario, const RunSummary& summary, const Run& loop, int processes) {
  std::printf("status            %s%s%s\n", status_name(summary.status), summary.error.empty() ? "" : ": ",
              summary.error.c_str());
  std::printf("steps completed   %d\n", summary.steps_completed);
  // A diverged run's last evaluation is of a model that is no longer a number (as `report` says).
  if (!scenario.workload.train) {
    std::printf(
        "projection        from shapes (workload.train false): times, bytes and messages; no loss or accuracy\n");
  } else if (summary.status == RunStatus::Diverged) {
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
  if (scenario.workload.train && std::isfinite(summary.final_perplexity))
    std::printf("final perplexity  %.3f\n", summary.final_perplexity);
  std::printf("projected time    %.3f s\n", summary.projected_time_s);
  // A run that stopped early counts the messages its last steps had issued, arrived or not.
  std::printf("total bytes       %s%s\n", testbed::bytes_with_units(static_cast<double>(summary.total_bytes)).c_str(),
              summary.status == RunStatus::Completed ? "" : " (issued, some still in flight when it stopped)");
  std::printf("host time         %.2f s\n", summary.host_time_s);
  std::printf("network host time %.2f s (%.2f ms a step; the backend's share)\n", loop.host_times().ns3(),
              summary.steps_completed > 0 ? 1e3 * loop.host_times().ns3() / summary.steps_completed : 0.0);
  if (processes > 1)
    std::printf("processes         %d (rank 0: %.2f s in Gloo sends and waits, %lld tensors received)\n", processes,
                loop.host_times().transfers, static_cast<long long>(loop.host_times().receives));
  // Only where memoization's rule let the run keep phases (docs/network.md#memoization); then
  // also when none replayed, so that a researcher who expected the speed-up learns where to read
  // why not.
  if (summary.phases_replayed + summary.phases_simulated > 0)
    std::printf("memoized         %lld of %lld steps' communication replayed%s\n",
                static_cast<long long>(summary.phases_replayed),
                static_cast<long long>(summary.phases_replayed + summary.phases_simulated),
                summary.phases_replayed > 0 ? ""
                                            : " (no step repeated an earlier one exactly, or a condition rules it "
                                              "out: docs/network.md#memoization)");
  std::printf("parameters        %lld\n", static_cast<long long>(summary.model_parameters));
  std::printf("output            %s\n", scenario.output.path.c_str());
}

}  // namespace

int run_command(const std::string& path, const std::vector<std::string>& sets, const RunOptions& options) {
  Scenario scenario = load_scenario(path, sets);
  restart_for_numerics(scenario.numerics, options.argv);  // may start this process again: warn after it
  for (const auto& warning : scenario.warnings) std::fprintf(stderr, "%s\n", warning.c_str());
  if (!options.out.empty()) scenario.output.path = options.out;
  Dataset data = load_dataset(scenario);
  admit_memory(scenario, data);
  const ProcessGroupOptions spread = process_group_options(options);
  if (spread.world > 1) check_spread_run(scenario, spread, options);
  const bool writer = spread.rank == 0;  // rank 0 alone writes the file and prints the summary
  const NetworkCaptures captures =
      writer ? checked_captures(scenario, options.pcap_dir, options.flowmon_file) : NetworkCaptures{};
  if (options.resume) {
    // A run that completed leaves no checkpoint: --resume must not start it over.
    const auto earlier = read_run_file(scenario.output.path);
    if (earlier && earlier->is(RunStatus::Completed) && earlier->scenario == to_yaml(scenario)) {
      std::printf("status            completed earlier: nothing to resume\noutput            %s\n",
                  scenario.output.path.c_str());
      return 0;
    }
  }
  const std::string checkpoints = checkpoint_dir(scenario.output.path);
  const std::optional<Checkpoint> resume = options.resume ? checkpoint_to_resume(scenario, checkpoints) : std::nullopt;
  if (options.resume && !resume)
    std::fprintf(stderr,
                 "testbed: --resume: no checkpoint in %s (the run writes them with output.resume_every); "
                 "starting from step 0\n",
                 checkpoints.c_str());

  EngineHooks hooks;
  hooks.interrupted = &g_interrupted;
  hooks.warn = [](const std::string& warning) { std::fprintf(stderr, "%s\n", warning.c_str()); };
  hooks.captures = captures;
  if (scenario.output.resume_every > 0) hooks.checkpoint_dir = checkpoints;
  if (resume) hooks.resume = &*resume;
  inject_faults(hooks);
  // On a terminal the line is rewritten each step; in a log, a line at most every 30 s.
  const bool show_progress = !options.quiet && isatty(STDERR_FILENO);
  if (!options.quiet) {
    ProgressSink sink;
    sink.terminal = show_progress;
    sink.host_seconds = [start = std::chrono::steady_clock::now()] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    sink.write = [](const std::string& text) {
      std::fputs(text.c_str(), stderr);
      std::fflush(stderr);
    };
    hooks.progress = progress_printer(std::move(sink));
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
  std::unique_ptr<Recorder> recorder = open_recorder(scenario, *loop, resume, writer);
  if (const std::string why = not_portable_reason(scenario.numerics); writer && !why.empty())
    std::fprintf(stderr, "testbed: warning: numerics are not portable (%s): another machine may give other bits\n",
                 why.c_str());
  auto* file = dynamic_cast<Hdf5Recorder*>(recorder.get());
  on_fatal_error([file](const std::string& sentence) {
    if (file) file->fail(sentence);
  });
  RunSummary summary = loop->run(*recorder);
  on_fatal_error({});
  if (summary.status == RunStatus::Completed) remove_checkpoints(checkpoints);
  if (show_progress) std::fprintf(stderr, "\n");
  if (!writer) {
    if (summary.status != RunStatus::Completed)
      std::fprintf(stderr, "testbed: rank %d: %s%s%s\n", spread.rank, status_name(summary.status),
                   summary.error.empty() ? "" : ": ", summary.error.c_str());
    return exit_code(summary.status);
  }
  print_summary(scenario, summary, *loop, spread.world);
  return exit_code(summary.status);
}

}  // namespace testbed
