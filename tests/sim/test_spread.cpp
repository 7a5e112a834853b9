// The pieces of a run spread over processes that are plain functions: which process trains
// which node, a plan as it crosses between processes, and the agreement's Gram pass split over
// column ranges (tests/spread_run.sh runs real processes against one).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "sim/dist/placement.h"
#include "sim/dist/plan_wire.h"
#include "training/metrics.h"

namespace testbed {
namespace {

TEST(Placement, ContiguousBlocksWithNodeZeroOnRankZero) {
  // 8 nodes over 3 processes, by hand: floor(8 r / 3) rounds to 3, 3, 2.
  const std::vector<int> expected{0, 0, 0, 1, 1, 1, 2, 2};
  for (int n = 0; n < 8; ++n) EXPECT_EQ((ReplicaPlacement{8, 3, 0}.owner(n)), expected[n]) << n;
  EXPECT_TRUE((ReplicaPlacement{8, 3, 1}.local(4)));
  EXPECT_FALSE((ReplicaPlacement{8, 3, 1}.local(6)));
  // As many processes as nodes: one each.
  for (int n = 0; n < 5; ++n) EXPECT_EQ((ReplicaPlacement{5, 5, 0}.owner(n)), n);
  // Tags: distinct per kind and sequence, below 2^31 (c10d's int).
  EXPECT_NE(wire_tag(TagKind::PlanHead, 7), wire_tag(TagKind::Payload, 7));
  EXPECT_NE(wire_tag(TagKind::PlanHead, 7), wire_tag(TagKind::PlanHead, 8));
  EXPECT_LT(wire_tag(TagKind::Eval, (uint64_t{1} << 40) + 5), uint32_t{1} << 31);
}

TEST(PlanWire, EveryFieldSurvivesButTheValues) {
  PlanOutline plan;
  plan.loss = 2.302585092994046;
  plan.compute_time = 0.0123;
  plan.extra_time = 0.0004;
  CommOp a;
  a.kind = CommKind::NeighbourExchange;
  a.tag = "gossip.0";
  a.buffer = torch::arange(5, torch::kFloat32);
  a.bytes_per_element = 0.5;
  a.delay = kDueAtEnd;
  a.nodes = {4, 1, 3};
  a.after_gradient = 7;
  CommOp b;
  b.kind = CommKind::AllGather;
  b.tag = "";
  b.buffer = torch::zeros({3}, torch::kFloat32);
  b.before_forward = 2;
  b.after_forward = 4;
  b.pipelined = true;
  plan.comm = {a, b};
  const PlanOutline got = decode_plan(encode_plan(plan));
  EXPECT_EQ(got.loss, plan.loss);
  EXPECT_EQ(got.compute_time, plan.compute_time);
  EXPECT_EQ(got.extra_time, plan.extra_time);
  ASSERT_EQ(got.comm.size(), 2u);
  EXPECT_EQ(got.comm[0].kind, CommKind::NeighbourExchange);
  EXPECT_EQ(got.comm[0].tag, "gossip.0");
  EXPECT_EQ(got.comm[0].buffer.numel(), 5);
  EXPECT_EQ(got.comm[0].bytes_per_element, 0.5);
  EXPECT_EQ(got.comm[0].delay, kDueAtEnd);
  EXPECT_EQ(got.comm[0].nodes, (std::vector<int>{4, 1, 3}));
  EXPECT_EQ(got.comm[0].after_gradient, 7);
  EXPECT_EQ(got.comm[0].before_forward, -1);
  EXPECT_EQ(got.comm[1].kind, CommKind::AllGather);
  EXPECT_EQ(got.comm[1].tag, "");
  EXPECT_EQ(got.comm[1].buffer.numel(), 3);
  EXPECT_EQ(got.comm[1].delay, 0);
  EXPECT_TRUE(got.comm[1].nodes.empty());
  EXPECT_EQ(got.comm[1].after_gradient, -1);
  EXPECT_EQ(got.comm[1].before_forward, 2);
  EXPECT_EQ(got.comm[1].after_forward, 4);
  EXPECT_EQ(got.comm[0].after_forward, -1);
  EXPECT_TRUE(got.comm[1].pipelined);
  EXPECT_FALSE(got.comm[0].pipelined);
  // A truncated plan is an error, not a short plan.
  auto wire = encode_plan(plan);
  EXPECT_THROW(decode_plan(wire.narrow(0, 0, wire.numel() - 1)), std::runtime_error);
}

// Three processes' column ranges, each a whole number of blocks, fold to the one-process sums
// bit for bit; a range that starts off a block boundary does not.
TEST(AgreementParts, ColumnRangesFoldToTheWholeBitForBit) {
  torch::manual_seed(3);
  const int64_t n = 5;
  const int64_t block = agreement_block_columns(n);
  ASSERT_EQ(block, (int64_t{1} << 20) / 5);  // kBlockElements / N, by hand
  const int64_t d = 3 * block + 1234;        // four blocks, the last partial
  std::vector<torch::Tensor> replicas;
  auto base = torch::randn({d});
  for (int64_t i = 0; i < n; ++i) replicas.push_back(base + 0.3 * torch::randn({d}));
  const ReplicaAgreement whole = replica_agreement(replicas);

  std::vector<double> means;
  for (const auto& r : replicas) means.push_back(replica_mean(r));
  const auto row_mean = torch::tensor(means, torch::kFloat64).reshape({n, 1});
  auto fold = [&](const std::vector<int64_t>& cuts) {
    AgreementSums sums = start_agreement(n);
    for (size_t p = 0; p + 1 < cuts.size(); ++p) {
      std::vector<torch::Tensor> columns;
      for (const auto& r : replicas) columns.push_back(r.narrow(0, cuts[p], cuts[p + 1] - cuts[p]));
      add_agreement_columns(sums, columns, row_mean, std::min(block, d));
    }
    return finish_agreement(sums, 0, 0);
  };
  const ReplicaAgreement parts = fold({0, block, 3 * block, d});  // blocks 1, 2, 1 (3 processes)
  EXPECT_EQ(parts.mean_correlation, whole.mean_correlation);
  EXPECT_EQ(parts.min_correlation, whole.min_correlation);
  EXPECT_EQ(parts.mean_distance, whole.mean_distance);
  EXPECT_EQ(parts.matrix, whole.matrix);
  // Off the block boundaries the sums group differently: close, not the same bits.
  const ReplicaAgreement shifted = fold({0, block + 1, d});
  EXPECT_NEAR(shifted.mean_correlation, whole.mean_correlation, 1e-12);
  EXPECT_NE(shifted.matrix, whole.matrix);
}

}  // namespace
}  // namespace testbed
