// How large a collective's plan is, without building it: a ring all-reduce over 20 000 ranks
// is 8e8 messages, so the memory estimate a run is refused on must count them first.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/plans/collectives.h"

namespace testbed {

struct PlanSize {
  int64_t messages = 0;
  int64_t waits = 0;  // entries of every message's `after` list
  int64_t pairs = 0;  // distinct (sender, receiver) pairs: ns-3 keeps a TCP connection for each
                      // (for the tree an upper bound: its two trees share a few edges)
};

// Exact when every chunk has at least `slices` elements; a ring whose chunks are shorter sends
// fewer pieces, so these are upper bounds in general.
PlanSize all_reduce_size(const CollectiveOptions& options, int ranks);
// Also a reduce-scatter's: the ring one is the ring all-gather a block behind, adding; the
// direct one sends each of p(p-1) blocks to its owner instead of from it.
PlanSize all_gather_size(const CollectiveOptions& options, int ranks);
// `degrees[r]`: how many neighbours rank r has.
PlanSize neighbour_exchange_size(const std::vector<int>& degrees);

// Bytes a plan and one run of it hold: each message, its inbox entry and `after` list (with
// the allocator's chunk), and the runner's per-message state (the reverse dependency lists,
// counters, the payload handle and the lost-range list of comm/tensors/collective_run.h).
double plan_memory_bytes(const PlanSize& size, int ranks);

}  // namespace testbed
