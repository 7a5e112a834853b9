// The comm layer's entry: ops into collectives, collectives onto the network (a plan's run, or
// a ring on lanes), a step's collectives through one phase channel.
#include "comm/tensors/communicator.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <torch/torch.h>

#include "comm/alone_time.h"
#include "comm/tensors/comm_layout.h"
#include "netmodels/network_hold.h"

namespace testbed {

Communicator::Communicator(CommSettings settings, Callbacks callbacks, EventClock& clock, Network& network,
                           HostTimes& times)
    : settings_(std::move(settings)),
      callbacks_(std::move(callbacks)),
      clock_(clock),
      network_(network),
      times_(times),
      memo_(clock, network) {
  fleet_.resize(settings_.nodes);
  for (int n = 0; n < settings_.nodes; ++n) fleet_[n] = n;
  planned_.resize(settings_.nodes);
}

void Communicator::plan(int node, const CommOp& op, int64_t at_ticks, uint64_t event_order) {
  PlannedIssue p;
  p.at_ticks = at_ticks;
  p.event_order = event_order;
  p.streamed = streamed(op);
  p.delay = op.delay;
  // Rank r is node r: only whole-fleet collectives in node order are phases.
  if (op.nodes.empty() || op.nodes == fleet_) p.plan = plan_for(op, fleet_).get();
  planned_[node].push_back(p);
}

Communicator::~Communicator() {
  collectives_.clear();
  phase_.reset();
}

std::shared_ptr<const CollectivePlan> Communicator::plan_for(const CommOp& op, const std::vector<int>& participants) {
  const int64_t elements = op.buffer.numel();
  if (op.kind == CommKind::Cut) {
    if (settings_.cut_hold_s < 0 || participants.size() != 2 || participants[1] != settings_.nodes)
      throw std::logic_error(settings_.algorithm + "'s cut '" + op.tag +
                             "' is not between an edge and the cloud of a split model");
    return std::make_shared<const CollectivePlan>(
        cut_exchange(elements / 2, op.bytes_per_element, settings_.cut_hold_s));
  }
  const CollectiveOptions options = collective_options(settings_.choice, participants);
  auto& plan = plans_[{static_cast<int>(op.kind) + (op.pipelined ? 100 : 0), participants, elements,
                       op.bytes_per_element, options.algorithm, options.slices, options.server, options.cluster_of}];
  if (!plan) {
    // Neighbours among the participants, in rank space.
    std::vector<std::vector<int>> neighbours(participants.size());
    if (op.kind == CommKind::NeighbourExchange) {
      for (size_t r = 0; r < participants.size(); ++r) {
        for (int peer : settings_.host_neighbours[participants[r]]) {
          auto it = std::find(participants.begin(), participants.end(), peer);
          if (it != participants.end()) neighbours[r].push_back(static_cast<int>(it - participants.begin()));
        }
      }
    }
    plan = std::make_shared<const CollectivePlan>(comm_plan(op.kind, static_cast<int>(participants.size()), elements,
                                                            op.bytes_per_element, neighbours, options, op.pipelined));
  }
  return plan;
}

double Communicator::alone_time(const CommOp& op, const std::vector<int>& participants) {
  const CollectiveOptions options = collective_options(settings_.choice, participants);
  const auto [it, fresh] = alone_times_.try_emplace({static_cast<int>(op.kind) + (op.pipelined ? 100 : 0), participants,
                                                     op.buffer.numel(), op.bytes_per_element, options.algorithm,
                                                     options.slices, options.server, options.cluster_of});
  if (!fresh) return it->second;
  if (!settings_.path) throw std::logic_error("communicator: an op's alone time asked without routes");
  // A ring on lanes has too many messages to build its plan for this alone.
  it->second =
      lane_candidate(op, participants, options)
          ? ring_all_reduce_alone_time(participants, op.buffer.numel(), op.bytes_per_element, options.slices,
                                       settings_.choice.library, settings_.path)
          : plan_alone_time(*plan_for(op, participants), participants, settings_.choice.library, settings_.path);
  return it->second;
}

Communicator::Collective& Communicator::collective(int node, int step, const CommOp& op,
                                                   const std::vector<int>& participants) {
  const Key key{step, op.tag};
  auto& slot = collectives_[key];
  if (slot.run || slot.lane_ring) return slot;
  const CollectiveOptions options = collective_options(settings_.choice, participants);
  if (lane_candidate(op, participants, options)) {
    slot.bytes_per_rank = ring_all_reduce_bytes_per_rank(static_cast<int>(participants.size()), op.buffer.numel(),
                                                         op.bytes_per_element, options.slices);
    slot.lane_ring = Collective::LaneRing{node, op, participants, options.slices};
    return slot;
  }
  start_plan(slot, key, node, op, participants);
  return slot;
}

void Communicator::start_plan(Collective& slot, const Key& key, int node, const CommOp& op,
                              const std::vector<int>& participants) {
  const int step = key.first;
  const auto plan = plan_for(op, participants);
  // A collective of many messages is one row of /comm/messages (message_record.h), written when
  // its last message has arrived.
  const bool one_row = plan->messages.size() > kMessageRowsPerCollective;
  if (one_row) slot.one_row = {-1, -1, 0, std::numeric_limits<double>::infinity(), 0, 0, op.tag};
  CollectiveHooks hooks;
  hooks.rank_done = [this, key, participants, one_row](int rank) { rank_done(key, participants[rank], one_row); };
  hooks.later = [this](double seconds, std::function<void()> then) { clock_.schedule(seconds, std::move(then)); };
  hooks.delivered = [this, key, one_row, tag = op.tag](const Delivery& d) {
    if (!one_row)
      return callbacks_.message({d.message.src, d.message.dst, d.message.bytes, d.t_send, d.t_recv, d.lost_bytes, tag});
    MessageRecord& total = collectives_.at(key).one_row;
    total.bytes += d.message.bytes;
    total.lost_bytes += d.lost_bytes;
    total.t_send = std::min(total.t_send, d.t_send);
    total.t_recv = std::max(total.t_recv, d.t_recv);
  };
  if (callbacks_.spread) callbacks_.spread(key, slot, hooks, participants);
  hooks.values = hooks.values && !settings_.projection;
  slot.plan = plan;
  slot.bytes_per_rank = bytes_sent_per_rank(*plan);
  // Only a neighbour exchange may lose parts (its receivers average what arrived); a
  // reduction or gather needs every byte and stays on TCP whatever network.transport says.
  slot.transport.datagrams = op.kind == CommKind::NeighbourExchange && settings_.datagrams;
  slot.transport.element_bytes = op.bytes_per_element;
  slot.transport.library = settings_.choice.library;
  // The step's first collective opens its phase; the others take the same channel.
  if (step != phase_step_ || !phase_) {
    PhaseEntry entry = callbacks_.phase_entry(node, step);
    for (size_t n = 0; n < entry.nodes.size(); ++n) entry.nodes[n].planned = &planned_[n];
    phase_ = open_phase(memo_, entry);
    phase_step_ = step;
  }
  slot.channel = std::make_unique<TimedNetwork>(phase_, times_);
  slot.run = std::make_unique<CollectiveRun>(plan, participants, *slot.channel, next_message_id_, std::move(hooks),
                                             slot.transport);
}

void Communicator::rank_done(const Key& key, int node, bool one_row) {
  if (node < settings_.nodes) callbacks_.rank_done(node, key.first, key.second);  // not the cloud (CommKind::Cut)
  auto it = collectives_.find(key);
  if (it == collectives_.end() || !it->second.finished()) return;
  if (one_row) callbacks_.message(it->second.one_row);
  clock_.schedule(0, [this, key] { collectives_.erase(key); });
}

bool Communicator::lane_candidate(const CommOp& op, const std::vector<int>& participants,
                                  const CollectiveOptions& options) const {
  const int p = static_cast<int>(participants.size());
  return settings_.lanes && op.kind == CommKind::AllReduce && op.after_gradient >= 0 &&
         options.algorithm == CollectiveAlgorithm::Ring && participants == fleet_ && p >= 2 &&
         ring_all_reduce_messages(p, op.buffer.numel(), options.slices) > kMessageRowsPerCollective;
}

void Communicator::enter(const Key& key, int rank, const torch::Tensor& work, const torch::Tensor& arrived) {
  Collective& c = collectives_.at(key);
  if (c.lane_ring && !c.lanes && !c.run) {
    // The first rank in: the network holds the lanes from now, or the ring runs as a plan.
    const auto& ring = *c.lane_ring;
    const int p = static_cast<int>(ring.participants.size());
    std::vector<HostPair> pairs;
    for (int r = 0; r < p; ++r) pairs.emplace_back(ring.participants[r], ring.participants[(r + 1) % p]);
    std::vector<Lane> lanes;
    NetworkHold* hold = network_.hold();
    if (hold && hold->hold_lanes(pairs, lane_rate_limits(settings_.choice.library, pairs), lanes)) {
      auto lane_done = [this, key, participants = ring.participants](int r) {
        HostTimer timer(times_.engine);
        rank_done(key, participants[r], true);
      };
      c.lanes = std::make_unique<RingLaneRunner>(clock_, *hold, std::move(pairs), std::move(lanes),
                                                 ring.op.buffer.numel(), ring.op.bytes_per_element, ring.slices,
                                                 std::move(lane_done), settings_.choice.library);
    } else {
      start_plan(c, key, ring.node, ring.op, ring.participants);
    }
  }
  if (c.lanes) {
    HostTimer timer(times_.network_send);
    c.lanes->enter(rank);
    if (!c.lanes->all_entered()) return;
    // Timed now, and so its one row of /comm/messages (message_record.h), written when the last rank is done.
    const RingOnLanes& result = c.lanes->result();
    c.one_row = {
        -1, -1,        0, EventClock::seconds(result.first_send_tick), EventClock::seconds(result.last_arrival_tick),
        0,  key.second};
    for (uint64_t b : result.lane_bytes) c.one_row.bytes += b;
    return;
  }
  c.run->enter(rank, work, arrived);
}

}  // namespace testbed
