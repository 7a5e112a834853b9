// Moved out of DDP so that DeAR carries the same messages (docs/algorithms.md, second-order optimizers).
#include "training/optimizers/second_order_sync.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "training/optimizers/eva_traffic.h"
#include "training/optimizers/kfac_traffic.h"

namespace testbed {

SecondOrderSync::SecondOrderSync(int nodes, int batch_size, std::vector<int> tensor_layers,
                                 const OptimizerConfig& optimizer, std::vector<SecondOrderLayer> layers)
    : nodes_(nodes),
      batch_size_(batch_size),
      tensor_layers_(std::move(tensor_layers)),
      kfac_(optimizer.name == OptimizerKind::Kfac || optimizer.name == OptimizerKind::DpKfac),
      kfac_options_(optimizer.kfac),
      kfac_round_(nodes, -1) {
  if (optimizer.name == OptimizerKind::Eva) eva_layers_ = layers;
  if (kfac_) kfac_layers_ = std::move(layers);
}

std::vector<CommOp> SecondOrderSync::with_pass_ops(std::vector<CommOp> ops, const Eva* eva) const {
  if (eva_layers_.empty()) return ops;
  for (auto& op : eva_statistics_ops(eva_layers_, eva)) ops.push_back(std::move(op));
  auto layer = [&](int tensor) { return tensor_layers_.empty() ? tensor : tensor_layers_[tensor]; };
  auto when = [&](const CommOp& op) {
    return op.after_forward >= 0    ? std::pair{0, layer(op.after_forward)}
           : op.after_gradient >= 0 ? std::pair{1, -layer(op.after_gradient)}
                                    : std::pair{2, 0};
  };
  std::stable_sort(ops.begin(), ops.end(), [&](const CommOp& x, const CommOp& y) { return when(x) < when(y); });
  return ops;
}

bool SecondOrderSync::apply_pass_op(Replica& replica, CommOp& op) const {
  auto* eva = dynamic_cast<Eva*>(replica.preconditioner());
  return eva && apply_eva_statistics(*eva, op, nodes_);
}

bool SecondOrderSync::apply_round_op(Replica& replica, CommOp& op) const {
  auto* kfac = dynamic_cast<Kfac*>(replica.preconditioner());
  return kfac && apply_kfac_op(*kfac, op, nodes_);
}

void SecondOrderSync::gradient_averaged(int node, Replica& replica) {
  if (has_rounds()) {
    kfac_round_[node] = 0;  // K-FAC's rounds come first (next_round); the update follows them
    return;
  }
  replica.optimizer_step();
}

Round SecondOrderSync::next_round(int node, int step, Replica& replica) {
  int& next = kfac_round_[node];
  if (next < 0) return {};
  auto* kfac = dynamic_cast<Kfac*>(replica.preconditioner());
  if (!kfac) throw std::logic_error("K-FAC's rounds without its preconditioner");
  const auto rounds = kfac_rounds(kfac_options_, nodes_, step);
  if (next < static_cast<int>(rounds.size())) {
    const size_t r = static_cast<size_t>(next++);
    return kfac_round(rounds[r], r + 1 == rounds.size(), kfac_layers_, kfac_options_, nodes_, node, batch_size_, step,
                      kfac);
  }
  // Every round is in: eigen preconditions now (its parts arrived), then the update.
  next = -1;
  if (kfac_options_.variant == KfacVariant::Eigen && !kfac_options_.distributed_preconditioning)
    kfac->compute_preconditioned();
  kfac->update_gradients(replica.learning_rate());
  replica.optimizer().step();
  return {};
}

Round SecondOrderSync::projected_round(int node, int step, size_t round) const {
  if (!has_rounds()) return {};
  const auto rounds = kfac_rounds(kfac_options_, nodes_, step);
  if (round >= rounds.size()) return {};
  return kfac_round(rounds[round], round + 1 == rounds.size(), kfac_layers_, kfac_options_, nodes_, node, batch_size_,
                    step, nullptr);
}

void SecondOrderSync::save(int node, AlgorithmState& state) const { state.counters["kfac_round"] = kfac_round_[node]; }

void SecondOrderSync::load(int node, const AlgorithmState& state) {
  auto it = state.counters.find("kfac_round");
  kfac_round_[node] = it == state.counters.end() ? -1 : static_cast<int>(it->second);
}

}  // namespace testbed
