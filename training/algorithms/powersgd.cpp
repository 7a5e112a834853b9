// PowerSGD (Vogels et al. 2019, arXiv 1905.13727) as its reference code (epfml/powersgd,
// paper-code RankKReducer) runs it. Each tensor of two or more dimensions is a matrix M
// (shape[0] x the rest) of the gradient plus its error-feedback memory; with Q warm-started
// from the previous step (drawn from a shared seed the first time):
//   P = M Q, all-reduced (summed); P orthonormalised by Gram-Schmidt;
//   Q = M^T P, all-reduced and divided by N; the gradient is P Q^T, the memory M - P Q^T.
// 1-D tensors are all-reduced uncompressed in an all-reduce of their own, with no memory; with
// min_compression_rate (PyTorch's hook's rule) so are the matrices too small to gain from it.
// Two rounds of communication a step: Q's all-reduce needs P's result (Algorithm::next_round).
// The first `start_iter` steps all-reduce the whole gradient, as PyTorch's hook does.
#include <algorithm>

#include <torch/torch.h>

#include "training/algorithms/algorithm_settings.h"
#include "training/algorithms/common.h"
#include "training/seed_streams.h"

namespace testbed {
namespace {

// The reference's orthogonalize(): column by column, normalise (plus eps), then remove the
// column from the columns after it.
void orthogonalize(torch::Tensor m, double eps = 1e-8) {
  for (int64_t i = 0; i < m.size(1); ++i) {
    auto col = m.narrow(1, i, 1);
    col.div_(col.pow(2).sum().sqrt() + eps);
    if (i + 1 < m.size(1)) {
      auto rest = m.narrow(1, i + 1, m.size(1) - i - 1);
      rest.sub_((col * rest).sum(0, /*keepdim=*/true) * col);
    }
  }
}

class PowerSgd : public Algorithm {
 public:
  explicit PowerSgd(const AlgorithmSettings& s)
      : options_(std::get<PowerSgdOptions>(s.options)),
        nodes_(s.nodes),
        batch_(s.batch_size),
        seed_(s.seed),
        node_(s.nodes) {
    layout(s.tensor_shapes);
  }
  std::string name() const override { return "powersgd"; }
  bool has_rounds() const override { return true; }

  StepPlan local_step(int node, int step, Replica& replica, const Dataset& data) override {
    StepPlan plan;
    plan.loss = replica.forward_backward(replica.next_batch(data, batch_));
    torch::NoGradGuard no_grad;
    if (step < options_.start_iter) {
      plan.comm.push_back(make_op(CommKind::AllReduce, "gradient", replica.gradients().clone()));
      return plan;
    }
    auto& n = node_[node];
    if (!n.memory.defined()) n.memory = torch::zeros({d_});
    if (!n.q.defined()) n.q = initial_q();
    n.m = replica.gradients() + n.memory;
    auto p = torch::empty({p_size_});
    for (const auto& x : matrices_)
      p.narrow(0, x.p_at, x.rows * x.rank).view({x.rows, x.rank}).copy_(m_of(n, x).matmul(q_of(n.q, x)));
    plan.comm.push_back(make_op(CommKind::AllReduce, "powersgd_p", p));
    if (vector_size_ > 0)
      plan.comm.push_back(make_op(CommKind::AllReduce, "vectors", gather_vectors(replica.gradients())));
    plan.work = p_work();
    return plan;
  }

  StepPlan projected_step(int, int step) override {
    StepPlan plan;
    plan.loss = no_loss();
    if (step < options_.start_iter) {
      plan.comm.push_back(make_op(CommKind::AllReduce, "gradient", shape_only(d_)));
      return plan;
    }
    plan.comm.push_back(make_op(CommKind::AllReduce, "powersgd_p", shape_only(p_size_)));
    if (vector_size_ > 0) plan.comm.push_back(make_op(CommKind::AllReduce, "vectors", shape_only(vector_size_)));
    plan.work = p_work();
    return plan;
  }

  Round projected_round(int, int step, size_t round) override {
    if (round > 0 || step < options_.start_iter) return {};
    Round out;
    out.comm.push_back(make_op(CommKind::AllReduce, "powersgd_q", shape_only(q_size_)));
    out.work = q_work();
    return out;
  }

  Round next_round(int node, int, Replica&) override {
    auto& n = node_[node];
    if (!n.awaiting_q) return {};
    n.awaiting_q = false;
    torch::NoGradGuard no_grad;
    auto q = torch::empty({q_size_});
    for (const auto& x : matrices_)
      q.narrow(0, x.q_at, x.cols * x.rank).view({x.cols, x.rank}).copy_(m_of(n, x).t().matmul(p_of(n.p, x)));
    Round round;
    round.comm.push_back(make_op(CommKind::AllReduce, "powersgd_q", q));
    round.work = q_work();
    return round;
  }

  void apply(int node, int, Replica& replica, CommOp& op) override {
    torch::NoGradGuard no_grad;
    auto& n = node_[node];
    if (op.tag == "gradient") {
      replica.gradients().copy_(op.buffer.div_(nodes_));
      replica.optimizer_step();
    } else if (op.tag == "powersgd_p") {
      n.p = op.buffer;
      for (const auto& x : matrices_) orthogonalize(p_of(n.p, x));
      n.awaiting_q = true;
    } else if (op.tag == "vectors") {
      n.vectors = op.buffer.div_(nodes_);
    } else if (op.tag == "powersgd_q") {
      n.q = op.buffer.div_(nodes_);
      auto& g = replica.gradients();
      for (const auto& x : matrices_) {
        const auto approx = p_of(n.p, x).matmul(q_of(n.q, x).t()).reshape(-1);
        g.narrow(0, x.offset, x.rows * x.cols).copy_(approx);
        n.memory.narrow(0, x.offset, x.rows * x.cols).copy_(n.m.narrow(0, x.offset, x.rows * x.cols) - approx);
      }
      int64_t at = 0;
      for (const auto& v : vectors_) {
        g.narrow(0, v.offset, v.n).copy_(n.vectors.narrow(0, at, v.n));
        at += v.n;
      }
      n.m = n.p = n.vectors = torch::Tensor();
      replica.optimizer_step();
    } else {
      throw std::logic_error("powersgd: unknown op '" + op.tag + "'");
    }
  }

  // A checkpoint can find a node between its rounds (the fleet's slowest node ends the step
  // it is taken at): the step's M, P and 1-D mean go with it.
  AlgorithmState state(int node) const override {
    AlgorithmState s;
    const Node& n = node_[node];
    put_tensors(s, {{"memory", &n.memory}, {"q", &n.q}, {"m", &n.m}, {"p", &n.p}, {"vectors", &n.vectors}});
    s.counters["awaiting_q"] = n.awaiting_q;
    return s;
  }
  void load_state(int node, const AlgorithmState& s) override {
    Node& n = node_[node];
    take_tensors(s, {{"memory", &n.memory}, {"q", &n.q}, {"m", &n.m}, {"p", &n.p}, {"vectors", &n.vectors}});
    auto waiting = s.counters.find("awaiting_q");
    n.awaiting_q = waiting != s.counters.end() && waiting->second != 0;
  }

 private:
  struct Matrix {
    int64_t offset, rows, cols, rank, p_at, q_at;
  };
  struct Vector {
    int64_t offset, n;
  };
  struct Node {
    torch::Tensor memory, q;      // across steps: error feedback (flat, d) and every matrix's Q
    torch::Tensor m, p, vectors;  // within a step: gradient + memory, orthonormal P, mean of the 1-D tensors
    bool awaiting_q = false;
  };

  // Each tensor a matrix or a vector (every node's model has the same shapes).
  void layout(const std::vector<std::vector<int64_t>>& shapes) {
    int64_t offset = 0;
    for (const auto& shape : shapes) {
      int64_t numel = 1;
      for (int64_t side : shape) numel *= side;
      const int64_t rows = shape.size() > 1 ? shape[0] : 1, cols = numel / std::max<int64_t>(1, rows);
      const int64_t rank = std::min<int64_t>({rows, cols, options_.rank});
      // PyTorch's hook leaves a matrix uncompressed unless its factors are min_compression_rate
      // times smaller than it.
      const bool worth =
          options_.min_compression_rate <= 0 ||
          static_cast<double>((rows + cols) * rank) * options_.min_compression_rate < static_cast<double>(rows * cols);
      if (shape.size() <= 1 || !worth) {
        vectors_.push_back({offset, numel});
        vector_size_ += numel;
      } else {
        matrices_.push_back({offset, rows, cols, rank, p_size_, q_size_});
        p_size_ += rows * rank;
        q_size_ += cols * rank;
      }
      offset += numel;
    }
    d_ = offset;
  }
  torch::Tensor initial_q() const {
    auto generator = at::detail::createCPUGenerator(stream_seed(seed_, "powersgd_q"));
    return at::normal(0.0, 1.0, {q_size_}, generator);
  }
  torch::Tensor m_of(const Node& n, const Matrix& x) const {
    return n.m.narrow(0, x.offset, x.rows * x.cols).view({x.rows, x.cols});
  }
  static torch::Tensor p_of(const torch::Tensor& p, const Matrix& x) {
    return p.narrow(0, x.p_at, x.rows * x.rank).view({x.rows, x.rank});
  }
  static torch::Tensor q_of(const torch::Tensor& q, const Matrix& x) {
    return q.narrow(0, x.q_at, x.cols * x.rank).view({x.cols, x.rank});
  }
  torch::Tensor gather_vectors(const torch::Tensor& g) const {
    std::vector<torch::Tensor> parts;
    for (const auto& v : vectors_) parts.push_back(g.narrow(0, v.offset, v.n));
    return torch::cat(parts);
  }
  // M = g + e (read 2, write 1 of d), P = M Q (2 rows cols rank FLOPs, M read once).
  ExtraWork p_work() const {
    ExtraWork w;
    for (const auto& x : matrices_) w.flops += 2.0 * x.rows * x.cols * x.rank;
    w.bytes = 4.0 * (3 * d_ + p_size_ + q_size_);
    w.kernels = 1 + static_cast<int64_t>(matrices_.size());
    return w;
  }
  // Gram-Schmidt on P (~4 rows rank^2), Q = M^T P and the decompression P Q^T (2 rows cols rank
  // each), the memory and the gradient written (charged before Q leaves: the decompression
  // follows its arrival, by as much).
  ExtraWork q_work() const {
    ExtraWork w;
    for (const auto& x : matrices_) w.flops += 4.0 * x.rows * x.rank * x.rank + 4.0 * x.rows * x.cols * x.rank;
    w.bytes = 4.0 * (5 * d_ + 2 * (p_size_ + q_size_));
    w.kernels = 6 * static_cast<int64_t>(matrices_.size());
    return w;
  }

  PowerSgdOptions options_;
  int nodes_, batch_;
  uint64_t seed_;
  int64_t d_ = 0, p_size_ = 0, q_size_ = 0, vector_size_ = 0;
  std::vector<Matrix> matrices_;
  std::vector<Vector> vectors_;
  std::vector<Node> node_;
};

}  // namespace

std::unique_ptr<Algorithm> make_powersgd(const AlgorithmSettings& s) { return std::make_unique<PowerSgd>(s); }

}  // namespace testbed
