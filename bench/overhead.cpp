// Benchmark: the engine's host cost per step against a bare LibTorch loop doing the same
// forward/backward/optimizer work for the N replicas (for fedavg: the round's picked clients,
// one after another, each from the global model), and the share of time inside ns-3. Then the
// cost of portable numerics: the same bare loop with portable kernels (this process) against
// native ones (this binary started again with TESTBED_NUMERICS=native), pair by pair.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <torch/torch.h>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/run.h"
#include "sim/output/hdf5_recorder.h"
#include "training/algorithms/registry.h"
#include "training/data/partition.h"
#include "training/numerics.h"
#include "training/seed_streams.h"

namespace {

double bare_loop_seconds(const testbed::Scenario& scenario, const testbed::Dataset& data) {
  using namespace testbed;
  auto samplers = make_samplers(scenario, data);
  std::vector<std::unique_ptr<Replica>> replicas;
  for (int n = 0; n < scenario.nodes; ++n) {
    replicas.push_back(std::make_unique<Replica>(make_model(scenario), optimizer_config(scenario),
                                                 std::move(samplers[n]), torch::Device(scenario.device), data.task));
  }
  auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < scenario.workload.steps; ++step) {
    for (auto& r : replicas) {
      r->forward_backward(r->next_batch(data, scenario.workload.batch_size));
      r->optimizer_step();
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What a plain LibTorch FedAvg does: each round, the picked clients one after another, each a
// model loaded with the global parameters and a fresh optimizer for H steps; the global model
// becomes their mean weighted by samples.
double bare_federated_seconds(const testbed::Scenario& scenario, const testbed::Dataset& data) {
  using namespace testbed;
  const auto& o = std::get<FedAvgOptions>(scenario.algorithm.options);
  const int picked = o.picked(scenario.nodes), rounds = scenario.workload.steps / o.H;
  auto samplers = make_samplers(scenario, data);
  auto global = flatten_parameters(*make_model(scenario)).clone();
  auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < rounds; ++round) {
    auto order = seeded_permutation(scenario.nodes, stream_seed(scenario.seed, "fedavg_clients", round));
    auto sum = torch::zeros_like(global, torch::kFloat64);
    double total = 0;
    for (int k = 0; k < picked; ++k) {
      const int c = order[k];
      Replica r(make_model(scenario), optimizer_config(scenario), samplers[c], torch::Device(scenario.device),
                data.task);
      load_flat_parameters(r.model(), global);
      for (int h = 0; h < o.H; ++h) {
        r.forward_backward(r.next_batch(data, scenario.workload.batch_size));
        r.optimizer_step();
      }
      samplers[c] = r.sampler();
      const double n = static_cast<double>(samplers[c].shard_size());
      sum.add_(flatten_parameters(r.model()).to(torch::kFloat64), n);
      total += n;
    }
    global = sum.div_(total).to(torch::kFloat32);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The bare loop's seconds with the machine's native kernels: this binary again, in native mode,
// with --bare-loop (it prints one line of seconds).
double native_bare_seconds(char** argv) {
  // The shell would read /proc/self/exe as itself: name this binary.
  std::string command =
      "TESTBED_NUMERICS=native '" + std::filesystem::read_symlink("/proc/self/exe").string() + "' --bare-loop";
  for (char** a = argv + 1; *a; ++a) command += std::string(" '") + *a + "'";
  FILE* child = popen(command.c_str(), "r");
  double seconds = NAN;
  if (!child || std::fscanf(child, "%lf", &seconds) != 1) seconds = NAN;
  if (child) pclose(child);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace testbed;
  pin_portable_kernels(false);
  const bool bare_loop_only = argc > 1 && std::string(argv[1]) == "--bare-loop";
  if (bare_loop_only) ++argv, --argc;
  if (argc < 2) {
    std::cerr << "usage: testbed_bench SCENARIO [KEY=VALUE...]   (TESTBED_BENCH_REPEATS, default 5)\n";
    return 2;
  }
  try {
    std::vector<std::string> sets(argv + 2, argv + argc);
    Scenario scenario = load_scenario(argv[1], sets);
    Dataset data = load_dataset(scenario);
    auto out = std::filesystem::temp_directory_path() / ("testbed_bench_" + std::to_string(::getpid()) + ".h5");

    if (bare_loop_only) {
      scenario.numerics = numerics_portable() ? "portable" : "native";
      configure_host(scenario);
      std::printf("%.6f\n", bare_loop_seconds(scenario, data));
      return 0;
    }
    configure_host(scenario);
    // Host timing on this shared 2-core VM drifts by 10-20 % between runs, more than the
    // engine's own cost. Each repeat therefore runs the bare loop and the engine back to
    // back, and the ratio reported is the median over these adjacent pairs.
    const char* repeats_env = std::getenv("TESTBED_BENCH_REPEATS");
    int repeats = repeats_env ? std::max(1, std::atoi(repeats_env)) : 5;
    const int steps = scenario.workload.steps;
    const AlgorithmEntry* algorithm = find_algorithm(scenario.algorithm.name);
    const bool federated = algorithm && algorithm->federated;
    struct Pair {
      double bare_seconds;
      HostTimes times;
      int64_t phases_replayed = 0, phases = 0;
      double ratio() const { return times.testbed() / bare_seconds; }
    };
    std::vector<Pair> pairs;
    // Portable against native seconds of the bare loop, measured back to back.
    std::vector<std::pair<double, double>> numerics;
    for (int r = 0; r < repeats; ++r) {
      double bare_seconds = federated ? bare_federated_seconds(scenario, data) : bare_loop_seconds(scenario, data);
      const auto run = make_run(scenario, data, {});
      Hdf5Recorder hdf5(out.string(), run->run_info());
      const RunSummary summary = run->run(hdf5);
      pairs.push_back({bare_seconds, run->host_times(), summary.phases_replayed,
                       summary.phases_replayed + summary.phases_simulated});
      if (!federated) numerics.push_back({bare_loop_seconds(scenario, data), native_bare_seconds(argv)});
    }
    std::filesystem::remove(out);
    std::vector<Pair> sorted = pairs;
    std::sort(sorted.begin(), sorted.end(), [](const Pair& a, const Pair& b) { return a.ratio() < b.ratio(); });
    const Pair& median = sorted[sorted.size() / 2];
    const HostTimes& times = median.times;
    const double bare = median.bare_seconds;

    std::printf("scenario                 %s (%d nodes, %d steps, median of %d pairs)\n", scenario.name.c_str(),
                scenario.nodes, steps, repeats);
    std::printf("host time, whole run     %.3f s\n", times.run);
    std::printf("  evaluation             %.3f s (%.1f %% of the run)\n", times.eval, 100 * times.eval / times.run);
    std::printf("  inside ns-3            %.3f s (%.1f %% of the run)\n", times.ns3(), 100 * times.ns3() / times.run);
    std::printf("  memoization            %lld of %lld steps' communication replayed\n",
                static_cast<long long>(median.phases_replayed), static_cast<long long>(median.phases));
    std::printf("  testbed (the rest)     %.3f s\n", times.testbed());
    std::printf("    local step           %.3f s (forward/backward/optimizer and the algorithm's math)\n",
                times.local_compute);
    const double machinery = times.testbed() - times.local_compute;
    std::printf("    engine machinery     %.3f s\n", machinery);
    std::printf("      deliveries         %.3f s (values landing in the collectives' buffers, their /comm rows)\n",
                times.deliveries);
    std::printf("      recording          %.3f s (the /train and /eval rows)\n", times.recording);
    std::printf("      the rest           %.3f s (events, issuing ops, work buffers, bookkeeping)\n",
                std::max(0.0, machinery - times.deliveries - times.recording));
    std::printf("testbed per step         %.2f ms\n", 1e3 * times.testbed() / steps);
    std::printf("bare LibTorch per step   %.2f ms\n", 1e3 * bare / steps);
    std::printf("overhead ratio           %.3f (median: the testbed outside ns-3 and eval / the bare loop)\n",
                median.ratio());
    std::printf("  every pair             ");
    for (const Pair& p : pairs) std::printf("%.3f ", p.ratio());
    std::printf("\n");
    std::printf("machinery / bare         %.3f (target <= 0.05)\n", machinery / bare);
    if (!numerics.empty()) {
      std::vector<double> ratios;
      for (const auto& [portable, native] : numerics) ratios.push_back(portable / native);
      std::vector<double> sorted_ratios = ratios;
      std::sort(sorted_ratios.begin(), sorted_ratios.end());
      std::printf("portable / native        %.3f (bare loop, median; %s)\n", sorted_ratios[sorted_ratios.size() / 2],
                  numerics_portable() ? "portable kernels in effect here" : "portable kernels NOT in effect here");
      std::printf("  every pair             ");
      for (size_t i = 0; i < numerics.size(); ++i)
        std::printf("%.3f (%.2f / %.2f s) ", ratios[i], numerics[i].first, numerics[i].second);
      std::printf("\n");
    }
    return 0;
  } catch (const ScenarioError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "testbed_bench: error: " << e.what() << "\n";
    return 1;
  }
}
