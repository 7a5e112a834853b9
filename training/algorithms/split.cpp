// Edge-cloud split fine-tuning (Liao et al., "An Efficient Split Fine-tuning Framework for Edge
// and Cloud Collaborative Learning"; training/models/split_cut.h). Every node is an edge with
// its own data and its own model, cut in one block: the edge runs the front, the cloud (a host
// of its own after the nodes) runs the back, one back half per edge. A step is synchronous:
// the front's forward, the cut's activations to the cloud, the back's forward and backward
// there, their gradient back, the front's backward and each side's optimizer. The replica runs
// both halves here, exactly: fp32 crosses the cut unchanged over a reliable transport; the
// engine times each half on its own device and the cut's messages on the network.
#include <torch/torch.h>

#include "training/algorithms/algorithm_settings.h"
#include "training/algorithms/common.h"

namespace testbed {
namespace {

class Split : public Algorithm {
 public:
  explicit Split(const AlgorithmSettings& s)
      : nodes_(s.nodes), batch_(s.batch_size), values_(static_cast<int64_t>(s.batch_size) * s.cut_values_per_sample) {
    if (s.cut_values_per_sample <= 0) throw std::logic_error("split: the model is not cut (Model::split)");
  }
  std::string name() const override { return "split"; }

  // One message each way: the buffer holds the activations the front sends and the gradient
  // the back returns, as they were in this step.
  StepPlan local_step(int node, int, Replica& replica, const Dataset& data) override {
    StepPlan plan;
    plan.loss = local_sgd_step(replica, data, batch_);
    const CutValues* cut = replica.model().cut();
    if (!cut || !cut->gradient.defined()) throw std::logic_error("split: the step recorded no crossing at the cut");
    if (cut->activations.numel() != values_)
      throw std::logic_error("split: " + std::to_string(cut->activations.numel()) + " values crossed the cut, not " +
                             std::to_string(values_));
    plan.comm.push_back(cut_op(node, torch::cat({cut->activations.reshape({-1}), cut->gradient.reshape({-1})})));
    return plan;
  }
  StepPlan projected_step(int node, int) override {
    StepPlan plan;
    plan.loss = no_loss();
    plan.comm.push_back(cut_op(node, shape_only(2 * values_)));
    return plan;
  }
  // The values were the replica's own: nothing to apply.
  void apply(int, int, Replica&, CommOp&) override {}

 private:
  CommOp cut_op(int node, torch::Tensor buffer) const {
    CommOp op = make_op(CommKind::Cut, "cut." + std::to_string(node), std::move(buffer));
    op.nodes = {node, nodes_};  // the edge, then the cloud's host
    return op;
  }
  int nodes_, batch_;
  int64_t values_;  // a step's activations at the cut: batch x a sample's crossing values
};

}  // namespace

std::unique_ptr<Algorithm> make_split(const AlgorithmSettings& s) { return std::make_unique<Split>(s); }

}  // namespace testbed
