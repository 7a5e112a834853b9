// Max-min fair sharing by progressive filling: raise every unfrozen flow's rate in proportion
// to its weight until a link saturates, freeze the flows through it, repeat. Events on the
// one clock move the flows forward between arrivals and departures; each re-solves only the
// flows that share a link, directly or through other flows, with one that started or ended.
#include "netmodels/flow_network.h"

#include <algorithm>
#include <cstddef>
#include <deque>
#include <limits>
#include <map>
#include <queue>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "netmodels/network_hold.h"
#include "topologies/routing.h"

namespace testbed {
namespace {

constexpr double kHeaderBytes = 52;     // IPv4 20 + TCP 20 + timestamps 12
constexpr double kLinkHeaderBytes = 2;  // ns-3 point-to-point (PPP) header

struct Pair;

struct Flow {
  Message message;
  Network::OnDelivered on_delivered;
  double t_send = 0;
  Pair* pair = nullptr;  // its (src, dst) pair: route, weight and connection; none to itself
  // Progress, kept lazily: `remaining_bits` wire bits were left at time `since`, and the flow
  // has crossed its bottleneck at `rate_bps` from then on. Only a re-solve that changes the
  // rate brings it forward, so flows elsewhere cost nothing.
  double remaining_bits = 0;
  double since = 0;
  double rate_bps = 0;
  uint64_t order = 0;  // start order: the solver visits flows in it, whatever their slots
  // A sender's transport below line rate (Message::rate_limit): the flow's rate stops at
  // cap_bps (RateLimit::of the route's bottleneck, in wire bits), as if frozen by a
  // link of that rate at its first hop (the sender paces it; every hop after stores and
  // forwards its last packet).
  bool capped = false;
  double cap_bps = 0;
  // The hop of its route that holds its rate (the first saturated one at its last solve): its
  // last packet is stored and forwarded by every hop after it.
  size_t bottleneck_hop = 0;
};

// Each (src, dst) pair is one connection, as in the packet-level backend (one TCP
// connection a pair, its messages in order): a message's bits start when the previous
// message's last bit has crossed its bottleneck. Sharing the link among one pair's queued
// messages instead would deliver all of them late, and a ring whose next step waits on the
// first would fall further behind every step. A pair's route and what follows from it are
// found once, at its first message.
struct Pair {
  int64_t key = 0;                          // src * vertices + dst
  std::vector<int> links;                   // directed link ids along the route
  double bottleneck_bps = 0;                // the least capacity along it
  ArrivalLag lag;                           // propagation; its seconds_per_bit is set by the bottleneck hop
  std::vector<double> after_hop_s_per_bit;  // [h]: 1 / rate summed over the hops after hop h
  double weight = 1;                        // FlowSharing
  bool busy = false;                        // a flow of this pair is on the network, or its lane's last bit is
  std::deque<Flow> waiting;                 // in send order
  int64_t lane_free_tick = 0;               // Lane::free_tick: when a ring timed on its lane lets go of it
  int64_t delivered_tick = 0;               // its last message's delivery: a later one is delivered no earlier
};

class FlowNetwork final : public Network, public NetworkHold {
 public:
  FlowNetwork(EventClock& clock, const Topology& topology, int mtu, FlowSharing sharing, const RoutingOptions& routing,
              FlowSolve solve)
      : clock_(clock),
        topology_(topology),
        mtu_(mtu),
        sharing_(sharing),
        routing_(routing),
        solve_(solve),
        overhead_((mtu + kLinkHeaderBytes) / (mtu - kHeaderBytes)) {
    if (mtu <= kHeaderBytes) throw std::invalid_argument("flow network: mtu must exceed 52 bytes");
    // Two directed links per topology link: point-to-point links are full duplex.
    for (auto e : boost::make_iterator_range(boost::edges(topology.graph))) {
      const int a = static_cast<int>(boost::source(e, topology.graph));
      const int b = static_cast<int>(boost::target(e, topology.graph));
      for (auto [u, v] : {std::pair{a, b}, std::pair{b, a}}) {
        if (link_id_.count({u, v})) continue;
        link_id_[{u, v}] = static_cast<int>(capacity_.size());
        link_ends_.push_back({u, v});
        capacity_.push_back(topology.graph[e].rate_bps(u, v));
      }
    }
    const size_t links = capacity_.size();
    lane_held_.assign(links, false);
    lane_until_.assign(links, 0);
    lane_holder_.assign(links, -1);
    link_bytes_.assign(links, 0);
    link_used_.assign(links, false);
    on_link_.resize(links);
    link_mark_.assign(links, 0);
    left_.assign(links, 0);
    weight_on_.assign(links, 0);
    unfrozen_on_.assign(links, 0);
  }

  void send(const Message& message, OnDelivered on_delivered) override {
    const int vertices = topology_.num_vertices();  // hosts, and switches as endpoints
    if (message.src < 0 || message.src >= vertices || message.dst < 0 || message.dst >= vertices)
      throw std::invalid_argument("flow network: message " + std::to_string(message.id) +
                                  " names a vertex outside 0.." + std::to_string(vertices - 1));
    check_rate_limit(message, "flow network");
    Flow f;
    f.message = message;
    f.on_delivered = std::move(on_delivered);
    f.t_send = clock_.now();
    if (message.src == message.dst) return deliver(std::move(f));
    Pair& pair = pair_of(message.src, message.dst);
    const int64_t now = clock_.now_ticks();
    for (int l : pair.links) {
      if (lane_bars(l, pair, now))
        throw std::logic_error("flow network: message " + std::to_string(message.id) + " (" +
                               std::to_string(message.src) + " to " + std::to_string(message.dst) +
                               ") crosses a link a ring's lanes hold: lanes are for traffic alone on its links");
    }
    for (int l : pair.links) link_bytes_[l] += message.bytes, link_used_[l] = true;
    f.pair = &pair;
    f.capped = message.rate_limit.any();
    if (f.capped) f.cap_bps = message.rate_limit.of(pair.bottleneck_bps);
    f.remaining_bits = static_cast<double>(message.bytes) * 8.0 * overhead_;
    if (pair.busy) return pair.waiting.push_back(std::move(f));
    if (pair.lane_free_tick > now) {
      // Behind the last message a ring put on this pair's lane, as behind any earlier message.
      pair.busy = true;
      pair.waiting.push_back(std::move(f));
      clock_.schedule_ticks(pair.lane_free_tick - now, [this, &pair] {
        pair.busy = false;
        start_waiting(pair);
      });
      return;
    }
    start(std::move(f));
  }

  NetworkHold* hold() override { return this; }

  bool hold_lanes(const std::vector<HostPair>& pairs, const std::vector<RateLimit>& limits,
                  std::vector<Lane>& lanes) override {
    lanes.clear();
    const int64_t now = clock_.now_ticks();
    ++mark_;
    for (auto [src, dst] : pairs) {
      if (src == dst) return false;
      Pair& pair = pair_of(src, dst);
      if (pair.busy || !pair.waiting.empty()) return false;
      for (int l : pair.links) {
        if (link_mark_[l] == mark_) return false;  // two of the pairs share it
        link_mark_[l] = mark_;
        if (!on_link_[l].empty() || lane_bars(l, pair, now)) return false;
      }
    }
    for (size_t i = 0; i < pairs.size(); ++i) {
      Pair& pair = pair_of(pairs[i].first, pairs[i].second);
      // A flow alone on its route, as solve() fills it: its weight times the least raise, or
      // what its cap leaves (a rate limit).
      double step = std::numeric_limits<double>::infinity();
      for (int l : pair.links) step = std::min(step, capacity_[l] / pair.weight);
      if (!limits.empty() && limits.at(i).any()) step = std::min(step, limits[i].of(pair.bottleneck_bps) / pair.weight);
      // Alone on its route, a flow is held where solve() would freeze it: the first hop its
      // rate fills, or its first hop when its cap holds it.
      size_t hop = held_at(pair.links, [&](int l) { return capacity_[l] - step * pair.weight; });
      if (hop == pair.links.size()) hop = 0;
      lanes.push_back({step * pair.weight, lag_after(pair, hop), overhead_, std::max(now, pair.lane_free_tick),
                       pair.delivered_tick});
      for (int l : pair.links) lane_held_[l] = true, lane_holder_[l] = pair.key;
    }
    return true;
  }

  // Whether a ring's lanes keep `pair` off link l now: a ring holds it, or a released ring's
  // last bits still cross it on another pair's lane.
  bool lane_bars(int l, const Pair& pair, int64_t now) const {
    return lane_held_[l] || (lane_until_[l] > now && lane_holder_[l] != pair.key);
  }

  void release_lanes(const std::vector<HostPair>& pairs, const std::vector<int64_t>& free_ticks,
                     const std::vector<int64_t>& arrival_ticks, const std::vector<uint64_t>& bytes) override {
    for (size_t i = 0; i < pairs.size(); ++i) {
      Pair& pair = pair_of(pairs[i].first, pairs[i].second);
      pair.lane_free_tick = std::max(pair.lane_free_tick, free_ticks[i]);
      pair.delivered_tick = std::max(pair.delivered_tick, arrival_ticks[i]);
      for (int l : pair.links) {
        lane_held_[l] = false;
        lane_until_[l] = pair.lane_free_tick;
        link_bytes_[l] += bytes[i];
        link_used_[l] = link_used_[l] || bytes[i] > 0;
      }
    }
  }
  std::string name() const override { return "flow"; }
  LinkBytes link_bytes() const override {
    LinkBytes out;
    for (size_t l = 0; l < link_ends_.size(); ++l)
      if (link_used_[l]) out[link_ends_[l]] = link_bytes_[l];
    return out;
  }

 private:
  Pair& pair_of(int src, int dst) {
    const int64_t key = int64_t{src} * topology_.num_vertices() + dst;
    auto it = pairs_.find(key);
    if (it != pairs_.end()) return it->second;
    Pair& pair = pairs_[key];
    pair.key = key;
    const std::vector<int> path = route(topology_, src, dst, routing_);
    double rtt = 0;  // flow_network.h: FlowSharing::Rtt
    std::vector<double> rates;
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      pair.links.push_back(link_id_.at({path[i], path[i + 1]}));
      const LinkSpec& hop = topology_.graph[boost::edge(path[i], path[i + 1], topology_.graph).first];
      pair.lag.latency_s += hop.latency_s;
      rates.push_back(hop.rate_bps(path[i], path[i + 1]));
      rtt += 2 * hop.latency_s + (mtu_ + kLinkHeaderBytes) * 8 / rates.back() +
             (kHeaderBytes + kLinkHeaderBytes) * 8 / hop.rate_bps(path[i + 1], path[i]);
    }
    // Store-and-forward after the hop that holds a flow's rate: the hops before it deliver
    // into its queue. Left out: the first packet's store-and-forward over those earlier hops
    // before the bottleneck starts (none on an idle route of equal links, whose first hop holds it).
    pair.after_hop_s_per_bit.assign(rates.size(), 0);
    for (size_t h = rates.size(); h-- > 1;)
      pair.after_hop_s_per_bit[h - 1] = pair.after_hop_s_per_bit[h] + 1 / rates[h];
    pair.bottleneck_bps = std::numeric_limits<double>::infinity();
    for (int l : pair.links) pair.bottleneck_bps = std::min(pair.bottleneck_bps, capacity_[l]);
    pair.lag.segment_bytes = mtu_ - static_cast<int64_t>(kHeaderBytes);
    pair.lag.header_bytes = kHeaderBytes + kLinkHeaderBytes;
    if (sharing_ == FlowSharing::Rtt) pair.weight = 1 / rtt;
    return pair;
  }

  void start(Flow f) {
    if (f.remaining_bits <= 0) return deliver(std::move(f));  // no bytes: only the latency
    f.pair->busy = true;
    f.since = clock_.now();
    f.order = next_order_++;
    int slot;
    if (free_slots_.empty()) {
      slot = static_cast<int>(slots_.size());
      slots_.emplace_back();
      live_.push_back(false);
      version_.push_back(0);
    } else {
      slot = free_slots_.back();
      free_slots_.pop_back();
    }
    for (int l : f.pair->links) on_link_[l].push_back(slot), changed_links_.push_back(l);
    slots_[slot] = std::move(f);
    live_[slot] = true;
    // One solve for every start of this instant (a ring step starts N flows at once): the
    // new flow has rate 0 until the zero-delay event, which runs before time moves on.
    if (solve_pending_) return;
    solve_pending_ = true;
    clock_.schedule(0, [this] {
      if (solve_pending_) solve();
    });
  }

  // The flows whose max-min rates can have changed: those connected to a changed link through
  // shared links (max-min fairness decomposes over the connected components of flows and
  // links, so the others keep theirs exactly). FlowSolve::Global takes every flow instead.
  void collect_component(std::vector<int>& flows) {
    flows.clear();
    if (solve_ == FlowSolve::Global) {
      for (size_t s = 0; s < slots_.size(); ++s)
        if (live_[s]) flows.push_back(static_cast<int>(s));
    } else {
      ++mark_;
      std::vector<int>& frontier = changed_links_;
      for (size_t i = 0; i < frontier.size(); ++i) {
        const int l = frontier[i];
        if (link_mark_[l] == mark_) continue;
        link_mark_[l] = mark_;
        for (int s : on_link_[l]) {
          if (flow_mark_[s] == mark_) continue;
          flow_mark_[s] = mark_;
          flows.push_back(s);
          for (int next : slots_[s].pair->links)
            if (link_mark_[next] != mark_) frontier.push_back(next);
        }
      }
    }
    changed_links_.clear();
    // The arithmetic follows start order, whatever the slots or the search visited first.
    std::sort(flows.begin(), flows.end(), [this](int a, int b) { return slots_[a].order < slots_[b].order; });
  }

  void solve() {
    solve_pending_ = false;
    flow_mark_.resize(slots_.size(), 0);
    collect_component(component_);
    const double now = clock_.now();
    const int64_t now_ticks = clock_.now_ticks();
    const std::vector<int>& flows = component_;
    // Progressive filling over these flows; every flow on their links is among them. The
    // unfrozen flows' weights on each link, and how many they are (a weight sum can round to
    // a small positive number when its flows leave; the count cannot). With every weight 1
    // (MaxMin) the arithmetic is that of plain equal filling, bit for bit.
    ++mark_;
    used_links_.clear();
    for (int s : flows) {
      Flow& f = slots_[s];
      f.remaining_bits -= f.rate_bps * (now - f.since);
      f.since = now;
      f.rate_bps = 0;
      for (int l : f.pair->links) {
        if (link_mark_[l] != mark_) {
          link_mark_[l] = mark_;
          used_links_.push_back(l);
          left_[l] = capacity_[l];
          weight_on_[l] = 0;
          unfrozen_on_[l] = 0;
        }
        weight_on_[l] += f.pair->weight, ++unfrozen_on_[l];
      }
    }
    frozen_.assign(flows.size(), false);
    bool any_capped = false;
    for (int s : flows) any_capped = any_capped || slots_[s].capped;
    size_t remaining = flows.size();
    while (remaining > 0) {
      // The smallest raise of the fill level (rate per unit weight) that saturates some link,
      // or brings some flow to its cap.
      double step = std::numeric_limits<double>::infinity();
      for (int l : used_links_)
        if (unfrozen_on_[l] > 0) step = std::min(step, left_[l] / weight_on_[l]);
      if (any_capped) {
        for (size_t i = 0; i < flows.size(); ++i) {
          const Flow& f = slots_[flows[i]];
          if (!frozen_[i] && f.capped) step = std::min(step, (f.cap_bps - f.rate_bps) / f.pair->weight);
        }
      }
      for (size_t i = 0; i < flows.size(); ++i) {
        if (frozen_[i]) continue;
        Flow& f = slots_[flows[i]];
        const double raise = step * f.pair->weight;
        f.rate_bps += raise;
        for (int l : f.pair->links) left_[l] -= raise;
      }
      // Freeze the flows through saturated links (relative tolerance for rounding).
      for (size_t i = 0; i < flows.size(); ++i) {
        if (frozen_[i]) continue;
        Flow& f = slots_[flows[i]];
        size_t hop = held_at(f.pair->links, [&](int l) { return left_[l]; });
        if (hop == f.pair->links.size()) {
          if (!f.capped || f.cap_bps - f.rate_bps > 1e-9 * f.cap_bps) continue;
          hop = 0;  // held by its cap, paced from the sender
        }
        f.bottleneck_hop = hop;
        frozen_[i] = true;
        --remaining;
        for (int l : f.pair->links) weight_on_[l] -= f.pair->weight, --unfrozen_on_[l];
      }
    }
    for (int s : flows) {
      Flow& f = slots_[s];
      // Its last bit crosses then, to the nearest tick from now: a flow's departure is a
      // function of its own progress, not of which event last looked at the heap.
      departures_.push(
          {now_ticks + transmission_ticks(std::max(0.0, f.remaining_bits), f.rate_bps), f.order, s, ++version_[s]});
    }
    schedule_next_departure();
  }

  // One clock event, for the earliest last bit. A solve that moves it earlier schedules a new
  // one and makes the old stale (generation); one that moves it later keeps the event, which
  // finds nothing done and looks again: most solves then schedule nothing.
  void schedule_next_departure() {
    while (!departures_.empty() && stale(departures_.top())) departures_.pop();
    if (departures_.empty()) return;
    const int64_t at = departures_.top().tick;
    if (departure_event_ <= at) return;
    departure_event_ = at;
    const uint64_t generation = ++generation_;
    clock_.schedule_ticks(std::max<int64_t>(0, at - clock_.now_ticks()), [this, generation] {
      if (generation != generation_) return;
      departure_event_ = std::numeric_limits<int64_t>::max();
      depart();
    });
  }

  struct Departure {
    int64_t tick;  // when its last bit crosses, on the clock's ticks
    uint64_t order;
    int slot;
    uint64_t version;
    bool operator>(const Departure& o) const { return std::tie(tick, order) > std::tie(o.tick, o.order); }
  };
  bool stale(const Departure& d) const { return !live_[d.slot] || version_[d.slot] != d.version; }

  void depart() {
    const int64_t now = clock_.now_ticks();
    std::vector<Flow> done;
    while (!departures_.empty()) {
      const Departure d = departures_.top();
      if (stale(d)) {
        departures_.pop();
        continue;
      }
      if (d.tick > now) break;
      departures_.pop();
      Flow& f = slots_[d.slot];
      for (int l : f.pair->links) {
        auto& on = on_link_[l];
        *std::find(on.begin(), on.end(), d.slot) = on.back();
        on.pop_back();
        changed_links_.push_back(l);
      }
      done.push_back(std::move(f));
      live_[d.slot] = false;
      free_slots_.push_back(d.slot);
    }
    std::sort(done.begin(), done.end(), [](const Flow& a, const Flow& b) { return a.order < b.order; });
    for (auto& f : done) {
      Pair& pair = *f.pair;
      deliver(std::move(f));
      pair.busy = false;
      start_waiting(pair);
    }
    solve();
  }

  // The pair's next messages; those with no bytes go straight through.
  void start_waiting(Pair& pair) {
    while (!pair.busy && !pair.waiting.empty()) {
      Flow next = std::move(pair.waiting.front());
      pair.waiting.pop_front();
      start(std::move(next));
    }
  }

  // The first hop of `route` whose link has nothing left (relative tolerance for rounding):
  // where a flow is frozen, and so the hop after which its last packet is stored and
  // forwarded. `route.size()` when none is full.
  template <class Left>
  size_t held_at(const std::vector<int>& route, Left left) const {
    size_t hop = 0;
    while (hop < route.size() && left(route[hop]) > 1e-9 * capacity_[route[hop]]) ++hop;
    return hop;
  }

  static ArrivalLag lag_after(const Pair& pair, size_t hop) {
    ArrivalLag lag = pair.lag;
    lag.seconds_per_bit = pair.after_hop_s_per_bit[hop];
    return lag;
  }

  // A message arrives its lag after its last bit, and no earlier than its pair's previous one:
  // one connection's packets cross every hop in order, so a short message cannot overtake the
  // last packet of the one before it (nor an empty one, which carries none).
  void deliver(Flow f) {
    int64_t lag = 0;
    if (f.pair) {
      const int64_t at = std::max(
          clock_.now_ticks() + EventClock::ticks(lag_after(*f.pair, f.bottleneck_hop).seconds(f.message.bytes)),
          f.pair->delivered_tick);
      f.pair->delivered_tick = at;
      lag = at - clock_.now_ticks();
    }
    clock_.schedule_ticks(lag, [this, f = std::move(f)] {
      f.on_delivered(Delivery{f.message, f.t_send, clock_.now(), 0, {}});
    });
  }

  EventClock& clock_;
  Topology topology_;
  int mtu_;
  FlowSharing sharing_;
  RoutingOptions routing_;
  FlowSolve solve_;
  double overhead_;
  std::map<std::pair<int, int>, int> link_id_;
  std::vector<double> capacity_;                // bits per second, per directed link
  std::vector<std::pair<int, int>> link_ends_;  // per directed link: (from, to) vertices
  std::unordered_map<int64_t, Pair> pairs_;     // by src * vertices + dst; never erased (Flow::pair)
  std::vector<uint64_t> link_bytes_;            // payload sent over each directed link
  std::vector<bool> link_used_;                 // some message's route crossed it
  // Lanes (network_hold.h): per link, whether a ring holds it, until when a released ring's last
  // bit crosses it, and which pair's lane it is (-1: none yet).
  std::vector<bool> lane_held_;
  std::vector<int64_t> lane_until_;
  std::vector<int64_t> lane_holder_;

  // The flows on the network, in slots reused as they leave; on_link_ lists each link's.
  std::vector<Flow> slots_;
  std::vector<bool> live_;
  std::vector<uint64_t> version_;  // per slot: a departure-heap entry of an older version is stale
  std::vector<int> free_slots_;
  std::vector<std::vector<int>> on_link_;
  uint64_t next_order_ = 0;
  std::priority_queue<Departure, std::vector<Departure>, std::greater<Departure>> departures_;
  uint64_t generation_ = 0;
  int64_t departure_event_ = std::numeric_limits<int64_t>::max();  // tick the live one fires at
  bool solve_pending_ = false;                                     // a zero-delay solve is scheduled (start)
  std::vector<int> changed_links_;                                 // links a flow joined or left since the last solve

  // solve()'s scratch. A link or flow is in the current pass when its mark equals mark_.
  uint64_t mark_ = 0;
  std::vector<uint64_t> link_mark_, flow_mark_;
  std::vector<double> left_, weight_on_;
  std::vector<int> unfrozen_on_;
  std::vector<int> used_links_, component_;
  std::vector<bool> frozen_;
};

}  // namespace

std::unique_ptr<Network> make_flow_network(EventClock& clock, const Topology& topology, int mtu, FlowSharing sharing,
                                           const RoutingOptions& routing, FlowSolve solve) {
  return std::make_unique<FlowNetwork>(clock, topology, mtu, sharing, routing, solve);
}

}  // namespace testbed
