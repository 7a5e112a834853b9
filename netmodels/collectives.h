// Collectives expanded into DAGs of point-to-point messages over element ranges.
#pragma once

#include <cstdint>
#include <vector>

namespace testbed {

enum class ChunkOp { Reduce, Copy };  // receiver adds the chunk, or overwrites with it

struct CollectiveMessage {
  int src = 0, dst = 0;        // ranks
  int64_t offset = 0;          // first element of the chunk
  int64_t count = 0;           // elements in the chunk
  uint64_t bytes = 0;          // count * element size
  ChunkOp op = ChunkOp::Copy;
  std::vector<int> after;      // messages that must reach src before it may send this one
};

struct CollectivePlan {
  int ranks = 0;
  std::vector<CollectiveMessage> messages;
  // Messages each rank receives (indices into messages); a rank holds the
  // result once all of them have arrived.
  std::vector<std::vector<int>> inbox;
};

// Ring all-reduce of `elements` values of `element_bytes` each over `ranks`:
// a reduce-scatter then an all-gather, 2(p-1) dependent steps of ~n/p elements.
CollectivePlan ring_all_reduce(int ranks, int64_t elements, int element_bytes);

// Payload bytes each rank sends in the plan.
std::vector<uint64_t> bytes_sent_per_rank(const CollectivePlan& plan);

}  // namespace testbed
