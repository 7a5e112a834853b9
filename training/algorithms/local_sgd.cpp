// Local SGD (periodic parameter averaging): every node trains every step; every H steps the
// parameters of the round's participants are averaged, weighted by shard size. With
// `fraction` < 1 a seeded choice of nodes takes part in each round (the same scenario always
// picks the same nodes); the others keep training on their own parameters until they are
// picked. Not FedAvg: there, a server holds the model and unpicked clients do nothing
// (`fedavg`, sim/core/federated/federated_run.h).
#include <algorithm>
#include <cmath>
#include <functional>

#include <torch/torch.h>

#include "training/algorithms/algorithm_settings.h"
#include "training/algorithms/common.h"
#include "training/data/partition.h"
#include "training/seed_streams.h"

namespace testbed {

namespace {

class LocalSgd : public Algorithm {
 public:
  explicit LocalSgd(const AlgorithmSettings& s)
      : nodes_(s.nodes),
        batch_(s.batch_size),
        H_(std::get<LocalSgdOptions>(s.options).H),
        fraction_(std::get<LocalSgdOptions>(s.options).fraction),
        seed_(s.seed),
        shard_sizes_(s.shard_sizes) {
    for (int64_t n : s.tensor_sizes) d_ += n;
  }
  std::string name() const override { return "local_sgd"; }

  StepPlan local_step(int node, int step, Replica& replica, const Dataset& data) override {
    StepPlan plan;
    plan.loss = local_sgd_step(replica, data, batch_);
    // Each node sends its weighted share, so the all-reduce's sum is the weighted mean.
    plan.comm = average_ops(node, step, [&](double share) { return replica.parameters() * static_cast<float>(share); });
    return plan;
  }
  StepPlan projected_step(int node, int step) override {
    StepPlan plan;
    plan.loss = no_loss();
    plan.comm = average_ops(node, step, [&](double) { return shape_only(d_); });
    return plan;
  }

  void apply(int, int, Replica& replica, CommOp& op) override {
    torch::NoGradGuard no_grad;
    replica.parameters().copy_(op.buffer);
  }

 private:
  // The average after `step`, when it is due and the node takes part: `payload(share)` its
  // buffer, share the node's weight in it.
  std::vector<CommOp> average_ops(int node, int step, const std::function<torch::Tensor(double)>& payload) const {
    if ((step + 1) % H_ != 0) return {};
    const auto nodes = participants((step + 1) / H_);
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) return {};
    double total = 0;
    for (int n : nodes) total += static_cast<double>(shard_sizes_[n]);
    auto op = make_op(CommKind::AllReduce, "parameters", payload(static_cast<double>(shard_sizes_[node]) / total));
    if (nodes.size() < static_cast<size_t>(nodes_)) op.nodes = nodes;
    return {op};
  }

  // The round's nodes, ascending: all, or a seeded choice of round(fraction x N) (at least 1).
  std::vector<int> participants(int round) const {
    std::vector<int> all(nodes_);
    for (int n = 0; n < nodes_; ++n) all[n] = n;
    if (fraction_ >= 1.0) return all;
    const int m = std::max(1, static_cast<int>(std::lround(fraction_ * nodes_)));
    // The stream keeps its name from before the rename, so the same scenario picks the same nodes.
    auto order = seeded_permutation(nodes_, stream_seed(seed_, "fedavg_round", static_cast<uint64_t>(round)));
    std::vector<int> chosen(order.begin(), order.begin() + m);
    std::sort(chosen.begin(), chosen.end());
    return chosen;
  }

  int nodes_, batch_, H_;
  int64_t d_ = 0;  // trainable parameters
  double fraction_;
  uint64_t seed_;
  std::vector<int64_t> shard_sizes_;
};

}  // namespace

std::unique_ptr<Algorithm> make_local_sgd(const AlgorithmSettings& s) { return std::make_unique<LocalSgd>(s); }

}  // namespace testbed
