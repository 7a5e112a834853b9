// Collectives expanded into DAGs of point-to-point messages over element ranges.
#pragma once

#include <cstdint>
#include <vector>

namespace testbed {

enum class ChunkOp { Reduce, Copy };  // receiver adds the chunk, or overwrites with it

// Every rank works on one flat buffer; a message carries elements [offset, offset + count)
// of the sender's buffer into [dst_offset, dst_offset + count) of the receiver's.
struct CollectiveMessage {
  int src = 0, dst = 0;        // ranks
  int64_t offset = 0;          // first element of the chunk in the sender's buffer
  int64_t dst_offset = 0;      // where it lands in the receiver's buffer
  int64_t count = 0;           // elements in the chunk
  uint64_t bytes = 0;          // count x element size, rounded up (elements may be 4-bit)
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
CollectivePlan ring_all_reduce(int ranks, int64_t elements, double element_bytes);

// Ring all-gather of `elements` values per rank: each rank's buffer holds p blocks of
// `elements`, its own at block r; p-1 dependent steps, each forwarding one block to r+1.
// Afterwards every rank's buffer holds every rank's block in rank order.
CollectivePlan ring_all_gather(int ranks, int64_t elements, double element_bytes);

// Each rank sends its `elements` values to each of its neighbours (`neighbours[r]`, a
// symmetric relation: q is in neighbours[r] iff r is in neighbours[q]). Rank r's buffer is
// its own block followed by one block per neighbour, in neighbours[r] order; one step.
CollectivePlan neighbour_exchange(const std::vector<std::vector<int>>& neighbours, int64_t elements,
                                  double element_bytes);

// Payload bytes each rank sends in the plan.
std::vector<uint64_t> bytes_sent_per_rank(const CollectivePlan& plan);

}  // namespace testbed
