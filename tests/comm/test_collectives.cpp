// Tests for collective plans: every all-reduce algorithm executed on plain vectors must sum
// correctly in any delivery order, and send exactly the bytes its formula says.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <deque>
#include <random>

#include "comm/plans/collectives.h"

namespace testbed {
namespace collectives {  // its own names: network_tests compiles as one unity file
namespace {

// Rank r's buffer starts with value r*1000 + i at element i.
std::vector<std::vector<double>> start_values(const CollectivePlan& plan, const std::vector<int64_t>& sizes) {
  std::vector<std::vector<double>> data(plan.ranks);
  for (int r = 0; r < plan.ranks; ++r) {
    data[r].resize(sizes[r]);
    for (int64_t i = 0; i < sizes[r]; ++i) data[r][i] = r * 1000.0 + static_cast<double>(i);
  }
  return data;
}

// A message lands: the receiver adds its chunk or overwrites with it.
void land(std::vector<std::vector<double>>& data, const CollectiveMessage& msg, const std::vector<double>& payload) {
  for (int64_t j = 0; j < msg.count; ++j) {
    double& dst = data[msg.dst].at(msg.dst_offset + j);
    dst = msg.op == ChunkOp::Reduce ? dst + payload[j] : payload[j];
  }
}

// Executes `plan` on per-rank vectors `data`. Messages run in a topological order
// of `after`; each snapshots the sender's chunk when it is sent and is applied
// when it arrives. Sends are done in rounds (all ready messages snapshot, then
// all apply) to model concurrency, which also catches plans that read a chunk
// before it is final.
std::vector<std::vector<double>> execute_on(const CollectivePlan& plan, std::vector<std::vector<double>> data) {
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
      in_flight.emplace_back(
          i, std::vector<double>(data[msg.src].begin() + msg.offset, data[msg.src].begin() + msg.offset + msg.count));
    }
    EXPECT_FALSE(in_flight.empty()) << "dependency cycle";
    if (in_flight.empty()) break;
    for (auto& [i, payload] : in_flight) {
      land(data, plan.messages[i], payload);
      done[i] = true;
      ++completed;
    }
  }
  return data;
}

// execute_on with rank r starting with value r*1000 + i at element i.
std::vector<std::vector<double>> execute(const CollectivePlan& plan, const std::vector<int64_t>& sizes) {
  return execute_on(plan, start_values(plan, sizes));
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
    EXPECT_LE(std::abs(static_cast<double>(bytes[r]) - ideal), 2.0 * (p - 1) * elem_bytes) << "rank " << r;

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

TEST(DirectBroadcast, EveryRankEndsWithRankZerosBuffer) {
  for (int p : {1, 2, 5}) {
    SCOPED_TRACE("p=" + std::to_string(p));
    const int64_t k = 9;
    const auto plan = direct_broadcast(p, k, 1);  // a byte an element: SPARTA's mask
    const auto data = execute(plan, std::vector<int64_t>(p, k));
    for (int r = 0; r < p; ++r)
      for (int64_t i = 0; i < k; ++i) ASSERT_EQ(data[r][i], static_cast<double>(i)) << r;  // rank 0's values
    // Rank 0 sends k bytes to each of the p - 1 others at once; nobody else sends.
    const auto bytes = bytes_sent_per_rank(plan);
    EXPECT_EQ(bytes[0], static_cast<uint64_t>((p - 1) * k));
    for (int r = 1; r < p; ++r) EXPECT_EQ(bytes[r], 0u);
    ASSERT_EQ(plan.messages.size(), static_cast<size_t>(p - 1));
    for (const auto& m : plan.messages) {
      EXPECT_EQ(m.src, 0);
      EXPECT_TRUE(m.after.empty());
      EXPECT_EQ(m.op, ChunkOp::Copy);
    }
  }
}

// NCCL's pipelined ring broadcast, worked by hand for 4 ranks and 10 elements: pieces of
// 2, 3, 2, 3 elements (p pieces, split as the ring's chunks), each hop forwarding piece j only
// after piece j reached it; every rank but the last sends the whole buffer once. Slips caught: a
// hop waiting for the whole buffer (no pipelining), the root sending to everyone, pieces lost.
TEST(RingBroadcast, PipelinedDownTheRingByHand) {
  const auto plan = ring_broadcast(4, 10, 4);
  ASSERT_EQ(plan.messages.size(), 12u);
  const std::vector<int64_t> begin = {0, 2, 5, 7}, count = {2, 3, 2, 3};
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < 4; ++j) {
      const auto& m = plan.messages[static_cast<size_t>(4 * r + j)];
      SCOPED_TRACE(std::to_string(r) + " " + std::to_string(j));
      EXPECT_EQ(m.src, r);
      EXPECT_EQ(m.dst, r + 1);
      EXPECT_EQ(m.offset, begin[j]);
      EXPECT_EQ(m.dst_offset, begin[j]);
      EXPECT_EQ(m.count, count[j]);
      EXPECT_EQ(m.bytes, static_cast<uint64_t>(4 * count[j]));
      EXPECT_EQ(m.op, ChunkOp::Copy);
      if (r == 0)
        EXPECT_TRUE(m.after.empty());
      else
        EXPECT_EQ(m.after, (std::vector<int>{4 * (r - 1) + j}));
    }
  const auto bytes = bytes_sent_per_rank(plan);
  EXPECT_EQ(bytes, (std::vector<uint64_t>{40, 40, 40, 0}));
  for (int p : {1, 2, 5}) {
    for (int64_t k : {int64_t{0}, int64_t{3}, int64_t{9}}) {  // fewer elements than ranks: fewer pieces
      SCOPED_TRACE("p=" + std::to_string(p) + " k=" + std::to_string(k));
      const auto data = execute(ring_broadcast(p, k, 1), std::vector<int64_t>(p, k));
      for (int r = 0; r < p; ++r)
        for (int64_t i = 0; i < k; ++i) ASSERT_EQ(data[r][i], static_cast<double>(i)) << r;  // rank 0's values
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

// Like execute, but one message lands at a time, picked at random among those in flight:
// a message is snapshot as soon as its dependencies have landed, so a plan whose `after`
// misses a write its chunk needs reads a stale chunk in some order and gets a wrong sum.
std::vector<std::vector<double>> execute_shuffled(const CollectivePlan& plan, const std::vector<int64_t>& sizes,
                                                  unsigned seed) {
  auto data = start_values(plan, sizes);
  const size_t m = plan.messages.size();
  std::vector<bool> sent(m, false), done(m, false);
  std::vector<std::pair<size_t, std::vector<double>>> in_flight;
  std::mt19937 rng(seed);
  size_t completed = 0;
  while (completed < m) {
    for (size_t i = 0; i < m; ++i) {
      if (sent[i]) continue;
      bool ready = true;
      for (int dep : plan.messages[i].after) ready = ready && done.at(dep);
      if (!ready) continue;
      const auto& msg = plan.messages[i];
      sent[i] = true;
      in_flight.emplace_back(
          i, std::vector<double>(data[msg.src].begin() + msg.offset, data[msg.src].begin() + msg.offset + msg.count));
    }
    EXPECT_FALSE(in_flight.empty()) << "dependency cycle";
    if (in_flight.empty()) break;
    const size_t pick = std::uniform_int_distribution<size_t>(0, in_flight.size() - 1)(rng);
    auto [i, payload] = std::move(in_flight[pick]);
    in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(pick));
    land(data, plan.messages[i], payload);
    done[i] = true;
    ++completed;
  }
  return data;
}

std::vector<CollectiveOptions> every_algorithm(int p, int slices) {
  std::vector<CollectiveOptions> out;
  for (const auto& name : collective_algorithm_names()) {
    CollectiveOptions o;
    o.algorithm = collective_algorithm(name);
    o.slices = slices;
    o.server = p - 1;
    // Clusters of two in rank order but with ids out of order, and a ragged last cluster.
    for (int r = 0; r < p; ++r) o.cluster_of.push_back(100 - r / 2);
    out.push_back(o);
  }
  return out;
}

TEST(AllReduceAlgorithms, EveryAlgorithmSumsEverywhereInAnyOrder) {
  for (int p = 1; p <= 9; ++p)
    for (int64_t n : {int64_t{0}, int64_t{3}, int64_t{64}, int64_t{101}})
      for (int slices : {1, 3})
        for (const auto& o : every_algorithm(p, slices)) {
          SCOPED_TRACE(collective_algorithm_names()[static_cast<int>(o.algorithm)] + " p=" + std::to_string(p) +
                       " n=" + std::to_string(n) + " slices=" + std::to_string(slices));
          const auto plan = all_reduce(o, p, n, 4);
          ASSERT_EQ(plan.ranks, p);
          std::vector<int> seen(plan.messages.size(), 0);
          for (int r = 0; r < p; ++r)
            for (int i : plan.inbox[r]) {
              EXPECT_EQ(plan.messages.at(i).dst, r);
              ++seen[i];
            }
          for (int s : seen) EXPECT_EQ(s, 1);
          // PlanRunner sends a message when its last dependency lands, at its sender.
          for (const auto& m : plan.messages)
            for (int dep : m.after) EXPECT_EQ(plan.messages.at(dep).dst, m.src);
          for (unsigned seed = 0; seed < 4; ++seed) {
            const auto data = seed == 0 ? execute(plan, std::vector<int64_t>(p, n))
                                        : execute_shuffled(plan, std::vector<int64_t>(p, n), seed);
            for (int r = 0; r < p; ++r)
              for (int64_t i = 0; i < n; ++i) {
                const double expected = 1000.0 * p * (p - 1) / 2 + static_cast<double>(p) * i;
                ASSERT_NEAR(data[r][i], expected, 1e-5 * expected) << "rank " << r << " element " << i;
              }
          }
        }
}

// Exact bytes per rank, n = 4 bytes x elements, worked out from each algorithm's description.
std::vector<uint64_t> bytes_of(CollectiveAlgorithm a, int p, int64_t elements, std::vector<int> clusters = {},
                               int server = 0, int slices = 1) {
  CollectiveOptions o;
  o.algorithm = a;
  o.cluster_of = std::move(clusters);
  o.server = server;
  o.slices = slices;
  return bytes_sent_per_rank(all_reduce(o, p, elements, 4));
}

TEST(AllReduceAlgorithms, RingAndDirectSendTwoPMinusOneOverPOfTheBuffer) {
  const int64_t n = 1200 * 4;  // bytes; 1200 elements divide into 3, 4, 5, 6 and 8 chunks
  for (int p : {3, 4, 5, 6, 8}) {
    const auto expected = std::vector<uint64_t>(p, static_cast<uint64_t>(2 * (p - 1) * n / p));
    EXPECT_EQ(bytes_of(CollectiveAlgorithm::Ring, p, 1200), expected) << p;
    EXPECT_EQ(bytes_of(CollectiveAlgorithm::Ring, p, 1200, {}, 0, 4), expected) << p << " sliced";
    EXPECT_EQ(bytes_of(CollectiveAlgorithm::Direct, p, 1200), expected) << p;
  }
}

TEST(AllReduceAlgorithms, HalvingDoublingBytes) {
  const uint64_t n = 1200 * 4;
  for (int p : {2, 4, 8})
    EXPECT_EQ(bytes_of(CollectiveAlgorithm::HalvingDoubling, p, 1200), std::vector<uint64_t>(p, 2 * (p - 1) * n / p))
        << p;
  // p = 6: ranks 1 and 3 fold into 0 and 2 (n each way); 0, 2, 4, 5 run p' = 4.
  const uint64_t inner = 2 * 3 * n / 4;
  EXPECT_EQ(bytes_of(CollectiveAlgorithm::HalvingDoubling, 6, 1200),
            (std::vector<uint64_t>{inner + n, n, inner + n, n, inner, inner}));
}

TEST(AllReduceAlgorithms, ParameterServerBytes) {
  const uint64_t n = 1000 * 4;
  // Workers send n; the server sends n to each of the other p - 1.
  EXPECT_EQ(bytes_of(CollectiveAlgorithm::ParameterServer, 5, 1000, {}, 2), (std::vector<uint64_t>{n, n, 4 * n, n, n}));
  EXPECT_THROW(bytes_of(CollectiveAlgorithm::ParameterServer, 5, 1000, {}, 5), std::invalid_argument);
}

TEST(AllReduceAlgorithms, TreeBytes) {
  // p = 4, halves h = n/2. Tree A: 0 -> 2 -> {1, 3}; tree B mirrors it: 3 -> 1 -> {2, 0}.
  // Up every non-root sends h, down every parent sends h per child:
  // tree A: r0 h, r1 h, r2 3h, r3 h; tree B: r0 h, r1 3h, r2 h, r3 h.
  const uint64_t h = 500 * 4;
  EXPECT_EQ(bytes_of(CollectiveAlgorithm::Tree, 4, 1000), (std::vector<uint64_t>{2 * h, 4 * h, 4 * h, 2 * h}));
  // In total each half crosses p - 1 tree edges twice: 2 (p-1) n.
  for (int p : {2, 3, 5, 6, 7, 8}) {
    uint64_t total = 0;
    for (uint64_t b : bytes_of(CollectiveAlgorithm::Tree, p, 1001)) total += b;
    EXPECT_EQ(total, 2u * (p - 1) * 1001 * 4) << p;
  }
}

TEST(AllReduceAlgorithms, HierarchicalBytes) {
  // Clusters {0,1} {2,3} {4,5}: members send n to their leader, leaders run a 3-rank ring
  // (2 x 2/3 n) and send n back to their one member.
  const uint64_t n = 900 * 4;
  const uint64_t leader = 2 * 2 * n / 3 + n;
  EXPECT_EQ(bytes_of(CollectiveAlgorithm::Hierarchical, 6, 900, {0, 0, 1, 1, 2, 2}),
            (std::vector<uint64_t>{leader, n, leader, n, leader, n}));
  EXPECT_THROW(bytes_of(CollectiveAlgorithm::Hierarchical, 6, 900, {0, 0, 1}), std::invalid_argument);
}

TEST(BinaryTree, ChildrenAsNcclBuildsThem) {
  EXPECT_EQ(binary_tree_children(4), (std::vector<std::vector<int>>{{2}, {}, {1, 3}, {}}));
  // p = 6: 0 -> 4 -> {2, 5}, 2 -> {1, 3}.
  EXPECT_EQ(binary_tree_children(6), (std::vector<std::vector<int>>{{4}, {}, {1, 3}, {}, {2, 5}, {}}));
}

TEST(RingSlices, SliceJWaitsForSliceJOfThePreviousStep) {
  const int p = 4, slices = 3;
  const auto plan = ring_all_reduce(p, 120, 4, slices);  // chunks of 30, slices of 10
  ASSERT_EQ(plan.messages.size(), static_cast<size_t>(2 * (p - 1) * p * slices));
  int unprompted = 0;
  for (const auto& m : plan.messages) {
    EXPECT_EQ(m.count, 10);
    EXPECT_EQ(m.dst, (m.src + 1) % p);
    if (m.after.empty()) {
      ++unprompted;
      continue;
    }
    ASSERT_EQ(m.after.size(), 1u);
    const auto& prev = plan.messages.at(m.after[0]);
    EXPECT_EQ(prev.dst, m.src);
    EXPECT_EQ(prev.offset, m.offset);  // the same slice, one hop earlier
    EXPECT_EQ(prev.count, m.count);
  }
  EXPECT_EQ(unprompted, p * slices);  // every slice of the first step starts at once
  // One slice keeps today's plan: message (step k, rank r) at index k*p + r.
  const auto one = ring_all_reduce(p, 120, 4, 1);
  for (int k = 0; k < 2 * (p - 1); ++k)
    for (int r = 0; r < p; ++r) {
      EXPECT_EQ(one.messages[k * p + r].src, r);
      EXPECT_EQ(one.messages[k * p + r].offset, ((r - k) % p + p) % p * 30);
    }
  EXPECT_THROW(ring_all_reduce(p, 120, 4, 0), std::invalid_argument);
}

TEST(AllGatherAlgorithms, DirectAndSlicedRingGatherEveryBlock) {
  for (int p : {1, 2, 3, 5}) {
    const int64_t k = 7;
    for (const char* name : {"ring", "direct", "tree"}) {
      CollectiveOptions o;
      o.algorithm = collective_algorithm(name);
      o.slices = 2;
      SCOPED_TRACE(std::string(name) + " p=" + std::to_string(p));
      const auto plan = all_gather(o, p, k, 4);
      const auto data = execute_shuffled(plan, std::vector<int64_t>(p, p * k), 7);
      for (int r = 0; r < p; ++r)
        for (int q = 0; q < p; ++q)
          for (int64_t i = 0; i < k; ++i)
            ASSERT_EQ(data[r][q * k + i], q * 1000.0 + static_cast<double>(q * k + i)) << r << " " << q;
      for (uint64_t b : bytes_sent_per_rank(plan)) EXPECT_EQ(b, static_cast<uint64_t>((p - 1) * k * 4));
    }
  }
}

// Reduce-scatter of p blocks of `block` values: block r of rank r must end as the sum over
// ranks q of q*1000 + i (start_values), 1000 p(p-1)/2 + p i, exactly (whole numbers).
void check_reduce_scatter_sums(const CollectivePlan& plan, int p, int64_t block) {
  const std::vector<int64_t> sizes(p, p * block);
  for (unsigned seed = 0; seed < 4; ++seed) {
    const auto data = seed == 0 ? execute(plan, sizes) : execute_shuffled(plan, sizes, seed);
    for (int r = 0; r < p; ++r)
      for (int64_t i = r * block; i < (r + 1) * block; ++i)
        ASSERT_EQ(data[r][i], 1000.0 * p * (p - 1) / 2 + static_cast<double>(p) * i)
            << "seed " << seed << " rank " << r << " element " << i;
  }
}

TEST(RingReduceScatter, RankREndsWithTheSumOfBlockR) {
  const int64_t block = 6;
  for (int p : {2, 3, 4, 5})
    for (int slices : {1, 3}) {
      SCOPED_TRACE("p=" + std::to_string(p) + " slices=" + std::to_string(slices));
      const auto plan = ring_reduce_scatter(p, p * block, 4, slices);
      ASSERT_EQ(plan.ranks, p);
      EXPECT_EQ(plan.messages.size(), static_cast<size_t>(p * (p - 1) * slices));
      check_reduce_scatter_sums(plan, p, block);
      // (p-1)/p of the buffer leaves each rank: p-1 blocks.
      EXPECT_EQ(bytes_sent_per_rank(plan), std::vector<uint64_t>(p, static_cast<uint64_t>((p - 1) * block * 4)));
      for (const auto& m : plan.messages) {
        EXPECT_EQ(m.dst, (m.src + 1) % p);
        EXPECT_EQ(m.op, ChunkOp::Reduce);
        EXPECT_EQ(m.dst_offset, m.offset);
      }
      std::vector<int> seen(plan.messages.size(), 0);
      for (int r = 0; r < p; ++r) {
        EXPECT_EQ(plan.inbox[r].size(), static_cast<size_t>((p - 1) * slices));
        for (int i : plan.inbox[r]) {
          EXPECT_EQ(plan.messages.at(i).dst, r);
          ++seen[i];
        }
      }
      for (int s : seen) EXPECT_EQ(s, 1);
    }
  // Half-byte elements: 5 blocks of 6 values, 3 bytes a block.
  EXPECT_EQ(bytes_sent_per_rank(ring_reduce_scatter(5, 30, 0.5)), std::vector<uint64_t>(5, 4 * 3));
}

// One message as the tests below write plans out by hand.
struct HandMessage {
  int src, dst;
  int64_t offset, count;
  std::vector<int> after;
};

void expect_plan(const CollectivePlan& plan, const std::vector<HandMessage>& expected) {
  ASSERT_EQ(plan.messages.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("message " + std::to_string(i));
    const auto& m = plan.messages[i];
    EXPECT_EQ(m.src, expected[i].src);
    EXPECT_EQ(m.dst, expected[i].dst);
    EXPECT_EQ(m.offset, expected[i].offset);
    EXPECT_EQ(m.dst_offset, expected[i].offset);
    EXPECT_EQ(m.count, expected[i].count);
    EXPECT_EQ(m.after, expected[i].after);
    EXPECT_EQ(m.op, ChunkOp::Reduce);
  }
}

TEST(RingReduceScatter, ThreeRanksByHand) {
  // Blocks of 2: block 0 at 0, 1 at 2, 2 at 4. Step 0: each rank sends the block of the rank
  // before it; step 1: it adds its own part to what it received and passes it on, so block c
  // ends at rank c: 1 -> 2 -> 0 for block 0, 2 -> 0 -> 1 for block 1, 0 -> 1 -> 2 for block 2.
  expect_plan(ring_reduce_scatter(3, 6, 4), {
                                                {0, 1, 4, 2, {}},   // 0: block 2
                                                {1, 2, 0, 2, {}},   // 1: block 0
                                                {2, 0, 2, 2, {}},   // 2: block 1
                                                {0, 1, 2, 2, {2}},  // block 1, received in 2
                                                {1, 2, 4, 2, {0}},  // block 2, received in 0
                                                {2, 0, 0, 2, {1}},  // block 0, received in 1
                                            });
  // Two slices of blocks of 4: slice j of step 1 waits only for slice j of step 0.
  expect_plan(ring_reduce_scatter(3, 12, 4, 2), {
                                                    {0, 1, 8, 2, {}},    // 0
                                                    {0, 1, 10, 2, {}},   // 1
                                                    {1, 2, 0, 2, {}},    // 2
                                                    {1, 2, 2, 2, {}},    // 3
                                                    {2, 0, 4, 2, {}},    // 4
                                                    {2, 0, 6, 2, {}},    // 5
                                                    {0, 1, 4, 2, {4}},   // block 1's first slice
                                                    {0, 1, 6, 2, {5}},   // and its second
                                                    {1, 2, 8, 2, {0}},   // block 2
                                                    {1, 2, 10, 2, {1}},  //
                                                    {2, 0, 0, 2, {2}},   // block 0
                                                    {2, 0, 2, 2, {3}},   //
                                                });
}

// Values whose sum depends on the order they are added in: magnitudes from 1e-2 to 1e16,
// either sign, different for every rank and element.
std::vector<std::vector<double>> order_sensitive_values(int p, int64_t n) {
  std::mt19937 rng(static_cast<unsigned>(p));
  std::uniform_real_distribution<double> exponent(-2, 16), sign(-1, 1);
  std::vector<std::vector<double>> x(p, std::vector<double>(n));
  for (auto& rank : x)
    for (double& v : rank) v = std::pow(10.0, exponent(rng)) * (sign(rng) < 0 ? -1 : 1);
  return x;
}

// Element i summed over the ranks in the order first, first+1, ... (mod p): each receiver
// adds what it holds to what it was sent.
double ring_sum(const std::vector<std::vector<double>>& x, int64_t i, int first) {
  const int p = static_cast<int>(x.size());
  double sum = x[first][i];
  for (int s = 1; s < p; ++s) sum = x[(first + s) % p][i] + sum;
  return sum;
}

TEST(RingReduceScatter, SumsBlockCFromRankCPlusOneRoundToC) {
  const int64_t block = 4;
  for (int p : {2, 3, 4, 5}) {
    const int64_t n = p * block;
    const auto x = order_sensitive_values(p, n);
    // The values tell the orders apart: ring_all_reduce's (from c, ending at c - 1) differs.
    int order_matters = 0;
    for (int64_t i = 0; i < n; ++i)
      order_matters +=
          ring_sum(x, i, static_cast<int>(i / block)) != ring_sum(x, i, static_cast<int>(i / block + 1) % p);
    if (p > 2) EXPECT_GT(order_matters, 0) << p;
    for (int slices : {1, 2}) {
      SCOPED_TRACE("p=" + std::to_string(p) + " slices=" + std::to_string(slices));
      const auto reduced = execute_on(ring_reduce_scatter(p, n, 8, slices), x);
      for (int c = 0; c < p; ++c)
        for (int64_t i = c * block; i < (c + 1) * block; ++i)
          ASSERT_EQ(reduced[c][i], ring_sum(x, i, (c + 1) % p)) << "block " << c << " element " << i;
      // Rank r's block r is where ring_all_gather takes it from: every rank ends with every sum.
      const auto gathered = execute_on(ring_all_gather(p, block, 8, slices), reduced);
      for (int r = 0; r < p; ++r)
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(gathered[r][i], ring_sum(x, i, static_cast<int>(i / block + 1) % p)) << r << " " << i;
    }
  }
}

TEST(RingReduceScatter, OneRankAndBadInput) {
  const auto plan = ring_reduce_scatter(1, 10, 4, 3);
  EXPECT_TRUE(plan.messages.empty());
  ASSERT_EQ(plan.inbox.size(), 1u);
  EXPECT_TRUE(plan.inbox[0].empty());
  EXPECT_NO_THROW(ring_reduce_scatter(3, 0, 4));
  try {
    ring_reduce_scatter(3, 10, 4);
    ADD_FAILURE() << "10 elements over 3 ranks accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("10 elements do not split into 3 equal blocks"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ring_reduce_scatter(0, 10, 4), std::invalid_argument);
  EXPECT_THROW(ring_reduce_scatter(2, -2, 4), std::invalid_argument);
  EXPECT_THROW(ring_reduce_scatter(2, 10, 0), std::invalid_argument);
  EXPECT_THROW(ring_reduce_scatter(2, 10, 4, 0), std::invalid_argument);
}

TEST(DirectReduceScatter, EveryRankSendsBlockCToRankCInOneStep) {
  const int64_t block = 6;
  for (int p : {1, 2, 3, 4, 5}) {
    SCOPED_TRACE("p=" + std::to_string(p));
    const auto plan = direct_reduce_scatter(p, p * block, 4);
    ASSERT_EQ(plan.ranks, p);
    ASSERT_EQ(plan.inbox.size(), static_cast<size_t>(p));
    EXPECT_EQ(plan.messages.size(), static_cast<size_t>(p * (p - 1)));
    check_reduce_scatter_sums(plan, p, block);
    EXPECT_EQ(bytes_sent_per_rank(plan), std::vector<uint64_t>(p, static_cast<uint64_t>((p - 1) * block * 4)));
    for (const auto& m : plan.messages) {
      EXPECT_TRUE(m.after.empty());
      EXPECT_EQ(m.op, ChunkOp::Reduce);
      EXPECT_EQ(m.offset, m.dst * block);  // the receiver's own block
      EXPECT_EQ(m.dst_offset, m.offset);
      EXPECT_EQ(m.count, block);
    }
    for (int r = 0; r < p; ++r) EXPECT_EQ(plan.inbox[r].size(), static_cast<size_t>(p - 1));
  }
  // p = 3: rank r sends to r+1 first, as direct_all_reduce's first step does.
  const auto three = direct_reduce_scatter(3, 3, 4);
  std::vector<std::pair<int, int>> order;
  for (const auto& m : three.messages) order.emplace_back(m.src, m.dst);
  EXPECT_EQ(order, (std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {1, 2}, {1, 0}, {2, 0}, {2, 1}}));
  EXPECT_THROW(direct_reduce_scatter(4, 10, 4), std::invalid_argument);
  EXPECT_THROW(direct_reduce_scatter(0, 10, 4), std::invalid_argument);
}

TEST(ReduceScatterAlgorithms, RingAndDirectOwnPlansTheOthersTheRing) {
  const int p = 4, slices = 2;
  const int64_t block = 6;
  for (const auto& o : every_algorithm(p, slices)) {
    const std::string name = collective_algorithm_names()[static_cast<int>(o.algorithm)];
    SCOPED_TRACE(name);
    const auto plan = reduce_scatter(o, p, p * block, 4);
    check_reduce_scatter_sums(plan, p, block);
    if (name == "direct") {
      EXPECT_EQ(plan.messages.size(), static_cast<size_t>(p * (p - 1)));
      for (const auto& m : plan.messages) EXPECT_TRUE(m.after.empty());
    } else {
      EXPECT_EQ(plan.messages.size(), static_cast<size_t>(p * (p - 1) * slices));
      for (const auto& m : plan.messages) EXPECT_EQ(m.dst, (m.src + 1) % p);
    }
  }
  CollectiveOptions one;
  EXPECT_TRUE(reduce_scatter(one, 1, 5, 4).messages.empty());
  EXPECT_THROW(reduce_scatter(one, 4, 10, 4), std::invalid_argument);
}

}  // namespace
}  // namespace collectives
}  // namespace testbed
