// The flops compute model's step time for a scenario's model on every device preset, next
// to one node's step measured on this host and the roofline with this host's own figures.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include <torch/torch.h>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/compute/compute_model.h"
#include "training/numerics.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Median host seconds of one node's training step (batch, forward/backward, optimizer).
double host_step_seconds(const testbed::Scenario& s, const testbed::Dataset& data, int steps) {
  using namespace testbed;
  Replica replica(make_model(s), optimizer_config(s), make_samplers(s, data)[0], torch::kCPU, data.task);
  std::vector<double> times;
  for (int i = 0; i < steps + 3; ++i) {  // 3 warm-up steps
    auto start = Clock::now();
    replica.forward_backward(replica.next_batch(data, s.workload.batch_size));
    replica.optimizer_step();
    if (i >= 3) times.push_back(seconds_since(start));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// This host as a roof: fp32 matmul throughput, copy bandwidth and per-op dispatch time (an
// op on one element that autograd records, as in training), each the best of a few tries
// (the machine is shared). The matmul rate is what GEMMs reach here, so no MFU applies.
testbed::Roof host_roof() {
  testbed::Roof roof;
  auto a = torch::randn({1024, 1024}), b = torch::randn({1024, 1024});
  auto big = torch::randn({16 << 20}), dst = torch::empty_like(big);  // 64 MB, beyond the caches
  auto tiny = torch::ones({1}, torch::requires_grad());
  double gemm = 1e9, copy = 1e9, op = 1e9;
  for (int t = 0; t < 5; ++t) {
    auto start = Clock::now();
    torch::mm(a, b);  // inputs need no gradient: nothing is recorded
    gemm = std::min(gemm, seconds_since(start));
    start = Clock::now();
    dst.copy_(big);
    copy = std::min(copy, seconds_since(start));
    start = Clock::now();
    for (int i = 0; i < 1000; ++i) torch::relu(tiny);
    op = std::min(op, seconds_since(start) / 1000);
  }
  roof.flops = 2.0 * 1024 * 1024 * 1024 / gemm;
  roof.memory_bandwidth = 2.0 * big.numel() * 4 / copy;  // read + write
  roof.launch_latency = op;
  return roof;
}

void print_row(const char* name, const testbed::StepCost& c) {
  std::printf("%-10s %10.3f ms   compute %8.3f  memory %8.3f  launch %8.3f ms\n", name, 1e3 * c.seconds(),
              1e3 * c.compute_bound, 1e3 * c.memory_bound, 1e3 * c.launch);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace testbed;
  pin_portable_kernels(false);  // the kernels `testbed run` trains with
  if (argc < 2) {
    std::cerr << "usage: testbed_roofline SCENARIO [KEY=VALUE...]\n";
    return 2;
  }
  try {
    Scenario s = load_scenario(argv[1], std::vector<std::string>(argv + 2, argv + argc));
    configure_host(s);
    Dataset data = load_dataset(s);
    auto model = make_model(s);
    TrainingWork work = training_work(s, *model);
    ComputeModel reference(s.compute, work, 1, s.seed);
    std::printf("model %s, batch %d: %.4g training FLOPs, %.4g bytes (fp32), %lld kernels a step\n",
                s.workload.model.c_str(), work.batch, reference.flops_per_step(), reference.step_cost().bytes,
                static_cast<long long>(reference.step_cost().kernels));
    for (Precision dtype : {Precision::Fp32, Precision::Bf16}) {
      if (s.compute.mfu)
        std::printf("-- %s, mfu %.2f\n", enum_name(dtype).c_str(), *s.compute.mfu);
      else
        std::printf("-- %s, calibrated efficiencies\n", enum_name(dtype).c_str());
      for (const auto& preset : device_presets()) {
        ComputeSection c = s.compute;
        c.device = preset.name;
        // A 16-bit row: bf16, or fp16 on a device without bf16 (V100, T4), as docs/compute.md's table says.
        c.dtype = preset_peak(preset, dtype) > 0 ? dtype : Precision::Fp16;
        c.peak_flops = FlopRate{0};
        c.memory_bandwidth = ByteRate{0};
        c.launch_latency.reset();
        print_row(preset.name.c_str(), roofline(work, compute_roof(c)));
      }
    }
    Roof host = host_roof();
    std::printf("-- this host: matmul %.1f GFLOP/s, copy %.1f GB/s, %.2f us per op\n", host.flops / 1e9,
                host.memory_bandwidth / 1e9, host.launch_latency * 1e6);
    print_row("host roof", roofline(work, host));
    std::printf("%-10s %10.3f ms   (median of 20 steps, %d threads)\n", "measured",
                1e3 * host_step_seconds(s, data, 20), at::get_num_threads());
    return 0;
  } catch (const ScenarioError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "testbed_roofline: error: " << e.what() << "\n";
    return 1;
  }
}
