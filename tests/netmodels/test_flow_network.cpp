// The flow-level backend: idle transfers at the header-adjusted link rate, max-min fair
// sharing worked out by hand, and agreement with the packet-level backend on bulk transfers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "netmodels/alpha_beta.h"
#include "netmodels/event_clock.h"
#include "netmodels/flow_network.h"
#include "netmodels/ns3/ns3_network.h"
#include "tests/support/deliveries.h"
#include "topologies/builders.h"

namespace testbed {
namespace flow_network {  // its own names: network_tests compiles as one unity file
namespace {

constexpr double kOverhead = (9000.0 + 2) / (9000 - 52);  // wire bytes per payload byte at MTU 9000

Topology make(const std::string& kind, int hosts, double bandwidth, double latency,
              std::vector<LinkOverride> overrides = {}) {
  TopologySpec s;
  s.kind = topology_kind(kind);
  s.hosts = hosts;
  s.link = {bandwidth, latency, 0};
  s.overrides = std::move(overrides);
  return build_topology(s);
}

// Every message sent at time 0; deliveries indexed by message id.
std::vector<Delivery> simulate(bool flow, const Topology& topology, const std::vector<Message>& messages) {
  return deliveries_by_id(
      [&](EventClock& clock) {
        return flow ? make_flow_network(clock, topology) : make_ns3_network(clock, topology, {});
      },
      messages);
}

TEST(FlowNetwork, IdleTransferAtTheLinkRateLessHeaders) {
  const auto d = simulate(true, make("line", 2, 1e8, 0.01), {{0, 0, 1, 10'000'000}});
  const double expected = 0.01 + 10e6 * kOverhead * 8 / 1e8;
  EXPECT_NEAR(d[0].t_recv, expected, 2e-9);
  EXPECT_GE(d[0].t_recv, alpha_beta::point_to_point(0.01, 8 / 1e8, 10e6));
}

// A flow's last bit falls on the nearest clock tick after its start, each message from its own
// start. By hand, at 1 Gb/s (one bit a nanosecond) with no latency: 11 bytes are 88 x 9002 / 8948
// = 88.53 wire bits, so the first message lands at tick 89 (not 88: truncated), and the second,
// queued behind it on the pair, at 89 + 89 = 178 (not 177: rounded from time 0). Slips caught:
// truncating instead of rounding, rounding the absolute finish instead of the duration.
TEST(FlowNetwork, ALastBitFallsOnTheNearestTickAfterItsStart) {
  const auto d = simulate(true, make("line", 2, 1e9, 0.0), {{0, 0, 1, 11}, {1, 0, 1, 11}});
  EXPECT_EQ(std::llround(d[0].t_recv * 1e9), 89);
  EXPECT_EQ(std::llround(d[1].t_recv * 1e9), 178);
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
  // Two flows (0->2, 1->2) share link 1->2; the small one leaves at 2 x its size, then the
  // large one runs alone.
  const double small = 1'000'000, large = 3'000'000, bps = 1e8;
  const auto d = simulate(true, make("line", 3, bps, 0.0), {{0, 0, 2, 1'000'000}, {1, 1, 2, 3'000'000}});
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

std::vector<Delivery> simulate_flow(const Topology& topology, const std::vector<Timed>& sends,
                                    FlowSharing sharing = FlowSharing::MaxMin) {
  std::vector<Delivery> out(sends.size());
  EventClock clock;
  {
    auto network = make_flow_network(clock, topology, 9000, sharing);
    for (const auto& s : sends)
      clock.schedule(s.at,
                     [&, m = s.message] { network->send(m, [&](const Delivery& d) { out.at(d.message.id) = d; }); });
    clock.run();
  }
  return out;
}

double wire_bits(double payload_bytes) { return payload_bytes * 8 * kOverhead; }

// Store-and-forward (flow_network.h): once a message's last bit has crossed the hop that holds
// its rate (on an idle route of equal links, the first), its last packet is received whole at
// each later hop: that packet is the message's last segment, (bytes - 1) mod 8948 + 1 payload
// bytes, and 52 + 2 header bytes, over each later hop's rate. A 1 MB message's last packet is
// 1e6 - 111 x 8948 + 54 = 6826 bytes; 2 MB: 4650; 3 MB: 2474; 4 MB: 298; 5 MB: 7070.
double forwarded(double payload_bytes, std::initializer_list<double> later_rates) {
  const double packet_bits = (std::fmod(payload_bytes - 1, 8948) + 1 + 54) * 8;
  double seconds = 0;
  for (double rate : later_rates) seconds += packet_bits / rate;
  return seconds;
}

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
  // A ends alone, held by its first hop: its last packet is then stored and forwarded at 1-2.
  const double a_forward = forwarded(4'000'000, {c});
  EXPECT_NEAR(d[0].t_recv, b_last_bit + (wa - c * t1 - wb) / c + a_forward + l01 + l12, kExact);
  // Late by exactly the time B's bits held the shared link: wa / c alone.
  EXPECT_NEAR(d[0].t_recv - (wa / c + a_forward + l01 + l12), wb / c, kExact);
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
  // F1 0->3 and F2 1->2 (1 MB each), F3 1->3 (2 MB), F4 2->3 and F5 0->1 (8 MB each).
  // Filling: 1-2 saturates first at level 40/3 (2-3 would at 100/3, 0-1 at 50), freezing
  // F1, F2 and F3 at 13.3. F4 then takes the 100 - 2 x 13.3 = 73.3 they leave of 2-3, F5 the
  // 86.7 F1 leaves of 0-1. Slips caught: one equal share for all at the tightest link (F4,
  // F5 at 13.3), each flow's min over its links of c / n (F4 at 33.3, F5 at 50), freezing
  // only the flows whose first link saturated (F3 would take 1-2's rest).
  const auto t = make("line", 4, 1e8, 0.0, {{0, 1, 1e8, 0.001, -1}, {1, 2, 4e7, 0.002, -1}, {2, 3, 1e8, 0.004, -1}});
  const auto d = simulate_flow(t, {{0, {0, 0, 3, 1'000'000}},
                                   {0, {1, 1, 2, 1'000'000}},
                                   {0, {2, 1, 3, 2'000'000}},
                                   {0, {3, 2, 3, 8'000'000}},
                                   {0, {4, 0, 1, 8'000'000}}});
  // Phase 1 lasts until F1 and F2 end at W1 / 13.3.
  const double w1 = wire_bits(1'000'000), w2 = wire_bits(2'000'000), w8 = wire_bits(8'000'000);
  const double low = 4e7 / 3, t1 = w1 / low;
  const double f3_left = w2 - low * t1, f4_left = w8 - (1e8 - 2 * low) * t1, f5_left = w8 - (1e8 - low) * t1;
  ASSERT_GT(f4_left, 0);  // F4 and F5 are still going then
  ASSERT_GT(f5_left, 0);
  // F1 is held at 1-2, so its last packet is forwarded once more, at 2-3.
  EXPECT_NEAR(d[0].t_recv, t1 + forwarded(1'000'000, {1e8}) + 0.007, kExact);
  EXPECT_NEAR(d[1].t_recv, t1 + 0.002, kExact);
  // Phase 2: F3, alone on 1-2, is held there to 40 and F4 takes the 60 it leaves of 2-3; F5
  // has 0-1 to itself. F3 ends first, then F4 runs at 100.
  const double t3 = t1 + f3_left / 4e7;
  ASSERT_LT(t3, t1 + f4_left / 6e7);
  const double t4 = t3 + (f4_left - 6e7 * (t3 - t1)) / 1e8;
  EXPECT_NEAR(d[2].t_recv, t3 + forwarded(2'000'000, {1e8}) + 0.006, kExact);  // held at 1-2, on at 2-3
  EXPECT_NEAR(d[3].t_recv, t4 + 0.004, kExact);
  EXPECT_NEAR(d[4].t_recv, t1 + f5_left / 1e8 + 0.001, kExact);
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
  const auto d = simulate_flow(
      t, {{0, {0, 0, 3, 4'000'000}}, {0, {1, 0, 1, 3'000'000}}, {0, {2, 1, 2, 1'000'000}}, {0, {3, 2, 3, 2'000'000}}});
  EXPECT_NEAR(d[2].t_recv, 2 * w / c + 0.002, kExact);
  EXPECT_NEAR(d[3].t_recv, 4 * w / c + 0.003, kExact);
  EXPECT_NEAR(d[1].t_recv, 6 * w / c + 0.001, kExact);
  EXPECT_NEAR(d[0].t_recv, 7 * w / c + forwarded(4'000'000, {c, c}) + 0.006, kExact);  // alone at the end
}

TEST(FlowNetwork, StaggeredStartsShareByWhoIsThere) {
  // Three 2 MB flows into host 3 of a star (hosts 0, 1, 2 each over their own link to the
  // hub, then the hub's one 100 Mbps link to host 3; 1.5 ms a hop), sent at 0, 50 ms and 100 ms. A alone until
  // tb, A and B at c/2 until tc, then all three at c/3. At tc A has W - c tb - c/2 (tc - tb)
  // left, the least, so it ends first at TA = tc + 3 RA / c; B then has RB = W - c/2 (tc - tb)
  // - RA left and shares with C at c/2: TB = TA + 2 RB / c; C ends alone: TC = TB + (W - RA - RB) / c.
  const double c = 1e8, tb = 0.05, tc = 0.1, w = wire_bits(2'000'000);
  const auto d = simulate_flow(make("star", 4, c, 0.0015),
                               {{0, {0, 0, 3, 2'000'000}}, {tb, {1, 1, 3, 2'000'000}}, {tc, {2, 2, 3, 2'000'000}}});
  const double ra = w - c * tb - c / 2 * (tc - tb);
  const double ta = tc + 3 * ra / c;
  const double rb = w - c / 2 * (tc - tb) - ra;
  const double tb_end = ta + 2 * rb / c;
  const double tc_end = tb_end + (w - ra - rb) / c;
  EXPECT_NEAR(d[0].t_recv, ta + 0.003, kExact);
  EXPECT_NEAR(d[1].t_recv, tb_end + 0.003, kExact);
  EXPECT_NEAR(d[2].t_recv, tc_end + forwarded(2'000'000, {c}) + 0.003, kExact);  // C ends alone: on at the hub
}

TEST(FlowNetwork, APairsMessagesGoOneAfterAnother) {
  // Line 0-1-2, 100 Mbps, no latency but 5 ms on 1-2. A and B (1->2, 1 MB each, one
  // connection) and C (0->2, 2 MB), all sent at 0. A and C share 1->2 at c/2 until A's last
  // bit at 2W/c; then B starts and shares with C, which has W left: both end at 4W/c.
  // Slips caught: a pair's queued messages sharing the link among themselves (A and B at
  // c/3, both at 3W/c), B's send time taken as its start rather than its send() call.
  const double c = 1e8, w = wire_bits(1'000'000);
  const auto t = make("line", 3, c, 0.0, {{1, 2, -1, 0.005, -1}});
  const auto d = simulate_flow(t, {{0, {0, 1, 2, 1'000'000}}, {0, {1, 1, 2, 1'000'000}}, {0, {2, 0, 2, 2'000'000}}});
  EXPECT_NEAR(d[0].t_recv, 2 * w / c + 0.005, kExact);
  EXPECT_NEAR(d[1].t_recv, 4 * w / c + 0.005, kExact);
  EXPECT_NEAR(d[1].t_send, 0.0, kExact);
  EXPECT_NEAR(d[2].t_recv, 4 * w / c + 0.005, kExact);
}

// A pair's messages arrive in the order they were sent: line 0-1-2 at 100 Mbps, no latency,
// A (8948 bytes, one full segment) then B (4 bytes) and C (empty) from 0 to 2, all at 0. A's
// last bit crosses 0-1 at 9002 x 8 / c and its packet is forwarded at 1-2 in as long again; B
// crosses 0-1 just after A but its 58-byte packet would reach 2 in 4.6 us, long before A's:
// B and C are delivered with A, at 2 x 9002 x 8 / c. Slip caught: arrivals not kept in order
// (B at about 725 us, C at 720 us, both before A at 1440 us).
TEST(FlowNetwork, APairsMessagesArriveInTheOrderSent) {
  const double c = 1e8;
  const auto t = make("line", 3, c, 0.0, {});
  const auto d = simulate_flow(t, {{0, {0, 0, 2, 8948}}, {0, {1, 0, 2, 4}}, {0, {2, 0, 2, 0}}});
  const double a = 2 * 9002 * 8 / c;
  EXPECT_NEAR(d[0].t_recv, a, kExact);
  EXPECT_NEAR(d[1].t_recv, a, kExact);
  EXPECT_NEAR(d[2].t_recv, a, kExact);
}

TEST(FlowNetwork, LatencyIsTheRouteSumPaidOnceAfterTheLastBit) {
  // Line 0-1-2-3 with latencies 1, 4 and 9 ms: 0->3 and 3->0 at once do not share (full
  // duplex) and each arrives W / c + 14 ms after it was sent, its last packet forwarded at the
  // two later hops; an empty message takes 14 ms.
  const double c = 1e8;
  const auto t = make("line", 4, c, 0.0, {{0, 1, -1, 0.001, -1}, {1, 2, -1, 0.004, -1}, {2, 3, -1, 0.009, -1}});
  const auto d = simulate_flow(t, {{0, {0, 0, 3, 3'000'000}}, {0, {1, 3, 0, 3'000'000}}, {0.5, {2, 0, 3, 0}}});
  EXPECT_NEAR(d[0].t_recv, wire_bits(3'000'000) / c + 2 * 2474 * 8 / c + 0.014, kExact);
  EXPECT_NEAR(d[1].t_recv, wire_bits(3'000'000) / c + forwarded(3'000'000, {c, c}) + 0.014, kExact);
  EXPECT_NEAR(d[2].t_recv, 0.5 + 0.014, kExact);
}

// Store-and-forward counts only after the hop that holds the rate. Line 0-1-2-3 at 100, 10 and
// 100 Mbps, no latency: 1 MB from 0 to 3 is held by 1-2, so its last bit crosses at W / 10 Mbps
// and its last packet (6826 bytes) is then forwarded at 2-3 alone: 546.08 us. 8950 bytes are a
// segment of 8948 and a last of 2, forwarded as a 56-byte packet. Slips caught: forwarding at every hop but the
// first (+5.46 ms at 1-2), a whole MTU packet instead of the last segment (+174 us), the
// segment counted without its headers.
TEST(FlowNetwork, StoreAndForwardAfterTheHopThatHoldsTheRate) {
  const auto t = make("line", 4, 1e8, 0.0, {{1, 2, 1e7, -1, -1}});
  const auto d = simulate_flow(t, {{0, {0, 0, 3, 1'000'000}}, {1, {1, 0, 3, 8'950}}});
  EXPECT_NEAR(d[0].t_recv, wire_bits(1'000'000) / 1e7 + 6826 * 8 / 1e8, kExact);
  EXPECT_NEAR(d[1].t_recv - d[1].t_send, wire_bits(8'950) / 1e7 + 56 * 8 / 1e8, kExact);
}

// ---- RTT-weighted sharing (FlowSharing::Rtt) ------------------------------------------------
// The RTT of flow_network.h, written out: per hop, both ways' latency, one MTU data packet
// (mtu + 2 bytes) at the forward rate and one bare ACK (52 + 2 bytes) at the reverse rate.
struct Hop {
  double latency, forward_bps, reverse_bps;
};
double base_rtt(const std::vector<Hop>& route) {
  double rtt = 0;
  for (const auto& h : route) rtt += 2 * h.latency + 9002 * 8 / h.forward_bps + 54 * 8 / h.reverse_bps;
  return rtt;
}

TEST(FlowNetwork, RttSharingSplitsALinkInInverseRatioOfRtts) {
  // Line 0-1-2: A (0->2) and B (1->2) share 1->2. Weighted max-min on one link: rate_i =
  // c (1/R_i) / (1/R_A + 1/R_B), so r_A = c R_B / (R_A + R_B), r_B = c R_A / (R_A + R_B)
  // (0->1 carries A alone and does not bind). Equal sizes: B ends at W / r_B, then A runs
  // alone at c: T_A = T_B + (W - r_A T_B) / c.
  // Zero latency: both hops are alike, R_A = 2 R_B exactly, so A gets c/3 and B 2c/3.
  {
    const double c = 1e8, w = wire_bits(5'000'000);
    const auto d = simulate_flow(make("line", 3, c, 0.0), {{0, {0, 0, 2, 5'000'000}}, {0, {1, 1, 2, 5'000'000}}},
                                 FlowSharing::Rtt);
    const double tb = w / (2 * c / 3);
    EXPECT_NEAR(d[1].t_recv, tb, kExact);
    EXPECT_NEAR(d[0].t_recv, tb + (w - c / 3 * tb) / c + forwarded(5'000'000, {c}), kExact);  // A ends alone
  }
  // 20 ms then 5 ms, and 1->2's reverse direction at 10 Mbps (only ACKs use it), so the
  // ACK's serialisation counts and must be taken at the reverse rate. Slips caught: weight
  // RTT instead of 1/RTT, one-way latency only, the ACK term left out or taken forward,
  // the data packet without its 2-byte link header.
  {
    const double c = 1e8, w = wire_bits(5'000'000);
    const auto t = make("line", 3, c, 0.0, {{0, 1, c, 0.020, -1}, {1, 2, c, 0.005, -1, 1e7}});
    const double ra_rtt = base_rtt({{0.020, c, c}, {0.005, c, 1e7}}), rb_rtt = base_rtt({{0.005, c, 1e7}});
    const double ra = c * rb_rtt / (ra_rtt + rb_rtt), rb = c * ra_rtt / (ra_rtt + rb_rtt);
    const auto d = simulate_flow(t, {{0, {0, 0, 2, 5'000'000}}, {0, {1, 1, 2, 5'000'000}}}, FlowSharing::Rtt);
    const double tb = w / rb;
    EXPECT_NEAR(d[1].t_recv, tb + 0.005, kExact);
    EXPECT_NEAR(d[0].t_recv, tb + (w - ra * tb) / c + forwarded(5'000'000, {c}) + 0.025, kExact);
  }
}

TEST(FlowNetwork, RttSharingParkingLotMovesTheLongFlowsBottleneck) {
  // Parking lot of 3 links at 100 Mbps with latencies 2, 10, 30 ms; short flow i crosses link
  // i alone (RTT R_i), the long flow all three (RTT R = R_0 + R_1 + R_2). On link i, at fill
  // level x, the long flow asks x / R and short i asks x / R_i: link i saturates at
  // x_i = c / (1/R_i + 1/R), lowest on the link with the shortest RTT. So the long flow is
  // held by the unfinished link of shortest RTT j, at l_j = c R_j / (R_j + R), and every
  // short flow fills its link to c - l_j. Sizes 1, 2, 3 MB (shorts) and 3 MB (long):
  //  T1 = W0 / (c - l_0)                                  short 0 ends
  //  T2 = T1 + (W1 - (c - l_0) T1) / (c - l_1)            short 1 ends
  //  T3 = T2 + (W2 - (c - l_0) T1 - (c - l_1)(T2 - T1)) / (c - l_2)   short 2 ends
  //  T4 = T3 + (WL - l_0 T1 - l_1 (T2 - T1) - l_2 (T3 - T2)) / c      long ends alone
  // Slips caught: freezing the long flow at another link's level; plain max-min here (c/2).
  const double c = 1e8;
  const std::vector<double> lat = {0.002, 0.010, 0.030};
  const auto t = make("line", 4, c, 0.0, {{0, 1, -1, lat[0], -1}, {1, 2, -1, lat[1], -1}, {2, 3, -1, lat[2], -1}});
  std::vector<double> r(3), l(3);
  for (int i = 0; i < 3; ++i) r[i] = base_rtt({{lat[i], c, c}});
  const double rl = r[0] + r[1] + r[2];
  for (int i = 0; i < 3; ++i) l[i] = c * r[i] / (r[i] + rl);
  const double w0 = wire_bits(1'000'000), w1 = wire_bits(2'000'000), w2 = wire_bits(3'000'000),
               wl = wire_bits(3'000'000);
  const double t1 = w0 / (c - l[0]);
  const double t2 = t1 + (w1 - (c - l[0]) * t1) / (c - l[1]);
  const double t3 = t2 + (w2 - (c - l[0]) * t1 - (c - l[1]) * (t2 - t1)) / (c - l[2]);
  const double left = wl - l[0] * t1 - l[1] * (t2 - t1) - l[2] * (t3 - t2);
  ASSERT_GT(left, 0);  // the long flow outlasts the shorts, as the phases assume
  const double t4 = t3 + left / c;
  const auto d = simulate_flow(
      t, {{0, {0, 0, 3, 3'000'000}}, {0, {1, 0, 1, 1'000'000}}, {0, {2, 1, 2, 2'000'000}}, {0, {3, 2, 3, 3'000'000}}},
      FlowSharing::Rtt);
  EXPECT_NEAR(d[1].t_recv, t1 + lat[0], kExact);
  EXPECT_NEAR(d[2].t_recv, t2 + lat[1], kExact);
  EXPECT_NEAR(d[3].t_recv, t3 + lat[2], kExact);
  EXPECT_NEAR(d[0].t_recv, t4 + forwarded(3'000'000, {c, c}) + lat[0] + lat[1] + lat[2], kExact);
}

// The parking lot where max-min was found to miss TCP's RTT bias: a line of 4 hosts, 100 Mbps and 10 ms per
// link, a long flow 0->3 and short flows 0->1, 1->2, 2->3, 10 MB each, all sent at t = 0
// (ns-3 with its defaults: NewReno, MTU 9000, 1.5 bdp queues). Short RTT 20.7 ms, long 62.2 ms.
// Fluid times (tested exactly above): max-min shares every link 1:1, so the shorts end at
// 2W/c + 10 ms = 1.620 s; 1/RTT weights split it 3:1, the shorts end at W / 0.75c + 10 ms =
// 1.083 s; under both the long flow ends at 2W/c + 30 ms = 1.640 s.
// Measured: ns-3 shorts 1.223-1.236 s, long 1.984 s. The target of every time within 10 % of
// ns-3 is NOT met: rtt puts the shorts 11.5-12.3 % early and the long flow 17.3 % early
// (max-min: shorts 31-32 % late). The gap is not the sharing rule: alone on the same idle
// links ns-3 takes 0.915 s for a 10 MB short and 1.306 s for the long (fluid: 0.815 and
// 0.835 s): the handshake and slow start, which the fluid model leaves out, and likely the
// losses of slow start's overshoot (each queue is 1.5 x its link's BDP, half the long flow's;
// not traced packet by packet). After the shorts leave, the long flow's congestion window
// fills the links at ~62 Mbps, not 100. While all four compete, ns-3's shorts carry ~70 %
// of each link, near 1/RTT's 75 % and far from max-min's 50 %.
TEST(FlowNetwork, RttSharingAgainstPacketLevelOnTheParkingLot) {
  const uint64_t bytes = 10'000'000;
  const auto t = make("line", 4, 1e8, 0.01);
  const std::vector<Message> lot = {{0, 0, 3, bytes}, {1, 0, 1, bytes}, {2, 1, 2, bytes}, {3, 2, 3, bytes}};
  std::vector<Timed> sends;
  for (const auto& m : lot) sends.push_back({0, m});
  const auto maxmin = simulate_flow(t, sends, FlowSharing::MaxMin);
  const auto rtt = simulate_flow(t, sends, FlowSharing::Rtt);
  const auto ns3 = simulate(false, t, lot);
  const char* names[] = {"long 0->3", "short 0->1", "short 1->2", "short 2->3"};
  for (int i = 0; i < 4; ++i) {
    std::printf("parking lot %-10s  ns3 %.4f s  flow maxmin %.4f s (%+.1f %%)  flow rtt %.4f s (%+.1f %%)\n", names[i],
                ns3[i].t_recv, maxmin[i].t_recv, 100 * (maxmin[i].t_recv / ns3[i].t_recv - 1), rtt[i].t_recv,
                100 * (rtt[i].t_recv / ns3[i].t_recv - 1));
  }
  for (int i = 1; i < 4; ++i) {
    SCOPED_TRACE(names[i]);
    // 1/RTT weighting is what moves the shorts toward ns-3: at least halves max-min's error.
    EXPECT_LT(std::abs(rtt[i].t_recv - ns3[i].t_recv), std::abs(maxmin[i].t_recv - ns3[i].t_recv) / 2);
    // The measured 11.5-12.3 %, bounded at 15 % so a change in either backend shows (10 % is not met).
    EXPECT_NEAR(rtt[i].t_recv / ns3[i].t_recv, 1.0, 0.15);
  }
  // The long flow: the same fluid time under both rules, 17.3 % early (TCP's transients above).
  EXPECT_NEAR(rtt[0].t_recv / ns3[0].t_recv, 1.0, 0.2);

  // Why no sharing rule reaches 10 %: each flow alone on the idle links already takes ns-3
  // more than 10 % over its fluid time W / c + latency.
  for (int i : {0, 1}) {
    const auto alone = simulate(false, t, {{0, lot[i].src, lot[i].dst, bytes}});
    const double fluid = wire_bits(bytes) / 1e8 + 0.01 * (lot[i].dst - lot[i].src);
    std::printf("parking lot %-10s alone: ns3 %.4f s, fluid %.4f s\n", names[i], alone[0].t_recv, fluid);
    EXPECT_GT(alone[0].t_recv, 1.1 * fluid) << names[i];
  }

  // The share while all four compete, from ns-3 with each message cut into 250 KB pieces (one
  // connection per pair delivers them in order): how much the long flow had delivered when
  // the last short finished. Closer to 1/RTT's 3:1 than to max-min's 1:1.
  const int pieces = 40;
  std::vector<Message> cut;
  for (const auto& m : lot)
    for (int p = 0; p < pieces; ++p) cut.push_back({cut.size(), m.src, m.dst, bytes / pieces});
  const auto progress = simulate(false, t, cut);
  double shorts_done = 0;
  for (int i = pieces; i < 4 * pieces; ++i) shorts_done = std::max(shorts_done, progress[i].t_recv);
  int long_pieces = 0;
  for (int p = 0; p < pieces; ++p) long_pieces += progress[p].t_recv <= shorts_done;
  const double short_share = 1.0 * pieces / (pieces + long_pieces);
  std::printf(
      "parking lot: ns3 shorts done at %.4f s (whole messages %.4f s), the long flow had %d of %d pieces: "
      "short share %.3f (1/RTT 0.75, max-min 0.5)\n",
      shorts_done, std::max({ns3[1].t_recv, ns3[2].t_recv, ns3[3].t_recv}), long_pieces, pieces, short_share);
  EXPECT_GT(short_share, 0.625);
}

// The component solve against the global one (flow_network.h: FlowSolve) over generated
// traffic: random topologies, pairs, sizes (some empty) and send times, messages queued on a
// busy pair, and the collectives' plans run back to back with ranks entering at scattered
// times. Both solve the same max-min allocation, so every delivery time agrees within 1e-9
// relative, and the links carry the same bytes. Slips caught: a component that misses a flow
// sharing a link further along (its rates go stale), a departure not re-solving its
// neighbours, a flow's progress not brought forward before its rate changes.
struct Generated {
  std::vector<Delivery> deliveries;
  LinkBytes links;
};

Generated run_generated(const Topology& topology, const std::vector<Timed>& sends, FlowSolve solve,
                        FlowSharing sharing) {
  Generated out;
  out.deliveries.resize(sends.size());
  EventClock clock;
  {
    auto network = make_flow_network(clock, topology, 9000, sharing, {}, solve);
    for (const auto& s : sends)
      clock.schedule(s.at, [&, m = s.message] {
        network->send(m, [&](const Delivery& d) { out.deliveries.at(d.message.id) = d; });
      });
    clock.run();
    out.links = network->link_bytes();
  }
  return out;
}

TEST(FlowNetwork, ComponentSolveEqualsGlobalSolveOnGeneratedTraffic) {
  std::mt19937_64 rng(47);
  const std::vector<std::pair<std::string, int>> kinds = {
      {"fat_tree", 16}, {"ring", 8}, {"star", 6}, {"line", 5}, {"mesh", 5}, {"gpu_hosts", 16}, {"torus2d", 9}};
  int compared = 0;
  for (int trial = 0; trial < 28; ++trial) {
    const auto& [kind, hosts] = kinds[trial % kinds.size()];
    TopologySpec spec;
    spec.kind = topology_kind(kind);
    spec.hosts = hosts;
    spec.fat_tree_k = 4;
    spec.link = {1e9 * (1 + rng() % 10), 1e-6 * (rng() % 50), 0};
    const Topology t = build_topology(spec);
    std::vector<Timed> sends;
    const int n = 20 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      Timed s;
      s.at = (rng() % 4 == 0) ? 0.0 : 1e-4 * (rng() % 200);  // many at once, the rest scattered
      s.message.id = static_cast<uint64_t>(i);
      s.message.src = static_cast<int>(rng() % hosts);
      s.message.dst = static_cast<int>(rng() % hosts);
      s.message.bytes = (rng() % 10 == 0) ? 0 : 1000 + rng() % 3'000'000;
      sends.push_back(s);
    }
    const FlowSharing sharing = trial % 3 == 2 ? FlowSharing::Rtt : FlowSharing::MaxMin;
    const Generated component = run_generated(t, sends, FlowSolve::Component, sharing);
    const Generated global = run_generated(t, sends, FlowSolve::Global, sharing);
    SCOPED_TRACE(kind + " trial " + std::to_string(trial));
    for (size_t i = 0; i < sends.size(); ++i) {
      const double a = component.deliveries[i].t_recv, b = global.deliveries[i].t_recv;
      EXPECT_NEAR(a, b, 1e-9 * std::max(1.0, std::fabs(b))) << "message " << i;
      EXPECT_EQ(component.deliveries[i].message.id, i);
      ++compared;
    }
    EXPECT_EQ(component.links, global.links);
  }
  EXPECT_GT(compared, 28 * 20);
}

}  // namespace
}  // namespace flow_network
}  // namespace testbed
