// DDP: the all-reduce sums gradients; dividing by N gives the large-batch mean gradient.
#include "training/algorithms/ddp.h"

#include "training/algorithms/algorithm_settings.h"

#include <torch/torch.h>

namespace testbed {

StepPlan Ddp::local_step(int /*node*/, int /*step*/, Replica& replica, const Dataset& data) {
  StepPlan plan;
  plan.loss = replica.forward_backward(replica.next_batch(data, batch_size_));
  // The all-reduce sums a copy of the replica's gradient buffer; the update waits for it. A copy,
  // not the buffer itself: an op owns its storage (algorithm.h), so a resumed run can rebuild it.
  CommOp op;
  op.tag = "gradient";
  op.buffer = replica.gradients().clone();
  plan.comm.push_back(std::move(op));
  return plan;
}

void Ddp::apply(int /*node*/, int /*issued_step*/, Replica& replica, CommOp& op) {
  replica.gradients().copy_(op.buffer.div_(nodes_));  // the parameters' .grad() now hold the mean gradient
  replica.optimizer_step();
}

std::unique_ptr<Algorithm> make_ddp(const AlgorithmSettings& s) {
  return std::make_unique<Ddp>(s.nodes, s.batch_size);
}

}  // namespace testbed
