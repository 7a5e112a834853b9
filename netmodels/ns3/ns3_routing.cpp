// A per-node ns-3 routing protocol that forwards by (source vertex, destination vertex) along
// one shared table of topologies/routing.h paths, recomputed when interfaces go down or up.
#include "netmodels/ns3/ns3_routing.h"

#include <ns3/point-to-point-module.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

namespace testbed {

namespace {

// The paths of every (source, destination) pair of one network, computed at first use.
class PathTable {
 public:
  struct Hop {
    uint32_t interface = 0;  // on the sending vertex
    ns3::Ipv4Address peer;   // the receiving vertex's address on the link
  };

  PathTable(const Topology& topology, const RoutingOptions& options,
            std::unordered_map<uint32_t, int> vertex_of_address, std::vector<ns3::Ipv4Address> stable_source)
      : topology_(topology),
        options_(options),
        vertex_of_address_(std::move(vertex_of_address)),
        stable_source_(std::move(stable_source)),
        hops_(topology.num_vertices()),
        ipv4_(topology.num_vertices()) {}

  void add_hop(int from, int to, uint32_t interface, ns3::Ipv4Address peer) { hops_[from][to] = {interface, peer}; }
  void set_ipv4(int vertex, ns3::Ptr<ns3::Ipv4> ipv4) { ipv4_[vertex] = ipv4; }
  void interfaces_changed() { stale_ = true; }

  int vertex_of(ns3::Ipv4Address address) const {
    const auto it = vertex_of_address_.find(address.Get());
    return it == vertex_of_address_.end() ? -1 : it->second;
  }
  const ns3::Ipv4Address* stable_source(int vertex) const {
    return vertex < static_cast<int>(stable_source_.size()) ? &stable_source_[vertex] : nullptr;
  }

  // Where vertex `at` sends a packet from s to d: the vertex after it on the pair's path, or,
  // for a packet that a route change left off its pair's path, after it on at's own path to d.
  const Hop* next_hop(int at, int s, int d) {
    const std::vector<int>& p = path(s, d);
    auto it = std::find(p.begin(), p.end(), at);
    int next = -1;
    if (it != p.end() && it + 1 != p.end()) {
      next = *(it + 1);
    } else if (at != d) {
      next = path(at, d).at(1);
    }
    if (next < 0) return nullptr;
    const auto hop = hops_[at].find(next);
    if (hop == hops_[at].end())
      throw std::logic_error("ns3 routing: no device from " + std::to_string(at) + " to " + std::to_string(next));
    return &hop->second;
  }

 private:
  const std::vector<int>& path(int s, int d) {
    if (stale_) refresh_cuts();
    const uint64_t key =
        static_cast<uint64_t>(s) * static_cast<uint64_t>(topology_.num_vertices()) + static_cast<uint64_t>(d);
    auto it = paths_.find(key);
    if (it != paths_.end()) return it->second;
    std::vector<int> p;
    try {
      p = route(topology_, s, d, options_, cut_);
    } catch (const std::invalid_argument&) {
      p = route(topology_, s, d, options_);  // cut off: into the cut, where the packets die
    }
    return paths_.emplace(key, std::move(p)).first->second;
  }

  // A link serves while the interfaces at both its ends are up.
  void refresh_cuts() {
    stale_ = false;
    CutLinks cut;
    for (int a = 0; a < topology_.num_vertices(); ++a) {
      if (!ipv4_[a]) continue;
      for (const auto& [b, hop] : hops_[a])
        if (!ipv4_[a]->IsUp(hop.interface)) cut.emplace(std::min(a, b), std::max(a, b));
    }
    if (cut == cut_) return;
    cut_ = std::move(cut);
    paths_.clear();
  }

  Topology topology_;
  RoutingOptions options_;
  std::unordered_map<uint32_t, int> vertex_of_address_;
  std::vector<ns3::Ipv4Address> stable_source_;
  std::vector<std::map<int, Hop>> hops_;  // per vertex: neighbour -> its device and the neighbour's address
  std::vector<ns3::Ptr<ns3::Ipv4>> ipv4_;
  CutLinks cut_;
  bool stale_ = true;
  std::unordered_map<uint64_t, std::vector<int>> paths_;
};

class PathRouting final : public ns3::Ipv4RoutingProtocol {
 public:
  PathRouting(std::shared_ptr<PathTable> table, int vertex) : table_(std::move(table)), vertex_(vertex) {}

  ns3::Ptr<ns3::Ipv4Route> RouteOutput(ns3::Ptr<ns3::Packet>, const ns3::Ipv4Header& header,
                                       ns3::Ptr<ns3::NetDevice> oif, ns3::Socket::SocketErrno& error) override {
    const int d = table_->vertex_of(header.GetDestination());
    const PathTable::Hop* hop = d >= 0 && d != vertex_ ? table_->next_hop(vertex_, vertex_, d) : nullptr;
    if (!hop || (oif && oif != ipv4_->GetNetDevice(hop->interface))) {
      error = ns3::Socket::ERROR_NOROUTETOHOST;
      return nullptr;
    }
    const ns3::Ipv4Address* stable = table_->stable_source(vertex_);
    error = ns3::Socket::ERROR_NOTERROR;
    return make_route(header, *hop, stable ? *stable : ipv4_->GetAddress(hop->interface, 0).GetLocal());
  }

  bool RouteInput(ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header& header, ns3::Ptr<const ns3::NetDevice> idev,
                  UnicastForwardCallback ucb, MulticastForwardCallback, LocalDeliverCallback lcb,
                  ErrorCallback) override {
    // Ipv4ListRouting has delivered packets addressed to this node's incoming interface already;
    // a switch (strong end system model) leaves to this one those for its other addresses.
    const int s = table_->vertex_of(header.GetSource());
    const int d = table_->vertex_of(header.GetDestination());
    if (d == vertex_ && !lcb.IsNull()) {
      lcb(p, header, static_cast<uint32_t>(ipv4_->GetInterfaceForDevice(idev)));
      return true;
    }
    if (s < 0 || d < 0 || d == vertex_) return false;
    const PathTable::Hop* hop = table_->next_hop(vertex_, s, d);
    if (!hop) return false;
    ucb(make_route(header, *hop, header.GetSource()), p, header);
    return true;
  }

  void NotifyInterfaceUp(uint32_t) override { table_->interfaces_changed(); }
  void NotifyInterfaceDown(uint32_t) override { table_->interfaces_changed(); }
  void NotifyAddAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void NotifyRemoveAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void SetIpv4(ns3::Ptr<ns3::Ipv4> ipv4) override { ipv4_ = ipv4; }
  void PrintRoutingTable(ns3::Ptr<ns3::OutputStreamWrapper> stream, ns3::Time::Unit) const override {
    *stream->GetStream() << "testbed path routing (topologies/routing.h) at vertex " << vertex_ << "\n";
  }

 private:
  ns3::Ptr<ns3::Ipv4Route> make_route(const ns3::Ipv4Header& header, const PathTable::Hop& hop,
                                      ns3::Ipv4Address source) const {
    auto route = ns3::Create<ns3::Ipv4Route>();
    route->SetDestination(header.GetDestination());
    route->SetGateway(hop.peer);
    route->SetOutputDevice(ipv4_->GetNetDevice(hop.interface));
    route->SetSource(source);
    return route;
  }

  std::shared_ptr<PathTable> table_;
  int vertex_;
  ns3::Ptr<ns3::Ipv4> ipv4_;
};

}  // namespace

void install_path_routing(const ns3::NodeContainer& nodes, const Topology& topology, const RoutingOptions& options,
                          const std::unordered_map<uint32_t, int>& vertex_of_address,
                          const std::vector<ns3::Ipv4Address>& stable_source) {
  using namespace ns3;
  auto table = std::make_shared<PathTable>(topology, options, vertex_of_address, stable_source);
  std::map<Ptr<Node>, int> vertex_of_node;
  for (uint32_t v = 0; v < nodes.GetN(); ++v) vertex_of_node[nodes.Get(v)] = static_cast<int>(v);
  for (uint32_t v = 0; v < nodes.GetN(); ++v) {
    Ptr<Node> node = nodes.Get(v);
    auto ipv4 = node->GetObject<Ipv4>();
    for (uint32_t i = 0; i < node->GetNDevices(); ++i) {
      auto device = DynamicCast<PointToPointNetDevice>(node->GetDevice(i));
      if (!device) continue;  // the loopback
      Ptr<Channel> channel = device->GetChannel();
      for (std::size_t k = 0; k < channel->GetNDevices(); ++k) {
        Ptr<NetDevice> end = channel->GetDevice(k);
        if (end == device) continue;
        auto peer_ipv4 = end->GetNode()->GetObject<Ipv4>();
        table->add_hop(
            static_cast<int>(v), vertex_of_node.at(end->GetNode()),
            static_cast<uint32_t>(ipv4->GetInterfaceForDevice(device)),
            peer_ipv4->GetAddress(static_cast<uint32_t>(peer_ipv4->GetInterfaceForDevice(end)), 0).GetLocal());
      }
    }
    table->set_ipv4(static_cast<int>(v), ipv4);
    auto list = DynamicCast<Ipv4ListRouting>(ipv4->GetRoutingProtocol());
    if (!list) throw std::logic_error("vertex " + std::to_string(v) + " has no list routing");
    list->AddRoutingProtocol(Create<PathRouting>(table, static_cast<int>(v)), 100);
  }
}

}  // namespace testbed
