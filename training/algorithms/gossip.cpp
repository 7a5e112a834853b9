// Decentralised SGD by gossip: after each local step a node sends its parameters to every
// topology neighbour and mixes with theirs using Metropolis-Hastings weights (a doubly
// stochastic matrix, so the nodes' mean is preserved): x <- W (x - lr g), the order of
// Koloskova et al. 2020 (Algorithm 1); Lian et al.'s D-PSGD mixes the pre-step parameters
// instead, x <- W x - lr g. Bytes per node per step: degree x 4d. Over network.transport
// udp, an element lost from a neighbour mixes only the values that arrived (metropolis_mix).
#include <torch/torch.h>

#include "training/algorithms/algorithm_settings.h"
#include "training/algorithms/common.h"
#include "training/algorithms/sparse_exchange.h"

namespace testbed {
namespace {

class Gossip : public Algorithm {
 public:
  explicit Gossip(const AlgorithmSettings& s) : batch_(s.batch_size), neighbours_(s.neighbours) {
    for (int64_t n : s.tensor_sizes) d_ += n;
  }
  std::string name() const override { return "gossip"; }

  StepPlan local_step(int, int, Replica& replica, const Dataset& data) override {
    StepPlan plan;
    plan.loss = local_sgd_step(replica, data, batch_);
    plan.comm.push_back(make_op(CommKind::NeighbourExchange, "parameters", replica.parameters().clone()));
    return plan;
  }
  StepPlan projected_step(int, int) override {
    StepPlan plan;
    plan.loss = no_loss();
    plan.comm.push_back(make_op(CommKind::NeighbourExchange, "parameters", shape_only(d_)));
    return plan;
  }

  void apply(int node, int, Replica& replica, CommOp& op) override {
    torch::NoGradGuard no_grad;
    replica.parameters().copy_(metropolis_mix(neighbours_, node, op));
  }

 private:
  int batch_;
  int64_t d_ = 0;  // trainable parameters
  std::vector<std::vector<int>> neighbours_;
};

}  // namespace

std::unique_ptr<Algorithm> make_gossip(const AlgorithmSettings& s) { return std::make_unique<Gossip>(s); }

}  // namespace testbed
