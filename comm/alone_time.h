// How long a collective takes alone on idle links, in the alpha-beta form: its plan's longest
// chain of dependent messages, each paying its route's latency and the library's cost at both
// ends, plus the most any rank sends at its transport's rate, plus the library's launch. A lower
// bound on what a backend measures (no queueing, no headers, no congestion), known before the
// collective runs: what a schedule can be fixed by (compute.overlap_slowdown's span).
#pragma once

#include <cstdint>
#include <vector>

#include "comm/collective_options.h"
#include "comm/library_costs.h"
#include "comm/plans/collectives.h"
#include "topologies/routing.h"

namespace testbed {

// The longest chain of dependent messages in `plan` (its rank r on hosts[r]): each message waits
// for those it lists and its hold, then takes its route's latency plus the library's per-message
// cost at both ends. With no library costs, the latency part of any backend's time for it.
double plan_latency_chain(const CollectivePlan& plan, const std::vector<int>& hosts, const LibraryCosts& library,
                          const PathOf& path);

// Seconds `plan` takes alone, its rank r on hosts[r] (an empty plan: none at all).
double plan_alone_time(const CollectivePlan& plan, const std::vector<int>& hosts, const LibraryCosts& library,
                       const PathOf& path);

// The same for ring_all_reduce(hosts.size(), elements, element_bytes, slices) without building
// its plan (a ring of thousands of ranks, timed on lanes): rank r sends to rank r + 1, and the
// longest chain is 2(p - 1) consecutive hops of the ring.
double ring_all_reduce_alone_time(const std::vector<int>& hosts, int64_t elements, double element_bytes, int slices,
                                  const LibraryCosts& library, const PathOf& path);

// An all-reduce among `hosts` as alpha + beta m for m bytes: the line through its alone times at
// two sizes (exact for a ring, whose alone time is linear in m once every chunk is whole).
struct AlphaBeta {
  double alpha_s = 0;
  double beta_s_per_byte = 0;
};
AlphaBeta all_reduce_alpha_beta(const CollectiveOptions& options, const std::vector<int>& hosts,
                                const LibraryCosts& library, const PathOf& path);

}  // namespace testbed
