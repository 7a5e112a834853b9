// Collectives expanded into DAGs of point-to-point messages over element ranges.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace testbed {

enum class ChunkOp { Reduce, Copy };  // receiver adds the chunk, or overwrites with it

// Every rank works on one flat buffer; a message carries elements [offset, offset + count)
// of the sender's buffer into [dst_offset, dst_offset + count) of the receiver's.
struct CollectiveMessage {
  int src = 0, dst = 0;    // ranks
  int64_t offset = 0;      // first element of the chunk in the sender's buffer
  int64_t dst_offset = 0;  // where it lands in the receiver's buffer
  int64_t count = 0;       // elements in the chunk
  uint64_t bytes = 0;      // count x element size, rounded up (elements may be 4-bit)
  ChunkOp op = ChunkOp::Copy;
  std::vector<int> after;  // messages that must reach src before it may send this one
};

struct CollectivePlan {
  int ranks = 0;
  std::vector<CollectiveMessage> messages;
  // Messages each rank receives (indices into messages); a rank holds the
  // result once all of them have arrived.
  std::vector<std::vector<int>> inbox;
  // Per message, seconds its sender computes between the last of its dependencies arriving
  // and the send (a split's back half, cut_exchange); empty when none holds (every collective),
  // so a message of a ring of thousands of ranks stays the size it was.
  std::vector<double> hold_s;
};

// Ring all-reduce of `elements` values of `element_bytes` each over `ranks`:
// a reduce-scatter then an all-gather, 2(p-1) dependent steps of ~n/p elements.
// `slices` > 1 pipelines each chunk as that many messages: slice j of step k waits only
// for slice j of step k-1 (as NCCL and Gloo do), not for the whole chunk.
CollectivePlan ring_all_reduce(int ranks, int64_t elements, double element_bytes, int slices = 1);

// Ring all-gather of `elements` values per rank: each rank's buffer holds p blocks of
// `elements`, its own at block r; p-1 dependent steps, each forwarding one block to r+1.
// Afterwards every rank's buffer holds every rank's block in rank order. `slices` as above.
CollectivePlan ring_all_gather(int ranks, int64_t elements, double element_bytes, int slices = 1);

// Direct all-gather: every rank sends its block straight to every other rank (one step).
CollectivePlan direct_all_gather(int ranks, int64_t elements, double element_bytes);

// Broadcast of rank 0's `elements` to every other rank, each sent straight from rank 0 at
// once (Gloo's broadcast on CPU tensors: the root posts a send to every other rank).
CollectivePlan direct_broadcast(int ranks, int64_t elements, double element_bytes);

// Broadcast of rank 0's `elements` down the ring 0 -> 1 -> ... -> p-1, pipelined as NCCL
// broadcasts GPU buffers: the buffer in p pieces (fewer when it has fewer elements), each
// forwarded by rank r once it has reached r. Every rank but the last sends the buffer once;
// p-2 + pieces steps of a piece each.
CollectivePlan ring_broadcast(int ranks, int64_t elements, double element_bytes);

// Ring reduce-scatter: every rank's buffer holds the whole vector of `elements` values as p
// equal blocks (so `elements` must be a multiple of p: std::invalid_argument otherwise; DeAR
// pads its buffers so). Afterwards rank r's block r holds the sum of every rank's block r,
// ready for ring_all_gather; its other blocks hold partial sums. p-1 dependent steps, each
// adding one block into r+1; block c is summed in rank order c+1, c+2, ..., c, where
// ring_all_reduce, which finishes chunk c at rank c-1, sums c, c+1, ..., c-1. `slices` as above.
CollectivePlan ring_reduce_scatter(int ranks, int64_t elements, double element_bytes, int slices = 1);

// Direct reduce-scatter: every rank sends block c straight to rank c (one step), the
// buffer as for the ring.
CollectivePlan direct_reduce_scatter(int ranks, int64_t elements, double element_bytes);

// Double binary tree all-reduce (NCCL): the first half of the buffer is reduced up and
// broadcast down tree A, the second half tree B, whose leaves are tree A's inner ranks.
// Tree A: rank 0 is the root with one child, the largest power of two below p; a rank r
// with lowest set bit b has children r - b/2 and the largest r + b/2^j below p.
// Tree B is the same tree over positions p-1-r (p even) or (r+1) mod p (p odd).
CollectivePlan tree_all_reduce(int ranks, int64_t elements, double element_bytes);
// Tree A's children of each rank (tree B's follow by the relabelling above).
std::vector<std::vector<int>> binary_tree_children(int ranks);

// Recursive halving reduce-scatter then recursive doubling all-gather over the largest
// power of two p' <= p; the p - p' extra ranks first fold their whole buffer into a
// partner (rank 2i+1 into 2i for i < p - p') and get the result back from it at the end.
CollectivePlan halving_doubling_all_reduce(int ranks, int64_t elements, double element_bytes);

// Every rank sends chunk c (of p near-equal chunks) to rank c, which reduces it and sends
// the reduced chunk to everyone: two steps, 2(p-1)/p n bytes per rank.
CollectivePlan direct_all_reduce(int ranks, int64_t elements, double element_bytes);

// Every rank sends its whole buffer to `server`, which reduces and sends the sum back.
CollectivePlan parameter_server_all_reduce(int ranks, int64_t elements, double element_bytes, int server);

// `cluster_of[r]`: rank r's cluster (any integers). Members reduce their whole buffer into
// the cluster's leader (its lowest rank), leaders run a ring all-reduce (with `slices`),
// and each leader sends the result back to its members.
CollectivePlan hierarchical_all_reduce(const std::vector<int>& cluster_of, int64_t elements, double element_bytes,
                                       int slices = 1);

// Which plan an all-reduce, all-gather or reduce-scatter uses, and the algorithms' parameters.
enum class CollectiveAlgorithm { Ring, Tree, HalvingDoubling, Direct, ParameterServer, Hierarchical };
struct CollectiveOptions {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  int slices = 1;               // ring pipelining (ring, and the leaders' ring in hierarchical)
  int server = 0;               // parameter_server: the server's rank
  std::vector<int> cluster_of;  // hierarchical: each rank's cluster
};
// Scenario spelling <-> algorithm; throws std::invalid_argument for an unknown name.
CollectiveAlgorithm collective_algorithm(const std::string& name);
const std::vector<std::string>& collective_algorithm_names();

CollectivePlan all_reduce(const CollectiveOptions& options, int ranks, int64_t elements, double element_bytes);
// Ring and direct are all-gathers of their own; the other algorithms all-gather on the ring.
CollectivePlan all_gather(const CollectiveOptions& options, int ranks, int64_t elements, double element_bytes);
// Ring and direct are reduce-scatters of their own; the others reduce-scatter on the ring, as
// none of them leaves each rank the sum of one of p blocks (halving-doubling's halving does
// only when p is a power of two).
CollectivePlan reduce_scatter(const CollectiveOptions& options, int ranks, int64_t elements, double element_bytes);

// Each rank sends its `elements` values to each of its neighbours (`neighbours[r]`, a
// symmetric relation: q is in neighbours[r] iff r is in neighbours[q]). Rank r's buffer is
// its own block followed by one block per neighbour, in neighbours[r] order; one step.
CollectivePlan neighbour_exchange(const std::vector<std::vector<int>>& neighbours, int64_t elements,
                                  double element_bytes);

// Split learning's cut between rank 0 (an edge) and rank 1 (the cloud), over a buffer of two
// blocks of `elements`: block 0 (the activations) goes to rank 1, which computes `hold_s`
// seconds (the back half's forward and backward) and sends block 1 (their gradient) back.
CollectivePlan cut_exchange(int64_t elements, double element_bytes, double hold_s);

// Payload bytes each rank sends in the plan.
std::vector<uint64_t> bytes_sent_per_rank(const CollectivePlan& plan);

}  // namespace testbed
