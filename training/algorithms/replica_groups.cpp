// Replica groups (docs/replica_groups.md): node n is GPU n % G of group n / G. Inside a group the
// parallelism's collectives run over its G GPUs (their host's links); across groups the wrapped
// algorithm's ops run as G rings in parallel, member r of every group exchanging slice r of
// each op's buffer, as PyTorch's hybrid sharding (HSDP) and INTELLECT-1's workers do.
#include "training/algorithms/replica_groups.h"

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

class ReplicaGroups : public Algorithm {
 public:
  ReplicaGroups(std::unique_ptr<Algorithm> across, const AlgorithmSettings& s)
      : across_(std::move(across)), gpus_(s.group_gpus), nodes_(s.nodes), sharded_(s.group_parallelism != "ddp"),
        wire_(sharded_ ? s.group_wire_bytes : 4) {
    if (s.group_parallelism != "ddp" && s.group_parallelism != "zero1" && s.group_parallelism != "zero2")
      throw std::invalid_argument("replica groups: unknown parallelism '" + s.group_parallelism + "'");
    if (gpus_ < 2 || s.nodes % gpus_ != 0)
      throw std::invalid_argument("replica groups: " + std::to_string(s.nodes) + " GPUs do not make groups of " +
                                  std::to_string(gpus_));
    // Buckets in the order backward fills them: DDP's (a small first one, then 25 MiB), or
    // DeepSpeed ZeRO's (5e8 elements each), each reduce-scattered padded to whole slices.
    buckets_ = sharded_ ? gradient_buckets(s.tensor_sizes, s.tensor_layers, kZeroBucketElements * wire_,
                                           kZeroBucketElements * wire_, wire_)
                        : gradient_buckets(s.tensor_sizes, s.tensor_layers, kDdpBucketBytes, kFirstBucketBytes, wire_);
    for (const GradientBucket& b : buckets_) slice_ += padded(b.elements) / gpus_;
  }
  std::string name() const override { return across_->name(); }
  bool issues_during_backward() const override { return true; }
  bool has_rounds() const override { return sharded_ || across_->has_rounds(); }
  bool forward_waits_for_ops() const override { return across_->forward_waits_for_ops(); }

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
    for (size_t b = 0; b < buckets_.size(); ++b) {
      CommOp op = sharded_ ? make_op(CommKind::ReduceScatter, "group.reduce_scatter." + std::to_string(b),
                                     shape_only(padded(buckets_[b].elements)))
                           : make_op(CommKind::AllReduce, "group.all_reduce." + std::to_string(b),
                                     shape_only(buckets_[b].elements));
      op.after_gradient = buckets_[b].last_ready;
      plan.comm.push_back(inside(std::move(op), group));
    }
    StepPlan outer = across_->projected_step(group, step);
    for (CommOp& op : outer.comm) plan.comm.push_back(across(std::move(op), node));
    plan.work = slice_of(outer.work);
    return plan;
  }

  // Sharded: once the update has run on each GPU's slice, the updated parameters are
  // all-gathered (round 0); the wrapped algorithm's rounds follow.
  Round projected_round(int node, int step, size_t round) override {
    const int group = node / gpus_;
    Round r;
    if (sharded_ && round == 0) {
      r.comm.push_back(inside(make_op(CommKind::AllGather, "group.all_gather", shape_only(slice_)), group));
      return r;
    }
    Round outer = across_->projected_round(group, step, round - (sharded_ ? 1 : 0));
    for (CommOp& op : outer.comm) r.comm.push_back(across(std::move(op), node));
    r.work = slice_of(outer.work);
    return r;
  }

 private:
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
  int gpus_, nodes_;
  bool sharded_;
  double wire_;  // bytes of an element inside the group
  std::vector<GradientBucket> buckets_;
  int64_t slice_ = 0;  // a GPU's slice of the padded buckets: what it all-gathers
};

}  // namespace

std::unique_ptr<Algorithm> make_replica_groups(std::unique_ptr<Algorithm> across, const AlgorithmSettings& gpus) {
  return std::make_unique<ReplicaGroups>(std::move(across), gpus);
}

}  // namespace testbed
