// Shared building blocks of the collective plans: size checks, chunk messages, near-equal parts.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/plans/collectives.h"

namespace testbed::plan_builder {

// Throws std::invalid_argument naming `what` for ranks < 1, elements < 0 or element_bytes <= 0.
void check_sizes(const char* what, int ranks, int64_t elements, double element_bytes);

// A message of `count` elements; bytes rounded up (elements may be 4-bit).
CollectiveMessage chunk(int src, int dst, int64_t offset, int64_t dst_offset, int64_t count, double element_bytes,
                        ChunkOp op);

// Appends `m` to the plan and to its receiver's inbox; returns its index.
int add(CollectivePlan& plan, CollectiveMessage m);

// First element of part `i` of `parts` near-equal parts of `count` elements (sizes differ by
// at most one); part_begin(parts) == count.
inline int64_t part_begin(int64_t i, int64_t parts, int64_t count) { return i * count / parts; }

// An empty plan over `ranks`.
CollectivePlan empty_plan(int ranks);

// Appends a ring all-reduce of the whole buffer among the plan ranks `ring` (in ring order,
// `slices` pieces per chunk); position i's messages also wait for wait_for[i] (empty:
// nothing). Used on its own by the ring and among cluster leaders by the hierarchical plan.
void ring_all_reduce_among(CollectivePlan& plan, const std::vector<int>& ring, int64_t elements, double element_bytes,
                           int slices, const std::vector<std::vector<int>>& wait_for);

}  // namespace testbed::plan_builder
