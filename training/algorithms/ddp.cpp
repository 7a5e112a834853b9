// DDP: the all-reduce sums gradients; dividing by N gives the large-batch mean gradient.
#include "training/algorithms/ddp.h"

#include "training/algorithms/algorithm_settings.h"

#include <torch/torch.h>

namespace testbed {

namespace {
// A bucket's op tag: its place in the step's order of all-reduces.
std::string bucket_tag(size_t b) { return "gradient." + std::to_string(b); }
}  // namespace

Ddp::Ddp(int nodes, int batch_size, const std::vector<int64_t>& tensor_sizes, const std::vector<int>& tensor_layers,
         const DdpOptions& options)
    : nodes_(nodes), batch_size_(batch_size), slices_(tensor_sizes) {
  if (options.overlap) buckets_ = gradient_buckets(tensor_sizes, tensor_layers, options.bucket_mb * 1024 * 1024);
}

StepPlan Ddp::local_step(int /*node*/, int /*step*/, Replica& replica, const Dataset& data) {
  StepPlan plan;
  plan.loss = replica.forward_backward(replica.next_batch(data, batch_size_));
  if (buckets_.empty()) {
    // The all-reduce sums a copy of the replica's gradient buffer; the update waits for it. A copy,
    // not the buffer itself: an op owns its storage (algorithm.h), so a resumed run can rebuild it.
    CommOp op;
    op.tag = "gradient";
    op.buffer = replica.gradients().clone();
    plan.comm.push_back(std::move(op));
    return plan;
  }
  // One all-reduce per bucket, each issued when backward has produced its last gradient.
  for (size_t b = 0; b < buckets_.size(); ++b) {
    CommOp op;
    op.tag = bucket_tag(b);
    op.buffer = slices_.gather(replica.gradients(), buckets_[b].tensors);
    op.after_gradient = buckets_[b].last_ready;
    plan.comm.push_back(std::move(op));
  }
  return plan;
}

void Ddp::apply(int /*node*/, int /*issued_step*/, Replica& replica, CommOp& op) {
  if (buckets_.empty()) {
    replica.gradients().copy_(op.buffer.div_(nodes_));  // the parameters' .grad() now hold the mean gradient
    replica.optimizer_step();
    return;
  }
  // Buckets are applied in issue order; the update follows the last (the step's optimizer
  // step needs every gradient, as in DDP).
  size_t b = 0;
  while (b < buckets_.size() && bucket_tag(b) != op.tag) ++b;
  if (b == buckets_.size()) throw std::logic_error("ddp: no bucket is tagged '" + op.tag + "'");
  slices_.scatter(op.buffer.div_(nodes_), buckets_[b].tensors, replica.gradients());
  if (b + 1 == buckets_.size()) replica.optimizer_step();
}

std::unique_ptr<Algorithm> make_ddp(const AlgorithmSettings& s) {
  return std::make_unique<Ddp>(s.nodes, s.batch_size, s.tensor_sizes, s.tensor_layers, std::get<DdpOptions>(s.options));
}

}  // namespace testbed
