// DeMo, Decoupled Momentum (arXiv 2411.19870): each node keeps a local momentum
// m = beta m + g, sends only the k largest DCT coefficients of each `chunk` of m (with their
// indices; index bytes count), subtracts what it sent from m (error feedback), and applies
// the sign of the decoded mean of everyone's coefficients as the update.
#include <stdexcept>

#include <torch/torch.h>

#include "training/algorithms/common.h"
#include "training/algorithms/dct.h"
#include "training/algorithms/algorithm_settings.h"

namespace testbed {
namespace {

class Demo : public Algorithm {
 public:
  explicit Demo(const AlgorithmSettings& s)
      : nodes_(s.nodes),
        batch_(s.batch_size),
        beta_(std::get<DemoOptions>(s.options).beta),
        chunk_(std::get<DemoOptions>(s.options).chunk),
        k_(std::get<DemoOptions>(s.options).k),
        sign_(std::get<DemoOptions>(s.options).sign),
        lr_(s.optimizer.lr),
        weight_decay_(s.optimizer.weight_decay),
        momentum_(s.nodes) {
    if (chunk_ < 1 || k_ < 1 || k_ > chunk_) throw std::invalid_argument("demo: need 1 <= k <= chunk");
  }
  std::string name() const override { return "demo"; }

  StepPlan local_step(int node, int, Replica& replica, const Dataset& data) override {
    StepPlan plan;
    plan.loss = replica.forward_backward(replica.next_batch(data, batch_));
    torch::NoGradGuard no_grad;
    const int64_t d = replica.gradients().numel();
    const int64_t chunks = (d + chunk_ - 1) / chunk_;
    auto& m = momentum_[node];
    if (!m.defined()) m = torch::zeros({chunks * chunk_}, replica.gradients().options());
    m.mul_(beta_).slice(0, 0, d).add_(replica.gradients());
    auto coefficients = dct(m.view({chunks, chunk_}));
    auto top = coefficients.abs().topk(k_, /*dim=*/1);
    auto index = std::get<1>(top);
    auto values = coefficients.gather(1, index);
    // Error feedback: what is sent leaves the local momentum.
    auto sent = torch::zeros_like(coefficients).scatter_(1, index, values);
    m.sub_(idct(sent).reshape(-1));
    // Indices below 2^24 are exact in float32, so one buffer carries both halves.
    plan.comm.push_back(make_op(CommKind::AllGather, "dct_coefficients",
                                torch::cat({index.to(torch::kFloat32).reshape(-1), values.reshape(-1)})));
    return plan;
  }

  void apply(int, int, Replica& replica, CommOp& op) override {
    torch::NoGradGuard no_grad;
    auto& params = replica.parameters();
    const int64_t d = params.numel();
    const int64_t chunks = (d + chunk_ - 1) / chunk_;
    const int64_t half = chunks * k_;
    auto mean = torch::zeros({chunks, chunk_}, params.options());
    for (const auto& r : op.received) {
      auto index = r.slice(0, 0, half).to(torch::kInt64).view({chunks, k_});
      mean.scatter_add_(1, index, r.slice(0, half, 2 * half).view({chunks, k_}));
    }
    mean.div_(nodes_);
    auto update = idct(mean).reshape(-1).slice(0, 0, d);
    if (sign_) update = update.sign();
    if (weight_decay_ > 0) params.mul_(1.0 - lr_ * weight_decay_);
    params.sub_(update, lr_);
  }

  AlgorithmState state(int node) const override {
    AlgorithmState s;
    if (momentum_[node].defined()) s.tensors["momentum"] = momentum_[node];
    return s;
  }
  void load_state(int node, const AlgorithmState& s) override {
    auto m = s.tensors.find("momentum");
    momentum_[node] = m == s.tensors.end() ? torch::Tensor() : m->second.clone();
  }

 private:
  int nodes_, batch_;
  double beta_;
  int chunk_, k_;
  bool sign_;
  double lr_, weight_decay_;
  std::vector<torch::Tensor> momentum_;  // per node, padded to whole chunks
};

}  // namespace

std::unique_ptr<Algorithm> make_demo(const AlgorithmSettings& s) { return std::make_unique<Demo>(s); }

}  // namespace testbed
