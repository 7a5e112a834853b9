// DDP through the engine: identical replicas, large-batch equivalence, exact bytes, time bounds.
#include <gtest/gtest.h>

#include <set>

#include <torch/torch.h>

#include "netmodels/alpha_beta.h"
#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/engine/engine.h"

namespace testbed {
namespace {

Scenario small_ddp(int nodes) {
  return parse_scenario(R"(
name: ddp_test
seed: 3
nodes: )" + std::to_string(nodes) +
                            R"(
threads: 1
topology: {kind: ring, link: {bandwidth: 1Gbps, latency: 1ms}}
workload: {model: mlp, batch_size: 16, steps: 5, eval_every: 5, eval_samples: 500}
optimizer: {name: adamw, lr: 1.0e-3, weight_decay: 0.01}
compute: {model: fixed, step_time: 10ms}
)",
                        "ddp_test");
}

class DdpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { data_ = new Dataset(load_dataset(small_ddp(4))); }
  static void TearDownTestSuite() { delete data_; }
  static Dataset* data_;
};
Dataset* DdpTest::data_ = nullptr;

TEST_F(DdpTest, ReplicasStayBitwiseIdentical) {
  Scenario s = small_ddp(4);
  MemoryRecorder rec;
  Engine engine(s, *data_);
  ASSERT_EQ(engine.run(rec).status, testbed::RunStatus::Completed);
  auto first = flatten_parameters(engine.replicas()[0]->model());
  for (const auto& r : engine.replicas()) EXPECT_TRUE(torch::equal(first, flatten_parameters(r->model())));
  ASSERT_EQ(rec.eval_rows.size(), 1u);
  EXPECT_NEAR(rec.eval_rows[0].correlation, 1.0, 1e-12);
  EXPECT_EQ(rec.eval_rows[0].distance, 0.0);
}

// Trains one model on the concatenation of the nodes' batches, step by step.
torch::Tensor train_on_large_batch(const Scenario& s, const Dataset& data) {
  auto samplers = make_samplers(s, data);
  Replica big(make_model(s), optimizer_config(s), samplers[0], torch::kCPU);
  for (int step = 0; step < s.workload.steps; ++step) {
    std::vector<torch::Tensor> index;
    for (auto& sampler : samplers) index.push_back(sampler.next(s.workload.batch_size));
    auto all = torch::cat(index);
    big.forward_backward({data.train_inputs.index_select(0, all), data.train_targets.index_select(0, all)});
    big.optimizer_step();
  }
  return flatten_parameters(big.model());
}

// Max |difference| between DDP's replica 0 and the large-batch model, and between DDP and its
// initial weights (how far training moved), for one optimizer.
std::pair<double, double> ddp_vs_large_batch(Scenario s, const Dataset& data) {
  MemoryRecorder rec;
  Engine engine(s, data);
  EXPECT_EQ(engine.run(rec).status, testbed::RunStatus::Completed);
  auto got = flatten_parameters(engine.replicas()[0]->model());
  auto initial = flatten_parameters(*make_model(s));
  auto expected = train_on_large_batch(s, data);
  return {(got - expected).abs().max().item<double>(), (got - initial).abs().max().item<double>()};
}

TEST_F(DdpTest, MatchesOneReplicaOnTheNTimesLargerBatchWithSgd) {
  Scenario s = small_ddp(4);
  s.optimizer.name = OptimizerKind::Sgd;
  s.optimizer.lr = 0.05;
  s.optimizer.momentum = 0.9;
  auto [difference, moved] = ddp_vs_large_batch(s, *data_);
  EXPECT_GT(moved, 1e-3);
  // SGD is linear in the gradient: only float reassociation separates the two.
  EXPECT_LT(difference, 1e-6);
}

TEST_F(DdpTest, MatchesOneReplicaOnTheNTimesLargerBatchWithAdamW) {
  auto [difference, moved] = ddp_vs_large_batch(small_ddp(4), *data_);
  EXPECT_GT(moved, 1e-3);
  // Adam divides by sqrt(v), which magnifies rounding on tiny gradients; still far below one lr step.
  EXPECT_LT(difference, 1e-4);
}

TEST_F(DdpTest, AllReduceBytesAreExact) {
  for (int nodes : {2, 3, 4, 5}) {
    Scenario s = small_ddp(nodes);
    s.workload.steps = 2;
    MemoryRecorder rec;
    Engine engine(s, *data_);
    ASSERT_EQ(engine.run(rec).status, testbed::RunStatus::Completed);
    const double d = static_cast<double>(engine.model_parameters());
    ASSERT_EQ(rec.train_rows.size(), 2u);
    for (const auto& row : rec.train_rows) {
      uint64_t step_total = 0;
      for (int n = 0; n < nodes; ++n) {
        double ideal = 2.0 * (nodes - 1) / nodes * 4.0 * d;
        // Chunks differ by at most one element, so each of the 2(N-1) sends is off by <= 4 bytes.
        EXPECT_LE(std::abs(static_cast<double>(row.bytes[n]) - ideal), 2.0 * (nodes - 1) * 4.0)
            << "nodes " << nodes << " node " << n;
        step_total += row.bytes[n];
      }
      // Each of the 2(N-1) ring steps moves every chunk once: 4d bytes.
      EXPECT_EQ(step_total, static_cast<uint64_t>(2 * (nodes - 1) * 4 * engine.model_parameters()));
    }
    // Each chunk travels as `slices` messages (the chunks here are far longer than that).
    EXPECT_EQ(rec.messages.size(), static_cast<size_t>(2 * 2 * nodes * (nodes - 1) * s.collective.slices));
  }
}

TEST_F(DdpTest, StepTimeNeverBeatsComputePlusAlphaBeta) {
  Scenario s = small_ddp(4);
  MemoryRecorder rec;
  Engine engine(s, *data_);
  ASSERT_EQ(engine.run(rec).status, testbed::RunStatus::Completed);
  double alpha = s.topology.link.latency.s;
  double beta = 8.0 / s.topology.link.bandwidth.bps;
  double bytes = 4.0 * engine.model_parameters();
  // The ring's chunks travel as collective.slices pieces, which pipeline across the hops.
  double bound =
      s.compute.step_time.s + alpha_beta::ring_all_reduce_sliced(alpha, beta, bytes, s.nodes, s.collective.slices);
  double previous = 0;
  for (const auto& row : rec.train_rows) {
    double finished = *std::max_element(row.time.begin(), row.time.end());
    EXPECT_GE(finished - previous, bound) << "step " << row.step;
    EXPECT_LE(finished - previous, 3 * bound) << "step " << row.step;
    EXPECT_DOUBLE_EQ(row.compute_time[0], s.compute.step_time.s);
    previous = finished;
  }
}

TEST_F(DdpTest, SingleNodeSendsNothing) {
  Scenario s = small_ddp(1);
  MemoryRecorder rec;
  Engine engine(s, *data_);
  auto summary = engine.run(rec);
  ASSERT_EQ(summary.status, testbed::RunStatus::Completed);
  EXPECT_EQ(summary.total_bytes, 0u);
  EXPECT_TRUE(rec.messages.empty());
  EXPECT_NEAR(summary.projected_time_s, s.workload.steps * s.compute.step_time.s, 1e-12);
}

// The engine hands the roofline its MLP (784-256-128-10, batch 16). With memory made
// effectively free, a step is its FLOPs at the fp32 peak plus its kernel launches.
TEST_F(DdpTest, FlopsComputeModelUsesDevicePeak) {
  Scenario s = small_ddp(2);
  s.compute.model = ComputeKind::Flops;
  s.compute.device = "a100";
  s.compute.mfu = 0.5;
  s.compute.memory_bandwidth = ByteRate{1.25e17};
  MemoryRecorder rec;
  Engine engine(s, *data_);
  ASSERT_EQ(engine.run(rec).status, testbed::RunStatus::Completed);
  const double f1 = 2.0 * 784 * 256, f2 = 2.0 * 256 * 128, f3 = 2.0 * 128 * 10;
  // forward and weight gradients of every layer, input gradients of all but the first
  const double flops = 16 * (2 * (f1 + f2 + f3) + (f2 + f3));
  EXPECT_DOUBLE_EQ(engine.flops_per_step(), flops);
  // 7 forward, 6 input-gradient, 6 weight-gradient, 7 optimizer kernels at A100's 5 us
  const double expected = flops / (19.5e12 * 0.5) + 26 * 5e-6;
  EXPECT_NEAR(rec.train_rows[0].compute_time[0], expected, 1e-9);
}

TEST_F(DdpTest, DivergenceStopsTheRunAndSaysSo) {
  Scenario s = small_ddp(2);
  s.optimizer.name = OptimizerKind::Sgd;
  s.optimizer.lr = 1e6;
  s.workload.steps = 50;
  MemoryRecorder rec;
  Engine engine(s, *data_);
  auto summary = engine.run(rec);
  EXPECT_EQ(summary.status, testbed::RunStatus::Diverged);
  EXPECT_LT(summary.steps_completed, 50);
  ASSERT_FALSE(rec.train_rows.empty());
  EXPECT_FALSE(std::isfinite(rec.train_rows.back().loss[0]) && std::isfinite(rec.train_rows.back().loss[1]));
}

}  // namespace
}  // namespace testbed

namespace testbed {
namespace {

TEST_F(DdpTest, SlowNodeSetsThePaceOfEveryStep) {
  Scenario fast = small_ddp(2);
  Scenario mixed = small_ddp(2);
  mixed.compute.speeds = {1.0, 0.25};
  MemoryRecorder fast_rec, mixed_rec;
  Engine(fast, *data_).run(fast_rec);
  Engine(mixed, *data_).run(mixed_rec);
  const double step = fast.compute.step_time.s;
  const double latency = fast.topology.link.latency.s;
  double previous = 0;
  for (const auto& row : mixed_rec.train_rows) {
    EXPECT_DOUBLE_EQ(row.compute_time[0], step);
    EXPECT_DOUBLE_EQ(row.compute_time[1], 4 * step);
    // DDP waits for the slowest: no node finishes before the slow one computed and sent.
    for (double t : row.time) EXPECT_GE(t - previous, 4 * step + latency);
    previous = *std::max_element(row.time.begin(), row.time.end());
  }
  double fast_end = fast_rec.train_rows.back().time[0];
  EXPECT_GT(previous, fast_end + 2 * step * fast.workload.steps);
}

TEST_F(DdpTest, StragglerNoiseIsReproducible) {
  Scenario s = small_ddp(3);
  s.compute.straggler_sigma = 0.5;
  MemoryRecorder a, b;
  Engine(s, *data_).run(a);
  Engine(s, *data_).run(b);
  ASSERT_EQ(a.train_rows.size(), b.train_rows.size());
  std::set<double> distinct;
  for (size_t i = 0; i < a.train_rows.size(); ++i) {
    EXPECT_EQ(a.train_rows[i].compute_time, b.train_rows[i].compute_time);
    EXPECT_EQ(a.train_rows[i].time, b.train_rows[i].time);
    for (double c : a.train_rows[i].compute_time) distinct.insert(c);
  }
  EXPECT_GT(distinct.size(), a.train_rows.size());  // the noise varies by node and step
}

}  // namespace
}  // namespace testbed
