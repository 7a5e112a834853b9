// When a step's communication may be memoized (comm/phase_memo.h): the whole fleet is in
// the step, each node's ops and the ticks it issues them at are known, and nothing else can
// reach the network until they are over. The policy reads the fleet as the engine reports it
// when the step's first op is issued, and opens the channel every op of the step then takes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "comm/phase_memo.h"
#include "comm/plans/collectives.h"
#include "netmodels/network.h"

namespace testbed {

// An op a node will issue in its step, as the engine scheduled it when the step started.
struct PlannedIssue {
  int64_t at_ticks = 0;  // when it is issued
  // Events at one tick run in the order they were scheduled: this op's event's place in it
  // (the ops issued when compute ends share their event and go in node order, then op order).
  uint64_t event_order = 0;
  const CollectivePlan* plan = nullptr;  // null: not a whole-fleet collective in rank order
  bool streamed = false;                 // issued during backward: waits for the node's previous such op
  int delay = 0;                         // CommOp::delay
};

// One node as its step's first collective is entered.
struct NodeAtEntry {
  int step = 0;
  bool computing = false;                              // its step's compute has not ended yet
  bool idle = false;                                   // no op of an earlier step is in flight
  const std::vector<PlannedIssue>* planned = nullptr;  // the step's ops (Communicator::plan)
};

struct PhaseEntry {
  bool memoize = false;            // network.memoize, compute times known ahead, no rounds
  int node = 0, step = 0;          // the node entering first, and its step
  std::vector<NodeAtEntry> nodes;  // every node of the fleet (node n is rank n)
  int64_t now_ticks = 0;
  int steps = 0;  // the run's last step
  // A lower bound on the ticks from a node's last message of `step - 1` to its first send in
  // `step` (its modelled passes up to the first gradient an op waits for).
  std::function<int64_t(int node, int step)> ticks_to_first_send;
};

// Memoization's rule before step 0 (docs/network.md#memoization): false for a ring (each rank
// sends all its messages to one rank, the ranks one cycle) whose ranks send different sequences
// of sizes, a ring all-reduce whose chunks are uneven. Each rank's step then ends on a chain that
// carries its own chunk, so the ranks drift apart by the chunks' difference every step and no
// step repeats an earlier one exactly; a run that issues one never replays.
bool plan_can_repeat(const CollectivePlan& plan);

// The channel the step's messages take: a memoized phase (recorded, or replayed when the same
// phase was seen before and nothing can interfere), or the network itself.
std::shared_ptr<Network> open_phase(PhaseMemo& memo, const PhaseEntry& entry);

}  // namespace testbed
