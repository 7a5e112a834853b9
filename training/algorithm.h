// The interface every training algorithm implements (docs/architecture.md, decision 4): per node and
// step, local compute and the communication it issues; later, how to apply what arrived.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <torch/types.h>

#include "training/data/dataset.h"
#include "training/models/layer_cost.h"
#include "training/replica.h"

namespace testbed {

enum class CommKind {
  AllReduce,  // sum `buffer` across the op's nodes, in place
  AllGather,  // every node contributes `buffer` (same size); `received` holds all, in node order
  // Sum `buffer` (a multiple of the participants' count) across the op's nodes; `received`
  // holds the node's share: block `rank` of `participants` equal blocks.
  ReduceScatter,
  NeighbourExchange,  // `buffer` goes to each topology neighbour; `received` holds theirs, in `peers` order
  Broadcast,          // the first node's `buffer` replaces every other node's, in place
  // Split learning's cut: `nodes` are the edge and the cloud's host (the host after the nodes);
  // `buffer` holds the activations the edge sends, then the gradient the cloud returns (two
  // equal blocks). The edge's step pauses at the cut: its compute so far is the front's
  // forward, the cloud holds the activations for the back's passes on its own device, and the
  // front's backward and update run once the gradient is back (docs/algorithms.md, split).
  Cut,
};

// Steps counted from the issuing step: applied before step s + 1 + delay starts.
constexpr int kDueAtEnd = std::numeric_limits<int>::max();  // `delay` for lo-fi's final average

// One communication a node issues. Its size is fixed by `buffer`'s shape, never by its
// values (docs/architecture.md, decision 5); every participant issues it with the same tag, size and nodes.
struct CommOp {
  CommKind kind = CommKind::AllReduce;
  std::string tag;  // names the op within its step; recorded as the messages' kind
  // 1-D float32 (values already rounded to the wire format). It owns its storage, never a view
  // of the replica or of the algorithm's state: a resumed run rebuilds in-flight ops from
  // their saved values alone.
  torch::Tensor buffer;
  double bytes_per_element = 4;  // on the wire: 2 for bf16/fp16, 0.5 for fp4
  // 0: the result is applied before the next step starts (blocking, as DDP); k: the node
  // trains k more steps while it is in flight; kDueAtEnd: applied once training ends.
  int delay = 0;
  std::vector<int> nodes;  // participants in rank order; empty: every node
  // -1: issued when the step's compute ends. i >= 0: issued during backward, as soon as the
  // gradient of trainable tensor i (registration order) exists; the step's update then waits
  // for every such op (DDP's buckets). Only algorithms that say issues_during_backward().
  int after_gradient = -1;
  // -1: as after_gradient says. i >= 0: issued during forward, as the forward pass of trainable
  // tensor i's layer starts (a forward pre-hook's all-reduce: Eva's input vectors), and queued
  // with the backward ops on the node's one communication stream; the update waits for it.
  // Only algorithms that say issues_during_backward().
  int after_forward = -1;
  // Broadcast only: false as Gloo broadcasts CPU tensors (the root sends to every other node);
  // true as NCCL broadcasts GPU buffers, pipelined down a ring from the root (ring_broadcast).
  bool pipelined = false;
  // -1: the next step starts after the op, as `delay` says. i >= 0 (a round's ops, delay 0):
  // the next step starts without it and its forward pass of trainable tensor i's layer waits
  // for it (DeAR's all-gathers); such ops run one after another, each issued when the forward
  // reaches the previous one's layer, and are applied before the next step's compute runs.
  // The last step waits for them. Only algorithms that say forward_waits_for_ops().
  int before_forward = -1;
  // Filled in by the engine when the op completes:
  std::vector<torch::Tensor> received;  // AllGather: one per participant; NeighbourExchange: one per peer
  std::vector<int> peers;               // NeighbourExchange: the neighbours `received` came from
  // NeighbourExchange over a lossy transport (network.transport udp): one bool tensor per
  // `received` block, true where the element arrived. Empty when every element arrived. A lost
  // element reads 0 in `received`; algorithms average it over the values that did arrive.
  std::vector<torch::Tensor> received_mask;
};

struct StepPlan {
  double loss = 0;           // the node's training loss this step
  std::vector<CommOp> comm;  // ops in issue order (each when its after_gradient says)
  ExtraWork work;            // compressing what it sends: charged to the step after backward
};

// More communication in the same step, once the ops due at its end are applied (PowerSGD's
// second all-reduce needs the first one's result): issued after `work`, applied like the
// step's own before the next step starts.
struct Round {
  std::vector<CommOp> comm;
  ExtraWork work;
};

// An algorithm's per-node state (outer optimizer, momentum, error feedback, copies of what
// delayed ops sent) by name: everything `apply` and later steps read besides the replica and
// the op, so that any run can be checkpointed and resumed bit for bit.
struct AlgorithmState {
  std::map<std::string, torch::Tensor> tensors;
  std::map<std::string, int64_t> counters;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual std::string name() const = 0;
  // Whether ops may set after_gradient: such steps time each layer's backward pass, and their
  // collectives are not memoized (comm/phase_memo.h: a phase needs every node's entry
  // time known ahead, and the next step's sends after the phase).
  virtual bool issues_during_backward() const { return false; }
  // Whether next_round may return ops (their collectives are not memoized either: a phase
  // needs the node's next send to wait for its next step's compute).
  virtual bool has_rounds() const { return false; }
  // Whether round ops may set before_forward: the next step's forward is then timed layer by
  // layer against them, before its compute runs, so the compute model must know the step's
  // time beforehand (not `measured`).
  virtual bool forward_waits_for_ops() const { return false; }
  // With forward_waits_for_ops: whether a step's update runs whole before its rounds are issued
  // (FSDP: the optimizer steps on each GPU's slices, then the next forward gathers them), rather
  // than in shares at the next forward's gates, each just before its layers (DeAR, the default).
  virtual bool updates_before_rounds() const { return false; }
  // Called once the ops due before the next step are applied: the step's next round of ops,
  // or none, and the step ends. Round ops leave when `work` is done (never during a pass); a
  // delay other than 0 is counted from this step, as a step op's.
  virtual Round next_round(int /*node*/, int /*step*/, Replica& /*replica*/) { return {}; }
  // Runs the node's local computation for `step` (real LibTorch) and says what to send.
  virtual StepPlan local_step(int node, int step, Replica& replica, const Dataset& data) = 0;
  // A projection (workload.train false, docs/projection.md): what local_step would send, from
  // shapes alone, with no replica. Every op's kind, tag, size, bytes per element, delay, nodes
  // and issue point equal local_step's, its buffer shape-only (shape_only(): never read), and
  // `work` equal; the loss is NaN. Sizes never depend on values (decision 5), so this exists
  // for every algorithm; the engine's cross-check test holds the two paths together.
  virtual StepPlan projected_step(int node, int step) = 0;
  // The step's round `round` (0: the first after its own ops), as next_round would return it
  // in a training run; none ends the step.
  virtual Round projected_round(int /*node*/, int /*step*/, size_t /*round*/) { return {}; }
  // An op the node issued at `issued_step` has completed and is due: apply it. Ops due at
  // the same time are applied in the order they were issued.
  virtual void apply(int node, int issued_step, Replica& replica, CommOp& op) = 0;
  virtual AlgorithmState state(int /*node*/) const { return {}; }
  // Replaces the node's state with `state` (the algorithm may keep the tensors).
  virtual void load_state(int /*node*/, const AlgorithmState& /*state*/) {}
};

}  // namespace testbed
