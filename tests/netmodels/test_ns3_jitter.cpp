// Tests for per-link jitter in the ns-3 backend: the delay's range and mean, FIFO order, seeding.
#include <gtest/gtest.h>

#include <ns3/net-device-container.h>
#include <ns3/node-container.h>
#include <ns3/packet.h>
#include <ns3/simulator.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "netmodels/event_clock.h"
#include "netmodels/ns3/ns3_jitter.h"
#include "netmodels/ns3/ns3_links.h"
#include "netmodels/ns3/ns3_network.h"
#include "topologies/builders.h"

namespace testbed {
namespace ns3_jitter {  // its own names: network_tests compiles as one unity file
namespace {

constexpr double kRate = 100e6;
constexpr double kLatency = 0.010;
constexpr int kPayload = 100;   // bytes handed to the device
constexpr int kPppHeader = 2;   // bytes the point-to-point device adds
constexpr double kTick = 1e-9;  // ns-3's time resolution: a drawn delay rounds to it

struct Arrival {
  uint64_t uid = 0;
  double t = 0;
};

// Two bare nodes joined by a jittery link; sends `packets` packets of kPayload bytes from node
// 0, the i-th at i x `spacing` seconds, and returns their arrivals at node 1 in arrival order.
std::vector<Arrival> send_over_jitter_link(double jitter_s, int packets, double spacing, int64_t stream) {
  using namespace ns3;
  std::vector<Arrival> arrivals;
  {
    NodeContainer nodes;
    nodes.Create(2);
    LinkSpec link;
    link.bandwidth_bps = kRate;
    link.latency_s = kLatency;
    link.jitter_s = jitter_s;
    NetDeviceContainer devices = install_jitter_link(nodes.Get(0), nodes.Get(1), link, 1500);
    configure_link_devices(devices, 0, 1, link, Ns3Options{}, stream);
    Ptr<NetDevice> from = devices.Get(0), to = devices.Get(1);
    to->TraceConnectWithoutContext("MacRx", MakeCallback(+[](std::vector<Arrival>* out, Ptr<const Packet> p) {
                                              out->push_back({p->GetUid(), Simulator::Now().GetSeconds()});
                                            }).Bind(&arrivals));
    for (int i = 0; i < packets; ++i) {
      Simulator::Schedule(Seconds(i * spacing),
                          [from, to] { from->Send(Create<Packet>(kPayload), to->GetAddress(), 0x0800); });
    }
    Simulator::Run();
  }
  Simulator::Destroy();
  return arrivals;
}

TEST(Jitter, OneWayTimeIsUniformOverTheJitter) {
  constexpr double kJitter = 0.002;
  constexpr int kPackets = 4000;
  // Spaced wider than the jitter, so that no packet waits for the one before it.
  constexpr double kSpacing = 0.005;
  const auto arrivals = send_over_jitter_link(kJitter, kPackets, kSpacing, 7);
  ASSERT_EQ(arrivals.size(), static_cast<size_t>(kPackets));
  const double serialization = (kPayload + kPppHeader) * 8 / kRate;
  const double base = kLatency + serialization;
  double sum = 0, lowest = 1, highest = 0;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    const double one_way = arrivals[i].t - static_cast<double>(i) * kSpacing;
    EXPECT_GE(one_way, base - kTick) << "packet " << i;
    EXPECT_LE(one_way, base + kJitter + kTick) << "packet " << i;
    sum += one_way;
    lowest = std::min(lowest, one_way);
    highest = std::max(highest, one_way);
  }
  // Uniform on [0, J]: mean J/2, standard deviation J/sqrt(12); the sample mean's standard
  // error is that over sqrt(n), and 4 of them leave a false alarm about 1 in 16000.
  const double standard_error = kJitter / std::sqrt(12.0) / std::sqrt(static_cast<double>(kPackets));
  EXPECT_NEAR(sum / kPackets, base + kJitter / 2, 4 * standard_error);
  // The draws spread over the whole range: the extremes of 4000 uniform draws lie within
  // J/400 of the ends but for a chance of e^-10.
  EXPECT_LT(lowest, base + kJitter / 400);
  EXPECT_GT(highest, base + kJitter - kJitter / 400);
}

TEST(Jitter, PacketsOfADirectionStayInOrder) {
  // Back-to-back packets take 8.16 us each to send, and their draws spread over 5 ms: without
  // the FIFO clamp nearly every packet would overtake or be overtaken.
  constexpr double kJitter = 0.005;
  constexpr int kPackets = 500;
  const auto arrivals = send_over_jitter_link(kJitter, kPackets, 0, 3);
  ASSERT_EQ(arrivals.size(), static_cast<size_t>(kPackets));
  const double serialization = (kPayload + kPppHeader) * 8 / kRate;
  for (size_t i = 1; i < arrivals.size(); ++i) {
    EXPECT_GT(arrivals[i].uid, arrivals[i - 1].uid) << "arrival " << i << " overtook the one before it";
    EXPECT_GE(arrivals[i].t, arrivals[i - 1].t);
  }
  // The clamp only waits for earlier packets, each of which arrived by its own bound: the last
  // one is still no later than its own departure + latency + jitter.
  EXPECT_LE(arrivals.back().t, kPackets * serialization + kLatency + kJitter + kTick);
  EXPECT_GE(arrivals.front().t, serialization + kLatency - kTick);
}

// Delivery times of 20 small messages 0 -> 1, 50 ms apart, over one jittery 100 Mbps / 10 ms link.
std::vector<double> small_message_times(double jitter_s, uint64_t seed) {
  TopologySpec spec;
  spec.kind = TopologyKind::Line;
  spec.hosts = 2;
  spec.link = {kRate, kLatency, 0};
  spec.link.jitter_s = jitter_s;
  const Topology topology = build_topology(spec);
  Ns3Options options;
  options.seed = seed;
  std::vector<double> times;
  EventClock clock;
  {
    auto network = make_ns3_network(clock, topology, options);
    for (uint64_t i = 0; i < 20; ++i)
      clock.schedule(0.05 * static_cast<double>(i), [&, i] {
        network->send(Message{i, 0, 1, 1000}, [&](const Delivery& d) { times.push_back(d.t_recv - d.t_send); });
      });
    clock.run();
  }
  return times;
}

TEST(Jitter, SameSeedSameTimesOtherSeedOtherTimes) {
  const auto a = small_message_times(0.002, 1), b = small_message_times(0.002, 1), c = small_message_times(0.002, 2);
  ASSERT_EQ(a.size(), 20u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // Without jitter every message after the handshake takes the same time; with it they vary.
  const auto steady = small_message_times(0, 1);
  ASSERT_EQ(steady.size(), 20u);
  EXPECT_DOUBLE_EQ(steady[5], steady[19]);
  EXPECT_NE(a[5], a[19]);
}

TEST(Jitter, BulkTcpTransferIsNotDisrupted) {
  // 10 MB over 100 Mbps / 10 ms. In FIFO order a packet never arrives earlier than it would
  // without jitter, and 1 ms of jitter lengthens the 20 ms round trip by at most 2 ms (data one
  // way, ACKs the other), so the transfer is slower, by at most the 10 % its window-limited
  // phases could lose. A link that reorders breaks the lower bound instead: overtaken segments
  // raise duplicate ACKs and spurious fast retransmits that cut the window before slow start
  // overflows the queue (without the FIFO clamp this run took 0.863 s against 0.915 s clean).
  auto transfer = [](double jitter_s) {
    TopologySpec spec;
    spec.kind = TopologyKind::Line;
    spec.hosts = 2;
    spec.link = {kRate, kLatency, 0};
    spec.link.jitter_s = jitter_s;
    const Topology topology = build_topology(spec);
    double t = 0;
    EventClock clock;
    {
      auto network = make_ns3_network(clock, topology, {});
      clock.schedule(0, [&] { network->send(Message{1, 0, 1, 10'000'000}, [&](const Delivery& d) { t = d.t_recv; }); });
      clock.run();
    }
    return t;
  };
  const double clean = transfer(0), jittery = transfer(0.001);
  std::printf("10 MB over 100 Mbps / 10 ms: %.4f s clean, %.4f s with 1 ms jitter\n", clean, jittery);
  ASSERT_GT(clean, 0);
  EXPECT_GT(jittery, clean);
  EXPECT_LT(jittery, 1.1 * clean);
}

TEST(Jitter, MakesLinksVary) {
  TopologySpec spec;
  spec.kind = TopologyKind::Ring;
  spec.hosts = 3;
  EXPECT_TRUE(static_links(build_topology(spec), {}));
  spec.link.jitter_s = 0.001;
  EXPECT_FALSE(static_links(build_topology(spec), {}));
}

TEST(Jitter, NegativeJitterIsRejected) {
  TopologySpec spec;
  spec.kind = TopologyKind::Ring;
  spec.hosts = 3;
  spec.link.jitter_s = -0.001;
  EXPECT_THROW(build_topology(spec), std::invalid_argument);
}

}  // namespace
}  // namespace ns3_jitter
}  // namespace testbed
