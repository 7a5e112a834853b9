// Partitions: IID, Dirichlet label skew and whole categories cover the data exactly once.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "training/data/partition.h"

namespace testbed {
namespace {

std::vector<int64_t> labels(int64_t n, int classes) {
  std::vector<int64_t> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = (i * 7919) % classes;
  return out;
}

void expect_exact_cover(const std::vector<std::vector<int64_t>>& shards, int64_t n) {
  std::vector<int> seen(n, 0);
  for (const auto& shard : shards) {
    EXPECT_FALSE(shard.empty());
    for (int64_t i : shard) ++seen.at(i);
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
}

// Mean over labels of the largest share of that label held by one node: 1/parts when
// every node has its fair share, 1 when each label lives on a single node.
double label_concentration(const std::vector<std::vector<int64_t>>& shards, const std::vector<int64_t>& groups,
                           int classes) {
  std::vector<std::vector<int>> count(classes, std::vector<int>(shards.size(), 0));
  for (size_t node = 0; node < shards.size(); ++node) {
    for (int64_t i : shards[node]) ++count[groups[i]][node];
  }
  double total = 0;
  for (const auto& per_node : count) {
    int all = 0;
    for (int c : per_node) all += c;
    total += static_cast<double>(*std::max_element(per_node.begin(), per_node.end())) / all;
  }
  return total / classes;
}

TEST(Partition, IidShardsAreEqualAndDisjoint) {
  auto shards = iid_partition(1003, 4, 1);
  std::vector<int> seen(1003, 0);
  for (const auto& s : shards) {
    EXPECT_EQ(s.size(), 250u);
    for (int64_t i : s) ++seen[i];
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 1000);  // the remainder 3 is left out
  EXPECT_EQ(shards, iid_partition(1003, 4, 1));
  EXPECT_NE(shards, iid_partition(1003, 4, 2));
}

TEST(Partition, DirichletCoversEverySampleExactlyOnce) {
  auto groups = labels(6000, 10);
  for (double alpha : {100.0, 1.0, 0.1, 0.01}) {
    auto shards = dirichlet_partition(groups, 10, 8, alpha, 5);
    expect_exact_cover(shards, 6000);
  }
}

TEST(Partition, DirichletGetsMoreSkewedAsAlphaFalls) {
  auto groups = labels(20000, 10);
  double previous = 0;
  for (double alpha : {1000.0, 10.0, 1.0, 0.1, 0.01}) {
    // Averaged over seeds so one lucky draw cannot decide the order.
    double skew = 0;
    for (uint64_t seed = 0; seed < 5; ++seed) {
      skew += label_concentration(dirichlet_partition(groups, 10, 4, alpha, seed), groups, 10) / 5;
    }
    EXPECT_GT(skew, previous) << "alpha " << alpha;
    previous = skew;
  }
  EXPECT_LT(label_concentration(dirichlet_partition(groups, 10, 4, 1000.0, 0), groups, 10), 0.3);
  EXPECT_GT(previous, 0.95);
}

TEST(Partition, DirichletIsSeeded) {
  auto groups = labels(5000, 10);
  EXPECT_EQ(dirichlet_partition(groups, 10, 4, 0.5, 3), dirichlet_partition(groups, 10, 4, 0.5, 3));
  EXPECT_NE(dirichlet_partition(groups, 10, 4, 0.5, 3), dirichlet_partition(groups, 10, 4, 0.5, 4));
}

TEST(Partition, CategoryGivesWholeGroupsToNodes) {
  auto groups = labels(3000, 15);
  auto shards = category_partition(groups, 15, 4);
  expect_exact_cover(shards, 3000);
  for (int node = 0; node < 4; ++node) {
    for (int64_t i : shards[node]) EXPECT_EQ(groups[i] % 4, node);
  }
}

TEST(Partition, CategoryWithMoreNodesThanGroupsSharesGroups) {
  auto groups = labels(3000, 3);
  auto shards = category_partition(groups, 3, 7);
  expect_exact_cover(shards, 3000);
  for (int node = 0; node < 7; ++node) {
    for (int64_t i : shards[node]) EXPECT_EQ(groups[i], node % 3);
  }
}

TEST(Partition, SamplerDrawsEachShardSampleOncePerEpoch) {
  std::vector<int64_t> shard = {5, 9, 11, 42, 77, 100};
  ShardSampler sampler(shard, 3);
  auto epoch = sampler.next(6);
  std::vector<int64_t> drawn(epoch.data_ptr<int64_t>(), epoch.data_ptr<int64_t>() + 6);
  std::sort(drawn.begin(), drawn.end());
  EXPECT_EQ(drawn, shard);
}

}  // namespace
}  // namespace testbed

namespace testbed {
namespace {

// The evaluation sample covers the whole split (the GPT's held-out text is documents laid
// end to end, so the first windows would be one or two documents).
TEST(SeededSubset, SpreadSortedDistinctAndReproducible) {
  const int64_t n = 10000, count = 256;
  auto a = seeded_subset(n, count, 11);
  ASSERT_EQ(a.size(), static_cast<size_t>(count));
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::adjacent_find(a.begin(), a.end()), a.end());  // sorted and no neighbours equal: distinct
  EXPECT_GE(a.front(), 0);
  EXPECT_LT(a.back(), n);
  EXPECT_LT(a.front(), n / 10);
  EXPECT_GT(a.back(), 9 * n / 10);
  // Every tenth of the split holds some of the sample (256 draws: each tenth ~25).
  std::vector<int> per_tenth(10, 0);
  for (auto i : a) ++per_tenth[i * 10 / n];
  for (int c : per_tenth) EXPECT_GE(c, 10);
  EXPECT_EQ(seeded_subset(n, count, 11), a);
  EXPECT_NE(seeded_subset(n, count, 12), a);
}

TEST(SeededSubset, AllWhenAskedForAsManyOrNone) {
  const std::vector<int64_t> all = {0, 1, 2, 3, 4};
  EXPECT_EQ(seeded_subset(5, 5, 1), all);
  EXPECT_EQ(seeded_subset(5, 9, 1), all);
  EXPECT_EQ(seeded_subset(5, 0, 1), all);
}

}  // namespace
}  // namespace testbed
