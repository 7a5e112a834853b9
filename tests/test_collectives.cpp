// Tests for collective plans: a ring all-reduce executed on plain vectors must sum correctly.
#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>

#include "netmodels/collectives.h"

namespace testbed {
namespace {

// Executes `plan` on per-rank vectors (rank r starts with value r*1000 + i at
// element i). Messages run in a topological order of `after`; each snapshots
// the sender's chunk when it is sent and is applied when it arrives. Sends are
// done in rounds (all ready messages snapshot, then all apply) to model
// concurrency, which also catches plans that read a chunk before it is final.
std::vector<std::vector<double>> execute(const CollectivePlan& plan, const std::vector<int64_t>& sizes) {
  const int p = plan.ranks;
  std::vector<std::vector<double>> data(p);
  for (int r = 0; r < p; ++r) {
    data[r].resize(sizes[r]);
    for (int64_t i = 0; i < sizes[r]; ++i) data[r][i] = r * 1000.0 + static_cast<double>(i);
  }

  const size_t m = plan.messages.size();
  std::vector<bool> done(m, false);
  size_t completed = 0;
  while (completed < m) {
    std::vector<std::pair<size_t, std::vector<double>>> in_flight;
    for (size_t i = 0; i < m; ++i) {
      if (done[i]) continue;
      bool ready = true;
      for (int dep : plan.messages[i].after) ready = ready && done.at(dep);
      if (!ready) continue;
      const auto& msg = plan.messages[i];
      in_flight.emplace_back(i, std::vector<double>(data[msg.src].begin() + msg.offset,
                                                    data[msg.src].begin() + msg.offset + msg.count));
    }
    EXPECT_FALSE(in_flight.empty()) << "dependency cycle";
    if (in_flight.empty()) break;
    for (auto& [i, payload] : in_flight) {
      const auto& msg = plan.messages[i];
      for (int64_t j = 0; j < msg.count; ++j) {
        double& dst = data[msg.dst].at(msg.dst_offset + j);
        dst = msg.op == ChunkOp::Reduce ? dst + payload[j] : payload[j];
      }
      done[i] = true;
      ++completed;
    }
  }
  return data;
}

void check_all_reduce(int p, int64_t n, int elem_bytes) {
  SCOPED_TRACE("p=" + std::to_string(p) + " n=" + std::to_string(n));
  const auto plan = ring_all_reduce(p, n, elem_bytes);
  ASSERT_EQ(plan.ranks, p);
  ASSERT_EQ(plan.inbox.size(), static_cast<size_t>(p));
  EXPECT_EQ(plan.messages.size(), static_cast<size_t>(p == 1 ? 0 : 2 * (p - 1) * p));

  const auto data = execute(plan, std::vector<int64_t>(p, n));
  for (int r = 0; r < p; ++r)
    for (int64_t i = 0; i < n; ++i) {
      const double expected = 1000.0 * p * (p - 1) / 2 + static_cast<double>(p) * i;
      ASSERT_DOUBLE_EQ(data[r][i], expected) << "rank " << r << " element " << i;
    }

  // Each rank sends 2(p-1)/p of the buffer, up to chunk rounding.
  const auto bytes = bytes_sent_per_rank(plan);
  ASSERT_EQ(bytes.size(), static_cast<size_t>(p));
  const double ideal = 2.0 * (p - 1) / p * static_cast<double>(n) * elem_bytes;
  for (int r = 0; r < p; ++r)
    EXPECT_LE(std::abs(static_cast<double>(bytes[r]) - ideal), 2.0 * (p - 1) * elem_bytes)
        << "rank " << r;

  // Every message is in its receiver's inbox exactly once, 2(p-1) per rank.
  std::vector<int> seen(plan.messages.size(), 0);
  for (int r = 0; r < p; ++r) {
    EXPECT_EQ(plan.inbox[r].size(), static_cast<size_t>(p == 1 ? 0 : 2 * (p - 1)));
    for (int i : plan.inbox[r]) {
      EXPECT_EQ(plan.messages.at(i).dst, r);
      ++seen[i];
    }
  }
  for (int s : seen) EXPECT_EQ(s, 1);
  for (const auto& msg : plan.messages) {
    EXPECT_EQ(msg.dst, (msg.src + 1) % p);
    EXPECT_EQ(msg.bytes, static_cast<uint64_t>(msg.count) * elem_bytes);
  }
}

TEST(RingAllReduce, SumsEverywhere) {
  for (int p : {2, 3, 4, 5, 8})
    for (int64_t n : {int64_t{64}, int64_t{101}, int64_t{1000}}) check_all_reduce(p, n, 4);
}

TEST(RingAllReduce, ChunksDifferByAtMostOne) {
  const auto plan = ring_all_reduce(4, 10, 2);  // chunks of 2, 3, 2, 3
  int64_t lo = 1 << 30, hi = 0;
  for (const auto& m : plan.messages) {
    lo = std::min(lo, m.count);
    hi = std::max(hi, m.count);
  }
  EXPECT_LE(hi - lo, 1);
  EXPECT_EQ(lo, 2);
  EXPECT_EQ(hi, 3);
}

TEST(RingAllReduce, Dependencies) {
  const int p = 4;
  const auto plan = ring_all_reduce(p, 100, 4);
  int without_deps = 0;
  for (const auto& m : plan.messages) {
    if (m.after.empty()) {
      ++without_deps;
      EXPECT_EQ(m.op, ChunkOp::Reduce);
      continue;
    }
    ASSERT_EQ(m.after.size(), 1u);
    // A rank forwards what it just received.
    const auto& prev = plan.messages.at(m.after[0]);
    EXPECT_EQ(prev.dst, m.src);
    EXPECT_EQ(prev.offset, m.offset);
  }
  EXPECT_EQ(without_deps, p);  // only the first step starts unprompted
}

TEST(RingAllReduce, OneRank) {
  const auto plan = ring_all_reduce(1, 1000, 4);
  EXPECT_TRUE(plan.messages.empty());
  ASSERT_EQ(plan.inbox.size(), 1u);
  EXPECT_TRUE(plan.inbox[0].empty());
  EXPECT_EQ(bytes_sent_per_rank(plan), (std::vector<uint64_t>{0}));
  check_all_reduce(1, 10, 4);
}

TEST(RingAllReduce, FewerElementsThanRanks) {
  check_all_reduce(5, 3, 4);  // some chunks are empty
  check_all_reduce(4, 0, 8);
  const auto plan = ring_all_reduce(5, 3, 4);
  uint64_t total = 0;
  for (auto b : bytes_sent_per_rank(plan)) total += b;
  EXPECT_EQ(total, 2u * 4 * 3 * 4);  // each element crosses 2(p-1) links
}

TEST(RingAllReduce, BadInput) {
  EXPECT_THROW(ring_all_reduce(0, 10, 4), std::invalid_argument);
  EXPECT_THROW(ring_all_reduce(2, -1, 4), std::invalid_argument);
}

TEST(RingAllGather, EveryRankEndsWithEveryBlockInRankOrder) {
  for (int p : {1, 2, 3, 5}) {
    const int64_t k = 7;
    SCOPED_TRACE("p=" + std::to_string(p));
    const auto plan = ring_all_gather(p, k, 4);
    EXPECT_EQ(plan.messages.size(), static_cast<size_t>(p * (p - 1)));
    const auto data = execute(plan, std::vector<int64_t>(p, p * k));
    for (int r = 0; r < p; ++r)
      for (int q = 0; q < p; ++q)
        for (int64_t i = 0; i < k; ++i)  // block q as rank q started with it
          ASSERT_EQ(data[r][q * k + i], q * 1000.0 + static_cast<double>(q * k + i)) << r << " " << q;
    // (p-1)/p of the gathered buffer leaves each rank: p-1 blocks of k values.
    for (uint64_t b : bytes_sent_per_rank(plan)) EXPECT_EQ(b, static_cast<uint64_t>((p - 1) * k * 4));
    for (const auto& m : plan.messages) {
      EXPECT_EQ(m.dst, (m.src + 1) % p);
      EXPECT_EQ(m.op, ChunkOp::Copy);
    }
  }
}

TEST(NeighbourExchange, EachRankReceivesEachNeighboursBlock) {
  // A line 0-1-2-3 plus the chord 0-2: degrees 2, 2, 3, 1.
  const std::vector<std::vector<int>> neighbours = {{1, 2}, {0, 2}, {1, 3, 0}, {2}};
  const int64_t k = 5;
  const auto plan = neighbour_exchange(neighbours, k, 4);
  std::vector<int64_t> sizes;
  for (const auto& n : neighbours) sizes.push_back((1 + static_cast<int64_t>(n.size())) * k);
  const auto data = execute(plan, sizes);
  for (int r = 0; r < 4; ++r) {
    for (size_t j = 0; j < neighbours[r].size(); ++j) {
      const int q = neighbours[r][j];
      for (int64_t i = 0; i < k; ++i)
        ASSERT_EQ(data[r][(j + 1) * k + i], q * 1000.0 + static_cast<double>(i)) << r << " from " << q;
    }
    for (int64_t i = 0; i < k; ++i) ASSERT_EQ(data[r][i], r * 1000.0 + static_cast<double>(i));  // own block kept
  }
  // degree x k values leave each rank, in one step.
  const auto bytes = bytes_sent_per_rank(plan);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(bytes[r], neighbours[r].size() * k * 4);
  for (const auto& m : plan.messages) EXPECT_TRUE(m.after.empty());
}

TEST(NeighbourExchange, RejectsAsymmetricOrBadNeighbours) {
  EXPECT_THROW(neighbour_exchange({{1}, {}}, 3, 4), std::invalid_argument);
  EXPECT_THROW(neighbour_exchange({{0}}, 3, 4), std::invalid_argument);
  EXPECT_THROW(neighbour_exchange({{2}, {0}}, 3, 4), std::invalid_argument);
}

}  // namespace
}  // namespace testbed
