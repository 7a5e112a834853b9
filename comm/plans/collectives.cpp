// Ring collectives, the neighbour exchange and the plan building blocks they share.
#include "comm/plans/collectives.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>

#include "comm/plans/plan_builder.h"

namespace testbed {
namespace plan_builder {

void check_sizes(const char* what, int ranks, int64_t elements, double element_bytes) {
  if (ranks < 1) throw std::invalid_argument(std::string(what) + ": ranks must be >= 1");
  if (elements < 0) throw std::invalid_argument(std::string(what) + ": elements must be >= 0");
  if (!(element_bytes > 0)) throw std::invalid_argument(std::string(what) + ": element_bytes must be > 0");
}

CollectiveMessage chunk(int src, int dst, int64_t offset, int64_t dst_offset, int64_t count, double element_bytes,
                        ChunkOp op) {
  CollectiveMessage m;
  m.src = src;
  m.dst = dst;
  m.offset = offset;
  m.dst_offset = dst_offset;
  m.count = count;
  m.bytes = static_cast<uint64_t>(std::ceil(static_cast<double>(count) * element_bytes));
  m.op = op;
  return m;
}

int add(CollectivePlan& plan, CollectiveMessage m) {
  const int index = static_cast<int>(plan.messages.size());
  plan.inbox.at(m.dst).push_back(index);
  plan.messages.push_back(std::move(m));
  return index;
}

CollectivePlan empty_plan(int ranks) {
  CollectivePlan plan;
  plan.ranks = ranks;
  plan.inbox.assign(ranks, {});
  return plan;
}

}  // namespace plan_builder

namespace {

using namespace plan_builder;

void check_slices(const char* what, int slices) {
  if (slices < 1) throw std::invalid_argument(std::string(what) + ": slices must be >= 1");
}

// The p(steps) ring messages: in step k rank r sends block block_of(r, k) = [begin, begin+len)
// to r+1, as `slices` pieces (fewer for blocks shorter than that, never an empty piece
// unless the block is empty); piece j waits for piece j of what r-1 sent r in step k-1, which
// is the same block, and for wait_for[r] (if given). Slices 1 keeps one message per (k, r)
// at index k*p + r.
void ring_steps(CollectivePlan& plan, const std::vector<int>& ring, int steps, int slices,
                const std::function<std::pair<int64_t, int64_t>(int, int)>& block_of, double element_bytes,
                const std::function<ChunkOp(int)>& op_of, const std::vector<std::vector<int>>& wait_for) {
  const int p = static_cast<int>(ring.size());
  std::vector<int> previous(p, -1), current(p, -1);  // first piece's index per position, step k-1 / k
  for (int k = 0; k < steps; ++k) {
    for (int r = 0; r < p; ++r) {
      const auto [begin, len] = block_of(r, k);
      const int64_t pieces = std::max<int64_t>(1, std::min<int64_t>(slices, len));
      current[r] = static_cast<int>(plan.messages.size());
      for (int64_t j = 0; j < pieces; ++j) {
        const int64_t b = begin + part_begin(j, pieces, len);
        const int64_t e = begin + part_begin(j + 1, pieces, len);
        CollectiveMessage m = chunk(ring[r], ring[(r + 1) % p], b, b, e - b, element_bytes, op_of(k));
        if (k > 0) m.after = {previous[(r - 1 + p) % p] + static_cast<int>(j)};
        // Every message, not only the first: each reduce-scatter step adds r's own part of
        // a chunk, which must already hold what r waits for.
        if (!wait_for.empty()) m.after.insert(m.after.end(), wait_for[r].begin(), wait_for[r].end());
        add(plan, std::move(m));
      }
    }
    std::swap(previous, current);
  }
}

}  // namespace

CollectivePlan ring_all_reduce(int ranks, int64_t elements, double element_bytes, int slices) {
  check_sizes("ring_all_reduce", ranks, elements, element_bytes);
  check_slices("ring_all_reduce", slices);
  const int p = ranks;
  CollectivePlan plan = empty_plan(p);
  if (p == 1) return plan;
  std::vector<int> ring(p);
  for (int r = 0; r < p; ++r) ring[r] = r;
  plan_builder::ring_all_reduce_among(plan, ring, elements, element_bytes, slices, {});
  return plan;
}

CollectivePlan ring_all_gather(int ranks, int64_t elements, double element_bytes, int slices) {
  check_sizes("ring_all_gather", ranks, elements, element_bytes);
  check_slices("ring_all_gather", slices);
  const int p = ranks;
  CollectivePlan plan = empty_plan(p);
  std::vector<int> ring(p);
  for (int r = 0; r < p; ++r) ring[r] = r;
  // In step k rank r forwards block r - k (its own at k = 0), received from r - 1 in step k - 1.
  auto block_of = [&](int r, int k) { return std::pair<int64_t, int64_t>{((r - k) % p + p) % p * elements, elements}; };
  ring_steps(plan, ring, p - 1, slices, block_of, element_bytes, [](int) { return ChunkOp::Copy; }, {});
  return plan;
}

CollectivePlan direct_all_gather(int ranks, int64_t elements, double element_bytes) {
  check_sizes("direct_all_gather", ranks, elements, element_bytes);
  CollectivePlan plan = empty_plan(ranks);
  for (int r = 0; r < ranks; ++r)
    for (int q = 0; q < ranks; ++q)
      if (q != r) add(plan, chunk(r, q, r * elements, r * elements, elements, element_bytes, ChunkOp::Copy));
  return plan;
}

CollectivePlan direct_broadcast(int ranks, int64_t elements, double element_bytes) {
  check_sizes("direct_broadcast", ranks, elements, element_bytes);
  CollectivePlan plan = empty_plan(ranks);
  for (int q = 1; q < ranks; ++q) add(plan, chunk(0, q, 0, 0, elements, element_bytes, ChunkOp::Copy));
  return plan;
}

CollectivePlan cut_exchange(int64_t elements, double element_bytes, double hold_s) {
  check_sizes("cut_exchange", 2, elements, element_bytes);
  if (!(hold_s >= 0)) throw std::invalid_argument("cut_exchange: the cloud's hold must be >= 0 seconds");
  CollectivePlan plan = empty_plan(2);
  const int activations = add(plan, chunk(0, 1, 0, 0, elements, element_bytes, ChunkOp::Copy));
  CollectiveMessage gradient = chunk(1, 0, elements, elements, elements, element_bytes, ChunkOp::Copy);
  gradient.after = {activations};
  add(plan, std::move(gradient));
  plan.hold_s = {0, hold_s};
  return plan;
}

CollectivePlan ring_broadcast(int ranks, int64_t elements, double element_bytes) {
  check_sizes("ring_broadcast", ranks, elements, element_bytes);
  CollectivePlan plan = empty_plan(ranks);
  const int64_t pieces = std::max<int64_t>(1, std::min<int64_t>(ranks, elements));
  std::vector<int> arrived(pieces, -1);  // the message that brought piece j to the current hop
  for (int r = 0; r + 1 < ranks; ++r) {
    for (int64_t j = 0; j < pieces; ++j) {
      const int64_t begin = part_begin(j, pieces, elements);
      CollectiveMessage m =
          chunk(r, r + 1, begin, begin, part_begin(j + 1, pieces, elements) - begin, element_bytes, ChunkOp::Copy);
      if (arrived[j] >= 0) m.after = {arrived[j]};
      arrived[j] = add(plan, std::move(m));
    }
  }
  return plan;
}

namespace plan_builder {

void ring_all_reduce_among(CollectivePlan& plan, const std::vector<int>& ring, int64_t elements, double element_bytes,
                           int slices, const std::vector<std::vector<int>>& wait_for) {
  const int p = static_cast<int>(ring.size());
  if (p < 2) return;
  // Chunk c covers [c*n/p, (c+1)*n/p); in step k position r sends chunk r - k.
  auto block_of = [&](int r, int k) {
    const int c = ((r - k) % p + p) % p;
    const int64_t begin = part_begin(c, p, elements);
    return std::pair<int64_t, int64_t>{begin, part_begin(c + 1, p, elements) - begin};
  };
  auto op_of = [&](int k) { return k < p - 1 ? ChunkOp::Reduce : ChunkOp::Copy; };
  ring_steps(plan, ring, 2 * (p - 1), slices, block_of, element_bytes, op_of, wait_for);
}

}  // namespace plan_builder

CollectivePlan neighbour_exchange(const std::vector<std::vector<int>>& neighbours, int64_t elements,
                                  double element_bytes) {
  const int p = static_cast<int>(neighbours.size());
  check_sizes("neighbour_exchange", p, elements, element_bytes);
  auto slot = [&](int r, int q) -> int64_t {  // where q's block sits in r's buffer
    for (size_t i = 0; i < neighbours[r].size(); ++i) {
      if (neighbours[r][i] == q) return static_cast<int64_t>(i + 1) * elements;
    }
    throw std::invalid_argument("neighbour_exchange: " + std::to_string(q) + " lists " + std::to_string(r) +
                                " as a neighbour but not the other way round");
  };
  CollectivePlan plan = empty_plan(p);
  for (int r = 0; r < p; ++r) {
    for (int q : neighbours[r]) {
      if (q < 0 || q >= p || q == r)
        throw std::invalid_argument("neighbour_exchange: rank " + std::to_string(r) + " has invalid neighbour " +
                                    std::to_string(q));
      add(plan, chunk(r, q, 0, slot(q, r), elements, element_bytes, ChunkOp::Copy));
    }
  }
  return plan;
}

std::vector<uint64_t> bytes_sent_per_rank(const CollectivePlan& plan) {
  std::vector<uint64_t> bytes(plan.ranks, 0);
  for (const auto& m : plan.messages) bytes.at(m.src) += m.bytes;
  return bytes;
}

}  // namespace testbed
