// Data-parallel SGD: every step, gradients are averaged across all nodes before the update.
#pragma once

#include <functional>
#include <vector>

#include "training/algorithm.h"
#include "training/algorithms/ddp_options.h"
#include "training/algorithms/gradient_buckets.h"
#include "training/algorithms/tensor_slices.h"
#include "training/model_shapes.h"
#include "training/optimizers/eva.h"

namespace testbed {

class Ddp : public Algorithm {
 public:
  // tensor_layers: each trainable tensor's layer in forward order (gradient_buckets).
  // eva_layers: the layers whose Eva statistics are all-reduced every step (empty without Eva).
  Ddp(int nodes, int batch_size, const std::vector<int64_t>& tensor_sizes, const std::vector<int>& tensor_layers,
      const DdpOptions& options, std::vector<SecondOrderLayer> eva_layers = {});
  std::string name() const override { return "ddp"; }
  bool issues_during_backward() const override { return !buckets_.empty() || !eva_layers_.empty(); }
  StepPlan local_step(int node, int step, Replica& replica, const Dataset& data) override;
  StepPlan projected_step(int node, int step) override;
  void apply(int node, int issued_step, Replica& replica, CommOp& op) override;

 private:
  // The step's all-reduces, `payload(bucket)` each one's buffer (null: the whole gradient).
  std::vector<CommOp> gradient_ops(const std::function<torch::Tensor(const GradientBucket*)>& payload) const;
  // The gradient's ops and Eva's (eva null: shapes only), in the order the step issues them.
  std::vector<CommOp> step_ops(std::vector<CommOp> gradient, const Eva* eva) const;

  int nodes_;
  int batch_size_;
  std::vector<GradientBucket> buckets_;  // empty without overlap: one all-reduce of the whole vector
  TensorSlices slices_;                  // each tensor's place in the flat vector
  std::vector<int> tensor_layers_;
  std::vector<SecondOrderLayer> eva_layers_;
  std::vector<size_t> applied_;          // each node's ops applied this step: the update follows the last
};

}  // namespace testbed
