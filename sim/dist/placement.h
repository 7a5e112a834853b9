// Which process trains which replica when one run spans processes: contiguous blocks of
// nodes, node 0 on rank 0 (which writes the file).
#pragma once

#include <cstdint>

namespace testbed {

struct ReplicaPlacement {
  int nodes = 1;
  int world = 1;
  int rank = 0;
  int owner(int node) const { return static_cast<int>(static_cast<int64_t>(node) * world / nodes); }
  bool local(int node) const { return owner(node) == rank; }
  bool spread() const { return world > 1; }
};

// Tags of the run's point-to-point tensors: a sequence number and what it carries, so that a
// receive meets its send whatever order the two processes post them in.
enum class TagKind : uint32_t { PlanHead = 0, PlanBody = 1, Payload = 2, Eval = 3 };
inline uint32_t wire_tag(TagKind kind, uint64_t sequence) {
  return static_cast<uint32_t>((sequence % (1u << 28)) * 4 + static_cast<uint32_t>(kind));
}

}  // namespace testbed
