// Data-parallel SGD: every step, gradients are averaged across all nodes before the update.
#pragma once

#include <functional>
#include <vector>

#include "training/algorithm.h"
#include "training/algorithms/ddp_options.h"
#include "training/algorithms/gradient_buckets.h"
#include "training/algorithms/merged_gradient_buckets.h"
#include "training/algorithms/tensor_slices.h"
#include "training/models/model_shapes.h"
#include "training/optimizers/second_order_sync.h"

namespace testbed {

class Ddp : public Algorithm {
 public:
  // tensor_layers: each trainable tensor's layer in forward order (gradient_buckets).
  // merge_times: what options.mgwfbp merges by.
  // optimizer and second_order: a second-order optimizer's settings and layers, whose messages
  // join the step's (Eva's during the passes, K-FAC's in rounds after the gradient's).
  Ddp(int nodes, int batch_size, const std::vector<int64_t>& tensor_sizes, const std::vector<int>& tensor_layers,
      const DdpOptions& options, const OptimizerConfig& optimizer = {}, std::vector<SecondOrderLayer> second_order = {},
      const MergeTimes& merge_times = {});
  std::string name() const override { return "ddp"; }
  bool issues_during_backward() const override { return !buckets_.empty() || second_order_.during_passes(); }
  bool has_rounds() const override { return second_order_.has_rounds(); }
  Round next_round(int node, int step, Replica& replica) override;
  Round projected_round(int node, int step, size_t round) override;
  // A checkpoint can find a node between K-FAC's rounds: where it stands goes with it.
  AlgorithmState state(int node) const override;
  void load_state(int node, const AlgorithmState& state) override;
  StepPlan local_step(int node, int step, Replica& replica, const Dataset& data) override;
  StepPlan projected_step(int node, int step) override;
  void apply(int node, int issued_step, Replica& replica, CommOp& op) override;

 private:
  // The step's all-reduces, `payload(bucket)` each one's buffer (null: the whole gradient).
  std::vector<CommOp> gradient_ops(const std::function<torch::Tensor(const GradientBucket*)>& payload) const;

  int nodes_;
  int batch_size_;
  std::vector<GradientBucket> buckets_;  // empty without overlap: one all-reduce of the whole vector
  TensorSlices slices_;                  // each tensor's place in the flat vector
  std::vector<size_t> applied_;          // each node's ops applied this step: the update follows the last
  SecondOrderSync second_order_;         // a second-order optimizer's own messages
};

}  // namespace testbed
