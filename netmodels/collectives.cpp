// Expansion of collectives into point-to-point message DAGs.
#include "netmodels/collectives.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace testbed {
namespace {

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

}  // namespace

CollectivePlan ring_all_reduce(int ranks, int64_t elements, double element_bytes) {
  check_sizes("ring_all_reduce", ranks, elements, element_bytes);

  const int p = ranks;
  CollectivePlan plan;
  plan.ranks = p;
  plan.inbox.assign(p, {});
  if (p == 1) return plan;

  // Chunk c covers [c*n/p, (c+1)*n/p): sizes differ by at most one element.
  auto chunk_begin = [&](int c) { return static_cast<int64_t>(c) * elements / p; };
  const int steps = 2 * (p - 1);
  plan.messages.reserve(static_cast<size_t>(steps) * p);
  // Message (rank r, step k) is stored at index k*p + r.
  for (int k = 0; k < steps; ++k) {
    for (int r = 0; r < p; ++r) {
      const int c = ((r - k) % p + p) % p;
      const int64_t begin = chunk_begin(c);
      CollectiveMessage m = chunk(r, (r + 1) % p, begin, begin, chunk_begin(c + 1) - begin, element_bytes,
                                  k < p - 1 ? ChunkOp::Reduce : ChunkOp::Copy);
      // Rank r forwards what rank r-1 sent it in the previous step.
      if (k > 0) m.after = {(k - 1) * p + (r - 1 + p) % p};
      plan.inbox[m.dst].push_back(static_cast<int>(plan.messages.size()));
      plan.messages.push_back(std::move(m));
    }
  }
  return plan;
}

CollectivePlan ring_all_gather(int ranks, int64_t elements, double element_bytes) {
  check_sizes("ring_all_gather", ranks, elements, element_bytes);
  const int p = ranks;
  CollectivePlan plan;
  plan.ranks = p;
  plan.inbox.assign(p, {});
  // Message (rank r, step k) is stored at index k*p + r; in step k rank r forwards block
  // r - k (its own at k = 0), which it received from r - 1 in step k - 1.
  for (int k = 0; k < p - 1; ++k) {
    for (int r = 0; r < p; ++r) {
      const int64_t block = ((r - k) % p + p) % p * elements;
      CollectiveMessage m = chunk(r, (r + 1) % p, block, block, elements, element_bytes, ChunkOp::Copy);
      if (k > 0) m.after = {(k - 1) * p + (r - 1 + p) % p};
      plan.inbox[m.dst].push_back(static_cast<int>(plan.messages.size()));
      plan.messages.push_back(std::move(m));
    }
  }
  return plan;
}

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
  CollectivePlan plan;
  plan.ranks = p;
  plan.inbox.assign(p, {});
  for (int r = 0; r < p; ++r) {
    for (int q : neighbours[r]) {
      if (q < 0 || q >= p || q == r)
        throw std::invalid_argument("neighbour_exchange: rank " + std::to_string(r) + " has invalid neighbour " +
                                    std::to_string(q));
      plan.inbox[q].push_back(static_cast<int>(plan.messages.size()));
      plan.messages.push_back(chunk(r, q, 0, slot(q, r), elements, element_bytes, ChunkOp::Copy));
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
