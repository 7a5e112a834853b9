// DDP: the all-reduce sums gradients; dividing by N gives the large-batch mean gradient.
#include "training/algorithms/ddp.h"

#include "training/algorithms/algorithm_settings.h"
#include "training/algorithms/common.h"

#include <algorithm>

#include <torch/torch.h>

namespace testbed {

namespace {
// A bucket's op tag: its place in the step's order of all-reduces.
std::string bucket_tag(size_t b) { return "gradient." + std::to_string(b); }
}  // namespace

Ddp::Ddp(int nodes, int batch_size, const std::vector<int64_t>& tensor_sizes, const std::vector<int>& tensor_layers,
         const DdpOptions& options, const OptimizerConfig& optimizer, std::vector<SecondOrderLayer> second_order,
         const MergeTimes& merge_times)
    : nodes_(nodes),
      batch_size_(batch_size),
      slices_(tensor_sizes),
      applied_(nodes, 0),
      second_order_(nodes, batch_size, tensor_layers, optimizer, std::move(second_order)) {
  // A tensor a bucket: each closes with its first tensor when both caps are a byte.
  if (options.overlap && options.mgwfbp) {
    if (merge_times.ready_s.size() != tensor_sizes.size())
      throw std::invalid_argument("ddp's mgwfbp merges by each tensor's backward time: the run gave none");
    buckets_ = merged_gradient_buckets(tensor_sizes, tensor_layers, merge_times, 4, options.merge_below);
  } else if (options.overlap) {
    buckets_ = options.per_tensor ? gradient_buckets(tensor_sizes, tensor_layers, 1, 1)
                                  : gradient_buckets(tensor_sizes, tensor_layers, options.bucket_mb * 1024 * 1024);
  }
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
  plan.comm = second_order_.with_pass_ops(gradient_ops([&](const GradientBucket* b) {
                                            return b ? slices_.gather(replica.gradients(), b->tensors)
                                                     : replica.gradients().clone();
                                          }),
                                          dynamic_cast<const Eva*>(replica.preconditioner()));
  return plan;
}

StepPlan Ddp::projected_step(int /*node*/, int /*step*/) {
  StepPlan plan;
  plan.loss = no_loss();
  plan.comm = second_order_.with_pass_ops(
      gradient_ops([&](const GradientBucket* b) { return shape_only(b ? b->elements : slices_.total()); }), nullptr);
  return plan;
}

void Ddp::apply(int node, int /*issued_step*/, Replica& replica, CommOp& op) {
  if (second_order_.apply_round_op(replica, op)) return;      // a K-FAC round's: next_round goes on
  const bool own = second_order_.apply_pass_op(replica, op);  // Eva's statistics
  if (!own && buckets_.empty()) {
    replica.gradients().copy_(op.buffer.div_(nodes_));  // the parameters' .grad() now hold the mean gradient
  } else if (!own) {
    size_t b = 0;
    while (b < buckets_.size() && bucket_tag(b) != op.tag) ++b;
    if (b == buckets_.size()) throw std::logic_error("ddp: no bucket is tagged '" + op.tag + "'");
    slices_.scatter(op.buffer.div_(nodes_), buckets_[b].tensors, replica.gradients());
  }
  // The update follows the step's last op (it needs every gradient, as in DDP, and Eva's
  // averaged vectors); all of them are due before the next step.
  const size_t ops = std::max<size_t>(buckets_.size(), 1) + second_order_.pass_ops();
  if (++applied_[node] < ops) return;
  applied_[node] = 0;
  second_order_.gradient_averaged(node, replica);
}

Round Ddp::next_round(int node, int step, Replica& replica) { return second_order_.next_round(node, step, replica); }

AlgorithmState Ddp::state(int node) const {
  AlgorithmState s;
  s.counters["applied"] = static_cast<int64_t>(applied_[node]);
  second_order_.save(node, s);
  return s;
}

void Ddp::load_state(int node, const AlgorithmState& s) {
  auto it = s.counters.find("applied");
  applied_[node] = it == s.counters.end() ? 0 : static_cast<size_t>(it->second);
  second_order_.load(node, s);
}

Round Ddp::projected_round(int node, int step, size_t round) {
  return second_order_.projected_round(node, step, round);
}

std::unique_ptr<Algorithm> make_ddp(const AlgorithmSettings& s) {
  return std::make_unique<Ddp>(s.nodes, s.batch_size, s.tensor_sizes, s.tensor_layers, std::get<DdpOptions>(s.options),
                               s.optimizer, s.second_order, s.merge_times);
}

}  // namespace testbed
