// 8-bit quantized gradient exchange, the worked example of docs/algorithms.md#adding-one: each
// node rounds each tensor of its gradient to int8 on a symmetric scale (max|g| / 127, to the
// nearest code, ties to even), all-gathers the codes (one byte each) with each tensor's scale
// (4 bytes), and every node averages the N decoded gradients and steps the scenario's
// optimizer with them. No error feedback: what rounding drops is lost.
#include <torch/torch.h>

#include "training/algorithms/algorithm_settings.h"
#include "training/algorithms/common.h"

namespace testbed {
namespace {

class Int8 : public Algorithm {
 public:
  explicit Int8(const AlgorithmSettings& s) : nodes_(s.nodes), batch_(s.batch_size), sizes_(s.tensor_sizes) {
    for (int64_t n : sizes_) d_ += n;
  }
  std::string name() const override { return "int8"; }

  StepPlan local_step(int, int, Replica& replica, const Dataset& data) override {
    StepPlan plan;
    plan.loss = replica.forward_backward(replica.next_batch(data, batch_));
    torch::NoGradGuard no_grad;
    const auto& g = replica.gradients();
    auto codes = torch::empty({d_});
    auto scales = torch::empty({static_cast<int64_t>(sizes_.size())});
    int64_t at = 0;
    for (size_t t = 0; t < sizes_.size(); ++t) {
      const auto part = g.slice(0, at, at + sizes_[t]);
      const auto scale = part.abs().max() / 127.0f;
      scales[t] = scale;
      // An all-zero tensor sends zeros (and a 0 scale), not 0 / 0.
      if (scale.item<float>() > 0)
        codes.slice(0, at, at + sizes_[t]).copy_(torch::round(part / scale));
      else
        codes.slice(0, at, at + sizes_[t]).zero_();
      at += sizes_[t];
    }
    // The codes, then each scale's float32 bits as 4 bytes: d + 4 T bytes at one byte an element.
    plan.comm.push_back(wire_op(torch::cat({codes, scales.view(torch::kUInt8).to(torch::kFloat32)})));
    plan.work = work();
    return plan;
  }

  StepPlan projected_step(int, int) override {
    StepPlan plan;
    plan.loss = no_loss();
    plan.comm.push_back(wire_op(shape_only(d_ + 4 * static_cast<int64_t>(sizes_.size()))));
    plan.work = work();
    return plan;
  }

  void apply(int, int, Replica& replica, CommOp& op) override {
    torch::NoGradGuard no_grad;
    auto sum = torch::zeros({d_});
    for (const auto& r : op.received) {  // every node's message, this node's own included
      const auto scales = r.slice(0, d_).to(torch::kUInt8).view(torch::kFloat32);
      int64_t at = 0;
      for (size_t t = 0; t < sizes_.size(); ++t) {
        sum.slice(0, at, at + sizes_[t]).add_(r.slice(0, at, at + sizes_[t]) * scales[t]);
        at += sizes_[t];
      }
    }
    replica.gradients().copy_(sum.div_(nodes_));
    replica.optimizer_step();
  }

 private:
  static CommOp wire_op(torch::Tensor wire) {
    CommOp op = make_op(CommKind::AllGather, "int8", std::move(wire));
    op.bytes_per_element = 1;
    return op;
  }
  // Quantizing (max, divide, round, copy) reads and writes the gradient a few times; decoding
  // N messages is a multiply and an add over each. A kernel per tensor for each.
  ExtraWork work() const {
    ExtraWork w;
    const auto tensors = static_cast<int64_t>(sizes_.size());
    w.bytes = 4.0 * d_ * 5 + nodes_ * (d_ + 3 * 4.0 * d_);
    w.kernels = 4 * tensors + 2 * tensors * nodes_ + 2;
    return w;
  }

  int nodes_, batch_;
  std::vector<int64_t> sizes_;
  int64_t d_ = 0;
};

}  // namespace

std::unique_ptr<Algorithm> make_int8(const AlgorithmSettings& s) { return std::make_unique<Int8>(s); }

}  // namespace testbed
