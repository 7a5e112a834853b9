// ACP-SGD (Shi et al., "Evaluation and Optimization of Gradient Compression for Distributed
// Deep Learning") as its reference code (lzhangbv/acpsgd, acpsgd.py) runs it: PowerSGD's two
// factors take turns, one all-reduce a step. Each tensor of two or more dimensions is a matrix
// M (shape[0] x the rest); with E its error-feedback memory:
//   P-steps (even): Q <- QR(Q) of the last all-reduced Q, P = (M + E) Q, E = M + E - P Q^T,
//                   P all-reduced (summed); the gradient is P Q^T / N;
//   Q-steps (odd):  P <- QR(P) of the last all-reduced P, Q = (M + E)^T P, E likewise,
//                   Q all-reduced; the gradient is P Q^T / N.
// 1-D tensors travel raw in the same buffers, without memory. The factors are fused into
// buckets as the reference fuses them (acp_buckets below), each all-reduced as soon as backward
// has produced its last tensor's gradient.
#include <algorithm>
#include <functional>

#include <torch/torch.h>

#include "training/algorithms/algorithm_settings.h"
#include "training/algorithms/common.h"
#include "training/algorithms/gradient_buckets.h"
#include "training/algorithms/tensor_slices.h"
#include "training/seed_streams.h"

namespace testbed {
namespace {

// The reference's fusion (acpsgd.py, at construction): tensors in reverse registration order; a
// group takes the next tensor while its bytes stay at most the threshold (its first tensor
// whatever its size). A group leaves when the last of its gradients is ready: backward reaches
// layers from the last to the first, within a layer in reverse registration order.
std::vector<GradientBucket> acp_buckets(const std::vector<int64_t>& sizes, const std::vector<int>& layers,
                                        double threshold_bytes) {
  auto layer = [&](int t) { return layers.empty() ? t : layers[t]; };
  std::vector<GradientBucket> buckets;
  GradientBucket open;
  auto close = [&] {
    open.last_ready = open.tensors.front();
    for (int t : open.tensors)
      if (layer(t) < layer(open.last_ready) || (layer(t) == layer(open.last_ready) && t < open.last_ready))
        open.last_ready = t;
    std::sort(open.tensors.begin(), open.tensors.end());
    buckets.push_back(std::move(open));
    open = GradientBucket{};
  };
  for (int t = static_cast<int>(sizes.size()) - 1; t >= 0; --t) {
    if (!open.tensors.empty() && 4.0 * static_cast<double>(open.elements + sizes[t]) > threshold_bytes) close();
    open.tensors.push_back(t);
    open.elements += sizes[t];
  }
  if (!open.tensors.empty()) close();
  return buckets;
}

// An orthonormal basis of m's columns (reduced QR; the same on every node: they factor the
// same all-reduced matrix).
torch::Tensor orthonormal(const torch::Tensor& m) { return std::get<0>(torch::linalg_qr(m)); }

class AcpSgd : public Algorithm {
 public:
  explicit AcpSgd(const AlgorithmSettings& s)
      : options_(std::get<AcpSgdOptions>(s.options)),
        nodes_(s.nodes),
        batch_(s.batch_size),
        seed_(s.seed),
        tensor_layers_(s.tensor_layers),
        node_(s.nodes) {
    layout(s.tensor_shapes);
  }
  std::string name() const override { return "acpsgd"; }
  bool issues_during_backward() const override { return true; }

  StepPlan local_step(int node, int step, Replica& replica, const Dataset& data) override {
    StepPlan plan;
    plan.loss = replica.forward_backward(replica.next_batch(data, batch_));
    torch::NoGradGuard no_grad;
    auto& n = node_[node];
    if (!n.memory.defined()) start(n);
    const bool p_step = step % 2 == 0;
    const auto& g = replica.gradients();
    const TensorSlices& at = p_step ? p_slices_ : q_slices_;
    auto wire = torch::empty({p_step ? p_size_ : q_size_});
    n.ortho = torch::empty({p_step ? q_size_ : p_size_});  // the factor that does not travel
    for (size_t t = 0; t < tensors_.size(); ++t) {
      const Tensor& x = tensors_[t];
      if (!x.matrix) {
        wire.narrow(0, at.offset(t), x.rows).copy_(g.narrow(0, x.offset, x.rows));
        continue;
      }
      auto e = n.memory.narrow(0, x.offset, x.rows * x.cols).view({x.rows, x.cols});
      const auto m = g.narrow(0, x.offset, x.rows * x.cols).view({x.rows, x.cols}) + e;
      if (p_step) {
        const auto q = orthonormal(factor(n.q, q_slices_.offset(t), x.cols, x.rank));
        const auto p = m.matmul(q);
        e.copy_(m - p.matmul(q.t()));
        wire.narrow(0, at.offset(t), x.rows * x.rank).copy_(p.reshape(-1));
        n.ortho.narrow(0, q_slices_.offset(t), x.cols * x.rank).copy_(q.reshape(-1));
      } else {
        const auto p = orthonormal(factor(n.p, p_slices_.offset(t), x.rows, x.rank));
        const auto q = m.t().matmul(p);
        e.copy_(m - p.matmul(q.t()));
        wire.narrow(0, at.offset(t), x.cols * x.rank).copy_(q.reshape(-1));
        n.ortho.narrow(0, p_slices_.offset(t), x.rows * x.rank).copy_(p.reshape(-1));
      }
    }
    plan.comm = factor_ops(step, [&](const GradientBucket& b) { return at.gather(wire, b.tensors); });
    plan.work = p_step ? p_work_ : q_work_;
    return plan;
  }

  StepPlan projected_step(int, int step) override {
    StepPlan plan;
    plan.loss = no_loss();
    plan.comm = factor_ops(step, [](const GradientBucket& b) { return shape_only(b.elements); });
    plan.work = step % 2 == 0 ? p_work_ : q_work_;
    return plan;
  }

  void apply(int node, int issued_step, Replica& replica, CommOp& op) override {
    torch::NoGradGuard no_grad;
    auto& n = node_[node];
    const bool p_step = issued_step % 2 == 0;
    const auto& buckets = p_step ? p_buckets_ : q_buckets_;
    const size_t b = std::stoul(op.tag.substr(2));
    const GradientBucket& bucket = buckets.at(b);
    auto& g = replica.gradients();
    const TensorSlices& at = p_step ? p_slices_ : q_slices_;
    int64_t position = 0;  // the tensor's place in the bucket's buffer
    for (int t : bucket.tensors) {
      const Tensor& x = tensors_[t];
      const int64_t elements = !x.matrix ? x.rows : p_step ? x.rows * x.rank : x.cols * x.rank;
      const auto sum = op.buffer.narrow(0, position, elements);
      position += elements;
      if (!x.matrix) {
        g.narrow(0, x.offset, x.rows).copy_(sum / nodes_);
        continue;
      }
      // The all-reduced factor (a sum) is the next step's to orthonormalise.
      (p_step ? n.p : n.q).narrow(0, at.offset(t), sum.numel()).copy_(sum);
      const auto other =
          factor(n.ortho, p_step ? q_slices_.offset(t) : p_slices_.offset(t), p_step ? x.cols : x.rows, x.rank);
      const auto approx =
          p_step ? sum.view({x.rows, x.rank}).matmul(other.t()) : other.matmul(sum.view({x.cols, x.rank}).t());
      g.narrow(0, x.offset, x.rows * x.cols).copy_(approx.reshape(-1) / nodes_);
    }
    // Buckets complete in the order they left, which need not be their index order.
    if (++n.applied == static_cast<int>(buckets.size())) {
      n.applied = 0;
      n.ortho = torch::Tensor();
      replica.optimizer_step();
    }
  }

  // A checkpoint can find a node between its step's buckets: the factor it kept goes too.
  AlgorithmState state(int node) const override {
    AlgorithmState s;
    const Node& n = node_[node];
    put_tensors(s, {{"memory", &n.memory}, {"p", &n.p}, {"q", &n.q}, {"ortho", &n.ortho}});
    s.counters["applied"] = n.applied;
    return s;
  }
  void load_state(int node, const AlgorithmState& s) override {
    Node& n = node_[node];
    take_tensors(s, {{"memory", &n.memory}, {"p", &n.p}, {"q", &n.q}, {"ortho", &n.ortho}});
    auto applied = s.counters.find("applied");
    n.applied = applied == s.counters.end() ? 0 : static_cast<int>(applied->second);
  }

 private:
  struct Tensor {
    int64_t offset, rows, cols, rank;  // a vector: rows = its size, cols 1, rank 0
    bool matrix;
  };
  struct Node {
    torch::Tensor memory, p, q;  // error feedback (flat, d); the last all-reduced P and Q (sums)
    torch::Tensor ortho;         // within a step: the orthonormalised factor that stayed home
    int applied = 0;             // within a step: buckets applied so far
  };

  // The step's all-reduces, one a bucket of the factor that travels (P on even steps, Q on odd
  // ones), `payload(bucket)` each one's buffer.
  std::vector<CommOp> factor_ops(int step, const std::function<torch::Tensor(const GradientBucket&)>& payload) const {
    const bool p_step = step % 2 == 0;
    const auto& buckets = p_step ? p_buckets_ : q_buckets_;
    std::vector<CommOp> ops;
    for (size_t b = 0; b < buckets.size(); ++b) {
      CommOp op = make_op(CommKind::AllReduce, (p_step ? "p." : "q.") + std::to_string(b), payload(buckets[b]));
      op.after_gradient = buckets[b].last_ready;
      ops.push_back(std::move(op));
    }
    return ops;
  }

  static torch::Tensor factor(const torch::Tensor& flat, int64_t at, int64_t rows, int64_t rank) {
    return flat.narrow(0, at, rows * rank).view({rows, rank});
  }

  void start(Node& n) {
    n.memory = torch::zeros({d_});
    // The reference draws P and Q with torch.randn (its example seeds the process); here one
    // stream from the run's seed, the same on every node.
    auto generator = at::detail::createCPUGenerator(stream_seed(seed_, "acpsgd_factors"));
    n.p = at::normal(0.0, 1.0, {p_size_}, generator);
    n.q = at::normal(0.0, 1.0, {q_size_}, generator);
  }

  void layout(const std::vector<std::vector<int64_t>>& shapes) {
    int64_t offset = 0;
    std::vector<int64_t> p_sizes, q_sizes;
    for (const auto& shape : shapes) {
      int64_t numel = 1;
      for (int64_t side : shape) numel *= side;
      Tensor x{offset, numel, 1, 0, shape.size() >= 2};
      if (x.matrix) {
        x.rows = shape[0];
        x.cols = numel / x.rows;
        x.rank = std::min<int64_t>({x.rows, x.cols, options_.rank});
      }
      p_sizes.push_back(x.matrix ? x.rows * x.rank : x.rows);
      q_sizes.push_back(x.matrix ? x.cols * x.rank : x.rows);
      p_size_ += p_sizes.back();
      q_size_ += q_sizes.back();
      if (x.matrix) {
        // QR of the factor (~4 k r^2), M x factor and the local P Q^T (2 rows cols r each), and
        // the decompression after the all-reduce (2 rows cols r).
        const double qr = 4.0 * std::max(x.rows, x.cols) * x.rank * x.rank, product = 2.0 * x.rows * x.cols * x.rank;
        p_work_.flops += qr + 3 * product;
        q_work_.flops += qr + 3 * product;
      }
      tensors_.push_back(x);
      offset += numel;
    }
    d_ = offset;
    // M + E, E written, the gradient written: elementwise passes over d; the factors.
    p_work_.bytes = 4.0 * (5 * d_ + 3 * (p_size_ + q_size_));
    q_work_.bytes = p_work_.bytes;
    p_work_.kernels = q_work_.kernels = 6 * static_cast<int64_t>(tensors_.size());
    // The reference scales the fusion threshold by each factor's share of the gradient.
    const double bytes = options_.bucket_mb * 1024 * 1024;
    p_buckets_ = acp_buckets(p_sizes, tensor_layers_, bytes * static_cast<double>(p_size_) / static_cast<double>(d_));
    q_buckets_ = acp_buckets(q_sizes, tensor_layers_, bytes * static_cast<double>(q_size_) / static_cast<double>(d_));
    p_slices_ = TensorSlices(p_sizes);
    q_slices_ = TensorSlices(q_sizes);
  }

  AcpSgdOptions options_;
  int nodes_, batch_;
  uint64_t seed_;
  std::vector<int> tensor_layers_;  // each tensor's layer in forward order: the buckets' order
  std::vector<Tensor> tensors_;
  int64_t d_ = 0, p_size_ = 0, q_size_ = 0;
  std::vector<GradientBucket> p_buckets_, q_buckets_;
  TensorSlices p_slices_, q_slices_;  // each tensor's factor in the P and Q buffers
  ExtraWork p_work_, q_work_;
  std::vector<Node> node_;
};

}  // namespace

std::unique_ptr<Algorithm> make_acpsgd(const AlgorithmSettings& s) { return std::make_unique<AcpSgd>(s); }

}  // namespace testbed
