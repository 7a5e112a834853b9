// The memoization policy: which steps are phases, their signature, when a replay is safe.
#include "comm/memo_policy.h"

#include <algorithm>
#include <string>
#include <tuple>

namespace testbed {
namespace {

// Whether the step's communication can be a phase at all (not whether it repeats): every node
// in the step with nothing else in flight, every op a whole-fleet collective due at the step.
bool step_is_phase(const PhaseEntry& e) {
  if (!e.memoize) return false;
  for (int n = 0; n < static_cast<int>(e.nodes.size()); ++n) {
    const NodeAtEntry& s = e.nodes[n];
    // A node whose compute has ended without issuing could start its next step mid-phase.
    if (s.step != e.step || !s.idle || !(n == e.node || s.computing)) return false;
    for (const PlannedIssue& p : *s.planned) {
      // Issued already: this is not the step's first collective after all.
      if (p.plan == nullptr || p.delay != 0 || p.at_ticks < e.now_ticks) return false;
    }
  }
  return true;
}

}  // namespace

bool plan_can_repeat(const CollectivePlan& plan) {
  const int p = plan.ranks;
  if (p < 2 || plan.messages.empty()) return true;
  std::vector<int> next(p, -1);
  std::vector<std::vector<uint64_t>> sizes(p);
  for (const CollectiveMessage& m : plan.messages) {
    if (next[m.src] >= 0 && next[m.src] != m.dst) return true;  // sends to two ranks: not a ring
    next[m.src] = m.dst;
    sizes[m.src].push_back(m.bytes);
  }
  int r = 0;
  for (int hop = 0; hop < p; ++hop) {
    r = next[r];
    if (r < 0 || (r == 0 && hop + 1 < p)) return true;  // a rank sends nothing, or a shorter cycle
  }
  if (r != 0) return true;
  for (int k = 1; k < p; ++k)
    if (sizes[k] != sizes[0]) return false;
  return true;
}

std::shared_ptr<Network> open_phase(PhaseMemo& memo, const PhaseEntry& e) {
  if (!step_is_phase(e)) return memo.begin("", {}, nullptr);
  const int nodes = static_cast<int>(e.nodes.size());
  const int64_t now = e.now_ticks;
  // The step's ops in the order their issues happen, with their ticks from now: two steps
  // with the same list (and the same network state) put the same messages on the network.
  std::vector<std::tuple<int64_t, uint64_t, int, size_t>> order;
  for (int n = 0; n < nodes; ++n) {
    const auto& planned = *e.nodes[n].planned;
    for (size_t i = 0; i < planned.size(); ++i) order.emplace_back(planned[i].at_ticks, planned[i].event_order, n, i);
  }
  std::sort(order.begin(), order.end());
  std::string signature;
  std::vector<int64_t> last_issue(nodes, 0);  // by node: ticks from now of its last issue
  std::vector<const CollectivePlan*> plans;
  for (const auto& [at, event, n, i] : order) {
    const PlannedIssue& p = (*e.nodes[n].planned)[i];
    signature += std::to_string(n) + '@' + std::to_string(at - now) + ':' +
                 std::to_string(reinterpret_cast<uintptr_t>(p.plan)) + (p.streamed ? "s," : ",");
    last_issue[n] = at - now;
    plans.push_back(p.plan);
  }
  // Until `until` (the replayed phase's last delivery, or its last ACK) the held network does
  // not stand for the real one, so nothing may reach it before then: a node's first send of the
  // next step comes at the earliest that many ticks after the later of its last issue and its
  // last message.
  auto may_replay = [nodes, step = e.step, steps = e.steps, last_issue, ticks_to_first_send = e.ticks_to_first_send](
                        const PhaseRecord& record, int64_t until) {
    if (step + 1 >= steps) return true;
    std::vector<int64_t> done = last_issue;
    for (const auto& send : record.sends) done[send.message.dst] = std::max(done[send.message.dst], send.delivered);
    for (int n = 0; n < nodes; ++n) {
      // At that tick itself, its send and the last delivery (or ACK) would race within the tick.
      if (done[n] + ticks_to_first_send(n, step + 1) <= until) return false;
    }
    return true;
  };
  std::vector<HostPair> pairs;  // the connections the phase uses (rank n is node n)
  std::sort(plans.begin(), plans.end());
  plans.erase(std::unique(plans.begin(), plans.end()), plans.end());
  for (const CollectivePlan* plan : plans) {
    for (const auto& m : plan->messages) pairs.emplace_back(m.src, m.dst);
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  return memo.begin(signature, pairs, may_replay);
}

}  // namespace testbed
