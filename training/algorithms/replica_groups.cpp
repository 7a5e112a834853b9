// Replica groups (docs/replica_groups.md): node n is GPU n % G of group n / G. Inside a group the
// parallelism's collectives run over its G GPUs (their host's links); across groups the wrapped
// algorithm's ops run as G rings in parallel, member r of every group exchanging slice r of
// each op's buffer, as PyTorch's hybrid sharding (HSDP) and INTELLECT-1's workers do.
#include "training/algorithms/replica_groups.h"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>

#include "training/algorithms/common.h"
#include "training/algorithms/gradient_buckets.h"

namespace testbed {

int64_t group_slice(int64_t elements, int gpus, int rank) {
  return elements / gpus + (rank < elements % gpus ? 1 : 0);
}

namespace {

constexpr double kDdpBucketBytes = 25.0 * 1024 * 1024;  // PyTorch DDP's bucket_cap_mb, 25
constexpr double kZeroBucketElements = 5e8;            // DeepSpeed ZeRO's reduce_bucket_size and allgather_bucket_size

// An FSDP unit's flat parameter (the root's: every tensor no unit holds) and where a step's
// passes meet it.
struct FsdpUnit {
  int64_t elements = 0;
  int first_layer = std::numeric_limits<int>::max(), last_layer = -1;
  int gate = -1;  // a tensor of its first layer: its forward waits there, and its backward ends there
};

class ReplicaGroups : public Algorithm {
 public:
  ReplicaGroups(std::unique_ptr<Algorithm> across, const AlgorithmSettings& s)
      : across_(std::move(across)), gpus_(s.group_gpus), nodes_(s.nodes), steps_(s.steps),
        sharded_(s.group_parallelism != "ddp"), fsdp_(s.group_parallelism == "fsdp"),
        overlapped_(s.group_parallelism != "zero1"), gathers_(s.group_gathers_across),
        wire_(sharded_ ? s.group_wire_bytes : 4), reduce_(sharded_ ? s.group_reduce_bytes : 4), pending_(s.nodes) {
    if (s.group_parallelism != "ddp" && s.group_parallelism != "zero1" && s.group_parallelism != "zero2" && !fsdp_)
      throw std::invalid_argument("replica groups: unknown parallelism '" + s.group_parallelism + "'");
    if (gpus_ < 2 || s.nodes % gpus_ != 0)
      throw std::invalid_argument("replica groups: " + std::to_string(s.nodes) + " GPUs do not make groups of " +
                                  std::to_string(gpus_));
    if (fsdp_) {
      build_units(s);
      return;
    }
    // Buckets in the order backward fills them: DDP's (a small first one, then 25 MiB), or
    // DeepSpeed ZeRO's (5e8 elements each), each reduce-scattered padded to whole slices.
    buckets_ = sharded_ ? gradient_buckets(s.tensor_sizes, s.tensor_layers, kZeroBucketElements * wire_,
                                           kZeroBucketElements * wire_, wire_)
                        : gradient_buckets(s.tensor_sizes, s.tensor_layers, kDdpBucketBytes, kFirstBucketBytes, wire_);
    for (const GradientBucket& b : buckets_) slice_ += padded(b.elements) / gpus_;
  }
  std::string name() const override { return across_->name(); }
  bool issues_during_backward() const override { return true; }
  bool has_rounds() const override { return sharded_ || gathers_ || across_->has_rounds(); }
  bool forward_waits_for_ops() const override { return fsdp_ || across_->forward_waits_for_ops(); }
  bool updates_before_rounds() const override { return sharded_; }

  StepPlan local_step(int, int, Replica&, const Dataset&) override {
    throw std::logic_error("replica groups run in a projection only (workload.train false)");
  }
  void apply(int, int, Replica&, CommOp&) override {
    throw std::logic_error("replica groups run in a projection only (workload.train false)");
  }

  // Inside the group: a collective of each bucket as backward fills it (all-reduce under ddp,
  // reduce-scatter when sharded); then the wrapped algorithm's ops, slice by slice.
  StepPlan projected_step(int node, int step) override {
    const int group = node / gpus_;
    StepPlan plan;
    plan.loss = no_loss();
    if (fsdp_) plan.comm = fsdp_backward(group);
    for (size_t b = 0; b < buckets_.size() && !fsdp_; ++b) {
      CommOp op = sharded_ ? make_op(CommKind::ReduceScatter, "group.reduce_scatter." + std::to_string(b),
                                     shape_only(padded(buckets_[b].elements)))
                           : make_op(CommKind::AllReduce, "group.all_reduce." + std::to_string(b),
                                     shape_only(buckets_[b].elements));
      // DeepSpeed's ZeRO-1 reduces once backward ends (no overlap_comm by default); DDP's and
      // ZeRO-2's buckets leave as backward fills them.
      if (overlapped_) op.after_gradient = buckets_[b].last_ready;
      op = inside(std::move(op), group);
      if (sharded_) op.bytes_per_element = reduce_;
      plan.comm.push_back(std::move(op));
    }
    StepPlan outer = across_->projected_step(group, step);
    for (CommOp& op : outer.comm) {
      remember(node, step, op);
      plan.comm.push_back(across(std::move(op), node));
    }
    plan.work = slice_of(outer.work);
    return plan;
  }

  // Sharded: once the update has run on each GPU's slice, the updated parameters are
  // all-gathered (round 0; FSDP's are the next forward's gated all-gathers). Then the wrapped
  // algorithm's rounds, and last the group's all-gathers of the slices of every op across
  // groups that is due at this step's end.
  Round projected_round(int node, int step, size_t round) override {
    const int group = node / gpus_;
    Round r;
    if (fsdp_ && round == 0) {
      r.comm = fsdp_forward(group);
      return r;
    }
    if (sharded_ && round == 0) {
      r.comm.push_back(inside(make_op(CommKind::AllGather, "group.all_gather", shape_only(slice_)), group));
      return r;
    }
    const size_t own = sharded_ ? 1 : 0;
    Round outer = across_->projected_round(group, step, round - own);
    if (!outer.comm.empty()) {
      for (CommOp& op : outer.comm) {
        remember(node, step, op);
        r.comm.push_back(across(std::move(op), node));
      }
      r.work = slice_of(outer.work);
      return r;
    }
    // The round after the wrapped algorithm's last: the gathers, once.
    if (round > own && across_->projected_round(group, step, round - own - 1).comm.empty()) return r;
    auto due = pending_[node].find(step);
    if (due == pending_[node].end()) return r;
    for (size_t k = 0; k < due->second.size(); ++k)
      r.comm.push_back(inside(make_op(CommKind::AllGather, "group.gather." + std::to_string(k),
                                      shape_only((due->second[k] + gpus_ - 1) / gpus_)),
                              group));
    pending_[node].erase(due);
    return r;
  }

 private:
  // A ddp group's GPUs each need the whole result of an op across groups, of which each
  // received a slice; so does a ZeRO group after an outer step wrote the parameters. Remembered
  // under the step whose end it is due at (its delay after the issuing step; lo-fi's final
  // average at the last), gathered there, each slice padded to the largest.
  void remember(int node, int step, const CommOp& op) {
    if (!gathers_) return;
    const int64_t n = op.buffer.numel();
    const int64_t parts = op.nodes.empty() ? nodes_ / gpus_ : static_cast<int64_t>(op.nodes.size());
    const int64_t result = op.kind == CommKind::AllGather ? parts * n : op.kind == CommKind::ReduceScatter ? n / parts : n;
    const int64_t due = op.delay == kDueAtEnd ? steps_ - 1 : std::min<int64_t>(steps_ - 1, int64_t{step} + op.delay);
    pending_[static_cast<size_t>(node)][static_cast<int>(due)].push_back(result);
  }

  // FSDP as PyTorch's FullyShardedDataParallel runs it with FULL_SHARD and its default
  // BACKWARD_PRE prefetch: a unit is resharded after its forward, so backward gathers it again,
  // one unit ahead (as unit u + 1's backward starts, unit u's all-gather is issued; the last
  // unit's as backward starts); each unit's gradient is reduce-scattered as its backward ends.
  // The root keeps its parameters from forward to backward (FSDP does not reshard the root after
  // forward), so it is gathered once a step and reduce-scattered as backward ends.
  void build_units(const AlgorithmSettings& s) {
    if (s.group_units.size() != s.tensor_sizes.size())
      throw std::invalid_argument("replica groups: fsdp needs each tensor's unit (" + std::to_string(s.group_units.size()) +
                                  " for " + std::to_string(s.tensor_sizes.size()) + " tensors)");
    int units = 0;
    for (int u : s.group_units) units = std::max(units, u + 1);
    units_.resize(static_cast<size_t>(units));
    for (size_t t = 0; t < s.tensor_sizes.size(); ++t) {
      const int layer = s.tensor_layers.empty() ? static_cast<int>(t) : s.tensor_layers[t];
      FsdpUnit& unit = s.group_units[t] < 0 ? root_ : units_[static_cast<size_t>(s.group_units[t])];
      unit.elements += s.tensor_sizes[t];
      if (layer < unit.first_layer) unit.first_layer = layer, unit.gate = static_cast<int>(t);
      unit.last_layer = std::max(unit.last_layer, layer);
      tensor_layers_.push_back(layer);
    }
    if (units_.empty()) throw std::invalid_argument("replica groups: fsdp found no unit in the model");
  }

  // The tensor whose layer's backward ends just as unit u's backward starts (the nearest layer
  // after the unit's last), or, when nothing after it trains, the last layer's tensor with
  // `at_start` set: backward starts as that layer's forward does (to within its forward pass).
  int backward_start(const FsdpUnit& u, bool& at_start) const {
    int best = -1;
    for (size_t t = 0; t < tensor_layers_.size(); ++t)
      if (tensor_layers_[t] > u.last_layer && (best < 0 || tensor_layers_[t] < tensor_layers_[best])) best = static_cast<int>(t);
    at_start = best < 0;
    if (at_start)
      for (size_t t = 0; t < tensor_layers_.size(); ++t)
        if (best < 0 || tensor_layers_[t] > tensor_layers_[best]) best = static_cast<int>(t);
    return best;
  }
  CommOp gathered_for_backward(size_t u, const FsdpUnit& starts, int group) const {
    CommOp op = make_op(CommKind::AllGather, "fsdp.all_gather_bwd." + std::to_string(u),
                        shape_only(padded(units_[u].elements) / gpus_));
    bool at_start = false;
    const int t = backward_start(starts, at_start);
    (at_start ? op.after_forward : op.after_gradient) = t;
    return inside(std::move(op), group);
  }
  CommOp reduce_scattered(const FsdpUnit& unit, const std::string& name, int group) const {
    CommOp op = make_op(CommKind::ReduceScatter, "fsdp.reduce_scatter." + name, shape_only(padded(unit.elements)));
    op.after_gradient = unit.gate;
    op = inside(std::move(op), group);
    op.bytes_per_element = reduce_;
    return op;
  }
  // In the order FSDP's hooks issue them: the last unit's all-gather as backward starts; then
  // for each unit u from the last, the next one's all-gather as u's backward starts and u's
  // reduce-scatter as it ends; the root's reduce-scatter as its last gradient is in.
  std::vector<CommOp> fsdp_backward(int group) const {
    std::vector<CommOp> ops;
    const size_t last = units_.size() - 1;
    FsdpUnit everything;  // backward's start: after every layer
    everything.last_layer = std::numeric_limits<int>::max();
    ops.push_back(gathered_for_backward(last, everything, group));
    for (size_t u = last + 1; u-- > 0;) {
      if (u > 0) ops.push_back(gathered_for_backward(u - 1, units_[u], group));
      ops.push_back(reduce_scattered(units_[u], std::to_string(u), group));
    }
    if (root_.elements > 0) ops.push_back(reduce_scattered(root_, "root", group));
    return ops;
  }
  // The next step's forward all-gathers, in forward order, each gating its unit's first layer:
  // the engine issues each as the forward reaches the one before (a unit of prefetch).
  std::vector<CommOp> fsdp_forward(int group) const {
    std::vector<std::pair<const FsdpUnit*, std::string>> order;
    if (root_.elements > 0) order.push_back({&root_, "root"});
    for (size_t u = 0; u < units_.size(); ++u) order.push_back({&units_[u], std::to_string(u)});
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first->first_layer < b.first->first_layer; });
    std::vector<CommOp> ops;
    for (const auto& [unit, name] : order) {
      CommOp op = make_op(CommKind::AllGather, "fsdp.all_gather." + name, shape_only(padded(unit->elements) / gpus_));
      op.before_forward = unit->gate;
      ops.push_back(inside(std::move(op), group));
    }
    return ops;
  }

  int64_t padded(int64_t elements) const { return (elements + gpus_ - 1) / gpus_ * gpus_; }

  // An op over group `group`'s GPUs, its tag naming the group (ops are told apart by tag).
  CommOp inside(CommOp op, int group) const {
    op.bytes_per_element = wire_;
    op.tag += "/g" + std::to_string(group);
    for (int r = 0; r < gpus_; ++r) op.nodes.push_back(group * gpus_ + r);
    return op;
  }

  // The wrapped algorithm's op (over groups) as GPU `node` sends it: its slice, with the same
  // slice of every participating group.
  CommOp across(CommOp op, int node) const {
    const int rank = node % gpus_;
    std::vector<int> groups = op.nodes;
    if (groups.empty())
      for (int g = 0; g < groups_(); ++g) groups.push_back(g);
    op.nodes.clear();
    for (int g : groups) op.nodes.push_back(g * gpus_ + rank);
    const int64_t n = op.buffer.numel();
    switch (op.kind) {
      case CommKind::AllReduce:
      case CommKind::AllGather:
      case CommKind::Broadcast: op.buffer = shape_only(group_slice(n, gpus_, rank)); break;
      case CommKind::ReduceScatter: {
        const int64_t parts = static_cast<int64_t>(groups.size());
        op.buffer = shape_only(parts * group_slice(n / parts, gpus_, rank));
        break;
      }
      case CommKind::NeighbourExchange:
      case CommKind::Cut:
        throw std::logic_error(across_->name() + "'s op '" + op.tag + "' cannot be split across replica groups");
    }
    op.tag += "/s" + std::to_string(rank);
    return op;
  }
  // Each GPU prepares only its slice (compressing it, transforming it): its share of the work,
  // in as many kernels.
  ExtraWork slice_of(ExtraWork work) const {
    work.flops /= gpus_;
    work.bytes /= gpus_;
    return work;
  }
  int groups_() const { return nodes_ / gpus_; }

  std::unique_ptr<Algorithm> across_;
  int gpus_, nodes_, steps_;
  bool sharded_, fsdp_, overlapped_, gathers_;
  double wire_;    // bytes of an element inside the group
  double reduce_;  // of a gradient's reduce-scatter (sharded)
  std::vector<std::map<int, std::vector<int64_t>>> pending_;  // per node: due step -> results to gather
  std::vector<GradientBucket> buckets_;
  int64_t slice_ = 0;  // a GPU's slice of the padded buckets: what it all-gathers
  std::vector<FsdpUnit> units_;  // fsdp: in forward order
  FsdpUnit root_;
  std::vector<int> tensor_layers_;
};

}  // namespace

std::unique_ptr<Algorithm> make_replica_groups(std::unique_ptr<Algorithm> across, const AlgorithmSettings& gpus) {
  return std::make_unique<ReplicaGroups>(std::move(across), gpus);
}

}  // namespace testbed
