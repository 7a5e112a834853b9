// DeAR: its fusion groups by the reference's rule worked by hand, its timeline (reduce-scatters
// during backward, all-gathers gating the next forward) pinned by hand on the alpha-beta
// network, and its parameters against DDP's.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "sim/core/compute/compute_model.h"
#include "tests/support/overlap_scenario.h"
#include "training/algorithms/dear.h"

namespace testbed {
namespace {

void expect_group(const DearGroup& g, std::vector<int> tensors, int64_t elements) {
  EXPECT_EQ(g.tensors, tensors);
  EXPECT_EQ(g.elements, elements);
}

TEST(DearGroups, FollowTheReferencesRule) {
  // The test MLP below, a layer per module: fc1 is 525312 floats (2.0039 MiB), fc2 524800
  // (2.0020 MiB), fc3 5130 (0.0196 MiB). Under 3 MiB: fc1 alone (fc2 would make 4.006); fc2
  // and fc3 (2.0215 < 3).
  const std::vector<int64_t> mlp = {524288, 1024, 524288, 512, 5120, 10};
  const std::vector<int> layers = {0, 0, 1, 1, 2, 2};
  auto g = dear_groups(mlp, layers, 3);
  ASSERT_EQ(g.size(), 2u);
  expect_group(g[0], {0, 1}, 525312);
  expect_group(g[1], {2, 3, 4, 5}, 529930);
  g = dear_groups(mlp, layers, 25);  // the default: one group
  ASSERT_EQ(g.size(), 1u);
  expect_group(g[0], {0, 1, 2, 3, 4, 5}, 1055242);
  // Strictly under: three modules of 1 MiB each under a threshold of 2 MiB make three groups
  // (1 + 1 is not under 2); under 2.5 the first two share one. A module larger than the
  // threshold still joins an empty group. Without layers, a tensor is a module.
  const std::vector<int64_t> mib = {262144, 262144, 262144};
  EXPECT_EQ(dear_groups(mib, {}, 2).size(), 3u);
  g = dear_groups(mib, {}, 2.5);
  ASSERT_EQ(g.size(), 2u);
  expect_group(g[0], {0, 1}, 524288);
  expect_group(g[1], {2}, 262144);
  EXPECT_EQ(dear_groups(mib, {}, 0.5).size(), 3u);
  // Forward order, not registration order: a GPT registers its head (forward layer 3) before
  // its blocks (1, 2).
  g = dear_groups({262144, 262144, 262144, 262144}, {0, 3, 1, 2}, 2.5);
  ASSERT_EQ(g.size(), 2u);
  expect_group(g[0], {0, 2}, 524288);
  expect_group(g[1], {3, 1}, 524288);
  // Padding to a multiple of the world size always adds something.
  EXPECT_EQ(dear_padded(10, 4), 12);
  EXPECT_EQ(dear_padded(12, 4), 16);
  EXPECT_EQ(dear_padded(525312, 2), 525314);
}

using Dear = OverlapMlp;

// Two groups (bucket_mb 3): group 1 (fc2, fc3) is ready when fc2's backward ends, group 0 (fc1)
// at the end of backward. Each step ends when both reduce-scatters are done; group 0's
// all-gather starts then, and the next forward waits for it at fc1, starts group 1's and runs
// fc1's forward, then waits at fc2 for group 1's. The run's last step ends after its gathers.
void expect_timeline(const EngineRun& r, double bps) {
  const double T = 0.05, alpha = 100e-6;
  const double f1 = 2.0 * 512 * 1024, f2 = 2.0 * 1024 * 512, f3 = 2.0 * 512 * 10;
  const double total = (f1 + f2 + f3) + (2 * f3 + 2 * f2 + f1);
  const double group1_ready = T * ((f1 + f2 + f3) + (2 * f3 + 2 * f2)) / total;
  const double fc1_forward = T * f1 / total;
  // Padded to even sizes; on two nodes each half is one message of half the buffer.
  const double n0 = 525312 + 2, n1 = 529930 + 2;
  auto half = [&](double n) { return alpha + n / 2 * 4 * 8 / bps; };
  const double step_end = std::max(T, group1_ready + half(n1)) + half(n0);  // from the step's start
  const double next_start = step_end + half(n0) + std::max(fc1_forward, half(n1)) - fc1_forward;
  ASSERT_EQ(r.record.train_rows.size(), 3u);
  for (int n = 0; n < 2; ++n) {
    EXPECT_NEAR(r.record.train_rows[0].time[n], step_end, 1e-8);
    EXPECT_NEAR(r.record.train_rows[1].time[n], next_start + step_end, 1e-8);
    EXPECT_NEAR(r.record.train_rows[2].time[n], 2 * next_start + step_end + half(n0) + half(n1), 1e-8);
    // Each node sends half of each padded group twice (its reduce-scatter and gather shares).
    for (int step = 0; step < 3; ++step)
      EXPECT_EQ(r.record.train_rows[step].bytes[n], static_cast<uint64_t>(4 * (n0 + n1)));
  }
}

TEST_F(Dear, TimelinePinnedByHandWhenTheForwardHidesTheGather) {
  const EngineRun r = run({"algorithm={name: dear, bucket_mb: 3}"});
  // fc1's forward (~9.9 ms) outlasts group 1's gather (~8.6 ms at 1 Gbps).
  expect_timeline(r, 1e9);
  // Per step: two reduce-scatters then two all-gathers of one message each way.
  ASSERT_EQ(r.record.messages.size(), 3u * 4 * 2);
  EXPECT_EQ(r.record.messages[0].kind, "reduce_scatter.1");
  EXPECT_EQ(r.record.messages[2].kind, "reduce_scatter.0");
  EXPECT_EQ(r.record.messages[4].kind, "all_gather.0");
  EXPECT_EQ(r.record.messages[6].kind, "all_gather.1");
}

TEST_F(Dear, TimelinePinnedByHandWhenTheForwardWaitsForTheGather) {
  // At 100 Mbps group 1's gather (~85 ms) outlasts fc1's forward: fc2's forward waits.
  expect_timeline(run({"algorithm={name: dear, bucket_mb: 3}", "topology.link.bandwidth=100Mbps"}), 1e8);
}

// Under the flops model the update takes a share of the step, and DeAR spends it at the next
// forward's gates, each group's part in proportion to its padded size, just before its layers.
// The passes' seconds come from the roofline (tested on its own); the timeline from them is
// worked here: step k's forward starts at S, group 1 is ready when backward has passed fc2, the
// step ends when both reduce-scatters are done; then the gather of group 0 (the forward waits
// for it at fc1), group 0's share of the update, the forward up to fc2, the wait for group 1's
// gather, group 1's share; the rest of the step runs from there.
TEST_F(Dear, UpdateSpreadOverTheGatesBySize) {
  for (const char* bandwidth : {"100Mbps", "400Gbps"}) {
    const bool slow = std::string(bandwidth) == "100Mbps";
    const double bps = slow ? 1e8 : 4e11, alpha = slow ? 100e-6 : 1e-6;
    const Scenario s = scenario({"algorithm={name: dear, bucket_mb: 3}", "compute={model: flops, device: t4}",
                                 std::string("topology.link.bandwidth=") + bandwidth,
                                 slow ? "topology.link.latency=100us" : "topology.link.latency=1us"});
    const TrainingWork work = training_work(s, *make_model(s));
    const StepCost cost = roofline(work, compute_roof(s.compute));
    size_t fc2 = 0;
    while (work.layers.at(fc2).name != "fc2") ++fc2;
    double F = 0, B = 0, before_fc2 = 0, backward_to_fc2 = 0;
    for (size_t l = 0; l < work.layers.size(); ++l) {
      F += cost.forward[l];
      B += cost.backward[l];
      if (l < fc2) before_fc2 += cost.forward[l];
      if (l >= fc2) backward_to_fc2 += cost.backward[l];
    }
    const double U = cost.update;
    ASSERT_GT(U, 1e-5);  // AdamW over a million parameters: a share worth pinning
    const double n0 = 525312 + 2, n1 = 529930 + 2;
    const double u0 = U * n0 / (n0 + n1), u1 = U * n1 / (n0 + n1);
    auto half = [&](double n) { return alpha + n / 2 * 4 * 8 / bps; };
    // From a step's start to its end (both reduce-scatters in).
    const double to_end = std::max(F + B, F + backward_to_fc2 + half(n1)) + half(n0);
    // From a step's end to the next step's (virtual) start: the gates, less the forward before fc2.
    const double to_start = std::max(half(n0) + u0 + before_fc2, half(n0) + half(n1)) + u1 - before_fc2;
    const double last_gates = half(n0) + std::max(u0, half(n1)) + u1;  // no forward follows
    if (slow) ASSERT_GT(half(n1), u0 + before_fc2);                    // fc2's forward waits for the gather
    if (!slow) ASSERT_LT(half(n1), u0 + before_fc2);                   // the update and fc1 hide it
    const EngineRun r = run_engine(s, *data_);
    ASSERT_EQ(r.record.train_rows.size(), 3u);
    for (int n = 0; n < 2; ++n) {
      EXPECT_NEAR(r.record.train_rows[0].time[n], to_end, 1e-8) << bandwidth;
      EXPECT_NEAR(r.record.train_rows[1].time[n], to_end + to_start + to_end, 1e-8) << bandwidth;
      EXPECT_NEAR(r.record.train_rows[2].time[n], 3 * to_end + 2 * to_start + last_gates, 1e-8) << bandwidth;
    }
  }
}

TEST_F(Dear, TrainsLikeDdp) {
  const auto initial = flatten_parameters(*make_model(scenario()));
  // Two nodes: every sum has two terms, so DeAR's reduce-scatter and gather give DDP's ring
  // all-reduce bit for bit, at the default (one group) and with two groups.
  const EngineRun ddp = run({"algorithm={name: ddp, overlap: false}"});
  EXPECT_GT((ddp.parameters[0] - initial).abs().max().item<double>(), 1e-3);
  for (const char* groups : {"algorithm={name: dear}", "algorithm={name: dear, bucket_mb: 3}"}) {
    const EngineRun dear = run({groups});
    for (int n = 0; n < 2; ++n) EXPECT_TRUE(torch::equal(dear.parameters[n], ddp.parameters[n])) << groups;
  }
  // Three nodes, SGD with momentum: equal up to the order of three summands.
  const std::vector<std::string> three = {"nodes=3", "optimizer={name: sgd, lr: 0.05, momentum: 0.9}"};
  auto with = [&](const char* algorithm) {
    auto sets = three;
    sets.push_back(algorithm);
    return run(sets);
  };
  const EngineRun ddp3 = with("algorithm={name: ddp, overlap: false}");
  const EngineRun dear3 = with("algorithm={name: dear, bucket_mb: 3}");
  for (int n = 1; n < 3; ++n) EXPECT_TRUE(torch::equal(dear3.parameters[0], dear3.parameters[n]));
  EXPECT_GT((ddp3.parameters[0] - initial).abs().max().item<double>(), 1e-3);
  EXPECT_LT((dear3.parameters[0] - ddp3.parameters[0]).abs().max().item<double>(), 1e-6);
}

// The GPT registers its head before its blocks: groups in forward order gather tensors from
// across the flat vector, and put each back in its place.
TEST_F(Dear, GroupsInForwardOrderTrainLikeDdp) {
  const EngineRun ddp = run_gpt(32, "algorithm={name: ddp, overlap: false}");
  const EngineRun dear = run_gpt(32, "algorithm={name: dear, bucket_mb: 0.01}");  // a group every few layers
  for (int n = 0; n < 2; ++n) EXPECT_TRUE(torch::equal(dear.parameters[n], ddp.parameters[n]));
}

}  // namespace
}  // namespace testbed
