// The comm layer's entry: a node's op becomes its collective (one per issuing step and tag,
// opened by the first rank that issues it), whose plan of messages, or ring on lanes, runs over
// the network with the ranks' tensors beside the messages; a step's collectives share one
// channel, a memoized phase where the step repeats one seen before; each rank's completion
// comes back to the engine through a callback.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "comm/alone_time.h"
#include "comm/collective_options.h"
#include "comm/memo_policy.h"
#include "comm/message_record.h"
#include "comm/phase_memo.h"
#include "comm/plan_runner.h"
#include "comm/plans/collectives.h"
#include "comm/ring_lanes.h"
#include "comm/tensors/collective_run.h"
#include "netmodels/event_clock.h"
#include "netmodels/host_times.h"
#include "netmodels/network.h"
#include "training/algorithm.h"

namespace testbed {

// Issued during the step's passes (forward or backward) rather than at their end: such ops share
// the node's one communication stream, each waiting for the node's previous one.
inline bool streamed(const CommOp& op) { return op.after_gradient >= 0 || op.after_forward >= 0; }

// What the communicator is built with: plain values the engine reads off the scenario.
struct CommSettings {
  int nodes = 0;                                  // the fleet: nodes 0..nodes-1 (a split model's cloud is node `nodes`)
  CollectiveChoice choice;                        // the scenario's collective: section
  std::vector<std::vector<int>> host_neighbours;  // per host, for neighbour exchanges
  bool projection = false;                        // workload.train false: shapes only, no value moves
  // A projection's whole-fleet ring all-reduces may be timed on lanes (network.flow_lanes; one process).
  bool lanes = false;
  bool datagrams = false;  // network.transport udp: a neighbour exchange may lose parts
  // A split model (CommKind::Cut): how long the cloud holds the cut, its back half's forward
  // and backward (its update overlaps the return). Negative: there is no cloud.
  double cut_hold_s = -1;
  std::string algorithm;  // whose ops these are, for errors
  PathOf path;            // each pair of hosts' route (an op's alone time)
};

class Communicator {
 public:
  using Key = std::pair<int, std::string>;  // (issuing step, tag)
  struct Collective {
    std::shared_ptr<const CollectivePlan> plan;
    std::vector<uint64_t> bytes_per_rank;  // what each participant sends in the plan
    MessageTransport transport;
    std::unique_ptr<Network> channel;  // its messages' way: the network, or a memoized phase
    std::unique_ptr<CollectiveRun> run;
    // Or, for a ring all-reduce on lanes (ring_lanes.h), no plan: what it is until its first
    // rank enters, then the runner, or the plan when the network would not hold the lanes.
    struct LaneRing {
      int node = 0;
      CommOp op;
      std::vector<int> participants;
      int slices = 1;  // collective.slices, as the plan would have them
    };
    std::optional<LaneRing> lane_ring;
    std::unique_ptr<RingLaneRunner> lanes;
    bool finished() const { return run ? run->finished() : lanes && lanes->finished(); }
    MessageRecord one_row;  // its messages summed, when it has too many for a row each
    // A spread run: the processes with a participant, the first of its ranks' tags, and per
    // rank the receive of another process's buffer (-1: none, or arrived).
    std::set<int> processes;
    uint64_t input_tag = 0;
    std::vector<int64_t> input_tickets;
  };

  // What the communicator tells the engine, and asks of it.
  struct Callbacks {
    // The node's rank of the (step, tag) collective holds its result.
    std::function<void(int node, int step, const std::string& tag)> rank_done;
    std::function<void(const MessageRecord&)> message;  // a row of /comm/messages
    // The fleet as the step's first collective is entered (memo_policy.h), for its phase; the
    // communicator adds each node's planned ops.
    std::function<PhaseEntry(int node, int step)> phase_entry;
    // A run spread over processes: sets a fresh collective up for them (engine_spread.cpp).
    std::function<void(const Key& key, Collective& slot, CollectiveHooks& hooks, const std::vector<int>& participants)>
        spread;
  };

  Communicator(CommSettings settings, Callbacks callbacks, EventClock& clock, Network& network, HostTimes& times);
  ~Communicator();

  // A node's step's ops as the engine schedules them when the step starts, each with the tick it
  // is issued at and its event's place in that tick: memoization needs every op of a step known
  // when its first leaves (memo_policy.h). begin_step forgets the node's previous step's.
  void begin_step(int node) { planned_[node].clear(); }
  void plan(int node, const CommOp& op, int64_t at_ticks, uint64_t event_order);

  // The op's collective among `participants` (nodes, in rank order), opened when `node` is the
  // first to issue it: a plan on the network, or a ring to time on lanes.
  Collective& collective(int node, int step, const CommOp& op, const std::vector<int>& participants);
  // The rank is ready with its buffer: into the collective's run, which a lane ring's first
  // rank decides (the lanes, if the network holds them, else its plan).
  void enter(const Key& key, int rank, const torch::Tensor& work, const torch::Tensor& arrived);
  // The plan the op takes among `participants`, built once per shape.
  std::shared_ptr<const CollectivePlan> plan_for(const CommOp& op, const std::vector<int>& participants);

  // Seconds the op takes alone among `participants` on idle links (alone_time.h), once per shape.
  double alone_time(const CommOp& op, const std::vector<int>& participants);

  // The collectives in flight, in key order (a checkpoint saves their payloads).
  std::map<Key, Collective>& collectives() { return collectives_; }
  const PhaseMemo::Stats& memo_stats() const { return memo_.stats(); }

 private:
  void start_plan(Collective& slot, const Key& key, int node, const CommOp& op, const std::vector<int>& participants);
  // Whether the collective is a ring all-reduce to time on lanes (ring_lanes.h): a
  // projection's whole-fleet ring with too many messages for a row each, issued during
  // backward (one stream a node: nothing else of the node's is on its lane meanwhile).
  bool lane_candidate(const CommOp& op, const std::vector<int>& participants, const CollectiveOptions& options) const;
  // A rank of the collective holds its result: its node's op is complete, and once every rank
  // is, the collective's one row (when it keeps one) goes out and the collective goes.
  void rank_done(const Key& key, int node, bool one_row);

  CommSettings settings_;
  Callbacks callbacks_;
  std::vector<int> fleet_;                          // 0..nodes-1
  std::vector<std::vector<PlannedIssue>> planned_;  // per node: its step's ops (plan)
  EventClock& clock_;
  Network& network_;
  HostTimes& times_;
  // Destruction order matters: collectives use the phase, the phase the memo.
  PhaseMemo memo_;
  int phase_step_ = -1;  // the step whose collectives take phase_
  std::shared_ptr<Network> phase_;
  std::map<Key, Collective> collectives_;
  // By kind, participants, elements, bytes per element, algorithm, slices, server rank and
  // each rank's cluster: everything the plan depends on.
  using PlanKey = std::tuple<int, std::vector<int>, int64_t, double, CollectiveAlgorithm, int, int, std::vector<int>>;
  std::map<PlanKey, std::shared_ptr<const CollectivePlan>> plans_;
  std::map<PlanKey, double> alone_times_;
  uint64_t next_message_id_ = 0;
};

}  // namespace testbed
