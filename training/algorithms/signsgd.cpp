// Sign-based SGD (signsgd_options.h for the three variants): every node all-gathers one bit
// per parameter, packed eight to a byte (ceil(d / 8) bytes; ef_sign adds each tensor's scale
// as 4 bytes), and every node decodes the same update from what all sent.
#include <cmath>

#include <torch/torch.h>

#include "training/algorithms/algorithm_settings.h"
#include "training/algorithms/common.h"

namespace testbed {
namespace {

const torch::Tensor& bit_weights() {
  static const torch::Tensor w = torch::tensor({1, 2, 4, 8, 16, 32, 64, 128}, torch::kInt32);
  return w;
}

// Booleans, eight to a byte (bit i of byte j is element 8 j + i); each byte a float 0..255.
torch::Tensor pack_bits(const torch::Tensor& bits) {
  const int64_t n = bits.numel(), bytes = (n + 7) / 8;
  auto padded = torch::zeros({bytes * 8}, torch::kInt32);
  padded.slice(0, 0, n).copy_(bits);
  return padded.view({bytes, 8}).mul(bit_weights()).sum(1).to(torch::kFloat32);
}

torch::Tensor unpack_bits(const torch::Tensor& bytes, int64_t n) {
  const auto b = bytes.to(torch::kInt32).unsqueeze(1);
  return b.bitwise_and(bit_weights()).ne(0).reshape(-1).slice(0, 0, n);
}

class SignSgd : public Algorithm {
 public:
  explicit SignSgd(const AlgorithmSettings& s)
      : options_(std::get<SignOptions>(s.options)),
        nodes_(s.nodes),
        batch_(s.batch_size),
        lr_(s.optimizer.lr),
        weight_decay_(s.optimizer.weight_decay),
        sizes_(s.tensor_sizes),
        memory_(s.nodes) {
    for (int64_t n : sizes_) d_ += n;
  }
  std::string name() const override { return "signsgd"; }

  StepPlan local_step(int node, int, Replica& replica, const Dataset& data) override {
    StepPlan plan;
    plan.loss = replica.forward_backward(replica.next_batch(data, batch_));
    torch::NoGradGuard no_grad;
    const auto& g = replica.gradients();
    auto& m = memory_[node];
    if (!m.defined()) m = torch::zeros_like(g);
    torch::Tensor wire;
    if (options_.variant == SignVariant::EfSign) {
      m.add_(g, lr_);  // p = lr g + e; e becomes p minus the scaled sign sent
      std::vector<torch::Tensor> positive, scales;
      int64_t at = 0;
      for (int64_t n : sizes_) {
        auto p = m.slice(0, at, at + n);
        const auto scale = p.abs().sum() / static_cast<double>(n);
        positive.push_back(p >= 0);
        p.sub_(torch::where(positive.back(), scale, -scale));
        scales.push_back(scale.reshape({1}));
        at += n;
      }
      // Each scale's float32 bits as 4 bytes after the packed signs.
      wire = torch::cat({pack_bits(torch::cat(positive)), torch::cat(scales).view(torch::kUInt8).to(torch::kFloat32)});
    } else {
      const auto& v =
          options_.variant == SignVariant::Signum ? m.mul_(options_.momentum).add_(g, 1 - options_.momentum) : g;
      wire = pack_bits(v >= 0);
    }
    plan.comm.push_back(signs_op(wire));
    plan.work = work();
    return plan;
  }

  StepPlan projected_step(int, int) override {
    StepPlan plan;
    plan.loss = no_loss();
    // The packed signs, and ef_sign's scale of each tensor as 4 bytes.
    const int64_t scales = options_.variant == SignVariant::EfSign ? 4 * static_cast<int64_t>(sizes_.size()) : 0;
    plan.comm.push_back(signs_op(shape_only((d_ + 7) / 8 + scales)));
    plan.work = work();
    return plan;
  }

  void apply(int, int, Replica& replica, CommOp& op) override {
    torch::NoGradGuard no_grad;
    auto& params = replica.parameters();
    const int64_t bytes = (d_ + 7) / 8;
    auto sum = torch::zeros({d_}, params.options());
    for (const auto& r : op.received) {
      const auto sign = unpack_bits(r.slice(0, 0, bytes), d_).to(torch::kFloat32).mul_(2).sub_(1);
      if (options_.variant != SignVariant::EfSign) {
        sum.add_(sign);
        continue;
      }
      const auto scales =
          r.slice(0, bytes, bytes + 4 * static_cast<int64_t>(sizes_.size())).to(torch::kUInt8).view(torch::kFloat32);
      int64_t at = 0;
      for (size_t t = 0; t < sizes_.size(); ++t) {
        sum.slice(0, at, at + sizes_[t]).add_(sign.slice(0, at, at + sizes_[t]) * scales[t]);
        at += sizes_[t];
      }
    }
    if (weight_decay_ > 0) params.mul_(1.0 - lr_ * weight_decay_);
    if (options_.variant == SignVariant::EfSign)
      params.sub_(sum.div_(nodes_));  // lr is in p already
    else
      params.sub_(sum.sign_(), lr_);  // the majority vote
  }

  AlgorithmState state(int node) const override {
    AlgorithmState s;
    put_tensors(s, {{"memory", &memory_[node]}});
    return s;
  }
  void load_state(int node, const AlgorithmState& s) override { take_tensors(s, {{"memory", &memory_[node]}}); }

 private:
  static CommOp signs_op(torch::Tensor wire) {
    CommOp op = make_op(CommKind::AllGather, "signs", std::move(wire));
    op.bytes_per_element = 1;
    return op;
  }
  // The passes over the d entries (momentum or residual, sign, pack) and unpacking N of them.
  ExtraWork work() const {
    ExtraWork w;
    w.bytes = 4.0 * d_ * (3 + 2) + d_ / 8.0 + nodes_ * (d_ / 8.0 + 4.0 * d_);
    w.kernels = 6 + 3 * nodes_;
    return w;
  }

  SignOptions options_;
  int nodes_, batch_;
  double lr_, weight_decay_;
  std::vector<int64_t> sizes_;
  int64_t d_ = 0;
  std::vector<torch::Tensor> memory_;  // per node: signum's momentum or ef_sign's residual
};

}  // namespace

std::unique_ptr<Algorithm> make_signsgd(const AlgorithmSettings& s) { return std::make_unique<SignSgd>(s); }

}  // namespace testbed
