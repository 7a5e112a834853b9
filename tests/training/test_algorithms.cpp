// The low-communication algorithms through the engine: equivalences with plain averaging
// worked out here on hand-run replicas, exact bytes per step from their formulas, overlap
// that hides communication, evaluation of the averaged model, and replica agreement.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include <torch/torch.h>

#include "netmodels/alpha_beta.h"
#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/engine/engine.h"
#include "tests/support/engine_run.h"
#include "training/algorithms/common.h"
#include "training/metrics.h"

namespace testbed {
namespace {

constexpr int64_t kD = kMlpParameters;

Scenario scenario(int nodes, int steps, const std::string& algorithm, const std::string& extra = "") {
  return parse_scenario(R"(
name: algorithms
seed: 11
nodes: )" + std::to_string(nodes) +
                            R"(
threads: 1
topology: {kind: ring, link: {bandwidth: 1Gbps, latency: 1ms}}
workload: {model: mlp, batch_size: 16, steps: )" +
                            std::to_string(steps) + R"(, eval_every: 1000, eval_samples: 200}
optimizer: {name: sgd, lr: 0.05, weight_decay: 0}
compute: {model: fixed, step_time: 10ms}
algorithm: )" + algorithm + "\n" +
                            extra,
                        "algorithms");
}

class Algorithms : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { data_ = new Dataset(load_dataset(scenario(2, 1, "{name: ddp}"))); }
  static void TearDownTestSuite() { delete data_; }
  static Dataset* data_;

  using Run = EngineRun;
  static Run run(const Scenario& s) { return run_engine(s, *data_); }

  // Replicas built as the engine builds them (same initialisation, shards and batches),
  // for training by hand.
  static std::vector<std::unique_ptr<Replica>> replicas(const Scenario& s) { return make_replicas(s, *data_); }
  static void local_step(Replica& r, int batch) {
    r.forward_backward(r.next_batch(*data_, batch));
    r.optimizer_step();
  }
  static torch::Tensor mean(const std::vector<std::unique_ptr<Replica>>& rs) {
    auto sum = torch::zeros_like(rs[0]->parameters());
    for (const auto& r : rs) sum += r->parameters();
    return sum / static_cast<double>(rs.size());
  }
  static void average(std::vector<std::unique_ptr<Replica>>& rs) {
    torch::NoGradGuard no_grad;
    auto m = mean(rs);
    for (auto& r : rs) r->parameters().copy_(m);
  }
  static double max_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }
  // Per-step bytes of node n, from /comm/bytes.
  static std::vector<uint64_t> bytes_of(const Run& r, int node) {
    std::vector<uint64_t> out;
    for (const auto& row : r.record.train_rows) out.push_back(row.bytes[node]);
    return out;
  }
};
Dataset* Algorithms::data_ = nullptr;

// Local SGD steps with every parameter averaged after each: what three algorithms reduce to.
TEST_F(Algorithms, SpartaWithPOneAndLocalSgdWithHOneAreFullAveraging) {
  const int nodes = 3, steps = 4;
  Scenario sparta = scenario(nodes, steps, "{name: sparta, p: 1}");
  auto expected = replicas(sparta);
  for (int step = 0; step < steps; ++step) {
    for (auto& r : expected) local_step(*r, 16);
    average(expected);
  }
  const auto want = expected[0]->parameters();
  const Run a = run(sparta);
  const Run b = run(scenario(nodes, steps, "{name: local_sgd, H: 1}"));
  for (int n = 0; n < nodes; ++n) {
    EXPECT_LT(max_diff(a.parameters[n], want), 1e-6) << "sparta node " << n;
    EXPECT_LT(max_diff(b.parameters[n], want), 1e-6) << "local_sgd node " << n;
  }
  EXPECT_GT(max_diff(want, replicas(sparta)[0]->parameters()), 1e-3);  // training moved them
}

TEST_F(Algorithms, GossipOnACompleteGraphIsFullAveraging) {
  const int nodes = 4, steps = 3;
  Scenario s = scenario(nodes, steps, "{name: gossip}");
  s.topology.kind = TopologyKind::Mesh;  // Metropolis-Hastings weights on K4: 1/4 each, self included
  auto expected = replicas(s);
  for (int step = 0; step < steps; ++step) {
    for (auto& r : expected) local_step(*r, 16);
    average(expected);
  }
  const Run g = run(s);
  for (int n = 0; n < nodes; ++n) EXPECT_LT(max_diff(g.parameters[n], expected[0]->parameters()), 1e-6);
  // degree x 4d bytes per node per step.
  for (uint64_t b : bytes_of(g, 1)) EXPECT_EQ(b, 3u * 4 * kD);
}

TEST_F(Algorithms, DilocoWithOuterLrOneAndNoMomentumIsLocalSgd) {
  const int nodes = 3, steps = 7;
  const Run d = run(scenario(nodes, steps, "{name: diloco, H: 3, outer_lr: 1, outer_momentum: 0}"));
  const Run f = run(scenario(nodes, steps, "{name: local_sgd, H: 3}"));
  for (int n = 0; n < nodes; ++n) EXPECT_LT(max_diff(d.parameters[n], f.parameters[n]), 1e-5) << n;
  // The all-reduce bytes once every H steps, nothing otherwise: 2(p-1) chunks of d/p floats.
  ASSERT_EQ(kD % nodes, 0);
  const uint64_t all_reduce = 2 * (nodes - 1) * (kD / nodes) * 4;
  const std::vector<uint64_t> expected = {0, 0, all_reduce, 0, 0, all_reduce, 0};
  for (int n = 0; n < nodes; ++n) {
    EXPECT_EQ(bytes_of(d, n), expected);
    EXPECT_EQ(bytes_of(f, n), expected);
  }
}

TEST_F(Algorithms, DilocoMomentumAndLowPrecisionChangeTheResult) {
  const int nodes = 2, steps = 4;
  const Run plain = run(scenario(nodes, steps, "{name: diloco, H: 2, outer_lr: 1, outer_momentum: 0}"));
  const Run nesterov = run(scenario(nodes, steps, "{name: diloco, H: 2}"));
  const Run bf16 = run(scenario(nodes, steps, "{name: diloco, H: 2, outer_dtype: bf16}"));
  EXPECT_GT(max_diff(plain.parameters[0], nesterov.parameters[0]), 1e-4);
  EXPECT_GT(max_diff(nesterov.parameters[0], bf16.parameters[0]), 1e-7);
  // bf16 halves the bytes: 2 chunks of d/2 values of 2 bytes.
  EXPECT_EQ(bf16.record.train_rows[1].bytes[0], 2u * (kD / 2) * 2);
}

TEST_F(Algorithms, StreamingDilocoWithOneFragmentNoOverlapIsDiloco) {
  const int nodes = 2, steps = 6;
  const Run s = run(scenario(nodes, steps, "{name: streaming_diloco, H: 3, fragments: 1, tau: 0, outer_dtype: fp32}"));
  const Run d = run(scenario(nodes, steps, "{name: diloco, H: 3}"));
  for (int n = 0; n < nodes; ++n) EXPECT_TRUE(torch::equal(s.parameters[n], d.parameters[n]));
}

// INTELLECT-1's int8 pseudo-gradient (docs/algorithms.md), worked by hand. [3, 3.01, -3, 0 x 5]:
// sigma = sqrt(27.0601 / 7) = 1.96614, scale = 6 sigma / 256 = 0.0460814; 3 / scale = 65.10 and
// 3.01 / scale = 65.32 both take code 128 + 65, which decodes as their mean, 3.005; -3 takes
// 63 alone. [10, 20, 0 x 98]: sigma = sqrt(500 / 99), scale = 0.0526715; 10 and 20 clamp to code
// 255 together and decode as 15. Slips caught: decoding a code as code x scale (2.995 and
// 6.69), no clamp (10 and 20 apart), sigma centred on the mean.
TEST(WireFormats, Int8IsIntellect1sQuantiser) {
  EXPECT_EQ(wire_bytes(WireFormat::Int8), 1);
  auto x = torch::zeros({8});
  x[0] = 3.0f, x[1] = 3.01f, x[2] = -3.0f;
  const auto decoded = to_wire(x, WireFormat::Int8);
  EXPECT_NEAR(decoded[0].item<float>(), 3.005f, 1e-6);
  EXPECT_NEAR(decoded[1].item<float>(), 3.005f, 1e-6);
  EXPECT_FLOAT_EQ(decoded[2].item<float>(), -3.0f);
  for (int i = 3; i < 8; ++i) EXPECT_EQ(decoded[i].item<float>(), 0.0f);
  auto y = torch::zeros({100});
  y[0] = 10.0f, y[1] = 20.0f;
  const auto clamped = to_wire(y, WireFormat::Int8);
  EXPECT_FLOAT_EQ(clamped[0].item<float>(), 15.0f);
  EXPECT_FLOAT_EQ(clamped[1].item<float>(), 15.0f);
  EXPECT_EQ(clamped.slice(0, 2).abs().sum().item<float>(), 0.0f);
}

TEST_F(Algorithms, StreamingDilocoStaggersFragmentsInFp4) {
  const int nodes = 2, steps = 8, fragments = 4, H = 4;
  const Run s = run(scenario(nodes, steps, "{name: streaming_diloco, H: 4, fragments: 4, tau: 1}"));
  // Fragment f (elements [f d/4, (f+1) d/4)) syncs after steps with (step + 1 + f H/4) % H == 0,
  // its d/4 values at half a byte each, split in two ring chunks.
  for (int step = 0; step < steps; ++step) {
    uint64_t expected = 0;
    for (int f = 0; f < fragments; ++f) {
      if ((step + 1 + f * H / fragments) % H != 0) continue;
      const int64_t count = (f + 1) * kD / fragments - f * kD / fragments;
      const int64_t first = count / 2, second = count - first;
      // Rank 0 sends chunk 0 then chunk 1 in a two-rank ring: both chunks once.
      expected += static_cast<uint64_t>(std::ceil(first * 0.5) + std::ceil(second * 0.5));
    }
    EXPECT_EQ(s.record.train_rows[step].bytes[0], expected) << "step " << step;
  }
}

TEST_F(Algorithms, SpartaSendsTheAllReduceOfPdValues) {
  const int nodes = 4, steps = 3;
  const Run r = run(scenario(nodes, steps, "{name: sparta, p: 0.005}"));
  const int64_t k = std::llround(0.005 * kD);  // 1176 values, 294 per ring chunk
  ASSERT_EQ(k % nodes, 0);
  for (int n = 0; n < nodes; ++n) {
    for (uint64_t b : bytes_of(r, n)) EXPECT_EQ(b, static_cast<uint64_t>(2 * (nodes - 1) * (k / nodes) * 4));
  }
  // Every step averages the chosen values, so the replicas drift apart only a little.
  EXPECT_GT(max_diff(r.parameters[0], r.parameters[1]), 0);
}

TEST_F(Algorithms, SpartaRingExchangeSendsToNeighbours) {
  const int nodes = 4, steps = 2;
  const Run r = run(scenario(nodes, steps, "{name: sparta, p: 0.005, exchange: ring, selection: windows}"));
  const int64_t k = std::llround(0.005 * kD);
  for (uint64_t b : bytes_of(r, 0)) EXPECT_EQ(b, static_cast<uint64_t>(2 * k * 4));   // two ring neighbours
  for (const auto& m : r.record.messages) EXPECT_EQ(std::abs(m.src - m.dst) % 2, 1);  // neighbours on a ring of 4
}

// With k at least a block's size every DCT coefficient travels and error feedback empties the
// residual at every step, so without the sign DeMo's update is the residual's mean, lr times the
// mean gradient: gradient descent on the large batch, here by hand.
TEST_F(Algorithms, DemoWithEveryCoefficientAndNoSignIsMeanGradientDescent) {
  const int nodes = 3, steps = 3;
  Scenario s = scenario(nodes, steps, "{name: demo, chunk: 64, k: 4096, sign: false, beta: 0.9}");
  auto expected = replicas(s);
  for (int step = 0; step < steps; ++step) {
    auto grad = torch::zeros_like(expected[0]->gradients());
    for (auto& r : expected) {
      r->forward_backward(r->next_batch(*data_, 16));
      grad += r->gradients();
    }
    grad /= nodes;
    torch::NoGradGuard no_grad;
    for (auto& r : expected) r->parameters().sub_(grad * 0.05);
  }
  const Run d = run(s);
  for (int n = 0; n < nodes; ++n) EXPECT_LT(max_diff(d.parameters[n], expected[0]->parameters()), 1e-5);
  // Blocks tile each tensor, so every parameter is one (index, value) pair: 8 + 4 bytes, to each
  // of N - 1 peers (a ring all-gather forwards every node's pairs once around).
  for (uint64_t b : bytes_of(d, 0)) EXPECT_EQ(b, static_cast<uint64_t>((nodes - 1) * kD * 12));
}

// DeMo's pairs a step, from the block rule written out here: a tensor is rows x cols (rows =
// its first dimension when it has two or more, after flattening the rest; 1-D: one row); h
// and w are the largest divisors of rows and cols not above `chunk` (h = 1 for one row); each
// h x w block sends min(k, h w) pairs.
int64_t demo_pairs(const torch::nn::Module& model, int64_t chunk, int64_t k) {
  auto divisor = [chunk](int64_t n) {
    int64_t best = 1;
    for (int64_t d = 1; d <= std::min(n, chunk); ++d)
      if (n % d == 0) best = d;
    return best;
  };
  int64_t pairs = 0;
  for (const auto& p : trainable_parameters(model)) {
    const int64_t rows = p.dim() >= 2 ? p.size(0) : 1, cols = p.numel() / rows;
    const int64_t h = p.dim() >= 2 ? divisor(rows) : 1, w = divisor(cols);
    pairs += rows / h * (cols / w) * std::min(k, h * w);
  }
  return pairs;
}

// Bytes of the CNN (conv kernels flattened to (out, in kh kw)) and of a GPT with int64 indices
// (the reference's), and of the MLP with 16-bit ones, against the block rule.
TEST_F(Algorithms, DemoBytesFollowTheBlockRuleForTheCnnAndTheGpt) {
  const int nodes = 3;
  const std::string cnn = R"(
name: demo_cnn
nodes: 3
threads: 1
topology: {kind: ring, link: {bandwidth: 1Gbps, latency: 1ms}}
workload: {model: cnn, batch_size: 8, steps: 2, eval_every: 1000, eval_samples: 100}
compute: {model: fixed, step_time: 10ms}
)";
  // By hand for the CNN (chunk 64, k 32): conv1 16 x 25: one 16 x 25 block, 32 pairs; its bias
  // 16; conv2 32 x 400: 32 x 50 blocks, 8 x 32; bias 32; fc1 128 x 512: 64 x 64 blocks,
  // 16 x 32; bias 128: 2 x 32; fc2 10 x 128: 10 x 64 blocks, 2 x 32; bias 10.
  const int64_t cnn_pairs = 32 + 16 + 8 * 32 + 32 + 16 * 32 + 2 * 32 + 2 * 32 + 10;
  {
    const Scenario s = parse_scenario(cnn + "algorithm: {name: demo}\n", "demo_cnn");
    EXPECT_EQ(demo_pairs(*make_model(s), 64, 32), cnn_pairs);
    const Run d = run(s);
    for (uint64_t b : bytes_of(d, 1)) EXPECT_EQ(b, static_cast<uint64_t>((nodes - 1) * cnn_pairs * 12));
  }
  {
    // The MLP with 16-bit indices. By hand: fc1 256 x 784 is 4 x 14 blocks of 64 x 56; its bias
    // 4 chunks of 64; fc2 128 x 256 is 2 x 4 blocks of 64 x 64; its bias 2 chunks; fc3 10 x 128
    // two blocks of 10 x 64; its bias one chunk of 10, all of it.
    const Scenario s = scenario(nodes, 2, "{name: demo, index: int16}");
    const int64_t pairs = demo_pairs(*make_model(s), 64, 32);
    EXPECT_EQ(pairs, 4 * 14 * 32 + 4 * 32 + 2 * 4 * 32 + 2 * 32 + 2 * 32 + 10);
    for (uint64_t b : bytes_of(run(s), 1)) EXPECT_EQ(b, static_cast<uint64_t>((nodes - 1) * pairs * 6));
  }
  {
    const Scenario s = parse_scenario(R"(
name: demo_gpt
nodes: 3
threads: 1
topology: {kind: ring, link: {bandwidth: 1Gbps, latency: 1ms}}
workload: {model: gpt, dataset: brown, batch_size: 2, steps: 2, eval_every: 1000, eval_samples: 8,
           gpt: {preset: tiny, layers: 1, width: 48, heads: 2, context: 24}}
compute: {model: fixed, step_time: 10ms}
algorithm: {name: demo, chunk: 32, k: 16}
)",
                                      "demo_gpt");
    // One node's step is enough: what it puts on the wire (the CNN above checks that the
    // engine counts exactly that), without a whole run's final evaluation of the held-out text.
    const Dataset text = load_dataset(s);
    auto gpt = make_replicas(s, text);
    auto demo = make_algorithm(s, {1, 1, 1}, shapes_of(gpt[0]->model()).shapes, {{1, 2}, {0, 2}, {0, 1}});
    const StepPlan plan = demo->local_step(0, 0, *gpt[0], text);
    ASSERT_EQ(plan.comm.size(), 1u);
    const int64_t pairs = demo_pairs(gpt[0]->model(), 32, 16);
    EXPECT_EQ(plan.comm[0].buffer.numel(), 2 * pairs);
    EXPECT_EQ(plan.comm[0].bytes_per_element, 6.0);  // an 8-byte index and a 4-byte value a pair
  }
}

TEST_F(Algorithms, DemoWithSignMovesEveryParameterByTheLearningRate) {
  const Run d = run(scenario(2, 1, "{name: demo}"));
  const auto initial = replicas(scenario(2, 1, "{name: demo}"))[0]->parameters();
  auto moved = (d.parameters[0] - initial).abs();
  // sign() is +-1 (0 only where the decoded mean is exactly 0): steps of lr.
  EXPECT_GT((moved - 0.05).abs().lt(1e-6).sum().item<int64_t>(), kD * 9 / 10);
}

// lo-fi: no communication until one average at the end; the average is of what the
// replicas trained alone.
TEST_F(Algorithms, LofiAveragesIndependentTrainingOnceAtTheEnd) {
  const int nodes = 3, steps = 4;
  Scenario s = scenario(nodes, steps, "{name: lofi}");
  s.workload.eval_every = 2;
  s.workload.eval_samples = 0;  // the whole test split, so the check below needs no sample
  const Run r = run(s);
  auto expected = replicas(s);
  for (int step = 0; step < steps; ++step) {
    for (auto& e : expected) local_step(*e, 16);
    if (step != 1) continue;
    // The eval after step 2 is of the averaged model, and of each replica on its own.
    const auto& row = r.record.eval_rows.at(0);
    ASSERT_EQ(row.step, 2);
    auto model = make_model(s);
    load_flat_parameters(*model, mean(expected), true);
    auto averaged = evaluate(*model, data_->task, data_->test_inputs, data_->test_targets, torch::kCPU);
    EXPECT_NEAR(row.loss, averaged.loss, 1e-6);
    EXPECT_NEAR(row.accuracy, averaged.accuracy, 1e-12);
    for (int n = 0; n < nodes; ++n) {
      auto own = evaluate(expected[n]->model(), data_->task, data_->test_inputs, data_->test_targets, torch::kCPU);
      EXPECT_NEAR(row.replica_loss[n], own.loss, 1e-6);
      EXPECT_NEAR(row.replica_accuracy[n], own.accuracy, 1e-12);
      EXPECT_GT(std::abs(row.replica_loss[n] - row.loss), 1e-4);  // not any single replica
    }
  }
  average(expected);
  for (int n = 0; n < nodes; ++n) EXPECT_LT(max_diff(r.parameters[n], expected[0]->parameters()), 1e-6);
  // Bytes: nothing until the last step, then one all-reduce of d.
  ASSERT_EQ(kD % nodes, 0);
  EXPECT_EQ(bytes_of(r, 0), (std::vector<uint64_t>{0, 0, 0, 2 * (nodes - 1) * (kD / nodes) * 4}));
}

// Overlap is real: communication shorter than compute, applied a step late, hides behind
// the next step's compute; applied at once, every step pays compute plus communication.
TEST_F(Algorithms, DelayedSpartaHidesItsCommunication) {
  const int nodes = 4, steps = 10;
  const double compute = 0.010, alpha = 0.001, beta = 8.0 / 1e9;
  const Run blocking = run(scenario(nodes, steps, "{name: sparta, p: 0.005}"));
  const Run overlapped = run(scenario(nodes, steps, "{name: sparta, p: 0.005, delay: 1}"));
  const double bytes = 4.0 * std::llround(0.005 * kD);
  const double comm = alpha_beta::ring_all_reduce(alpha, beta, bytes, nodes);
  ASSERT_LT(comm, compute);
  const double blocking_step = blocking.summary.projected_time_s / steps;
  const double overlapped_step = overlapped.summary.projected_time_s / steps;
  std::printf("sparta step: blocking %.2f ms, delay 1 %.2f ms (compute %.1f ms, alpha-beta %.2f ms)\n",
              1e3 * blocking_step, 1e3 * overlapped_step, 1e3 * compute, 1e3 * comm);
  EXPECT_GE(blocking_step, compute + comm);
  // Only the last step's exchange stays exposed.
  EXPECT_LE(overlapped.summary.projected_time_s, steps * compute + 2 * comm + 0.005);
  EXPECT_GE(overlapped.summary.projected_time_s, steps * compute);
}

// Communication much longer than compute, applied a step late: a waiting node sees two ops
// complete before it resumes, and must still run every step (compute and exchange) once.
TEST_F(Algorithms, OverlappedStepsAreEachComputedAndSent) {
  const int nodes = 4, steps = 8;
  const double compute = 0.010;
  Scenario s = scenario(nodes, steps, "{name: sparta, p: 0.005, delay: 1}");
  s.topology.link.latency.s = 0.020;
  const Run overlapped = run(s);
  const uint64_t per_step = 2 * (nodes - 1) * (std::llround(0.005 * kD) / nodes) * 4;
  for (int n = 0; n < nodes; ++n) {
    double previous = 0;
    for (const auto& row : overlapped.record.train_rows) {
      EXPECT_EQ(row.bytes[n], per_step) << "step " << row.step;
      EXPECT_GE(row.time[n] - previous, compute - 1e-9) << "step " << row.step << " node " << n;
      previous = row.time[n];
    }
  }
}

// Per-node state is named tensors that a checkpoint can carry: DiLoCo's global parameters
// (which the node adopted at its last sync) and outer momentum, DeMo's residual.
TEST_F(Algorithms, AlgorithmStateIsNamedTensors) {
  MemoryRecorder rec;
  {
    // One engine at a time: ns-3 keeps one simulation per process.
    const Scenario s = scenario(2, 4, "{name: diloco, H: 2}");  // the engine keeps a reference
    Engine engine(s, *data_);
    ASSERT_EQ(engine.run(rec).status, testbed::RunStatus::Completed);
    for (int n = 0; n < 2; ++n) {
      AlgorithmState state = engine.algorithm().state(n);
      ASSERT_EQ(state.tensors.count("outer/global"), 1u);
      ASSERT_EQ(state.tensors.count("outer/momentum"), 1u);
      EXPECT_TRUE(torch::equal(state.tensors.at("outer/global"), engine.replicas()[n]->parameters()));
      EXPECT_GT(state.tensors.at("outer/momentum").abs().max().item<double>(), 0);
    }
  }
  const Scenario d = scenario(2, 2, "{name: demo}");
  Engine demo(d, *data_);
  ASSERT_EQ(demo.run(rec).status, testbed::RunStatus::Completed);
  EXPECT_EQ(demo.algorithm().state(1).tensors.count("delta"), 1u);
}

// With heterogeneous speeds chunks reach nodes before those enter the collective; DDP's
// values must not notice (only the times change).
TEST_F(Algorithms, DdpParametersDoNotDependOnNodeSpeeds) {
  Scenario even = scenario(3, 4, "{name: ddp}");
  Scenario uneven = even;
  uneven.compute.speeds = {1.0, 0.3, 2.5};
  uneven.compute.straggler_sigma = 0.5;
  const Run a = run(even), b = run(uneven);
  for (int n = 0; n < 3; ++n) EXPECT_TRUE(torch::equal(a.parameters[n], b.parameters[n]));
  EXPECT_NE(a.summary.projected_time_s, b.summary.projected_time_s);
}

// The network backend changes when things arrive, not what DDP computes; the alpha-beta
// backend is a lower bound on the others, and the flow backend is near the packet level.
TEST_F(Algorithms, AnalyticalBackendKeepsDdpValuesAndBoundsTheTime) {
  Scenario packets = scenario(3, 4, "{name: ddp}");
  packets.collective.library = CollectiveLibrary::None;  // the network alone: the time by hand below
  Scenario bound = packets, flows = packets;
  bound.network.backend = Backend::Analytical;
  flows.network.backend = Backend::Flow;
  const Run a = run(packets), b = run(bound), f = run(flows);
  for (int n = 0; n < 3; ++n) {
    EXPECT_TRUE(torch::equal(a.parameters[n], b.parameters[n]));
    EXPECT_TRUE(torch::equal(a.parameters[n], f.parameters[n]));
  }
  EXPECT_LE(b.summary.projected_time_s, a.summary.projected_time_s);
  EXPECT_LE(b.summary.projected_time_s, f.summary.projected_time_s);
  EXPECT_NEAR(f.summary.projected_time_s / a.summary.projected_time_s, 1.0, 0.15);
  // Each step: compute, then 2(p-1) ring hops of a d/p chunk at 1 Gbps / 1 ms.
  const double step = 0.010 + 2 * 2 * (0.001 + (kD / 3) * 4 * 8 / 1e9);
  EXPECT_NEAR(b.summary.projected_time_s, 4 * step, 1e-6);
}

TEST_F(Algorithms, ReplicaCorrelationFollowsHowMuchIsShared) {
  const int nodes = 4, steps = 60;
  auto with = [&](const std::string& algorithm, const std::string& init) {
    Scenario s = scenario(nodes, steps, algorithm);
    s.workload.eval_every = 20;
    s.workload.init = init;
    s.optimizer.name = OptimizerKind::AdamW;
    s.optimizer.lr = 1e-3;
    return run(s);
  };
  // Evals after steps 20, 40 and 60; lo-fi's last one follows its final average.
  auto at = [](const Run& r, int e) { return r.record.eval_rows.at(e).correlation; };
  const Run ddp = with("{name: ddp}", "shared");
  const Run lofi = with("{name: lofi}", "shared");
  const Run sparta = with("{name: sparta, p: 0.05}", "shared");
  EXPECT_NEAR(at(ddp, 1), 1.0, 1e-9);
  EXPECT_LT(at(lofi, 1), at(lofi, 0));  // falls as the replicas train apart
  EXPECT_LT(at(lofi, 1), 1.0 - 1e-4);
  EXPECT_GT(at(sparta, 1), at(lofi, 1));
  EXPECT_NEAR(at(lofi, 2), 1.0, 1e-9);  // one model after the average
  const Run lofi_ind = with("{name: lofi}", "independent");
  const Run sparta_ind = with("{name: sparta, p: 0.05}", "independent");
  std::printf("independent init, correlation after 20/40 steps: lofi %.4f %.4f, sparta %.4f %.4f\n", at(lofi_ind, 0),
              at(lofi_ind, 1), at(sparta_ind, 0), at(sparta_ind, 1));
  EXPECT_LT(std::abs(at(lofi_ind, 1)), 0.1);
  EXPECT_GT(at(sparta_ind, 1), at(sparta_ind, 0));
  EXPECT_GT(at(sparta_ind, 1), 0.3);
}

}  // namespace
}  // namespace testbed
