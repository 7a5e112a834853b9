// The passes a step's communication overlaps, slowed: one sweep along the step in op order.
#include "sim/core/compute/overlap_slowdown.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace testbed {

SlowedPasses slow_overlapped_passes(const std::vector<int64_t>& leaves, const std::vector<int64_t>& busy,
                                    int64_t compute_end, double slowdown) {
  if (leaves.size() != busy.size()) throw std::logic_error("overlap slowdown: a busy time for every op");
  SlowedPasses out{leaves, compute_end};
  if (!(slowdown > 0)) return out;
  std::vector<size_t> order(leaves.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return leaves[a] < leaves[b]; });
  // The sweep's place in the passes' own time (u) and on the clock (t), and when the stream
  // frees. Doubles between ticks, rounded once at the end: a tick lost per op would add up.
  double u = 0, t = 0, free_at = -1;
  bool started = false;
  const double rate = 1 + slowdown;
  auto advance = [&](double to) {  // the passes from u to `to`
    if (t < free_at) {
      const double shared = std::min(to - u, (free_at - t) / rate);
      u += shared;
      t += shared * rate;
    }
    t += to - u;
    u = to;
  };
  for (size_t i : order) {
    const double at = static_cast<double>(leaves[i]);
    if (at >= compute_end) break;
    if (!started) u = t = at, started = true;  // nothing is slowed before the first op leaves
    advance(at);
    out.leaves[i] = std::llround(t);
    free_at = std::max(free_at, t) + static_cast<double>(busy[i]);
  }
  if (!started) return out;
  advance(static_cast<double>(compute_end));
  out.compute_end = std::llround(t);
  for (size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i] >= compute_end) out.leaves[i] = leaves[i] + (out.compute_end - compute_end);
  return out;
}

}  // namespace testbed
