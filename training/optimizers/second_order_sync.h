// A second-order optimizer beside an algorithm that averages the gradient every step (DDP,
// DeAR): Eva's statistics during the passes, K-FAC's rounds once the mean gradient is in, then
// the update. The algorithm sends the gradient its own way; this adds what the optimizer sends.
#pragma once

#include <vector>

#include "training/algorithm.h"
#include "training/models/model_shapes.h"
#include "training/optimizers/eva.h"
#include "training/optimizers/kfac.h"

namespace testbed {

class SecondOrderSync {
 public:
  // tensor_layers: each trainable tensor's layer in forward order (an op's issue point).
  // `layers` empty or the optimizer first-order: nothing of its own is sent.
  SecondOrderSync(int nodes, int batch_size, std::vector<int> tensor_layers, const OptimizerConfig& optimizer,
                  std::vector<SecondOrderLayer> layers);
  // Eva's vectors ride the step's passes (ops issued during forward and backward).
  bool during_passes() const { return !eva_layers_.empty(); }
  size_t pass_ops() const { return 2 * eva_layers_.size(); }
  // K-FAC's rounds follow the mean gradient (a fleet of one preconditions alone).
  bool has_rounds() const { return kfac_ && nodes_ > 1; }
  // The gradient's ops and Eva's (eva null: shapes only), in the order the step issues them:
  // forward's by layer, then backward's from the last layer (a gradient op before a statistic
  // of the same layer), then those at the end of backward.
  std::vector<CommOp> with_pass_ops(std::vector<CommOp> gradient_ops, const Eva* eva) const;
  // Whether `op` is one of Eva's statistics (pass ops); if it is, it is applied.
  bool apply_pass_op(Replica& replica, CommOp& op) const;
  // Whether `op` is one of K-FAC's round messages; if it is, it is applied.
  bool apply_round_op(Replica& replica, CommOp& op) const;
  // Every node's mean gradient is in the replica: the update now, or K-FAC's rounds first.
  void gradient_averaged(int node, Replica& replica);
  // K-FAC's next round for the node, or none (then the update ran if rounds were pending).
  Round next_round(int node, int step, Replica& replica);
  Round projected_round(int node, int step, size_t round) const;
  // A checkpoint can find a node between K-FAC's rounds: where it stands goes with it.
  void save(int node, AlgorithmState& state) const;
  void load(int node, const AlgorithmState& state);

 private:
  int nodes_, batch_size_;
  std::vector<int> tensor_layers_;
  std::vector<SecondOrderLayer> eva_layers_;
  bool kfac_ = false;  // K-FAC or DP-KFAC
  KfacOptions kfac_options_;
  std::vector<SecondOrderLayer> kfac_layers_;
  std::vector<int> kfac_round_;  // each node's next K-FAC round this step; -1: none pending
};

}  // namespace testbed
