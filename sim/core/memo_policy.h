// When a collective may be memoized (netmodels/phase_memo.h): the whole fleet enters it and
// nothing else can reach the network until it is over. The policy reads what each node is
// doing at that moment, as the engine reports it, and opens the collective's channel.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "netmodels/collectives/collectives.h"
#include "netmodels/network.h"
#include "netmodels/phase_memo.h"
#include "training/algorithm.h"

namespace testbed {

// One node as a collective is entered.
struct NodeAtEntry {
  int step = 0;
  bool computing = false;             // its step's compute has not ended yet
  int64_t compute_end_ticks = 0;      // when it ends
  const std::vector<CommOp>* to_issue = nullptr;  // the ops it will issue then
};

struct PhaseEntry {
  bool memoize = false;               // network.memoize, and compute times known ahead (deterministic)
  int node = 0, step = 0;             // the node entering first, and its step
  const CommOp* op = nullptr;         // what it issues
  const std::vector<int>* participants = nullptr;
  const CollectivePlan* plan = nullptr;
  std::vector<NodeAtEntry> nodes;     // every node of the fleet
  int64_t now_ticks = 0;
  int steps = 0;                      // the run's last step
  std::function<double(int node, int step)> compute_seconds;  // a node's modelled step time
};

// The channel the collective's messages take: a memoized phase (recorded, or replayed when
// the same phase was seen before and nothing can interfere), or the network itself.
std::unique_ptr<Network> open_phase(PhaseMemo& memo, const PhaseEntry& entry);

}  // namespace testbed
