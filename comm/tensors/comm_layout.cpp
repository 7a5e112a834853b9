// CommOp <-> flat collective buffers: blocks of the op's size, views rather than copies.
#include "comm/tensors/comm_layout.h"

#include <stdexcept>

#include <torch/torch.h>

namespace testbed {

CollectivePlan comm_plan(CommKind kind, int ranks, int64_t elements, double element_bytes,
                         const std::vector<std::vector<int>>& neighbours, const CollectiveOptions& options,
                         bool pipelined) {
  switch (kind) {
    case CommKind::AllReduce:
      return all_reduce(options, ranks, elements, element_bytes);
    case CommKind::AllGather:
      return all_gather(options, ranks, elements, element_bytes);
    case CommKind::ReduceScatter:
      return reduce_scatter(options, ranks, elements, element_bytes);
    case CommKind::NeighbourExchange:
      return neighbour_exchange(neighbours, elements, element_bytes);
    case CommKind::Broadcast:
      return pipelined ? ring_broadcast(ranks, elements, element_bytes)
                       : direct_broadcast(ranks, elements, element_bytes);
    case CommKind::Cut:
      throw std::logic_error("comm_plan: a cut's plan holds for the cloud's compute (Engine::plan_for)");
  }
  throw std::logic_error("comm_plan: unknown kind");
}

namespace {
// Reductions and broadcasts work in the op's own buffer.
bool in_place(CommKind kind) {
  return kind == CommKind::AllReduce || kind == CommKind::ReduceScatter || kind == CommKind::Broadcast ||
         kind == CommKind::Cut;
}
}  // namespace

torch::Tensor comm_work_buffer(const CommOp& op, int rank, int blocks) {
  if (in_place(op.kind)) return op.buffer;
  torch::Tensor own;
  auto work = comm_work_buffer_awaiting(op.kind, rank, blocks, op.buffer.numel(), own);
  own.copy_(op.buffer.reshape({-1}));
  return work;
}

torch::Tensor comm_work_buffer_awaiting(CommKind kind, int rank, int blocks, int64_t elements, torch::Tensor& own) {
  if (in_place(kind)) {
    own = torch::empty({elements}, torch::kFloat32);
    return own;
  }
  auto work = torch::zeros({blocks * elements}, torch::kFloat32);
  const int block = kind == CommKind::AllGather ? rank : 0;  // an exchange keeps its own block first
  own = work.slice(0, block * elements, (block + 1) * elements);
  return work;
}

void comm_unpack(CommOp& op, const torch::Tensor& work, int blocks, int rank, const torch::Tensor& arrived) {
  if (op.kind == CommKind::AllReduce || op.kind == CommKind::Broadcast || op.kind == CommKind::Cut) return;
  if (op.kind == CommKind::ReduceScatter) {
    const int64_t k = op.buffer.numel() / blocks;
    op.received = {work.slice(0, rank * k, (rank + 1) * k)};
    return;
  }
  const int64_t k = op.buffer.numel();
  const int first = op.kind == CommKind::AllGather ? 0 : 1;
  op.received.clear();
  for (int b = first; b < blocks; ++b) op.received.push_back(work.slice(0, b * k, (b + 1) * k));
  op.received_mask.clear();
  // Empty when everything arrived, so that lossless runs take the algorithms' unmasked path
  // and stay bit-identical to TCP.
  if (!arrived.defined() || arrived.all().item<bool>()) return;
  for (int b = first; b < blocks; ++b) op.received_mask.push_back(arrived.slice(0, b * k, (b + 1) * k));
}

}  // namespace testbed
