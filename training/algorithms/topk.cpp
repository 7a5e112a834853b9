// Top-k sparsified SGD with error feedback (Stich et al. 2018; Shi et al.'s TopK-SGD baseline):
// each node adds its residual to its gradient, keeps the max(1, floor(ratio n)) entries of
// largest magnitude, and the rest stays in the residual. `scope: tensor` takes a top-k of each
// tensor; `scope: model` one top-k of the whole flat gradient, as hclhkbu/gtopkssgd merges
// every gradient into one buffer first. Sparse vectors with different supports do not
// all-reduce, so the (index, value) pairs are all-gathered (4-byte indices, as all three
// references send them, and 4-byte values); every node sums them into one gradient, divides
// by N, and takes its optimizer step with it. A warm-up runs the first steps at another ratio.
#include <algorithm>
#include <cmath>

#include <torch/torch.h>

#include "training/algorithms/algorithm_settings.h"
#include "training/algorithms/common.h"

namespace testbed {
namespace {

class Topk : public Algorithm {
 public:
  explicit Topk(const AlgorithmSettings& s)
      : options_(std::get<TopkOptions>(s.options)), nodes_(s.nodes), batch_(s.batch_size), residual_(s.nodes) {
    int64_t offset = 0;
    for (int64_t n : s.tensor_sizes) {
      tensors_.push_back({offset, n});
      offset += n;
    }
    d_ = offset;
  }
  std::string name() const override { return "topk"; }

  StepPlan local_step(int node, int step, Replica& replica, const Dataset& data) override {
    StepPlan plan;
    plan.loss = replica.forward_backward(replica.next_batch(data, batch_));
    torch::NoGradGuard no_grad;
    auto& residual = residual_[node];
    if (!residual.defined()) residual = torch::zeros_like(replica.gradients());
    residual.add_(replica.gradients());  // the accumulated gradient, until what is sent leaves it
    std::vector<torch::Tensor> index, values;
    for (const auto& t : selections(step)) {
      auto part = residual.slice(0, t.offset, t.offset + t.n);
      const auto top = std::get<1>(part.abs().topk(t.k, 0, /*largest=*/true, /*sorted=*/false));
      values.push_back(part.index_select(0, top));
      part.index_fill_(0, top, 0.0f);
      index.push_back(top + t.offset);
    }
    // Flat indices travel as int32 (4 bytes), their bits carried in float32 slots: an
    // all-gather copies them, it never computes with them.
    const auto wire = torch::cat({torch::cat(index).to(torch::kInt32).view(torch::kFloat32), torch::cat(values)});
    plan.comm.push_back(make_op(CommKind::AllGather, "topk", wire));
    plan.work = compression_work(step);
    return plan;
  }

  StepPlan projected_step(int, int step) override {
    StepPlan plan;
    plan.loss = no_loss();
    plan.comm.push_back(make_op(CommKind::AllGather, "topk", shape_only(2 * pairs_at(step))));
    plan.work = compression_work(step);
    return plan;
  }

  void apply(int, int issued_step, Replica& replica, CommOp& op) override {
    torch::NoGradGuard no_grad;
    const int64_t pairs = pairs_at(issued_step);
    auto sum = torch::zeros_like(replica.gradients());
    for (const auto& r : op.received) {
      const auto index = r.slice(0, 0, pairs).view(torch::kInt32).to(torch::kInt64);
      sum.index_add_(0, index, r.slice(0, pairs, 2 * pairs));
    }
    replica.gradients().copy_(sum.div_(nodes_));
    replica.optimizer_step();
  }

  AlgorithmState state(int node) const override {
    AlgorithmState s;
    put_tensors(s, {{"residual", &residual_[node]}});
    return s;
  }
  void load_state(int node, const AlgorithmState& s) override { take_tensors(s, {{"residual", &residual_[node]}}); }

 private:
  struct Selection {
    int64_t offset, n, k;
  };
  // What step `step` selects from: each tensor, or the whole flat gradient; k from its ratio.
  std::vector<Selection> selections(int step) const {
    const double ratio = options_.ratio_at(step);
    auto k_of = [ratio](int64_t n) { return std::max<int64_t>(1, static_cast<int64_t>(std::floor(ratio * n))); };
    if (options_.scope == TopkScope::Model) return {{0, d_, k_of(d_)}};
    std::vector<Selection> out;
    for (const auto& t : tensors_) out.push_back({t.offset, t.n, k_of(t.n)});
    return out;
  }
  int64_t pairs_at(int step) const {
    int64_t pairs = 0;
    for (const auto& t : selections(step)) pairs += t.k;
    return pairs;
  }
  // Per selection: the residual add (read g and e, write e), |e| and the selection (read e,
  // write |e|, read it again), zeroing the sent entries; decoding N k pairs into a zeroed vector.
  ExtraWork compression_work(int step) const {
    const int64_t pairs = pairs_at(step);
    ExtraWork w;
    w.bytes = 4.0 * d_ * (3 + 2 + 1 + 1) + 8.0 * pairs * (nodes_ + 2);
    w.kernels = static_cast<int64_t>(selections(step).size()) * 5 + 2 + nodes_;
    return w;
  }

  struct Tensor {
    int64_t offset, n;
  };
  TopkOptions options_;
  int nodes_, batch_;
  std::vector<Tensor> tensors_;
  int64_t d_ = 0;
  std::vector<torch::Tensor> residual_;  // per node, flat like the gradients
};

}  // namespace

std::unique_ptr<Algorithm> make_topk(const AlgorithmSettings& s) { return std::make_unique<Topk>(s); }

}  // namespace testbed
