// The flow-level backend: idle transfers at the header-adjusted link rate, max-min fair
// sharing worked out by hand, and agreement with the packet-level backend on bulk transfers.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "netmodels/alpha_beta.h"
#include "netmodels/event_clock.h"
#include "netmodels/flow_network.h"
#include "netmodels/ns3_network.h"
#include "topologies/builders.h"

namespace testbed {
namespace {

constexpr double kOverhead = (9000.0 + 2) / (9000 - 52);  // wire bytes per payload byte at MTU 9000

Topology make(const std::string& kind, int hosts, double bandwidth, double latency,
              std::vector<LinkOverride> overrides = {}) {
  TopologySpec s;
  s.kind = kind;
  s.hosts = hosts;
  s.link = {bandwidth, latency, 0};
  s.overrides = std::move(overrides);
  return build_topology(s);
}

// Every message sent at time 0; deliveries indexed by message id.
std::vector<Delivery> simulate(bool flow, const Topology& topology, const std::vector<Message>& messages) {
  std::vector<Delivery> out(messages.size());
  EventClock clock;
  {
    auto network = flow ? make_flow_network(clock, topology) : make_ns3_network(clock, topology, {});
    for (const auto& m : messages)
      clock.schedule(0, [&, m] { network->send(m, [&](const Delivery& d) { out.at(d.message.id) = d; }); });
    clock.run();
  }
  return out;
}

TEST(FlowNetwork, IdleTransferAtTheLinkRateLessHeaders) {
  const auto d = simulate(true, make("line", 2, 1e8, 0.01), {{0, 0, 1, 10'000'000}});
  const double expected = 0.01 + 10e6 * kOverhead * 8 / 1e8;
  EXPECT_NEAR(d[0].t_recv, expected, 2e-9);
  EXPECT_GE(d[0].t_recv, alpha_beta::point_to_point(0.01, 8 / 1e8, 10e6));
}

TEST(FlowNetwork, TwoFlowsOnOneBottleneckGetHalfEach) {
  // Line 0-1-2: 0->2 and 1->2 share the link 1->2.
  const double bytes = 5'000'000;
  const auto d = simulate(true, make("line", 3, 1e8, 0.001), {{0, 0, 2, 5'000'000}, {1, 1, 2, 5'000'000}});
  const double drain = 2 * bytes * kOverhead * 8 / 1e8;  // both at 50 Mbps until both finish together
  EXPECT_NEAR(d[0].t_recv, drain + 0.002, 2e-9);
  EXPECT_NEAR(d[1].t_recv, drain + 0.001, 2e-9);
  // Opposite directions do not share: full duplex.
  const auto e = simulate(true, make("line", 2, 1e8, 0.001), {{0, 0, 1, 5'000'000}, {1, 1, 0, 5'000'000}});
  EXPECT_NEAR(e[0].t_recv, bytes * kOverhead * 8 / 1e8 + 0.001, 2e-9);
}

TEST(FlowNetwork, MaxMinGivesWhatABottleneckedFlowLeaves) {
  // Line 0-1-2 with 1-2 at 10 Mbps: B (0->2) is held to 10 Mbps by 1-2, so A (0->1) gets the
  // other 90 Mbps of 0->1, not 50. A finishes first; B never speeds up (still 10 Mbps).
  const auto t = make("line", 3, 1e8, 0.0, {{1, 2, 1e7, -1, -1}});
  const double a_bytes = 9'000'000, b_bytes = 2'000'000;
  const auto d = simulate(true, t, {{0, 0, 1, 9'000'000}, {1, 0, 2, 2'000'000}});
  EXPECT_NEAR(d[0].t_recv, a_bytes * kOverhead * 8 / 9e7, 2e-9);
  EXPECT_NEAR(d[1].t_recv, b_bytes * kOverhead * 8 / 1e7, 2e-9);
}

TEST(FlowNetwork, DepartureHandsTheRateOn) {
  // Two flows share one link; the small one leaves at 2 x its size, then the large one runs alone.
  const double small = 1'000'000, large = 3'000'000, bps = 1e8;
  const auto d = simulate(true, make("line", 2, bps, 0.0), {{0, 0, 1, 1'000'000}, {1, 0, 1, 3'000'000}});
  const double first = 2 * small * kOverhead * 8 / bps;
  EXPECT_NEAR(d[0].t_recv, first, 2e-9);
  EXPECT_NEAR(d[1].t_recv, first + (large - small) * kOverhead * 8 / bps, 2e-9);
}

// The two backends on the same idle bulk transfers: within 15 % (TCP's slow start and the
// handshake are what the flow model leaves out), and never below alpha-beta.
TEST(FlowNetwork, AgreesWithPacketLevelOnBulkTransfers) {
  for (const std::string kind : {"ring", "star", "mesh", "line"}) {
    const auto t = make(kind, 4, 1e8, 0.005);
    const std::vector<Message> one = {{0, 0, 2, 20'000'000}};
    const auto f = simulate(true, t, one), p = simulate(false, t, one);
    std::printf("%s 20 MB 0->2: flow %.4f s, ns3 %.4f s (%.3fx)\n", kind.c_str(), f[0].t_recv, p[0].t_recv,
                p[0].t_recv / f[0].t_recv);
    EXPECT_NEAR(p[0].t_recv / f[0].t_recv, 1.0, 0.15) << kind;
  }
  // Two flows through the star's hub to one host: both backends about halve the rate.
  const auto star = make("star", 3, 1e8, 0.005);
  const std::vector<Message> two = {{0, 0, 2, 10'000'000}, {1, 1, 2, 10'000'000}};
  const auto f = simulate(true, star, two), p = simulate(false, star, two);
  for (int i = 0; i < 2; ++i) {
    std::printf("star, 2 flows into host 2: flow %.4f s, ns3 %.4f s\n", f[i].t_recv, p[i].t_recv);
    EXPECT_NEAR(p[i].t_recv / f[i].t_recv, 1.0, 0.15);
  }
}

}  // namespace
}  // namespace testbed
