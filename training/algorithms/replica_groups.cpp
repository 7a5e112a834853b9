// Replica groups (docs/replica_groups.md): node n is GPU n % G of group n / G. Inside a group the
// parallelism's collectives run over its G GPUs (their host's links) as backward fills the
// gradients. Once they are in, the wrapped algorithm runs on the group's reduced gradient and its
// ops cross the groups as G rings in parallel, member r of every group exchanging slice r of each
// op's buffer, as PyTorch's hybrid sharding (HSDP) and INTELLECT-1's workers do. Last the group
// makes each GPU whole again: a ddp group all-gathers the slices of each result, a ZeRO group its
// updated parameters, an FSDP group each unit as the next forward reaches it.
//
// Training keeps a whole replica on every GPU, each computing only what its GPU computes: a
// sharded GPU's gradient and update are right on the slices it owns (the optimizers here work
// element by element), the rest is overwritten by the group's all-gathers before anyone reads it.
#include "training/algorithms/replica_groups.h"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>

#include "training/algorithms/common.h"
#include "training/algorithms/gradient_buckets.h"
#include "training/algorithms/tensor_slices.h"

namespace testbed {

int64_t group_slice(int64_t elements, int gpus, int rank) { return elements / gpus + (rank < elements % gpus ? 1 : 0); }

namespace {

constexpr double kDdpBucketBytes = 25.0 * 1024 * 1024;  // PyTorch DDP's bucket_cap_mb, 25
constexpr double kZeroBucketElements = 5e8;             // DeepSpeed ZeRO's reduce_bucket_size and allgather_bucket_size

// A sharded piece (a ZeRO bucket, an FSDP unit) of E elements is padded to whole slices of
// ceil(E / G): slice r holds elements [r c, r c + c) of its layout, the last ones fewer or none.
int64_t slice_cap(int64_t elements, int gpus) { return (elements + gpus - 1) / gpus; }
int64_t slice_held(int64_t elements, int gpus, int rank) {
  const int64_t c = slice_cap(elements, gpus);
  return std::clamp<int64_t>(elements - rank * c, 0, c);
}
// Where group member `rank`'s contiguous slice of a vector of `elements` starts (group_slice).
int64_t slice_start(int64_t elements, int gpus, int rank) {
  int64_t at = 0;
  for (int q = 0; q < rank; ++q) at += group_slice(elements, gpus, q);
  return at;
}

// What the group reduces or gathers as one collective: a DDP or ZeRO bucket, an FSDP unit (the
// root's: every tensor no unit holds). Its tensors in registration order are its buffer's layout.
struct Piece {
  std::vector<int> tensors;
  int64_t elements = 0;
  int first_layer = std::numeric_limits<int>::max(), last_layer = -1;
  int gate = -1;                // fsdp: a tensor of its first layer: its forward waits there, its backward ends there
  int last_ready = -1;          // a bucket: the tensor whose gradient completes it
  mutable torch::Tensor index;  // training: its layout as positions in the flat parameters (built on first use)
};

// What a group collective's buffer carries: a piece's gradient (whole, zeros after it up to the
// buffer's length), or this GPU's slice of a piece's parameters (padded to the slice's cap).
enum class Content { Gradient, Parameters };
constexpr size_t kEveryPiece = std::numeric_limits<size_t>::max();  // ZeRO's one all-gather of every slice
using Fill = std::function<torch::Tensor(Content, size_t piece, int64_t elements)>;

// Where a GPU stands in its step's rounds, in order: the wrapped algorithm's step ops, its
// rounds, the ddp group's gathers of their results, the sharded group's all-gathers.
enum class Phase { Across, AcrossRounds, Gathers, Shards, Done };

struct GpuStep {
  int step = -1;
  Phase phase = Phase::Done;
  size_t across_round = 0;  // a projection: the wrapped algorithm's next round
  double loss = 0;
  // Training: each sliced op's whole op as the wrapped algorithm issued it, by the sliced tag;
  // a ddp group's whole results of which this GPU holds its slice, in the order they came.
  std::map<std::string, CommOp> sent;
  std::vector<CommOp> held;
};

class ReplicaGroups : public Algorithm {
 public:
  ReplicaGroups(std::vector<std::unique_ptr<Algorithm>> across, const AlgorithmSettings& s)
      : across_(std::move(across)),
        gpus_(s.group_gpus),
        nodes_(s.nodes),
        steps_(s.steps),
        batch_(s.batch_size),
        sharded_(s.group_parallelism != "ddp"),
        fsdp_(s.group_parallelism == "fsdp"),
        overlapped_(s.group_parallelism != "zero1"),
        wire_(sharded_ ? s.group_wire_bytes : 4),
        reduce_(sharded_ ? s.group_reduce_bytes : 4),
        slices_(s.tensor_sizes),
        pending_(s.nodes),
        gpu_(s.nodes) {
    if (s.group_parallelism != "ddp" && s.group_parallelism != "zero1" && s.group_parallelism != "zero2" && !fsdp_)
      throw std::invalid_argument("replica groups: unknown parallelism '" + s.group_parallelism + "'");
    if (gpus_ < 2 || s.nodes % gpus_ != 0)
      throw std::invalid_argument("replica groups: " + std::to_string(s.nodes) + " GPUs do not make groups of " +
                                  std::to_string(gpus_));
    if (static_cast<int>(across_.size()) != gpus_)
      throw std::invalid_argument("replica groups: one algorithm across groups for each of a group's GPUs");
    if (fsdp_) {
      build_units(s);
    } else {
      // Buckets in the order backward fills them: DDP's (a small first one, then 25 MiB), or
      // DeepSpeed ZeRO's (5e8 elements each), each reduce-scattered padded to whole slices.
      const auto buckets =
          sharded_ ? gradient_buckets(s.tensor_sizes, s.tensor_layers, kZeroBucketElements * wire_,
                                      kZeroBucketElements * wire_, wire_)
                   : gradient_buckets(s.tensor_sizes, s.tensor_layers, kDdpBucketBytes, kFirstBucketBytes, wire_);
      for (const GradientBucket& b : buckets) {
        Piece p;
        p.tensors = b.tensors;
        p.elements = b.elements;
        p.last_ready = b.last_ready;
        pieces_.push_back(std::move(p));
      }
    }
    for (const Piece& p : pieces_) slice_ += slice_cap(p.elements, gpus_);
    for (int r = 0; r < gpus_; ++r) {
      int64_t owned = 0;
      for (const Piece& p : pieces_) owned += slice_held(p.elements, gpus_, r);
      owned_elements_.push_back(owned);
    }
  }
  std::string name() const override { return across_.front()->name(); }
  bool issues_during_backward() const override { return true; }
  bool has_rounds() const override { return true; }
  bool forward_waits_for_ops() const override { return fsdp_ || across_.front()->forward_waits_for_ops(); }
  // A GPU updates what it holds once the group's reductions are in, before anything leaves
  // across groups (DiLoCo's outer gradient needs the inner step's parameters).
  bool updates_before_rounds() const override { return true; }

  // The GPU's micro-batch: its share of the group's batch (group_gpus x batch_size samples, which
  // every GPU of the group draws alike from the group's shard).
  StepPlan local_step(int node, int step, Replica& replica, const Dataset& data) override {
    data_ = &data;
    const int rank = node % gpus_;
    const Batch group = replica.next_batch(data, gpus_ * batch_);
    const Batch mine{group.inputs.narrow(0, int64_t{rank} * batch_, batch_),
                     group.targets.narrow(0, int64_t{rank} * batch_, batch_)};
    StepPlan plan;
    plan.loss = replica.forward_backward(mine);
    start(node, step, plan.loss);
    plan.comm = inside_ops(node / gpus_, fill(&replica, rank));
    return plan;
  }
  StepPlan projected_step(int node, int step) override {
    StepPlan plan;
    plan.loss = no_loss();
    start(node, step, plan.loss);
    plan.comm = inside_ops(node / gpus_, [](Content, size_t, int64_t elements) { return shape_only(elements); });
    return plan;
  }
  Round next_round(int node, int step, Replica& replica) override { return round(node, step, &replica); }
  Round projected_round(int node, int step, size_t) override { return round(node, step, nullptr); }

  void apply(int node, int issued_step, Replica& replica, CommOp& op) override {
    const int group = node / gpus_, rank = node % gpus_;
    const size_t cut = op.tag.rfind('/');
    const std::string what = op.tag.substr(0, cut);
    torch::NoGradGuard no_grad;
    if (op.tag.compare(cut, 2, "/s") == 0) return arrived_across(node, issued_step, replica, op);
    if (what.rfind("group.all_reduce.", 0) == 0) {
      slices_.scatter(op.buffer.div_(gpus_), pieces_.at(number(what)).tensors, replica.gradients());
    } else if (what.rfind("group.reduce_scatter.", 0) == 0 || what.rfind("fsdp.reduce_scatter.", 0) == 0) {
      const size_t p = number(what);
      const int64_t held = slice_held(pieces_.at(p).elements, gpus_, rank);
      replica.gradients().index_copy_(0, owned(p, rank), op.received.at(0).narrow(0, 0, held).div(gpus_));
    } else if (what.rfind("fsdp.all_gather", 0) == 0) {
      for (int q = 0; q < gpus_; ++q) write_parameters(replica, number(what), q, op.received.at(q));
    } else if (what == "group.all_gather") {
      for (int q = 0; q < gpus_; ++q) {
        int64_t at = 0;
        for (size_t p = 0; p < pieces_.size(); ++p) {
          const int64_t cap = slice_cap(pieces_[p].elements, gpus_);
          write_parameters(replica, p, q, op.received.at(q).narrow(0, at, cap));
          at += cap;
        }
      }
    } else if (what.rfind("group.gather.", 0) == 0) {
      CommOp& whole = gpu_[node].held.at(number(what));
      const int64_t n = whole.buffer.numel();
      for (int q = 0; q < gpus_; ++q)
        whole.buffer.narrow(0, slice_start(n, gpus_, q), group_slice(n, gpus_, q))
            .copy_(op.received.at(q).narrow(0, 0, group_slice(n, gpus_, q)));
      across_[rank]->apply(group, issued_step, replica, whole);
    } else {
      throw std::logic_error("replica groups: no collective of the group is tagged '" + op.tag + "'");
    }
  }
  AlgorithmState state(int node) const override { return across_[node % gpus_]->state(node / gpus_); }
  void load_state(int node, const AlgorithmState& state) override {
    across_[node % gpus_]->load_state(node / gpus_, state);
  }

 private:
  void start(int node, int step, double loss) {
    gpu_[node] = GpuStep{};
    gpu_[node].step = step;
    gpu_[node].phase = Phase::Across;
    gpu_[node].loss = loss;
  }

  // The step's rounds after its own ops (see Phase); `replica` null in a projection.
  Round round(int node, int step, Replica* replica) {
    GpuStep& at = gpu_[node];
    if (at.step != step)
      throw std::logic_error("replica groups: a round of step " + std::to_string(step) + " before its step");
    const int group = node / gpus_, rank = node % gpus_;
    Algorithm& across = *across_[rank];
    while (at.phase != Phase::Done) {
      Round r;
      switch (at.phase) {
        case Phase::Across: {
          at.phase = Phase::AcrossRounds;
          StepPlan outer;
          if (replica) {
            replica->hold_gradients(at.loss);  // the group's reduced gradient
            outer = across.local_step(group, step, *replica, *data_);
            // Else the GPU's next step would draw no batch: the algorithm must take the gradient.
            if (replica->holds_gradients())
              throw std::logic_error(across.name() + " left a step's gradient untaken: replica groups cannot train it");
          } else {
            outer = across.projected_step(group, step);
          }
          r.comm = across_ops(std::move(outer.comm), node, step, replica != nullptr);
          r.work = slice_of(outer.work);
          break;
        }
        case Phase::AcrossRounds: {
          Round outer = replica ? across.next_round(group, step, *replica)
                                : across.projected_round(group, step, at.across_round++);
          if (outer.comm.empty()) {
            at.phase = Phase::Gathers;
            continue;
          }
          if (replica && !sharded_)
            throw std::logic_error(across.name() +
                                   "'s later rounds need their first's whole results: replica groups "
                                   "train it in a projection only");
          r.comm = across_ops(std::move(outer.comm), node, step, replica != nullptr);
          r.work = slice_of(outer.work);
          break;
        }
        case Phase::Gathers:
          at.phase = Phase::Shards;
          if (!sharded_) r.comm = gathers(node, step, replica != nullptr);
          break;
        case Phase::Shards:
          at.phase = Phase::Done;
          if (!sharded_) break;
          r.comm = fsdp_ ? fsdp_forward(group, fill(replica, rank))
                         : std::vector<CommOp>{zero_all_gather(group, fill(replica, rank))};
          break;
        case Phase::Done:
          break;
      }
      if (!r.comm.empty()) return r;
    }
    return {};
  }

  // The buffers of GPU `rank`'s group collectives: from its replica, or shapes alone (null).
  Fill fill(Replica* replica, int rank) const {
    if (!replica) return [](Content, size_t, int64_t elements) { return shape_only(elements); };
    return [this, replica, rank](Content c, size_t piece, int64_t elements) {
      return c == Content::Gradient ? slices_.gather(replica->gradients(), pieces_.at(piece).tensors, elements)
                                    : parameter_slices(*replica, piece, rank);
    };
  }

  // The group's own collectives of the step, in the order backward issues them: under ddp an
  // all-reduce of each bucket as backward fills it; under ZeRO a reduce-scatter of each (as
  // backward fills it under ZeRO-2, once backward ends under ZeRO-1, as DeepSpeed's stage 1 does
  // without overlap_comm); under FSDP each unit's backward all-gather and reduce-scatter.
  std::vector<CommOp> inside_ops(int group, const Fill& fill) const {
    if (fsdp_) return fsdp_backward(group, fill);
    std::vector<CommOp> ops;
    for (size_t b = 0; b < pieces_.size(); ++b) {
      const Piece& p = pieces_[b];
      CommOp op = sharded_ ? make_op(CommKind::ReduceScatter, "group.reduce_scatter." + std::to_string(b),
                                     fill(Content::Gradient, b, padded(p.elements)))
                           : make_op(CommKind::AllReduce, "group.all_reduce." + std::to_string(b),
                                     fill(Content::Gradient, b, p.elements));
      if (overlapped_) op.after_gradient = p.last_ready;
      op = inside(std::move(op), group);
      if (sharded_) op.bytes_per_element = reduce_;
      ops.push_back(std::move(op));
    }
    return ops;
  }

  CommOp zero_all_gather(int group, const Fill& fill) const {
    return inside(make_op(CommKind::AllGather, "group.all_gather", fill(Content::Parameters, kEveryPiece, slice_)),
                  group);
  }

  // The wrapped algorithm's ops as GPU `node` sends them, each its slice with the same slice of
  // every participating group; in training each whole op is kept for when its slice is back.
  std::vector<CommOp> across_ops(std::vector<CommOp> ops, int node, int step, bool values) {
    std::vector<CommOp> out;
    for (CommOp& op : ops) {
      // They leave once the group's reductions are in, not during backward.
      op.after_gradient = op.after_forward = -1;
      remember(node, step, op);
      CommOp sliced = across(op, node, values);
      if (values) gpu_[node].sent[sliced.tag] = std::move(op);
      out.push_back(std::move(sliced));
    }
    return out;
  }

  // An op of the wrapped algorithm is back with this GPU's slice of its result. A sharded GPU
  // puts it in its place in the whole op, whose other elements it never reads, and the wrapped
  // algorithm applies that; a ddp GPU keeps it until the group has gathered every slice.
  void arrived_across(int node, int issued_step, Replica& replica, CommOp& op) {
    const int rank = node % gpus_;
    auto it = gpu_[node].sent.find(op.tag);
    if (it == gpu_[node].sent.end()) throw std::logic_error("replica groups: '" + op.tag + "' was never sent");
    CommOp whole = std::move(it->second);
    gpu_[node].sent.erase(it);
    if (op.kind != CommKind::AllReduce && op.kind != CommKind::Broadcast)
      throw std::logic_error(across_[rank]->name() + "'s op '" + whole.tag + "' cannot train across replica groups");
    const int64_t n = whole.buffer.numel();
    if (!sharded_) {
      whole.buffer.narrow(0, slice_start(n, gpus_, rank), group_slice(n, gpus_, rank)).copy_(op.buffer);
      gpu_[node].held.push_back(std::move(whole));
      return;
    }
    whole.buffer.index_copy_(0, owned(rank), op.buffer);
    across_[rank]->apply(node / gpus_, issued_step, replica, whole);
  }

  // A ddp group's GPUs each need the whole result of an op across groups, of which each
  // received a slice. Remembered under the step whose end it is due at (its delay after the
  // issuing step; lo-fi's final average at the last), gathered there, each slice padded to the
  // largest.
  void remember(int node, int step, const CommOp& op) {
    if (sharded_) return;
    const int64_t n = op.buffer.numel();
    const int64_t parts = op.nodes.empty() ? nodes_ / gpus_ : static_cast<int64_t>(op.nodes.size());
    const int64_t result = op.kind == CommKind::AllGather       ? parts * n
                           : op.kind == CommKind::ReduceScatter ? n / parts
                                                                : n;
    const int64_t due = op.delay == kDueAtEnd ? steps_ - 1 : std::min<int64_t>(steps_ - 1, int64_t{step} + op.delay);
    pending_[static_cast<size_t>(node)][static_cast<int>(due)].push_back(result);
  }
  std::vector<CommOp> gathers(int node, int step, bool values) {
    std::vector<CommOp> ops;
    const int group = node / gpus_, rank = node % gpus_;
    auto due = pending_[node].find(step);
    if (due == pending_[node].end()) return ops;
    for (size_t k = 0; k < due->second.size(); ++k) {
      const int64_t n = due->second[k], cap = slice_cap(n, gpus_);
      torch::Tensor buffer = shape_only(cap);
      if (values) {
        const CommOp& whole = gpu_[node].held.at(k);
        if (whole.buffer.numel() != n) throw std::logic_error("replica groups: a gather out of order");
        buffer = torch::zeros({cap});
        buffer.narrow(0, 0, group_slice(n, gpus_, rank))
            .copy_(whole.buffer.narrow(0, slice_start(n, gpus_, rank), group_slice(n, gpus_, rank)));
      }
      ops.push_back(inside(make_op(CommKind::AllGather, "group.gather." + std::to_string(k), buffer), group));
    }
    pending_[node].erase(due);
    return ops;
  }

  // FSDP as PyTorch's FullyShardedDataParallel runs it with FULL_SHARD and its default
  // BACKWARD_PRE prefetch: a unit is resharded after its forward, so backward gathers it again,
  // one unit ahead (as unit u + 1's backward starts, unit u's all-gather is issued; the last
  // unit's as backward starts); each unit's gradient is reduce-scattered as its backward ends.
  // The root keeps its parameters from forward to backward (FSDP does not reshard the root after
  // forward), so it is gathered once a step and reduce-scattered as backward ends. Pieces: the
  // units in forward order, then the root (if any tensor is left to it).
  void build_units(const AlgorithmSettings& s) {
    if (s.group_units.size() != s.tensor_sizes.size())
      throw std::invalid_argument("replica groups: fsdp needs each tensor's unit (" +
                                  std::to_string(s.group_units.size()) + " for " +
                                  std::to_string(s.tensor_sizes.size()) + " tensors)");
    int units = 0;
    for (int u : s.group_units) units = std::max(units, u + 1);
    if (units == 0) throw std::invalid_argument("replica groups: fsdp found no unit in the model");
    pieces_.resize(static_cast<size_t>(units) + 1);
    for (size_t t = 0; t < s.tensor_sizes.size(); ++t) {
      const int layer = s.tensor_layers.empty() ? static_cast<int>(t) : s.tensor_layers[t];
      Piece& unit = pieces_[s.group_units[t] < 0 ? static_cast<size_t>(units) : static_cast<size_t>(s.group_units[t])];
      unit.tensors.push_back(static_cast<int>(t));
      unit.elements += s.tensor_sizes[t];
      if (layer < unit.first_layer) unit.first_layer = layer, unit.gate = static_cast<int>(t);
      unit.last_layer = std::max(unit.last_layer, layer);
      tensor_layers_.push_back(layer);
    }
    units_ = static_cast<size_t>(units);
    if (pieces_.back().elements == 0) pieces_.pop_back();
  }
  bool has_root() const { return pieces_.size() > units_; }
  std::string unit_name(size_t p) const { return p == units_ ? "root" : std::to_string(p); }

  // The tensor whose layer's backward ends just as unit u's backward starts (the nearest layer
  // after the unit's last), or, when nothing after it trains, the last layer's tensor with
  // `at_start` set: backward starts as that layer's forward does (to within its forward pass).
  int backward_start(int last_layer, bool& at_start) const {
    int best = -1;
    for (size_t t = 0; t < tensor_layers_.size(); ++t)
      if (tensor_layers_[t] > last_layer && (best < 0 || tensor_layers_[t] < tensor_layers_[best]))
        best = static_cast<int>(t);
    at_start = best < 0;
    if (at_start)
      for (size_t t = 0; t < tensor_layers_.size(); ++t)
        if (best < 0 || tensor_layers_[t] > tensor_layers_[best]) best = static_cast<int>(t);
    return best;
  }
  CommOp gathered_for_backward(size_t u, int starts_after_layer, int group, const Fill& fill) const {
    CommOp op = make_op(CommKind::AllGather, "fsdp.all_gather_bwd." + std::to_string(u),
                        fill(Content::Parameters, u, slice_cap(pieces_[u].elements, gpus_)));
    bool at_start = false;
    const int t = backward_start(starts_after_layer, at_start);
    (at_start ? op.after_forward : op.after_gradient) = t;
    return inside(std::move(op), group);
  }
  CommOp reduce_scattered(size_t p, int group, const Fill& fill) const {
    CommOp op = make_op(CommKind::ReduceScatter, "fsdp.reduce_scatter." + unit_name(p),
                        fill(Content::Gradient, p, padded(pieces_[p].elements)));
    op.after_gradient = pieces_[p].gate;
    op = inside(std::move(op), group);
    op.bytes_per_element = reduce_;
    return op;
  }
  // In the order FSDP's hooks issue them: the last unit's all-gather as backward starts; then
  // for each unit u from the last, the next one's all-gather as u's backward starts and u's
  // reduce-scatter as it ends; the root's reduce-scatter as its last gradient is in.
  std::vector<CommOp> fsdp_backward(int group, const Fill& fill) const {
    std::vector<CommOp> ops;
    const size_t last = units_ - 1;
    ops.push_back(gathered_for_backward(last, std::numeric_limits<int>::max(), group, fill));  // after every layer
    for (size_t u = last + 1; u-- > 0;) {
      if (u > 0) ops.push_back(gathered_for_backward(u - 1, pieces_[u].last_layer, group, fill));
      ops.push_back(reduce_scattered(u, group, fill));
    }
    if (has_root()) ops.push_back(reduce_scattered(units_, group, fill));
    return ops;
  }
  // The next step's forward all-gathers, in forward order, each gating its unit's first layer:
  // the engine issues each as the forward reaches the one before (a unit of prefetch).
  std::vector<CommOp> fsdp_forward(int group, const Fill& fill) const {
    std::vector<size_t> order;
    for (size_t p = 0; p < pieces_.size(); ++p) order.push_back(p);
    if (has_root()) std::rotate(order.begin(), order.end() - 1, order.end());  // the root first among equals
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return pieces_[a].first_layer < pieces_[b].first_layer; });
    std::vector<CommOp> ops;
    for (size_t p : order) {
      CommOp op = make_op(CommKind::AllGather, "fsdp.all_gather." + unit_name(p),
                          fill(Content::Parameters, p, slice_cap(pieces_[p].elements, gpus_)));
      op.before_forward = pieces_[p].gate;
      ops.push_back(inside(std::move(op), group));
    }
    return ops;
  }

  int64_t padded(int64_t elements) const { return slice_cap(elements, gpus_) * gpus_; }

  // Training: piece p's layout as positions in the flat parameters, and those of slice `rank`.
  const torch::Tensor& layout(size_t p) const {
    const Piece& piece = pieces_.at(p);
    if (!piece.index.defined()) {
      std::vector<torch::Tensor> ranges;
      for (int t : piece.tensors)
        ranges.push_back(torch::arange(slices_.offset(t), slices_.offset(t) + slices_.size(t), torch::kLong));
      piece.index = torch::cat(ranges);
    }
    return piece.index;
  }
  torch::Tensor owned(size_t p, int rank) const {
    const int64_t elements = pieces_.at(p).elements, cap = slice_cap(elements, gpus_);
    return layout(p).narrow(0, std::min(rank * cap, elements), slice_held(elements, gpus_, rank));
  }
  // Every element GPU `rank` owns, piece after piece: the layout of its slice of any op across
  // groups whose buffer is the flat parameters (or their gradient).
  const torch::Tensor& owned(int rank) {
    if (owned_.empty()) {
      for (int r = 0; r < gpus_; ++r) {
        std::vector<torch::Tensor> parts;
        for (size_t p = 0; p < pieces_.size(); ++p) parts.push_back(owned(p, r));
        owned_.push_back(torch::cat(parts));
      }
    }
    return owned_.at(rank);
  }
  // GPU `rank`'s slice of piece p's parameters padded to the slice's cap, or of every piece's.
  torch::Tensor parameter_slices(Replica& replica, size_t p, int rank) const {
    if (p == kEveryPiece) {
      std::vector<torch::Tensor> parts;
      for (size_t q = 0; q < pieces_.size(); ++q) parts.push_back(parameter_slices(replica, q, rank));
      return torch::cat(parts);
    }
    const Piece& piece = pieces_.at(p);
    auto buffer = torch::zeros({slice_cap(piece.elements, gpus_)});
    buffer.narrow(0, 0, slice_held(piece.elements, gpus_, rank))
        .copy_(replica.parameters().index_select(0, owned(p, rank)));
    return buffer;
  }
  void write_parameters(Replica& replica, size_t p, int rank, const torch::Tensor& slice) const {
    const Piece& piece = pieces_.at(p);
    replica.parameters().index_copy_(0, owned(p, rank), slice.narrow(0, 0, slice_held(piece.elements, gpus_, rank)));
  }
  // The piece a group collective's tag names ("....3", "....root").
  size_t number(const std::string& what) const {
    const std::string last = what.substr(what.rfind('.') + 1);
    return last == "root" ? units_ : static_cast<size_t>(std::stoul(last));
  }

  // An op over group `group`'s GPUs, its tag naming the group (ops are told apart by tag).
  CommOp inside(CommOp op, int group) const {
    op.bytes_per_element = wire_;
    op.tag += "/g" + std::to_string(group);
    for (int r = 0; r < gpus_; ++r) op.nodes.push_back(group * gpus_ + r);
    return op;
  }

  // The wrapped algorithm's op (over groups) as GPU `node` sends it: its slice, with the same
  // slice of every participating group. A sharded GPU's slice of an op over the flat parameters
  // is what it owns of them (its elements of every piece); any other op is cut in G contiguous
  // slices.
  CommOp across(const CommOp& whole, int node, bool values) {
    CommOp op = whole;
    const int rank = node % gpus_;
    std::vector<int> groups = op.nodes;
    if (groups.empty())
      for (int g = 0; g < nodes_ / gpus_; ++g) groups.push_back(g);
    op.nodes.clear();
    for (int g : groups) op.nodes.push_back(g * gpus_ + rank);
    const int64_t n = op.buffer.numel();
    const bool owned_layout = sharded_ && n == slices_.total();
    switch (op.kind) {
      case CommKind::AllReduce:
      case CommKind::AllGather:
      case CommKind::Broadcast:
        if (!values) {
          op.buffer = shape_only(owned_layout ? owned_elements_[rank] : group_slice(n, gpus_, rank));
        } else if (owned_layout) {
          op.buffer = whole.buffer.index_select(0, owned(rank));
        } else if (!sharded_) {
          op.buffer = whole.buffer.narrow(0, slice_start(n, gpus_, rank), group_slice(n, gpus_, rank)).clone();
        } else {
          throw std::logic_error(name() + "'s op '" + op.tag +
                                 "' is not over the flat parameters: a sharded group "
                                 "cannot train it");
        }
        break;
      case CommKind::ReduceScatter: {
        if (values) throw std::logic_error(name() + "'s reduce-scatter cannot train across replica groups");
        const int64_t parts = static_cast<int64_t>(groups.size());
        op.buffer = shape_only(parts * group_slice(n / parts, gpus_, rank));
        break;
      }
      case CommKind::NeighbourExchange:
      case CommKind::Cut:
        throw std::logic_error(name() + "'s op '" + op.tag + "' cannot be split across replica groups");
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

  std::vector<std::unique_ptr<Algorithm>> across_;  // one for each member rank
  int gpus_, nodes_, steps_, batch_;
  bool sharded_, fsdp_, overlapped_;
  double wire_;    // bytes of an element inside the group
  double reduce_;  // of a gradient's reduce-scatter (sharded)
  TensorSlices slices_;
  std::vector<Piece> pieces_;  // buckets (ddp, zero), or the units then the root (fsdp)
  size_t units_ = 0;           // fsdp: units among the pieces
  std::vector<int> tensor_layers_;
  int64_t slice_ = 0;                    // sharded: a GPU's slices of every piece, padded: what ZeRO all-gathers
  std::vector<int64_t> owned_elements_;  // sharded: each rank's elements of every piece
  std::vector<torch::Tensor> owned_;     // training: their positions in the flat parameters
  std::vector<std::map<int, std::vector<int64_t>>> pending_;  // ddp groups, per GPU: due step -> results to gather
  std::vector<GpuStep> gpu_;
  const Dataset* data_ = nullptr;  // training: what the wrapped algorithm's held forward reads (nothing)
};

}  // namespace

std::unique_ptr<Algorithm> make_replica_groups(std::vector<std::unique_ptr<Algorithm>> across,
                                               const AlgorithmSettings& gpus) {
  return std::make_unique<ReplicaGroups>(std::move(across), gpus);
}

}  // namespace testbed
