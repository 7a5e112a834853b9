// Tests for the ns-3 backend's links: BDP-sized queues, asymmetric rates (all three backends), faults, loss models.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "netmodels/alpha_beta.h"
#include "netmodels/analytical_network.h"
#include "netmodels/event_clock.h"
#include "netmodels/flow_network.h"
#include "netmodels/ns3/ns3_network.h"
#include "topologies/builders.h"
#include "topologies/routing.h"

namespace testbed {
namespace ns3_links {  // its own names: network_tests compiles as one unity file
namespace {

constexpr double kLatency = 0.010;
constexpr int kMtu = 9000;

// A message and the time it is handed to the network.
struct Timed {
  double at = 0;
  Message message;
};

// Runs the messages on `make(clock)` and returns the deliveries in the order they happened.
template <class Make>
std::vector<Delivery> simulate(Make make, const std::vector<Timed>& messages) {
  std::vector<Delivery> out;
  EventClock clock;
  {
    auto network = make(clock);
    for (const auto& t : messages)
      clock.schedule(t.at, [&, m = t.message] { network->send(m, [&](const Delivery& d) { out.push_back(d); }); });
    clock.run();
  }
  return out;
}

const Delivery& find(const std::vector<Delivery>& deliveries, uint64_t id) {
  auto it = std::find_if(deliveries.begin(), deliveries.end(), [&](const Delivery& d) { return d.message.id == id; });
  if (it == deliveries.end()) throw std::runtime_error("message " + std::to_string(id) + " was not delivered");
  return *it;
}

// Line 0 - 1 - 2 whose second link (1 -> 2) is the bottleneck, so a bulk flow 0 -> 2 keeps the
// queue of host 1's device towards 2 full; a small message 1 -> 2 waits behind that queue.
double probe_delay(const Ns3Options& options) {
  TopologySpec spec;
  spec.kind = TopologyKind::Line;
  spec.hosts = 3;
  spec.link = {100e6, kLatency, 0};
  LinkOverride slow;
  slow.a = 1, slow.b = 2, slow.bandwidth_bps = 50e6;
  spec.overrides = {slow};
  const Topology topology = build_topology(spec);
  // Message 2 opens the 1 -> 2 connection early, so the probe (3) pays no handshake.
  const auto d = simulate([&](EventClock& c) { return make_ns3_network(c, topology, options); },
                          {{0, {1, 0, 2, 20'000'000}}, {0, {2, 1, 2, 100}}, {0.5, {3, 1, 2, 1000}}});
  const Delivery& probe = find(d, 3);
  return probe.t_recv - probe.t_send;
}

TEST(Ns3Links, BdpQueueBoundsQueueingDelay) {
  // The queue of a 50 Mbps, 10 ms link: 1.5 BDP = 1.5 x 50e6 / 8 x 0.020 = 187 500 bytes, above
  // the floor of 16 packets of 9002 bytes (MTU + PPP header) = 144 032 bytes. The probe waits
  // at most for a full queue, the packet on the wire and its own 1054 bytes, then the latency.
  const double queue_bytes = std::max(1.5 * 50e6 / 8 * 2 * kLatency, 16.0 * (kMtu + 2));
  const double worst = kLatency + (queue_bytes + kMtu + 2 + 1054) * 8 / 50e6;
  const double bdp_delay = probe_delay({});
  Ns3Options old;
  old.queue_packets = 1000;  // the former default: 9 MB of queue, 1.4 s at 50 Mbps
  const double old_delay = probe_delay(old);
  std::printf("probe behind a bulk flow: %.1f ms with a 1.5 BDP queue (bound %.1f ms), %.1f ms with 1000 packets\n",
              bdp_delay * 1e3, worst * 1e3, old_delay * 1e3);
  EXPECT_GE(bdp_delay, kLatency);
  EXPECT_LE(bdp_delay, worst * 1.02);
  EXPECT_GT(old_delay, 3 * worst);  // the probe does see the queue: a big one delays it more
}

TEST(Ns3Links, QueueBytesAreHonoured) {
  // 4 times the default queue: the probe may wait up to four times as long behind it.
  Ns3Options big;
  big.queue_bytes = 4 * 187'500;
  const double delay = probe_delay(big);
  const double worst = kLatency + (4 * 187'500 + kMtu + 2 + 1054) * 8 / 50e6;
  const double default_worst = kLatency + (187'500 + kMtu + 2 + 1054) * 8 / 50e6;
  EXPECT_LE(delay, worst * 1.02);
  EXPECT_GT(delay, default_worst);
}

// Two hosts joined by a link of `forward` bps from 0 to 1 and `reverse` back.
Topology asymmetric_pair(double forward, double reverse) {
  TopologySpec spec;
  spec.kind = TopologyKind::Line;
  spec.hosts = 2;
  spec.link = {forward, kLatency, 0};
  LinkOverride o;
  o.a = 0, o.b = 1, o.bandwidth_bps = forward, o.reverse_bandwidth_bps = reverse;
  spec.overrides = {o};
  return build_topology(spec);
}

TEST(AsymmetricLinks, RoutingUsesTheDirectionsRate) {
  const Topology t = asymmetric_pair(100e6, 10e6);
  EXPECT_DOUBLE_EQ(path_properties(t, 0, 1).bottleneck_bps, 100e6);
  EXPECT_DOUBLE_EQ(path_properties(t, 1, 0).bottleneck_bps, 10e6);
}

TEST(AsymmetricLinks, OverrideNamedBackwardsSwapsDirections) {
  TopologySpec spec;
  spec.kind = TopologyKind::Line;
  spec.hosts = 2;
  LinkOverride o;
  o.a = 1, o.b = 0, o.bandwidth_bps = 40e6, o.reverse_bandwidth_bps = 4e6;  // 1 -> 0 at 40 Mbps
  spec.overrides = {o};
  const Topology t = build_topology(spec);
  EXPECT_DOUBLE_EQ(path_properties(t, 1, 0).bottleneck_bps, 40e6);
  EXPECT_DOUBLE_EQ(path_properties(t, 0, 1).bottleneck_bps, 4e6);
}

// Each direction of a 100 / 10 Mbps link carries 10 MB in its own rate's alpha-beta time.
template <class Make>
void each_direction_at_its_rate(Make make, double tolerance) {
  const double rate[2] = {100e6, 10e6};
  const Topology t = asymmetric_pair(rate[0], rate[1]);
  constexpr uint64_t kBytes = 10'000'000;
  for (int from = 0; from < 2; ++from) {
    const auto d = simulate([&](EventClock& c) { return make(c, t); }, {{0, {1, from, 1 - from, kBytes}}});
    ASSERT_EQ(d.size(), 1u);
    const double took = d[0].t_recv - d[0].t_send;
    const double bound = alpha_beta::point_to_point(kLatency, 8 / rate[from], kBytes);
    std::printf("10 MB %d -> %d at %g Mbps: %.4f s, bound %.4f s\n", from, 1 - from, rate[from] / 1e6, took, bound);
    EXPECT_GE(took, bound * 0.999);
    EXPECT_LE(took, bound * (1 + tolerance));
  }
}

TEST(AsymmetricLinks, Ns3EachDirectionAtItsRate) {
  // TCP's handshake (one round trip) and slow start on top of the bound: 15 %.
  each_direction_at_its_rate([](EventClock& c, const Topology& t) { return make_ns3_network(c, t, {}); }, 0.15);
}

TEST(AsymmetricLinks, FlowEachDirectionAtItsRate) {
  // Headers only: (9000 + 2) / 8948 of the payload.
  each_direction_at_its_rate([](EventClock& c, const Topology& t) { return make_flow_network(c, t, kMtu); }, 0.01);
}

TEST(AsymmetricLinks, AnalyticalEachDirectionAtItsRate) {
  each_direction_at_its_rate([](EventClock& c, const Topology& t) { return make_analytical_network(c, t); }, 1e-9);
}

TEST(StaticLinks, LossMakesLinksVary) {
  TopologySpec spec;
  spec.kind = TopologyKind::Ring;
  spec.hosts = 3;
  EXPECT_TRUE(static_links(build_topology(spec), {}));
  spec.link.loss = 0.01;
  EXPECT_FALSE(static_links(build_topology(spec), {}));
}

// A ring of 4 hosts, 100 Mbps / 10 ms links, with `faults`.
Topology ring4() {
  TopologySpec spec;
  spec.kind = TopologyKind::Ring;
  spec.hosts = 4;
  spec.link = {100e6, kLatency, 0};
  return build_topology(spec);
}

std::vector<Delivery> with_faults(const Topology& t, const std::vector<Fault>& faults,
                                  const std::vector<Timed>& messages) {
  Ns3Options options;
  options.faults = faults;
  return simulate([&](EventClock& c) { return make_ns3_network(c, t, options); }, messages);
}

TEST(Faults, RingReroutesAroundACutLink) {
  // Link 0-1 is down from the start, so 0 reaches 1 the other way round: 3 hops of 10 ms.
  // A new connection costs SYN, SYN-ACK and the data: three one-way trips of 30 ms.
  const auto d = with_faults(ring4(), {{0, 1, -1, 0.0, 100.0}}, {{1.0, {1, 0, 1, 1000}}});
  const double took = find(d, 1).t_recv - 1.0;
  const double expected = 3 * 3 * kLatency;
  std::printf("0 -> 1 around the cut: %.2f ms (three trips over 3 hops: %.2f ms)\n", took * 1e3, expected * 1e3);
  EXPECT_GE(took, expected);
  EXPECT_LE(took, expected + 0.002);  // serialization of three small packets on three hops
}

TEST(Faults, TransferInFlightMovesToTheOtherPath) {
  const auto clean = with_faults(ring4(), {}, {{0, {1, 0, 1, 10'000'000}}});
  const auto cut = with_faults(ring4(), {{0, 1, -1, 0.2, 100.0}}, {{0, {1, 0, 1, 10'000'000}}});
  const double t_clean = find(clean, 1).t_recv, t_cut = find(cut, 1).t_recv;
  std::printf("10 MB 0 -> 1, link cut at 0.2 s: %.3f s (uncut %.3f s)\n", t_cut, t_clean);
  EXPECT_GT(t_cut, t_clean);
  // Long before the link returns: the remaining bytes take the 3-hop path after an RTO or a
  // few; 5 s is several times the 0.8 s of serialization plus a backoff of seconds.
  EXPECT_LT(t_cut, 5.0);
}

TEST(Faults, OnlyLinkDownWaitsForItsReturn) {
  TopologySpec spec;
  spec.kind = TopologyKind::Line;
  spec.hosts = 2;
  spec.link = {100e6, kLatency, 0};
  const Topology t = build_topology(spec);
  // Message 1 opens the connection before the cut; message 2 is sent while it is down.
  const auto d = with_faults(t, {{0, 1, -1, 0.5, 3.0}}, {{0, {1, 0, 1, 100}}, {1.0, {2, 0, 1, 1'000'000}}});
  const double arrival = find(d, 2).t_recv;
  std::printf("1 MB sent at 1 s over a link down from 0.5 s to 3 s: arrives at %.3f s\n", arrival);
  EXPECT_LT(find(d, 1).t_recv, 0.5);
  EXPECT_GT(arrival, 3.0);
  // RTOs double from 200 ms: the first retransmission after 3 s comes at most one backoff
  // (the outage's length, 2 s from the send) later.
  EXPECT_LT(arrival, 3.0 + 2 * (3.0 - 1.0) + 1.0);
}

TEST(Faults, NodeDownCutsAllItsLinks) {
  // Node 1 is down from 0.5 s to 2 s; a message to it sent at 1 s arrives after 2 s, while one
  // from 0 to 2 (which may route through 1) arrives on time by the other side.
  const auto d = with_faults(ring4(), {{-1, -1, 1, 0.5, 2.0}}, {{1.0, {1, 0, 1, 1000}}, {1.0, {2, 0, 2, 1000}}});
  EXPECT_GT(find(d, 1).t_recv, 2.0);
  EXPECT_LT(find(d, 2).t_recv, 1.0 + 3 * 2 * kLatency + 0.002);
}

TEST(StaticLinks, FaultMakesLinksVary) {
  Ns3Options options;
  options.faults = {{0, 1, -1, 1.0, 2.0}};
  EXPECT_FALSE(static_links(ring4(), options));
}

// The stationary loss of a Gilbert-Elliott chain: the bad state holds p / (p + r) of the time.
double stationary_loss(double p, double r, double loss_good, double loss_bad) {
  const double bad = p / (p + r);
  return (1 - bad) * loss_good + bad * loss_bad;
}

TEST(LossModels, GilbertElliottDropsItsStationaryLoss) {
  constexpr int kPackets = 1'000'000;
  for (const auto& [p, r, good, bad] :
       std::vector<std::array<double, 4>>{{0.01, 0.25, 0, 1}, {0.05, 0.5, 0.001, 0.5}}) {
    LinkSpec link;
    link.gilbert_elliott = true;
    link.p_good_bad = p, link.p_bad_good = r, link.loss = good, link.loss_bad = bad;
    const double expected = stationary_loss(p, r, good, bad);
    const double measured = ns3_drop_fraction(link, kPackets, 7);
    // Successive packets are correlated (the chain's second eigenvalue 1 - p - r), which
    // widens the binomial standard error by sqrt((1 + l) / (1 - l)); allow 5 of those.
    const double l = 1 - p - r;
    const double sigma = std::sqrt(expected * (1 - expected) / kPackets * (1 + l) / (1 - l));
    std::printf("Gilbert-Elliott p=%g r=%g: dropped %.5f, stationary %.5f (sigma %.5f)\n", p, r, measured, expected,
                sigma);
    EXPECT_NEAR(measured, expected, 5 * sigma);
    EXPECT_DOUBLE_EQ(link.mean_loss(), expected);
  }
}

TEST(LossModels, GilbertElliottSlowsTcpLikeLoss) {
  TopologySpec spec;
  spec.kind = TopologyKind::Line;
  spec.hosts = 2;
  spec.link = {100e6, kLatency, 0};
  const Topology clean = build_topology(spec);
  spec.link.gilbert_elliott = true;
  // Bad spells of 1 / 0.5 = 2 packets losing half: 0.02 / 0.52 x 0.5 = 1.9 % of packets lost;
  // NewReno's rate falls well below the link's (Mathis: 1.22 MSS / (RTT sqrt(p)) ~ 31 Mbps for
  // independent loss at that rate, against 100).
  spec.link.p_good_bad = 0.02, spec.link.p_bad_good = 0.5, spec.link.loss_bad = 0.5;
  const Topology bursty = build_topology(spec);
  auto run = [](const Topology& t) {
    return simulate([&](EventClock& c) { return make_ns3_network(c, t, {}); }, {{0, {1, 0, 1, 10'000'000}}});
  };
  const double t_bursty = find(run(bursty), 1).t_recv, t_clean = find(run(clean), 1).t_recv;
  std::printf("10 MB with 1.9 %% bursty loss: %.3f s (clean %.3f s)\n", t_bursty, t_clean);
  EXPECT_GT(t_bursty, 1.5 * t_clean);
  EXPECT_FALSE(static_links(bursty, {}));
}

}  // namespace
}  // namespace ns3_links
}  // namespace testbed
