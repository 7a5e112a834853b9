// Benchmark: the engine's host cost per step against a bare LibTorch loop doing the same
// forward/backward/optimizer work for the N replicas, and the share of time inside ns-3.
#include <unistd.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <torch/torch.h>

#include "sim/engine.h"
#include "sim/hdf5_recorder.h"
#include "sim/scenario_loader.h"
#include "sim/workload.h"

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

}  // namespace

int main(int argc, char** argv) {
  using namespace testbed;
  if (argc < 2) {
    std::cerr << "usage: testbed_bench SCENARIO [KEY=VALUE...]   (TESTBED_BENCH_REPEATS, default 3)\n";
    return 2;
  }
  try {
    std::vector<std::string> sets(argv + 2, argv + argc);
    Scenario scenario = load_scenario(argv[1], sets);
    Dataset data = load_dataset(scenario);
    auto out = std::filesystem::temp_directory_path() / ("testbed_bench_" + std::to_string(::getpid()) + ".h5");

    configure_host(scenario);
    // Host timing on a shared 2-core machine drifts by several per cent between runs, so
    // both sides run `repeats` times, interleaved, and each keeps its fastest.
    const char* repeats_env = std::getenv("TESTBED_BENCH_REPEATS");
    int repeats = repeats_env ? std::max(1, std::atoi(repeats_env)) : 3;
    double bare = 1e300;
    HostTimes times;
    for (int r = 0; r < repeats; ++r) {
      bare = std::min(bare, bare_loop_seconds(scenario, data));
      Engine engine(scenario, data);
      Hdf5Recorder hdf5(out.string(), engine.run_info());
      engine.run(hdf5);
      if (r == 0 || engine.host_times().testbed() < times.testbed()) times = engine.host_times();
    }
    std::filesystem::remove(out);

    int steps = scenario.workload.steps;
    double testbed_per_step = times.testbed() / steps;
    double bare_per_step = bare / steps;
    std::printf("scenario                 %s (%d nodes, %d steps, best of %d)\n", scenario.name.c_str(),
                scenario.nodes, steps, repeats);
    std::printf("host time, whole run     %.3f s\n", times.run);
    std::printf("  evaluation             %.3f s\n", times.eval);
    std::printf("  inside ns-3            %.3f s (%.1f %% of the run)\n", times.ns3(), 100 * times.ns3() / times.run);
    std::printf("  testbed (the rest)     %.3f s\n", times.testbed());
    std::printf("  of which local step    %.3f s (forward/backward/optimizer and the algorithm's math)\n", times.local_compute);
    std::printf("testbed per step         %.2f ms\n", 1e3 * testbed_per_step);
    std::printf("bare LibTorch per step   %.2f ms\n", 1e3 * bare_per_step);
    std::printf("overhead ratio           %.3f (target <= 1.10)\n", testbed_per_step / bare_per_step);
    return 0;
  } catch (const ScenarioError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "testbed_bench: error: " << e.what() << "\n";
    return 1;
  }
}
