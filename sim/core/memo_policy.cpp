// The memoization policy: which collectives are phases, their signature, when a replay is safe.
#include "sim/core/memo_policy.h"

#include <algorithm>
#include <string>

#include "netmodels/event_clock.h"

namespace testbed {

// Eligible: every node issues this one blocking op in this step, and each one's entry time is
// already known (it is computing).
std::unique_ptr<Network> open_phase(PhaseMemo& memo, const PhaseEntry& e) {
  const int nodes = static_cast<int>(e.nodes.size());
  const int node = e.node, step = e.step;
  const CommOp& op = *e.op;
  const std::vector<int>& participants = *e.participants;
  const CollectivePlan& plan = *e.plan;
  std::string signature;
  std::vector<int64_t> entry(nodes, 0);
  const int64_t now = e.now_ticks;
  bool eligible = e.memoize &&
                  static_cast<int>(participants.size()) == nodes && op.delay == 0 &&
                  std::is_sorted(participants.begin(), participants.end());  // rank r is node r
  for (int n = 0; eligible && n < nodes; ++n) {
    const auto& s = e.nodes[n];
    eligible = s.step == step && s.to_issue->size() == 1 && (n == node || s.computing);
    if (!eligible) break;
    const CommOp& theirs = n == node ? op : (*s.to_issue)[0];
    eligible = theirs.tag == op.tag && theirs.delay == 0 && theirs.kind == op.kind &&
               theirs.buffer.numel() == op.buffer.numel();
    if (n != node) entry[n] = s.compute_end_ticks - now;
  }
  if (eligible) {
    // Entries in the order they happen: at one tick, in node order (start_step).
    std::vector<int> order(nodes);
    for (int n = 0; n < nodes; ++n) order[n] = n;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return entry[a] < entry[b]; });
    signature = std::to_string(reinterpret_cast<uintptr_t>(&plan)) + ':';
    for (int n : order) signature += std::to_string(participants[n]) + '@' + std::to_string(entry[n]) + ',';
  }
  // A replay leaves no packets behind, so nothing may reach the network before the recorded
  // phase went quiet: each node's next send is at the earliest when its next step's compute
  // ends after it got its last message.
  auto may_replay = [nodes, step, participants, entry, steps = e.steps,
                     compute_seconds = e.compute_seconds](const PhaseRecord& record) {
    if (step + 1 >= steps) return true;
    std::vector<int64_t> done = entry;  // by node: its entry, then its last delivery
    for (const auto& send : record.sends) done[send.message.dst] = std::max(done[send.message.dst], send.delivered);
    for (int r = 0; r < nodes; ++r) {
      const int64_t next = done[r] + EventClock::ticks(compute_seconds(participants[r], step + 1));
      if (next < record.quiet) return false;
    }
    return true;
  };
  // The connections the phase uses: only an eligible phase needs them (the others only close
  // an open recording, which asks whether the whole network is quiescent).
  std::vector<HostPair> pairs;
  if (eligible) {
    for (const auto& m : plan.messages) pairs.emplace_back(participants[m.src], participants[m.dst]);
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  }
  return memo.begin(signature, pairs, may_replay);
}

}  // namespace testbed
