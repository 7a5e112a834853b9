// The flow-level backend: idle transfers at the header-adjusted link rate, max-min fair
// sharing worked out by hand (also as flows come and go mid-transfer), and agreement with
// the packet-level backend on bulk transfers.
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


// ---- Rates that change mid-transfer, worked out by hand ----------------------------------
// Each expected time below is the fluid model's arithmetic done phase by phase: while the
// set of flows is fixed, every flow keeps its max-min rate, a flow's wire bits are its payload
// x kOverhead x 8, its last bit crosses when those bits are used up, and it is delivered
// one route latency (sum over its links, paid once) after that.

struct Timed {
  double at = 0;  // when send() is called
  Message message;
};

std::vector<Delivery> simulate_flow(const Topology& topology, const std::vector<Timed>& sends) {
  std::vector<Delivery> out(sends.size());
  EventClock clock;
  {
    auto network = make_flow_network(clock, topology);
    for (const auto& s : sends)
      clock.schedule(s.at, [&, m = s.message] {
        network->send(m, [&](const Delivery& d) { out.at(d.message.id) = d; });
      });
    clock.run();
  }
  return out;
}

double wire_bits(double payload_bytes) { return payload_bytes * 8 * kOverhead; }

// The clock keeps nanosecond ticks and each departure rounds up to one: a few phases stay
// well inside 10 ns, and every slip below moves a time by microseconds or more.
constexpr double kExact = 1e-8;

TEST(FlowNetwork, ArrivalMidTransferSlowsTheFlowAlreadyThere) {
  // Line 0-1-2, 100 Mbps, latencies 2 ms and 7 ms. A (0->2, 4 MB) runs alone at c until B
  // (1->2, 1 MB) arrives at t1 = 0.1 s; then both cross 1->2 at c/2. A still has more left
  // than B, so B's last bit crosses at t1 + 2 W_B / c; A runs alone again and its last bit
  // crosses at t1 + 2 W_B / c + (W_A - c t1 - W_B) / c. Slips caught: not advancing A's
  // remaining bits before re-sharing at B's arrival (B would be credited with progress
  // from before it existed), departing at delivery rather than at the last bit (A would
  // share for B's 7 ms longer), and latency summed wrongly over the two hops.
  const double c = 1e8, t1 = 0.1, l01 = 0.002, l12 = 0.007;
  const auto t = make("line", 3, c, 0.0, {{0, 1, -1, l01, -1}, {1, 2, -1, l12, -1}});
  const double wa = wire_bits(4'000'000), wb = wire_bits(1'000'000);
  const auto d = simulate_flow(t, {{0, {0, 0, 2, 4'000'000}}, {t1, {1, 1, 2, 1'000'000}}});
  ASSERT_GT(wa - c * t1, wb);  // A outlasts B, as the phases assume
  const double b_last_bit = t1 + 2 * wb / c;
  EXPECT_NEAR(d[1].t_send, t1, kExact);
  EXPECT_NEAR(d[1].t_recv, b_last_bit + l12, kExact);
  EXPECT_NEAR(d[0].t_recv, b_last_bit + (wa - c * t1 - wb) / c + l01 + l12, kExact);
  // Late by exactly the time B's bits held the shared link: wa / c alone.
  EXPECT_NEAR(d[0].t_recv - (wa / c + l01 + l12), wb / c, kExact);
}

TEST(FlowNetwork, DepartureReleasesBandwidthAndMovesTheBottleneck) {
  // Line 0-1-2, link 0-1 at 100 Mbps (3 ms), link 1-2 at 60 Mbps (5 ms). A: 0->1 4 MB,
  // B: 0->2 4 MB, C: 1->2 1 MB, all at t = 0.
  //  Phase 1: link 1-2 saturates first (level 30 < 50 on 0-1): B = C = 30 Mbps, then A
  //   takes what B leaves of 0-1, 70. C ends at T1 = W_C / 30e6.
  //  Phase 2: A and B share 0-1 at 50 each (1-2 alone would give B 60): B speeds up and
  //   A slows down. A, ahead, ends at T2 = T1 + (W_A - 70e6 T1) / 50e6.
  //  Phase 3: B alone, held to 60 by 1-2: T3 = T2 + (W_B - 30e6 T1 - 50e6 (T2 - T1)) / 60e6.
  // Slips caught: no re-share at a departure (A would keep 70 and B 30), freezing on the
  // first link of a route instead of the saturated one, B's rate taken from its first link.
  const double l01 = 0.003, l12 = 0.005;
  const auto t = make("line", 3, 1e8, 0.0, {{0, 1, 1e8, l01, -1}, {1, 2, 6e7, l12, -1}});
  const double wa = wire_bits(4'000'000), wb = wire_bits(4'000'000), wc = wire_bits(1'000'000);
  const auto d = simulate_flow(t, {{0, {0, 0, 1, 4'000'000}}, {0, {1, 0, 2, 4'000'000}}, {0, {2, 1, 2, 1'000'000}}});
  const double t1 = wc / 30e6;
  const double t2 = t1 + (wa - 70e6 * t1) / 50e6;
  const double t3 = t2 + (wb - 30e6 * t1 - 50e6 * (t2 - t1)) / 60e6;
  ASSERT_LT(t1, t2);  // the order the phases assume
  ASSERT_LT(t2, t3);
  EXPECT_NEAR(d[2].t_recv, t1 + l12, kExact);
  EXPECT_NEAR(d[0].t_recv, t2 + l01, kExact);
  EXPECT_NEAR(d[1].t_recv, t3 + l01 + l12, kExact);
}

TEST(FlowNetwork, ProgressiveFillingFreezesFlowsAtTheirOwnBottleneck) {
  // Line 0-1-2-3: 0-1 100 Mbps (1 ms), 1-2 40 Mbps (2 ms), 2-3 100 Mbps (4 ms).
  // F1 0->3 and F2 1->2 (1 MB each), F3 and F4 2->3 (2 MB each), F5 0->1 (4 MB).
  // Filling: 1-2 saturates first at level 40/2 = 20 (2-3 would at 100/3, 0-1 at 50), freezing
  // F1 and F2 at 20. F3, F4 then split the 80 F1 leaves of 2-3: 40 each. F5 takes the 80 F1
  // leaves of 0-1. Sizes are in proportion to 20:20:40:40:80, so every last bit crosses at
  // W(1 MB) / 20e6 if, and only if, the rates are those. Slips caught: one equal share for
  // all at the tightest link (F3..F5 at 20), each flow's min over its links of c / n (F3, F4
  // at 33.3, F5 at 50), freezing only the flows whose first link saturated.
  const auto t = make("line", 4, 1e8, 0.0, {{0, 1, 1e8, 0.001, -1}, {1, 2, 4e7, 0.002, -1}, {2, 3, 1e8, 0.004, -1}});
  const auto d = simulate_flow(t, {{0, {0, 0, 3, 1'000'000}},
                                   {0, {1, 1, 2, 1'000'000}},
                                   {0, {2, 2, 3, 2'000'000}},
                                   {0, {3, 2, 3, 2'000'000}},
                                   {0, {4, 0, 1, 4'000'000}}});
  const double last_bit = wire_bits(1'000'000) / 20e6;
  EXPECT_NEAR(d[0].t_recv, last_bit + 0.007, kExact);
  EXPECT_NEAR(d[1].t_recv, last_bit + 0.002, kExact);
  EXPECT_NEAR(d[2].t_recv, last_bit + 0.004, kExact);
  EXPECT_NEAR(d[3].t_recv, last_bit + 0.004, kExact);
  EXPECT_NEAR(d[4].t_recv, last_bit + 0.001, kExact);
}

TEST(FlowNetwork, ParkingLotHoldsTheLongFlowAtHalfUntilItsLastNeighbourLeaves) {
  // Parking lot, k = 3 links of 100 Mbps (latencies 1, 2, 3 ms): long 0->3 (4 MB), short
  // flows 0->1 (3 MB), 1->2 (1 MB), 2->3 (2 MB). Every link carries two flows, so all run at
  // c/2, and the long flow stays at c/2 while any link of its route still has a short flow
  // (W = W(1 MB)):
  //  1->2 ends at 2W/c; 2->3 at 4W/c (the long flow has crossed 2 MB); 0->1 at 6W/c (3 MB);
  //  the long flow then runs alone at c and ends at 6W/c + W/c = 7W/c.
  // Slips caught: raising the long flow when one of its links frees up while another still
  // binds; latency counted once per hop twice (6 ms would become 12).
  const double c = 1e8, w = wire_bits(1'000'000);
  const auto t = make("line", 4, c, 0.0, {{0, 1, -1, 0.001, -1}, {1, 2, -1, 0.002, -1}, {2, 3, -1, 0.003, -1}});
  const auto d = simulate_flow(t, {{0, {0, 0, 3, 4'000'000}},
                                   {0, {1, 0, 1, 3'000'000}},
                                   {0, {2, 1, 2, 1'000'000}},
                                   {0, {3, 2, 3, 2'000'000}}});
  EXPECT_NEAR(d[2].t_recv, 2 * w / c + 0.002, kExact);
  EXPECT_NEAR(d[3].t_recv, 4 * w / c + 0.003, kExact);
  EXPECT_NEAR(d[1].t_recv, 6 * w / c + 0.001, kExact);
  EXPECT_NEAR(d[0].t_recv, 7 * w / c + 0.006, kExact);
}

TEST(FlowNetwork, StaggeredStartsShareByWhoIsThere) {
  // One 100 Mbps link (3 ms), three 2 MB flows sent at 0, 50 ms and 100 ms. A alone until
  // tb, A and B at c/2 until tc, then all three at c/3. At tc A has W - c tb - c/2 (tc - tb)
  // left, the least, so it ends first at TA = tc + 3 RA / c; B then has RB = W - c/2 (tc - tb)
  // - RA left and shares with C at c/2: TB = TA + 2 RB / c; C ends alone: TC = TB + (W - RA - RB) / c.
  const double c = 1e8, tb = 0.05, tc = 0.1, w = wire_bits(2'000'000);
  const auto d = simulate_flow(make("line", 2, c, 0.003),
                               {{0, {0, 0, 1, 2'000'000}}, {tb, {1, 0, 1, 2'000'000}}, {tc, {2, 0, 1, 2'000'000}}});
  const double ra = w - c * tb - c / 2 * (tc - tb);
  const double ta = tc + 3 * ra / c;
  const double rb = w - c / 2 * (tc - tb) - ra;
  const double tb_end = ta + 2 * rb / c;
  const double tc_end = tb_end + (w - ra - rb) / c;
  EXPECT_NEAR(d[0].t_recv, ta + 0.003, kExact);
  EXPECT_NEAR(d[1].t_recv, tb_end + 0.003, kExact);
  EXPECT_NEAR(d[2].t_recv, tc_end + 0.003, kExact);
}

TEST(FlowNetwork, LatencyIsTheRouteSumPaidOnceAfterTheLastBit) {
  // Line 0-1-2-3 with latencies 1, 4 and 9 ms: 0->3 and 3->0 at once do not share (full
  // duplex) and each arrives W / c + 14 ms after it was sent; an empty message takes 14 ms.
  const double c = 1e8;
  const auto t = make("line", 4, c, 0.0, {{0, 1, -1, 0.001, -1}, {1, 2, -1, 0.004, -1}, {2, 3, -1, 0.009, -1}});
  const auto d = simulate_flow(t, {{0, {0, 0, 3, 3'000'000}}, {0, {1, 3, 0, 3'000'000}}, {0.5, {2, 0, 3, 0}}});
  EXPECT_NEAR(d[0].t_recv, wire_bits(3'000'000) / c + 0.014, kExact);
  EXPECT_NEAR(d[1].t_recv, wire_bits(3'000'000) / c + 0.014, kExact);
  EXPECT_NEAR(d[2].t_recv, 0.5 + 0.014, kExact);
}

}  // namespace
}  // namespace testbed
