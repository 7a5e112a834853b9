// Max-min fair sharing by progressive filling: raise every unfrozen flow's rate in proportion
// to its weight until a link saturates, freeze the flows through it, repeat. Events on the
// one clock move the flows forward between arrivals and departures.
#include "netmodels/flow_network.h"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "topologies/routing.h"

namespace testbed {
namespace {

constexpr double kHeaderBytes = 52;  // IPv4 20 + TCP 20 + timestamps 12
constexpr double kLinkHeaderBytes = 2;  // ns-3 point-to-point (PPP) header

struct Flow {
  Message message;
  Network::OnDelivered on_delivered;
  double t_send = 0;
  double remaining_bits = 0;  // wire bits still to cross the bottleneck
  double rate_bps = 0;
  double latency_s = 0;       // the route's propagation delay, paid after the last bit
  double weight = 1;          // its share of a link relative to the others' (FlowSharing)
  std::vector<int> links;     // directed link ids along the route
};

class FlowNetwork final : public Network {
 public:
  FlowNetwork(EventClock& clock, const Topology& topology, int mtu, FlowSharing sharing, const RoutingOptions& routing)
      : clock_(clock),
        topology_(topology),
        mtu_(mtu),
        sharing_(sharing),
        routing_(routing),
        overhead_((mtu + kLinkHeaderBytes) / (mtu - kHeaderBytes)) {
    if (mtu <= kHeaderBytes) throw std::invalid_argument("flow network: mtu must exceed 52 bytes");
    // Two directed links per topology link: point-to-point links are full duplex.
    for (auto e : boost::make_iterator_range(boost::edges(topology.graph))) {
      const int a = static_cast<int>(boost::source(e, topology.graph));
      const int b = static_cast<int>(boost::target(e, topology.graph));
      for (auto [u, v] : {std::pair{a, b}, std::pair{b, a}}) {
        if (link_id_.count({u, v})) continue;
        link_id_[{u, v}] = static_cast<int>(capacity_.size());
        capacity_.push_back(topology.graph[e].rate_bps(u, v));
      }
    }
  }

  void send(const Message& message, OnDelivered on_delivered) override {
    const int vertices = topology_.num_vertices();  // hosts, and switches as endpoints
    if (message.src < 0 || message.src >= vertices || message.dst < 0 || message.dst >= vertices)
      throw std::invalid_argument("flow network: message " + std::to_string(message.id) +
                                  " names a vertex outside 0.." + std::to_string(vertices - 1));
    Flow f{message, std::move(on_delivered), clock_.now(), 0, 0, 0, 1, {}};
    if (message.src != message.dst) {
      const std::vector<int>& path = route_of(message.src, message.dst);
      double rtt = 0;  // flow_network.h: FlowSharing::Rtt
      for (size_t i = 0; i + 1 < path.size(); ++i) {
        f.links.push_back(link_id_.at({path[i], path[i + 1]}));
        link_bytes_[{path[i], path[i + 1]}] += message.bytes;
        const LinkSpec& hop = topology_.graph[boost::edge(path[i], path[i + 1], topology_.graph).first];
        f.latency_s += hop.latency_s;
        rtt += 2 * hop.latency_s + (mtu_ + kLinkHeaderBytes) * 8 / hop.rate_bps(path[i], path[i + 1]) +
               (kHeaderBytes + kLinkHeaderBytes) * 8 / hop.rate_bps(path[i + 1], path[i]);
      }
      if (sharing_ == FlowSharing::Rtt) f.weight = 1 / rtt;
      f.remaining_bits = static_cast<double>(message.bytes) * 8.0 * overhead_;
    }
    if (f.remaining_bits <= 0) return deliver(std::move(f));
    advance();
    flows_.push_back(std::move(f));
    reshare();
  }
  std::string name() const override { return "flow"; }
  LinkBytes link_bytes() const override { return link_bytes_; }

 private:
  const std::vector<int>& route_of(int src, int dst) {
    auto it = routes_.find({src, dst});
    if (it == routes_.end()) it = routes_.emplace(std::make_pair(src, dst), route(topology_, src, dst, routing_)).first;
    return it->second;
  }

  // Moves every flow forward to now at its current rate.
  void advance() {
    const double now = clock_.now();
    for (auto& f : flows_) f.remaining_bits -= f.rate_bps * (now - last_update_);
    last_update_ = now;
  }

  void reshare() {
    std::vector<double> left = capacity_;
    // The unfrozen flows' weights on each link, and how many they are (a weight sum can
    // round to a small positive number when its flows leave; the count cannot). With every
    // weight 1 (MaxMin) the arithmetic is that of plain equal filling, bit for bit.
    std::vector<double> weight_on(capacity_.size(), 0);
    std::vector<int> unfrozen_on(capacity_.size(), 0);
    std::vector<bool> frozen(flows_.size(), false);
    for (auto& f : flows_) {
      f.rate_bps = 0;
      for (int l : f.links) weight_on[l] += f.weight, ++unfrozen_on[l];
    }
    size_t remaining = flows_.size();
    while (remaining > 0) {
      // The smallest raise of the fill level (rate per unit weight) that saturates some link.
      double step = std::numeric_limits<double>::infinity();
      for (size_t l = 0; l < left.size(); ++l)
        if (unfrozen_on[l] > 0) step = std::min(step, left[l] / weight_on[l]);
      for (size_t i = 0; i < flows_.size(); ++i) {
        if (frozen[i]) continue;
        flows_[i].rate_bps += step * flows_[i].weight;
        for (int l : flows_[i].links) left[l] -= step * flows_[i].weight;
      }
      // Freeze the flows through saturated links (relative tolerance for rounding).
      for (size_t i = 0; i < flows_.size(); ++i) {
        if (frozen[i]) continue;
        bool saturated = false;
        for (int l : flows_[i].links) saturated = saturated || left[l] <= 1e-9 * capacity_[l];
        if (!saturated) continue;
        frozen[i] = true;
        --remaining;
        for (int l : flows_[i].links) weight_on[l] -= flows_[i].weight, --unfrozen_on[l];
      }
    }
    schedule_next_departure();
  }

  void schedule_next_departure() {
    double soonest = std::numeric_limits<double>::infinity();
    for (const auto& f : flows_) soonest = std::min(soonest, std::max(0.0, f.remaining_bits) / f.rate_bps);
    if (!(soonest < std::numeric_limits<double>::infinity())) return;
    // Earlier-scheduled checks are stale once the rates change: a generation tells them.
    const uint64_t generation = ++generation_;
    clock_.schedule(soonest, [this, generation] {
      if (generation == generation_) depart();
    });
  }

  void depart() {
    advance();
    // Within a nanosecond's worth of bits counts as done: the clock has nanosecond ticks.
    std::vector<Flow> done;
    for (auto it = flows_.begin(); it != flows_.end();) {
      if (it->remaining_bits <= it->rate_bps * 1e-9) {
        done.push_back(std::move(*it));
        it = flows_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& f : done) deliver(std::move(f));
    reshare();
  }

  void deliver(Flow f) {
    clock_.schedule(f.latency_s, [this, f = std::move(f)] {
      f.on_delivered(Delivery{f.message, f.t_send, clock_.now(), 0, {}});
    });
  }

  EventClock& clock_;
  Topology topology_;
  int mtu_;
  FlowSharing sharing_;
  RoutingOptions routing_;
  std::map<std::pair<int, int>, std::vector<int>> routes_;  // each pair's path, found at first use
  double overhead_;
  std::map<std::pair<int, int>, int> link_id_;
  std::vector<double> capacity_;  // bits per second, per directed link
  std::vector<Flow> flows_;       // in arrival order
  LinkBytes link_bytes_;          // payload sent over each directed link
  double last_update_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace

std::unique_ptr<Network> make_flow_network(EventClock& clock, const Topology& topology, int mtu,
                                           FlowSharing sharing, const RoutingOptions& routing) {
  return std::make_unique<FlowNetwork>(clock, topology, mtu, sharing, routing);
}

}  // namespace testbed
