// Reduce-scatters: each rank ends with the sum of its own block of everyone's buffer (what
// DeAR overlaps with the backward pass), along the ring or straight to the block's owner.
#include <stdexcept>
#include <string>

#include "comm/plans/collectives.h"
#include "comm/plans/plan_builder.h"

namespace testbed {

using namespace plan_builder;

namespace {

// Elements per block. Equal blocks, so that block r is where the ring all-gather of the
// result expects rank r's: unequal ones would need a layout of their own.
int64_t block_elements(const char* what, int ranks, int64_t elements, double element_bytes) {
  check_sizes(what, ranks, elements, element_bytes);
  if (elements % ranks != 0)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(elements) + " elements do not split into " +
                                std::to_string(ranks) + " equal blocks; pad the buffer to a multiple of the ranks");
  return elements / ranks;
}

}  // namespace

CollectivePlan ring_reduce_scatter(int ranks, int64_t elements, double element_bytes, int slices) {
  const int64_t block = block_elements("ring_reduce_scatter", ranks, elements, element_bytes);
  if (slices < 1) throw std::invalid_argument("ring_reduce_scatter: slices must be >= 1");
  // The ring all-gather of the blocks already moves them as a reduce-scatter must, slices and
  // dependencies included (in step k rank r forwards block r - k, which r - 1 sent it in step
  // k - 1), from the one loop every ring plan is built by. One block behind, rank r starts
  // with block r - 1, so block r is added into last at rank r; and each hop adds.
  CollectivePlan plan = ring_all_gather(ranks, block, element_bytes, slices);
  for (auto& m : plan.messages) {
    m.offset = m.offset >= block ? m.offset - block : m.offset + elements - block;
    m.dst_offset = m.offset;
    m.op = ChunkOp::Reduce;
  }
  return plan;
}

CollectivePlan direct_reduce_scatter(int ranks, int64_t elements, double element_bytes) {
  const int64_t block = block_elements("direct_reduce_scatter", ranks, elements, element_bytes);
  const int p = ranks;
  CollectivePlan plan = empty_plan(p);
  // Rank r sends to r+1, r+2, ... in that order, as direct_all_reduce's first step does, so
  // that no rank's incoming connections all open last.
  for (int r = 0; r < p; ++r)
    for (int k = 1; k < p; ++k) {
      const int c = (r + k) % p;
      add(plan, chunk(r, c, c * block, c * block, block, element_bytes, ChunkOp::Reduce));
    }
  return plan;
}

}  // namespace testbed
