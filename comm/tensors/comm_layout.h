// How a CommOp's tensors map onto the one flat buffer per rank that a collective plan
// moves, and how the result is read back into the op.
#pragma once

#include <vector>

#include "comm/plans/collectives.h"
#include "training/algorithm.h"

namespace testbed {

// The plan for `kind` over `ranks` participants of `elements` floats each, all-reduces and
// all-gathers by `options` (rank space). `neighbours` (rank space) is used by
// NeighbourExchange only.
// `pipelined`: a broadcast as NCCL's ring (CommOp::pipelined).
CollectivePlan comm_plan(CommKind kind, int ranks, int64_t elements, double element_bytes,
                         const std::vector<std::vector<int>>& neighbours, const CollectiveOptions& options = {},
                         bool pipelined = false);

// The buffer rank `rank` enters the collective with: the op's own buffer for an all-reduce or
// reduce-scatter (reduced in place), else the op's buffer in its block of a larger zeroed one.
// `blocks`: participants for an all-gather or reduce-scatter, 1 + degree for a neighbour exchange.
torch::Tensor comm_work_buffer(const CommOp& op, int rank, int blocks);
// The same layout (float32) before the op's values are known: `own` is set to the view they
// go in (another process's rank in a spread run, whose values are still arriving).
torch::Tensor comm_work_buffer_awaiting(CommKind kind, int rank, int blocks, int64_t elements, torch::Tensor& own);

// After the collective: fills op.received from the work buffer (all-gather and exchange; the
// rank's block for a reduce-scatter), and op.received_mask from `arrived` (the work buffer's
// per-element arrival, or undefined) when some element of a received block did not arrive.
void comm_unpack(CommOp& op, const torch::Tensor& work, int blocks, int rank, const torch::Tensor& arrived = {});

}  // namespace testbed
