// Expansion of collectives into point-to-point message DAGs (ring all-reduce).
#include "netmodels/collectives.h"

#include <stdexcept>
#include <string>

namespace testbed {

CollectivePlan ring_all_reduce(int ranks, int64_t elements, int element_bytes) {
  if (ranks < 1) throw std::invalid_argument("ring_all_reduce: ranks must be >= 1");
  if (elements < 0) throw std::invalid_argument("ring_all_reduce: elements must be >= 0");
  if (element_bytes < 1) throw std::invalid_argument("ring_all_reduce: element_bytes must be >= 1");

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
      CollectiveMessage m;
      m.src = r;
      m.dst = (r + 1) % p;
      m.offset = chunk_begin(c);
      m.count = chunk_begin(c + 1) - m.offset;
      m.bytes = static_cast<uint64_t>(m.count) * static_cast<uint64_t>(element_bytes);
      m.op = k < p - 1 ? ChunkOp::Reduce : ChunkOp::Copy;
      // Rank r forwards what rank r-1 sent it in the previous step.
      if (k > 0) m.after = {(k - 1) * p + (r - 1 + p) % p};
      plan.inbox[m.dst].push_back(static_cast<int>(plan.messages.size()));
      plan.messages.push_back(std::move(m));
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
