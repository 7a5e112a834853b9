// Recursive halving reduce-scatter and recursive doubling all-gather (Rabenseifner), with
// ranks beyond the largest power of two folded into partners first.
#include <algorithm>
#include <vector>

#include "comm/plans/collectives.h"
#include "comm/plans/plan_builder.h"

namespace testbed {

using namespace plan_builder;

CollectivePlan halving_doubling_all_reduce(int ranks, int64_t elements, double element_bytes) {
  check_sizes("halving_doubling_all_reduce", ranks, elements, element_bytes);
  const int p = ranks;
  CollectivePlan plan = empty_plan(p);
  if (p == 1) return plan;
  int q = 1;  // the power of two that runs halving-doubling
  while (q * 2 <= p) q *= 2;
  const int extra = p - q;
  // Virtual rank v < extra is rank 2v (which absorbs rank 2v+1); the others are v + extra.
  auto real = [&](int v) { return v < extra ? 2 * v : v + extra; };

  // Per virtual rank: everything it has been sent so far. Its next send reads a range that
  // each of those wrote into, and they may land in any order, so it waits for all of them.
  std::vector<std::vector<int>> waits(q);
  for (int v = 0; v < extra; ++v) {
    waits[v] = {add(plan, chunk(2 * v + 1, 2 * v, 0, 0, elements, element_bytes, ChunkOp::Reduce))};
  }
  // Halving: at distance d (q/2 down to 1) v and v^d split v's current range; the lower
  // virtual rank keeps the lower half and sends the upper half, the other the reverse.
  std::vector<int64_t> lo(q, 0), hi(q, elements);
  std::vector<int> distances;
  for (int d = q / 2; d >= 1; d /= 2) distances.push_back(d);
  for (int d : distances) {
    std::vector<int> sent(q);
    for (int v = 0; v < q; ++v) {
      const int64_t mid = lo[v] + (hi[v] - lo[v]) / 2;
      const bool lower = (v & d) == 0;
      const int64_t b = lower ? mid : lo[v], e = lower ? hi[v] : mid;
      CollectiveMessage m = chunk(real(v), real(v ^ d), b, b, e - b, element_bytes, ChunkOp::Reduce);
      m.after = waits[v];
      sent[v] = add(plan, std::move(m));
    }
    for (int v = 0; v < q; ++v) {
      const int64_t mid = lo[v] + (hi[v] - lo[v]) / 2;
      if ((v & d) == 0) {
        hi[v] = mid;
      } else {
        lo[v] = mid;
      }
      waits[v].push_back(sent[v ^ d]);
    }
  }
  // Doubling: the same partners in reverse order exchange their (adjacent) reduced ranges.
  for (auto it = distances.rbegin(); it != distances.rend(); ++it) {
    const int d = *it;
    std::vector<int> sent(q);
    for (int v = 0; v < q; ++v) {
      CollectiveMessage m = chunk(real(v), real(v ^ d), lo[v], lo[v], hi[v] - lo[v], element_bytes, ChunkOp::Copy);
      m.after = waits[v];
      sent[v] = add(plan, std::move(m));
    }
    std::vector<int64_t> new_lo(q), new_hi(q);
    for (int v = 0; v < q; ++v) {
      new_lo[v] = std::min(lo[v], lo[v ^ d]);
      new_hi[v] = std::max(hi[v], hi[v ^ d]);
      waits[v].push_back(sent[v ^ d]);
    }
    lo = new_lo;
    hi = new_hi;
  }
  // Folded ranks get the whole result once every piece of it has reached their partner.
  for (int v = 0; v < extra; ++v) {
    CollectiveMessage m = chunk(2 * v, 2 * v + 1, 0, 0, elements, element_bytes, ChunkOp::Copy);
    m.after = waits[v];
    add(plan, std::move(m));
  }
  return plan;
}

}  // namespace testbed
