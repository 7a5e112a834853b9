// DDP: the all-reduce sums gradients; dividing by N gives the large-batch mean gradient.
#include "training/algorithms/ddp.h"

#include "training/algorithms/algorithm_settings.h"
#include "training/algorithms/common.h"
#include "training/optimizers/eva_traffic.h"
#include "training/optimizers/kfac_traffic.h"

#include <algorithm>

#include <torch/torch.h>

namespace testbed {

namespace {
// A bucket's op tag: its place in the step's order of all-reduces.
std::string bucket_tag(size_t b) { return "gradient." + std::to_string(b); }
}  // namespace

Ddp::Ddp(int nodes, int batch_size, const std::vector<int64_t>& tensor_sizes, const std::vector<int>& tensor_layers,
         const DdpOptions& options, const OptimizerConfig& optimizer, std::vector<SecondOrderLayer> second_order)
    : nodes_(nodes), batch_size_(batch_size), slices_(tensor_sizes), tensor_layers_(tensor_layers), applied_(nodes, 0),
      kfac_(optimizer.name == "kfac" || optimizer.name == "dp_kfac"), kfac_options_(optimizer.kfac),
      kfac_round_(nodes, -1) {
  if (optimizer.name == "eva") eva_layers_ = second_order;
  if (kfac_) kfac_layers_ = std::move(second_order);
  if (options.overlap) buckets_ = gradient_buckets(tensor_sizes, tensor_layers, options.bucket_mb * 1024 * 1024);
}

std::vector<CommOp> Ddp::step_ops(std::vector<CommOp> ops, const Eva* eva) const {
  if (eva_layers_.empty()) return ops;
  for (auto& op : eva_statistics_ops(eva_layers_, eva)) ops.push_back(std::move(op));
  // Issue order: forward ops by layer, then backward's from the last layer to the first (a
  // bucket before a statistic of the same layer), then those at the end of backward.
  auto layer = [&](int tensor) { return tensor_layers_.empty() ? tensor : tensor_layers_[tensor]; };
  auto when = [&](const CommOp& op) {
    return op.after_forward >= 0    ? std::pair{0, layer(op.after_forward)}
           : op.after_gradient >= 0 ? std::pair{1, -layer(op.after_gradient)}
                                    : std::pair{2, 0};
  };
  std::stable_sort(ops.begin(), ops.end(), [&](const CommOp& x, const CommOp& y) { return when(x) < when(y); });
  return ops;
}

std::vector<CommOp> Ddp::gradient_ops(const std::function<torch::Tensor(const GradientBucket*)>& payload) const {
  if (buckets_.empty()) {
    CommOp op;
    op.tag = "gradient";
    op.buffer = payload(nullptr);
    return {op};
  }
  // One all-reduce per bucket, each issued when backward has produced its last gradient.
  std::vector<CommOp> ops;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    CommOp op;
    op.tag = bucket_tag(b);
    op.buffer = payload(&buckets_[b]);
    op.after_gradient = buckets_[b].last_ready;
    ops.push_back(std::move(op));
  }
  return ops;
}

StepPlan Ddp::local_step(int /*node*/, int /*step*/, Replica& replica, const Dataset& data) {
  StepPlan plan;
  plan.loss = replica.forward_backward(replica.next_batch(data, batch_size_));
  // Without buckets the all-reduce sums a copy of the replica's gradient buffer; the update waits
  // for it. A copy, not the buffer itself: an op owns its storage (algorithm.h), so a resumed
  // run can rebuild it.
  plan.comm = step_ops(gradient_ops([&](const GradientBucket* b) {
                         return b ? slices_.gather(replica.gradients(), b->tensors) : replica.gradients().clone();
                       }),
                       dynamic_cast<const Eva*>(replica.preconditioner()));
  return plan;
}

StepPlan Ddp::projected_step(int /*node*/, int /*step*/) {
  StepPlan plan;
  plan.loss = no_loss();
  plan.comm = step_ops(gradient_ops([&](const GradientBucket* b) { return shape_only(b ? b->elements : slices_.total()); }),
                       nullptr);
  return plan;
}

void Ddp::apply(int node, int /*issued_step*/, Replica& replica, CommOp& op) {
  auto* kfac = dynamic_cast<Kfac*>(replica.preconditioner());
  if (kfac && apply_kfac_op(*kfac, op, nodes_)) return;  // a round's message: next_round goes on
  auto* eva = dynamic_cast<Eva*>(replica.preconditioner());
  const bool statistic = eva && apply_eva_statistics(*eva, op, nodes_);
  if (!statistic && buckets_.empty()) {
    replica.gradients().copy_(op.buffer.div_(nodes_));  // the parameters' .grad() now hold the mean gradient
  } else if (!statistic) {
    size_t b = 0;
    while (b < buckets_.size() && bucket_tag(b) != op.tag) ++b;
    if (b == buckets_.size()) throw std::logic_error("ddp: no bucket is tagged '" + op.tag + "'");
    slices_.scatter(op.buffer.div_(nodes_), buckets_[b].tensors, replica.gradients());
  }
  // The update follows the step's last op (it needs every gradient, as in DDP, and Eva's
  // averaged vectors); all of them are due before the next step.
  const size_t ops = std::max<size_t>(buckets_.size(), 1) + 2 * eva_layers_.size();
  if (++applied_[node] < ops) return;
  applied_[node] = 0;
  if (has_rounds()) {
    kfac_round_[node] = 0;  // K-FAC's rounds come first (next_round); the update follows them
    return;
  }
  replica.optimizer_step();
}

Round Ddp::next_round(int node, int step, Replica& replica) {
  int& next = kfac_round_[node];
  if (next < 0) return {};
  auto* kfac = dynamic_cast<Kfac*>(replica.preconditioner());
  if (!kfac) throw std::logic_error("ddp: K-FAC's rounds without its preconditioner");
  const auto rounds = kfac_rounds(kfac_options_, nodes_, step);
  if (next < static_cast<int>(rounds.size())) {
    const size_t r = static_cast<size_t>(next++);
    return kfac_round(rounds[r], r + 1 == rounds.size(), kfac_layers_, kfac_options_, nodes_, node, batch_size_, step, kfac);
  }
  // Every round is in: eigen preconditions now (its parts arrived), then the update.
  next = -1;
  if (kfac_options_.variant == KfacVariant::Eigen) kfac->compute_preconditioned();
  kfac->update_gradients(replica.learning_rate());
  replica.optimizer().step();
  return {};
}

AlgorithmState Ddp::state(int node) const {
  AlgorithmState s;
  s.counters["applied"] = static_cast<int64_t>(applied_[node]);
  s.counters["kfac_round"] = kfac_round_[node];
  return s;
}

void Ddp::load_state(int node, const AlgorithmState& s) {
  auto get = [&](const char* key, int64_t fallback) {
    auto it = s.counters.find(key);
    return it == s.counters.end() ? fallback : it->second;
  };
  applied_[node] = static_cast<size_t>(get("applied", 0));
  kfac_round_[node] = static_cast<int>(get("kfac_round", -1));
}

Round Ddp::projected_round(int node, int step, size_t round) {
  if (!has_rounds()) return {};
  const auto rounds = kfac_rounds(kfac_options_, nodes_, step);
  if (round >= rounds.size()) return {};
  return kfac_round(rounds[round], round + 1 == rounds.size(), kfac_layers_, kfac_options_, nodes_, node, batch_size_,
                    step, nullptr);
}

std::unique_ptr<Algorithm> make_ddp(const AlgorithmSettings& s) {
  return std::make_unique<Ddp>(s.nodes, s.batch_size, s.tensor_sizes, s.tensor_layers, std::get<DdpOptions>(s.options),
                               s.optimizer, s.second_order);
}

}  // namespace testbed
