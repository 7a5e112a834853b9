// Outages as real cuts: interfaces down (packets dropped on arrival), routes recomputed around them.
#include "netmodels/ns3/ns3_faults.h"

#include <ns3/core-module.h>
#include <ns3/internet-module.h>
#include <ns3/point-to-point-module.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "netmodels/tcp_retries.h"

namespace testbed {

namespace {

// One interface: a node and the index of its interface on the link.
struct Interface {
  ns3::Ptr<ns3::Ipv4> ipv4;
  uint32_t index = 0;
};

// The interfaces of node `from`'s devices, keyed by the vertex at the other end of each.
std::map<int, Interface> interfaces_of(const ns3::NodeContainer& nodes, int from) {
  using namespace ns3;
  std::map<ns3::Ptr<ns3::Node>, int> vertex_of;
  for (uint32_t v = 0; v < nodes.GetN(); ++v) vertex_of[nodes.Get(v)] = static_cast<int>(v);
  std::map<int, Interface> out;
  Ptr<Node> node = nodes.Get(from);
  auto ipv4 = node->GetObject<Ipv4>();
  for (uint32_t d = 0; d < node->GetNDevices(); ++d) {
    auto device = DynamicCast<PointToPointNetDevice>(node->GetDevice(d));
    if (!device) continue;  // the loopback
    auto channel = device->GetChannel();
    for (std::size_t k = 0; k < channel->GetNDevices(); ++k) {
      Ptr<NetDevice> end = channel->GetDevice(k);
      if (end == device) continue;
      out[vertex_of.at(end->GetNode())] = {ipv4, static_cast<uint32_t>(ipv4->GetInterfaceForDevice(device))};
    }
  }
  return out;
}

}  // namespace

std::vector<ns3::Ipv4Address> stable_host_addresses(const ns3::NodeContainer& nodes, int hosts) {
  using namespace ns3;
  // 172.16.0.0/12 lies outside the 10.0.0.0/8 the links are numbered from.
  if (hosts >= (1 << 20) - 2) throw std::invalid_argument("too many hosts for stable addresses");
  const Ipv4Address first("172.16.0.1");
  std::vector<Ipv4Address> out;
  for (int h = 0; h < hosts; ++h) {
    const Ipv4Address address(first.Get() + static_cast<uint32_t>(h));
    Ptr<Node> node = nodes.Get(h);
    auto ipv4 = node->GetObject<Ipv4>();
    ipv4->AddAddress(0, Ipv4InterfaceAddress(address, Ipv4Mask("255.255.255.255")));  // 0: loopback
    out.push_back(address);
  }
  return out;
}

void install_faults(const ns3::NodeContainer& nodes, const Topology& topology, const std::vector<Fault>& faults) {
  using namespace ns3;
  // With faults configured TCP keeps trying like Linux does (tcp_retries.h); its RTO doubling
  // stops at 60 s, so a flow resumes at most about a minute after its path returns. Set every
  // time (not only with faults) because Config defaults outlive this network in the process.
  const uint32_t retries = ns3_tcp_retries(!faults.empty());
  Config::SetDefault("ns3::TcpSocket::DataRetries", UintegerValue(retries));
  Config::SetDefault("ns3::TcpSocket::ConnCount", UintegerValue(retries));
  if (faults.empty()) return;

  // Overlapping faults may cover one interface: it is up only when none holds it down.
  struct State {
    Interface interface;
    int held = 0;
  };
  auto states = std::make_shared<std::map<std::pair<int, int>, State>>();  // (vertex, peer)
  auto hold = [states](const std::vector<std::pair<int, int>>& ends, int delta) {
    for (const auto& end : ends) {
      State& s = states->at(end);
      const bool was_up = s.held == 0;
      s.held += delta;
      if (was_up && s.held > 0) s.interface.ipv4->SetDown(s.interface.index);
      if (!was_up && s.held == 0) s.interface.ipv4->SetUp(s.interface.index);
    }
    // The path routing (ns3_routing.h) hears of every interface going down or up and
    // recomputes its routes over the links left.
  };

  for (const Fault& f : faults) {
    std::vector<std::pair<int, int>> ends;  // (vertex, peer) of every interface the fault cuts
    if (f.node >= 0) {
      if (f.node >= topology.num_vertices())
        throw std::invalid_argument("fault names node " + std::to_string(f.node) + " outside 0.." +
                                    std::to_string(topology.num_vertices() - 1));
      for (const auto& [peer, interface] : interfaces_of(nodes, f.node)) ends.emplace_back(f.node, peer);
    } else {
      if (f.a < 0 || f.b < 0 || f.a >= topology.num_vertices() || f.b >= topology.num_vertices() ||
          !boost::edge(f.a, f.b, topology.graph).second)
        throw std::invalid_argument("fault names no link between " + std::to_string(f.a) + " and " +
                                    std::to_string(f.b));
      ends = {{f.a, f.b}, {f.b, f.a}};
    }
    if (!(f.up_s > f.down_s) || f.down_s < 0) throw std::invalid_argument("fault interval must have 0 <= start < end");
    for (const auto& end : ends)
      if (!states->count(end)) (*states)[end] = State{interfaces_of(nodes, end.first).at(end.second), 0};
    Simulator::Schedule(Seconds(f.down_s) - Simulator::Now(), [hold, ends] { hold(ends, +1); });
    Simulator::Schedule(Seconds(f.up_s) - Simulator::Now(), [hold, ends] { hold(ends, -1); });
  }
}

}  // namespace testbed
