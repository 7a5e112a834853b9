// DeAR as its reference code (lzhangbv/dear_pytorch, dear_dopt.py) runs it: all-reduce split
// into its two halves. During backward, each fusion group's gradients are reduce-scattered as
// soon as they all exist (one communication stream); once backward and every reduce-scatter
// are done, the step ends and group 0's all-gather starts. The next step's forward meets
// group g before its first layer: it waits for group g's all-gather, starts group g + 1's and
// updates group g's parameters (the mean gradient: the gathered sum over N), then runs the
// group's forward. The reference updates with a hand-written SGD; here the scenario's optimizer
// steps once every group is gathered, which for element-wise optimizers is the same update.
// The reference skips the last step's update (no forward follows); here the run's last step
// waits for its all-gathers and applies it, so the parameters are DDP's.
// With a second-order optimizer (Eva, K-FAC, DP-KFAC; no reference pairs them with DeAR) the
// update needs every layer's mean gradient at once (the KL clip's nu sums over all layers), so
// no group can be updated at its gate: the all-gathers leave as soon as every reduce-scatter
// is in and the step waits for them, as DDP's waits for its all-reduces; the optimizer's own
// messages then go as under DDP (SecondOrderSync). DeAR keeps its reduce-scatters overlapped
// with backward and loses the all-gathers' overlap with the next forward.
#include "training/algorithms/dear.h"

#include <functional>
#include <map>
#include <numeric>

#include <torch/torch.h>

#include "training/algorithms/algorithm_settings.h"
#include "training/algorithms/common.h"
#include "training/algorithms/tensor_slices.h"
#include "training/optimizers/second_order_sync.h"

namespace testbed {

std::vector<DearGroup> dear_groups(const std::vector<int64_t>& tensor_sizes, const std::vector<int>& tensor_layers,
                                   double threshold_mb) {
  std::vector<int> order(tensor_sizes.size());
  std::iota(order.begin(), order.end(), 0);
  auto layer = [&](int t) { return tensor_layers.empty() ? t : tensor_layers[t]; };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return layer(a) < layer(b); });
  std::vector<DearGroup> groups;
  DearGroup open;
  double open_mb = 0;
  for (size_t i = 0; i < order.size();) {
    size_t end = i;  // the module's tensors: order[i, end)
    int64_t elements = 0;
    while (end < order.size() && layer(order[end]) == layer(order[i])) elements += tensor_sizes[order[end++]];
    const double mb = static_cast<double>(elements) * 4 / 1024 / 1024;
    if (!(open_mb == 0 || open_mb + mb < threshold_mb)) {
      groups.push_back(std::move(open));
      open = DearGroup{};
      open_mb = 0;
    }
    open.tensors.insert(open.tensors.end(), order.begin() + static_cast<std::ptrdiff_t>(i),
                        order.begin() + static_cast<std::ptrdiff_t>(end));
    open.elements += elements;
    open_mb += mb;
    i = end;
  }
  if (!open.tensors.empty()) groups.push_back(std::move(open));
  return groups;
}

int64_t dear_padded(int64_t elements, int nodes) { return elements + (nodes - elements % nodes); }

namespace {

std::string tag(const char* kind, size_t group) { return std::string(kind) + "." + std::to_string(group); }

class Dear : public Algorithm {
 public:
  explicit Dear(const AlgorithmSettings& s)
      : nodes_(s.nodes),
        batch_(s.batch_size),
        groups_(dear_groups(s.tensor_sizes, s.tensor_layers, std::get<DearOptions>(s.options).bucket_mb)),
        slices_(s.tensor_sizes),
        shards_(s.nodes),
        second_order_(s.nodes, s.batch_size, s.tensor_layers, s.optimizer, s.second_order),
        gated_(!s.optimizer.second_order()) {}
  std::string name() const override { return "dear"; }
  bool issues_during_backward() const override { return true; }
  bool has_rounds() const override { return true; }
  bool forward_waits_for_ops() const override { return gated_; }

  // Reduce-scatters in the order backward completes the groups: the last group first.
  StepPlan local_step(int /*node*/, int /*step*/, Replica& replica, const Dataset& data) override {
    StepPlan plan;
    plan.loss = replica.forward_backward(replica.next_batch(data, batch_));
    plan.comm = second_order_.with_pass_ops(reduce_scatters([&](const DearGroup& group) {
                                              return slices_.gather(replica.gradients(), group.tensors,
                                                                    dear_padded(group.elements, nodes_));
                                            }),
                                            dynamic_cast<const Eva*>(replica.preconditioner()));
    return plan;
  }
  StepPlan projected_step(int /*node*/, int /*step*/) override {
    StepPlan plan;
    plan.loss = no_loss();
    plan.comm = second_order_.with_pass_ops(
        reduce_scatters([&](const DearGroup& group) { return shape_only(dear_padded(group.elements, nodes_)); }),
        nullptr);
    return plan;
  }
  // The all-gathers of every step, of a shard each (the padded group over N); then a
  // second-order optimizer's rounds.
  Round projected_round(int node, int step, size_t round) override {
    if (round > 0) return second_order_.projected_round(node, step, round - 1);
    return all_gathers([&](size_t g) { return shape_only(dear_padded(groups_[g].elements, nodes_) / nodes_); });
  }

  // Once every reduce-scatter is in: the all-gathers of the node's shards, in forward order,
  // each gating its group's first layer (with a second-order optimizer: awaited by the step,
  // then its rounds).
  Round next_round(int node, int step, Replica& replica) override {
    Round round;
    auto& shards = shards_[node];
    if (shards.empty()) return second_order_.next_round(node, step, replica);
    round = all_gathers([&](size_t g) { return shards.at(g); });
    shards.clear();
    return round;
  }

  void apply(int node, int /*issued_step*/, Replica& replica, CommOp& op) override {
    if (second_order_.apply_round_op(replica, op) || second_order_.apply_pass_op(replica, op)) return;
    const size_t g = group_of(op.tag);
    if (op.kind == CommKind::ReduceScatter) {
      shards_[node][g] = op.received.at(0).clone();
      return;
    }
    slices_.scatter(torch::cat(op.received).div_(nodes_), groups_[g].tensors, replica.gradients());
    if (g + 1 == groups_.size()) second_order_.gradient_averaged(node, replica);
  }

  AlgorithmState state(int node) const override {
    AlgorithmState s;
    for (const auto& [g, shard] : shards_[node]) s.tensors[tag("shard", g)] = shard.clone();
    second_order_.save(node, s);
    return s;
  }
  void load_state(int node, const AlgorithmState& state) override {
    second_order_.load(node, state);
    shards_[node].clear();
    for (size_t g = 0; g < groups_.size(); ++g) {
      auto it = state.tensors.find(tag("shard", g));
      if (it != state.tensors.end()) shards_[node][g] = it->second.clone();
    }
  }

 private:
  std::vector<CommOp> reduce_scatters(const std::function<torch::Tensor(const DearGroup&)>& payload) const {
    std::vector<CommOp> ops;
    for (size_t g = groups_.size(); g-- > 0;) {
      CommOp op = make_op(CommKind::ReduceScatter, tag("reduce_scatter", g), payload(groups_[g]));
      op.after_gradient = groups_[g].tensors.front();
      ops.push_back(std::move(op));
    }
    return ops;
  }
  Round all_gathers(const std::function<torch::Tensor(size_t)>& shard) const {
    Round round;
    for (size_t g = 0; g < groups_.size(); ++g) {
      CommOp op = make_op(CommKind::AllGather, tag("all_gather", g), shard(g));
      if (gated_) op.before_forward = groups_[g].tensors.front();
      round.comm.push_back(std::move(op));
    }
    return round;
  }

  size_t group_of(const std::string& op_tag) const {
    const std::string number = op_tag.substr(op_tag.rfind('.') + 1);
    const size_t g = std::stoul(number);
    if (g >= groups_.size()) throw std::logic_error("dear: no group is tagged '" + op_tag + "'");
    return g;
  }

  int nodes_, batch_;
  std::vector<DearGroup> groups_;
  TensorSlices slices_;                                  // each tensor's slice of the flat vector
  std::vector<std::map<size_t, torch::Tensor>> shards_;  // per node: each group's reduced shard, until gathered
  SecondOrderSync second_order_;                         // a second-order optimizer's own messages
  bool gated_;  // each all-gather gates its group's forward (not with a second-order optimizer)
};

}  // namespace

std::unique_ptr<Algorithm> make_dear(const AlgorithmSettings& s) { return std::make_unique<Dear>(s); }

}  // namespace testbed
