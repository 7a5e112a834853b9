// DDP: the all-reduce sums gradients; dividing by N gives the large-batch mean gradient.
#include "training/ddp.h"

#include <torch/torch.h>

namespace testbed {

StepPlan Ddp::local_step(int /*node*/, int /*step*/, Replica& replica, const Dataset& data) {
  StepPlan plan;
  plan.loss = replica.forward_backward(replica.next_batch(data, batch_size_));
  plan.comm.push_back({CommKind::AllReduce, flatten_gradients(replica.model()), "gradient"});
  return plan;
}

void Ddp::apply(int /*node*/, int /*step*/, Replica& replica, std::vector<CommOp>& comm) {
  auto& summed = comm.at(0).buffer;
  summed.div_(nodes_);
  load_flat_gradients(replica.model(), summed);
  replica.optimizer_step();
}

}  // namespace testbed
