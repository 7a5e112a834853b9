// compute.overlap_slowdown (docs/compute.md#overlap-slowdown): a step's passes run slower while
// its streamed ops are on the network. When that is, the op schedule fixes: each op leaves with
// its pass and then holds the node's one communication stream for its alone time (its alpha-beta
// time, comm/alone_time.h), queued behind the node's previous op; never when the network
// happens to deliver, so memoization's replays and ring lanes stay exact.
#pragma once

#include <cstdint>
#include <vector>

namespace testbed {

struct SlowedPasses {
  std::vector<int64_t> leaves;  // when each op leaves, the passes before it slowed
  int64_t compute_end = 0;      // when the passes end
};

// Ticks in, ticks out. `leaves[i]` is when op i leaves without the slowdown and `busy[i]` how long
// it holds the stream; `compute_end` is when the passes end without it. Passes run 1 + slowdown
// as long while the stream is busy and before compute_end; an op leaving at or after
// compute_end moves with it.
SlowedPasses slow_overlapped_passes(const std::vector<int64_t>& leaves, const std::vector<int64_t>& busy,
                                    int64_t compute_end, double slowdown);

}  // namespace testbed
