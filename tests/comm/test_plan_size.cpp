// Tests for plan sizes without building plans: the counts every memory estimate starts from
// must equal the messages and dependencies of the plans the builders make.
#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "comm/plans/collectives.h"
#include "comm/plans/plan_size.h"

namespace testbed {
namespace plan_size_tests {  // its own names: network_tests compiles as one unity file
namespace {

PlanSize counted(const CollectivePlan& plan) {
  PlanSize out;
  out.messages = static_cast<int64_t>(plan.messages.size());
  std::set<std::pair<int, int>> pairs;
  for (const auto& m : plan.messages) {
    out.waits += static_cast<int64_t>(m.after.size());
    pairs.insert({m.src, m.dst});
  }
  out.pairs = static_cast<int64_t>(pairs.size());
  return out;
}

CollectiveOptions with(CollectiveAlgorithm algorithm, int slices = 1) {
  CollectiveOptions o;
  o.algorithm = algorithm;
  o.slices = slices;
  return o;
}

// Enough elements that every chunk splits into every slice.
constexpr int64_t kElements = 5000;

TEST(PlanSize, HandCountedSmallCases) {
  // Ring over 4: 6 steps of 4 messages; every step after the first waits for one.
  EXPECT_EQ(all_reduce_size(with(CollectiveAlgorithm::Ring), 4).messages, 24);
  EXPECT_EQ(all_reduce_size(with(CollectiveAlgorithm::Ring), 4).waits, 20);
  // Direct over 4: 12 chunks to owners, 12 copies each after the owner's 3 chunks.
  EXPECT_EQ(all_reduce_size(with(CollectiveAlgorithm::Direct), 4).messages, 24);
  EXPECT_EQ(all_reduce_size(with(CollectiveAlgorithm::Direct), 4).waits, 36);
  // Parameter server over 5: 4 pushes, 4 pulls each after the 4 pushes.
  EXPECT_EQ(all_reduce_size(with(CollectiveAlgorithm::ParameterServer), 5).messages, 8);
  EXPECT_EQ(all_reduce_size(with(CollectiveAlgorithm::ParameterServer), 5).waits, 16);
  // Halving-doubling over 3: a fold, 2 halving, 2 doubling, an unfold; waits 1 + 3 + 3.
  EXPECT_EQ(all_reduce_size(with(CollectiveAlgorithm::HalvingDoubling), 3).messages, 6);
  EXPECT_EQ(all_reduce_size(with(CollectiveAlgorithm::HalvingDoubling), 3).waits, 7);
  // 20 000 ranks, the run issue 15 found: 8e8 ring messages.
  EXPECT_EQ(all_reduce_size(with(CollectiveAlgorithm::Ring), 20000).messages, int64_t{2} * 19999 * 20000);
  EXPECT_EQ(all_reduce_size(with(CollectiveAlgorithm::Ring), 1).messages, 0);
}

TEST(PlanSize, AllReduceEqualsTheBuiltPlans) {
  for (int p = 1; p <= 13; ++p) {
    for (auto algorithm : {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree, CollectiveAlgorithm::HalvingDoubling,
                           CollectiveAlgorithm::Direct, CollectiveAlgorithm::ParameterServer}) {
      for (int slices : {1, 3}) {
        SCOPED_TRACE("p " + std::to_string(p) + " algorithm " + std::to_string(static_cast<int>(algorithm)) +
                     " slices " + std::to_string(slices));
        CollectiveOptions o = with(algorithm, slices);
        o.server = p / 2;
        const PlanSize expected = counted(all_reduce(o, p, kElements, 4));
        const PlanSize got = all_reduce_size(o, p);
        EXPECT_EQ(got.messages, expected.messages);
        EXPECT_EQ(got.waits, expected.waits);
        if (algorithm != CollectiveAlgorithm::Tree) EXPECT_EQ(got.pairs, expected.pairs);
      }
    }
  }
}

// The double binary tree's two trees share a few edges (one from 3 ranks, more as p grows),
// which the size counts twice: its pairs are an upper bound, within a third of the truth.
TEST(PlanSize, TreePairsUpToSixtyFourRanks) {
  for (int p = 2; p <= 64; ++p) {
    const CollectiveOptions o = with(CollectiveAlgorithm::Tree);
    const int64_t built = counted(all_reduce(o, p, kElements, 4)).pairs;
    EXPECT_GE(all_reduce_size(o, p).pairs, built) << p;
    EXPECT_LE(3 * all_reduce_size(o, p).pairs, 4 * built + 2) << p;
  }
}

TEST(PlanSize, HierarchicalEqualsTheBuiltPlans) {
  const std::vector<std::vector<int>> clusters = {
      {0}, {0, 0, 0}, {0, 1}, {0, 0, 1, 1}, {0, 1, 0, 1, 2}, {3, 3, 3, 7, 7, 9, 9, 9, 9}, {0, 1, 2, 3, 4, 5}};
  for (const auto& cluster_of : clusters) {
    for (int slices : {1, 2}) {
      CollectiveOptions o = with(CollectiveAlgorithm::Hierarchical, slices);
      o.cluster_of = cluster_of;
      const int p = static_cast<int>(cluster_of.size());
      const PlanSize expected = counted(all_reduce(o, p, kElements, 4));
      const PlanSize got = all_reduce_size(o, p);
      EXPECT_EQ(got.messages, expected.messages) << p << " ranks, slices " << slices;
      EXPECT_EQ(got.waits, expected.waits) << p << " ranks, slices " << slices;
      EXPECT_EQ(got.pairs, expected.pairs) << p << " ranks, slices " << slices;
    }
  }
}

TEST(PlanSize, AllGatherAndNeighbourExchangeEqualTheBuiltPlans) {
  for (int p = 1; p <= 9; ++p) {
    for (auto algorithm : {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Direct, CollectiveAlgorithm::Tree}) {
      for (int slices : {1, 2}) {
        const CollectiveOptions o = with(algorithm, slices);
        const PlanSize expected = counted(all_gather(o, p, kElements, 4));
        EXPECT_EQ(all_gather_size(o, p).messages, expected.messages) << p;
        EXPECT_EQ(all_gather_size(o, p).waits, expected.waits) << p;
        EXPECT_EQ(all_gather_size(o, p).pairs, expected.pairs) << p;
      }
    }
  }
  // A ring of 5 and a star of 4 leaves.
  const std::vector<std::vector<std::vector<int>>> graphs = {{{1, 4}, {0, 2}, {1, 3}, {2, 4}, {3, 0}},
                                                             {{1, 2, 3, 4}, {0}, {0}, {0}, {0}}};
  for (const auto& neighbours : graphs) {
    std::vector<int> degrees;
    for (const auto& n : neighbours) degrees.push_back(static_cast<int>(n.size()));
    const PlanSize expected = counted(neighbour_exchange(neighbours, kElements, 4));
    EXPECT_EQ(neighbour_exchange_size(degrees).messages, expected.messages);
    EXPECT_EQ(neighbour_exchange_size(degrees).waits, 0);
    EXPECT_EQ(neighbour_exchange_size(degrees).pairs, expected.pairs);
  }
}

TEST(PlanSize, AllGathersSizeIsTheReduceScattersToo) {
  // By hand: a ring over 4 in 2 slices is 3 steps of 8 pieces, the last two waiting for one
  // each; direct over 4 is 12 blocks, each straight to its owner.
  EXPECT_EQ(all_gather_size(with(CollectiveAlgorithm::Ring, 2), 4).messages, 24);
  EXPECT_EQ(all_gather_size(with(CollectiveAlgorithm::Ring, 2), 4).waits, 16);
  EXPECT_EQ(all_gather_size(with(CollectiveAlgorithm::Direct), 4).messages, 12);
  EXPECT_EQ(all_gather_size(with(CollectiveAlgorithm::Direct), 4).waits, 0);
  for (int p = 1; p <= 9; ++p) {
    for (auto algorithm : {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Direct, CollectiveAlgorithm::Tree,
                           CollectiveAlgorithm::HalvingDoubling, CollectiveAlgorithm::ParameterServer}) {
      for (int slices : {1, 3}) {
        const CollectiveOptions o = with(algorithm, slices);
        // Blocks of 600: the buffer must split into p of them, each into every slice.
        const PlanSize expected = counted(reduce_scatter(o, p, p * int64_t{600}, 4));
        EXPECT_EQ(all_gather_size(o, p).messages, expected.messages) << p;
        EXPECT_EQ(all_gather_size(o, p).waits, expected.waits) << p;
        EXPECT_EQ(all_gather_size(o, p).pairs, expected.pairs) << p;
      }
    }
  }
}

}  // namespace
}  // namespace plan_size_tests
}  // namespace testbed
