// lo-fi (arXiv 2210.11948): every node fine-tunes on its own data with no communication;
// the weights are averaged once, at the end (one all-reduce of the trainable parameters).
#include <torch/torch.h>

#include "training/algorithms/algorithm_settings.h"
#include "training/algorithms/common.h"

namespace testbed {
namespace {

class Lofi : public Algorithm {
 public:
  explicit Lofi(const AlgorithmSettings& s) : nodes_(s.nodes), batch_(s.batch_size), steps_(s.steps) {
    for (int64_t n : s.tensor_sizes) d_ += n;
  }
  std::string name() const override { return "lofi"; }

  StepPlan local_step(int, int step, Replica& replica, const Dataset& data) override {
    StepPlan plan;
    plan.loss = local_sgd_step(replica, data, batch_);
    if (step == steps_ - 1) plan.comm.push_back(average(replica.parameters().clone()));
    return plan;
  }
  StepPlan projected_step(int, int step) override {
    StepPlan plan;
    plan.loss = no_loss();
    if (step == steps_ - 1) plan.comm.push_back(average(shape_only(d_)));
    return plan;
  }

  void apply(int, int, Replica& replica, CommOp& op) override {
    torch::NoGradGuard no_grad;
    replica.parameters().copy_(op.buffer.div_(nodes_));
  }

 private:
  static CommOp average(torch::Tensor parameters) {
    return make_op(CommKind::AllReduce, "average", std::move(parameters), kDueAtEnd);
  }
  int nodes_, batch_, steps_;
  int64_t d_ = 0;  // trainable parameters
};

}  // namespace

std::unique_ptr<Algorithm> make_lofi(const AlgorithmSettings& s) { return std::make_unique<Lofi>(s); }

}  // namespace testbed
