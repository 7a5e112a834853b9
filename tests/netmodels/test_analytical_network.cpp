// The alpha-beta backend: message times equal the formula on the route, and the
// packet-level backend never beats it on the same transfers.
#include <gtest/gtest.h>

#include <vector>

#include "netmodels/analytical_network.h"
#include "netmodels/event_clock.h"
#include "netmodels/ns3/ns3_network.h"
#include "tests/support/deliveries.h"
#include "topologies/builders.h"

namespace testbed {
namespace analytical_network {  // its own names: network_tests compiles as one unity file
namespace {

Topology make(const std::string& kind, int hosts, double bandwidth, double latency) {
  TopologySpec s;
  s.kind = topology_kind(kind);
  s.hosts = hosts;
  s.link = {bandwidth, latency, 0};
  return build_topology(s);
}

// Sends every message at time 0 on the chosen backend; deliveries by message id.
std::vector<Delivery> simulate(bool analytical, const Topology& topology, const std::vector<Message>& messages) {
  return deliveries_by_id(
      [&](EventClock& clock) {
        return analytical ? make_analytical_network(clock, topology) : make_ns3_network(clock, topology, {});
      },
      messages);
}

TEST(AnalyticalNetwork, MessageTimeIsLatencyPlusBytesAtTheBottleneck) {
  // A line 0-1-2 whose second link is slower: the route 0->2 has two hops.
  TopologySpec s;
  s.kind = TopologyKind::Line;
  s.hosts = 3;
  s.link = {1e9, 0.002, 0};
  s.overrides = {{1, 2, 1e8, 0.005, -1}};
  const Topology t = build_topology(s);
  const auto d = simulate(true, t, {{0, 0, 2, 1'000'000}, {1, 1, 0, 500}, {2, 2, 2, 123}});
  EXPECT_DOUBLE_EQ(d[0].t_recv - d[0].t_send, 0.002 + 0.005 + 1e6 * 8 / 1e8);
  EXPECT_DOUBLE_EQ(d[1].t_recv - d[1].t_send, 0.002 + 500 * 8 / 1e9);
  EXPECT_EQ(d[2].t_recv, d[2].t_send);  // a host to itself crosses no link
  for (const auto& x : d) EXPECT_EQ(x.lost_bytes, 0u);
}

TEST(AnalyticalNetwork, NoContention) {
  // Eight messages share the ring's links at once; each still takes its own formula time.
  const Topology t = make("ring", 4, 1e8, 0.01);
  std::vector<Message> messages;
  for (int r = 0; r < 4; ++r) {
    messages.push_back({static_cast<uint64_t>(2 * r), r, (r + 1) % 4, 1'000'000});
    messages.push_back({static_cast<uint64_t>(2 * r + 1), r, (r + 3) % 4, 1'000'000});
  }
  for (const auto& d : simulate(true, t, messages)) EXPECT_DOUBLE_EQ(d.t_recv, 0.01 + 1e6 * 8 / 1e8);
}

TEST(AnalyticalNetwork, PacketLevelNeverBeatsIt) {
  const Topology t = make("ring", 4, 1e8, 0.01);
  std::vector<Message> messages;
  uint64_t id = 0;
  for (int r = 0; r < 4; ++r) messages.push_back({id++, r, (r + 1) % 4, 2'000'000});
  messages.push_back({id++, 0, 2, 300'000});
  const auto bound = simulate(true, t, messages);
  const auto packets = simulate(false, t, messages);
  for (size_t i = 0; i < messages.size(); ++i) {
    EXPECT_GE(packets[i].t_recv - packets[i].t_send, bound[i].t_recv - bound[i].t_send) << "message " << i;
  }
}

TEST(AnalyticalNetwork, RejectsUnknownHosts) {
  EventClock clock;
  auto network = make_analytical_network(clock, make("line", 2, 1e9, 0));
  EXPECT_THROW(network->send({0, 0, 5, 10}, [](const Delivery&) {}), std::invalid_argument);
  EXPECT_EQ(network->name(), "analytical");
}

}  // namespace
}  // namespace analytical_network
}  // namespace testbed
