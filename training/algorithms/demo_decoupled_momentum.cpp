// DeMo, Decoupled Momentum (arXiv 2411.19870), as its reference optimizer (bloc97/DeMo) does
// it, per parameter tensor: the residual delta <- beta delta + lr g; delta is cut into blocks
// (each dimension split by its largest divisor <= chunk; a 2-D tensor into h x w blocks, a conv
// kernel first flattened to (out, in kh kw), a 1-D tensor into chunks), each block gets an
// orthonormal DCT-II (2-D for 2-D blocks), and the k coefficients of largest magnitude of each
// block travel as (index, value) pairs; what was sent leaves delta (error feedback). Every node
// all-gathers the pairs, averages each coefficient over the nodes that sent it, inverts the
// DCT and steps theta <- (1 - lr wd) theta - lr sign(update) (with `sign: false`, an option
// the reference lacks: theta - update, which delta's lr already scales).
//
// One difference in scheduling, not in values or bytes: the reference all-gathers indices and
// values separately for each tensor in turn; here one all-gather carries every tensor's pairs.
#include <algorithm>
#include <stdexcept>

#include <torch/torch.h>

#include "training/algorithms/algorithm_settings.h"
#include "training/algorithms/common.h"
#include "training/algorithms/dct.h"

namespace testbed {
namespace {

// The largest divisor of n not above `limit` (the reference's _get_smaller_split).
int64_t block_side(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d) {
    if (n % d == 0) return d;
  }
  return 1;
}

// How one parameter tensor is cut into blocks: rows x cols as transformed (1-D: one row).
struct Blocks {
  int64_t offset = 0;          // in the flat parameter vector
  int64_t rows = 1, cols = 1;  // 2-D view (conv kernels flattened to (out, in kh kw))
  int64_t h = 1, w = 1;        // block sides
  int64_t k = 1;               // coefficients kept per block
  bool two_d = false;
  int64_t count() const { return rows / h * (cols / w); }
  int64_t pairs() const { return count() * k; }
};

// [rows, cols] -> [blocks, h w]: the 2-D DCT of each h x w block (the DCT of each w-chunk for 1-D).
torch::Tensor encode(const torch::Tensor& x, const Blocks& b) {
  auto blocks = x.reshape({b.rows / b.h, b.h, b.cols / b.w, b.w}).permute({0, 2, 1, 3});
  auto c = dct(blocks);                                         // along w
  if (b.two_d) c = dct(c.transpose(-1, -2)).transpose(-1, -2);  // along h
  return c.reshape({b.count(), b.h * b.w});
}

torch::Tensor decode(const torch::Tensor& c, const Blocks& b) {
  auto blocks = c.reshape({b.rows / b.h, b.cols / b.w, b.h, b.w});
  if (b.two_d) blocks = idct(blocks.transpose(-1, -2)).transpose(-1, -2);
  blocks = idct(blocks);
  return blocks.permute({0, 2, 1, 3}).reshape({b.rows, b.cols});
}

class Demo : public Algorithm {
 public:
  explicit Demo(const AlgorithmSettings& s)
      : options_(std::get<DemoOptions>(s.options)),
        batch_(s.batch_size),
        lr_(s.optimizer.lr),
        weight_decay_(s.optimizer.weight_decay),
        delta_(s.nodes) {
    cut(s.tensor_shapes);
  }
  std::string name() const override { return "demo"; }

  StepPlan local_step(int node, int, Replica& replica, const Dataset& data) override {
    StepPlan plan;
    plan.loss = replica.forward_backward(replica.next_batch(data, batch_));
    torch::NoGradGuard no_grad;
    auto& delta = delta_[node];
    if (!delta.defined()) delta = torch::zeros_like(replica.gradients());
    delta.mul_(options_.beta).add_(replica.gradients(), lr_);
    std::vector<torch::Tensor> wire;
    for (const auto& b : layout_) {
      auto part = delta.slice(0, b.offset, b.offset + b.rows * b.cols).view({b.rows, b.cols});
      const auto coefficients = encode(part, b);
      const auto index = std::get<1>(coefficients.abs().topk(b.k, /*dim=*/1, /*largest=*/true, /*sorted=*/false));
      const auto values = coefficients.gather(1, index);
      // Error feedback: what is sent leaves delta.
      part.sub_(decode(torch::zeros_like(coefficients).scatter_(1, index, values), b));
      // In-block indices (< chunk^2) are exact in float32, so one buffer carries both.
      wire.push_back(index.to(torch::kFloat32).reshape(-1));
      wire.push_back(values.reshape(-1));
    }
    plan.comm.push_back(coefficients_op(torch::cat(wire)));
    plan.work = work_;
    return plan;
  }

  StepPlan projected_step(int, int) override {
    StepPlan plan;
    plan.loss = no_loss();
    int64_t pairs = 0;
    for (const auto& b : layout_) pairs += b.pairs();
    plan.comm.push_back(coefficients_op(shape_only(2 * pairs)));
    plan.work = work_;
    return plan;
  }

  void apply(int, int, Replica& replica, CommOp& op) override {
    torch::NoGradGuard no_grad;
    auto& params = replica.parameters();
    if (weight_decay_ > 0) params.mul_(1.0 - lr_ * weight_decay_);
    int64_t at = 0;  // in each node's buffer
    for (const auto& b : layout_) {
      std::vector<torch::Tensor> index, values;
      for (const auto& r : op.received) {
        index.push_back(r.slice(0, at, at + b.pairs()).to(torch::kInt64).view({b.count(), b.k}));
        values.push_back(r.slice(0, at + b.pairs(), at + 2 * b.pairs()).view({b.count(), b.k}));
      }
      at += 2 * b.pairs();
      // Each coefficient: the mean over the nodes that sent it, not over all nodes (the
      // reference's scatter_reduce "mean" without self; LibTorch 1.13 warns that it is beta).
      const auto all = torch::cat(index, 1);
      auto sum = torch::zeros({b.count(), b.h * b.w}, params.options()).scatter_add_(1, all, torch::cat(values, 1));
      const auto senders = torch::zeros_like(sum).scatter_add_(1, all, torch::ones(all.sizes(), sum.options()));
      const auto mean = sum.div_(senders.clamp_min_(1));
      // delta carries lr already: without the sign, the decoded mean is the step itself.
      const auto update = decode(mean, b).reshape(-1);
      auto part = params.slice(0, b.offset, b.offset + update.numel());
      if (options_.sign)
        part.sub_(update.sign(), lr_);
      else
        part.sub_(update);
    }
  }

  AlgorithmState state(int node) const override {
    AlgorithmState s;
    put_tensors(s, {{"delta", &delta_[node]}});
    return s;
  }
  void load_state(int node, const AlgorithmState& s) override { take_tensors(s, {{"delta", &delta_[node]}}); }

 private:
  // Every tensor's indices and values, each index in a float32 slot; on the wire an index takes
  // 2 bytes (int64: 8), a value 4.
  CommOp coefficients_op(torch::Tensor wire) const {
    CommOp op = make_op(CommKind::AllGather, "dct_coefficients", std::move(wire));
    op.bytes_per_element = ((options_.index == DemoIndex::Int64 ? 8.0 : 2.0) + 4.0) / 2.0;
    return op;
  }

  // The blocks of each trainable tensor, in flat order (the same on every node).
  void cut(const std::vector<std::vector<int64_t>>& shapes) {
    int64_t offset = 0;
    for (const auto& shape : shapes) {
      int64_t numel = 1;
      for (int64_t side : shape) numel *= side;
      Blocks b;
      b.offset = offset;
      b.two_d = shape.size() >= 2;
      b.rows = b.two_d ? shape[0] : 1;
      b.cols = numel / b.rows;
      b.h = b.two_d ? block_side(b.rows, options_.chunk) : 1;
      b.w = block_side(b.cols, options_.chunk);
      b.k = std::clamp<int64_t>(options_.k, 1, b.h * b.w);
      layout_.push_back(b);
      offset += numel;
    }
    // The transforms as the reference computes them, products with h x h and w x w basis
    // matrices: 2 h w (h + w) FLOPs a 2-D block (2 w^2 a 1-D chunk), once to encode and once
    // to decode the own pairs and again for the mean; elementwise passes over the d entries
    // (residual update, transforms, top-k, error feedback, sign and update: ~12 of 4 bytes).
    for (const auto& b : layout_) {
      const double per_block = b.two_d ? 2.0 * b.h * b.w * (b.h + b.w) : 2.0 * b.w * b.w;
      work_.flops += 3 * per_block * static_cast<double>(b.count());
      work_.bytes += 4.0 * 12 * static_cast<double>(b.rows * b.cols);
      work_.kernels += 12;
    }
  }

  DemoOptions options_;
  int batch_;
  double lr_, weight_decay_;
  std::vector<Blocks> layout_;
  ExtraWork work_;                    // compressing and decoding a step (the same every step)
  std::vector<torch::Tensor> delta_;  // per node: the residual, flat like the gradients
};

}  // namespace

std::unique_ptr<Algorithm> make_demo(const AlgorithmSettings& s) { return std::make_unique<Demo>(s); }

}  // namespace testbed
