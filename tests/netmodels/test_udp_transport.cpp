// The ns3 backend's udp transport: datagrams of whole elements, paced, losses reported as
// element ranges; times from the wire sizes worked out here, loss rates against the binomial.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "netmodels/event_clock.h"
#include "netmodels/ns3/ns3_network.h"
#include "tests/support/deliveries.h"
#include "topologies/builders.h"

namespace testbed {
namespace udp_transport {  // its own names: network_tests compiles as one unity file
namespace {

constexpr double kBandwidth = 100e6;
constexpr double kLatency = 0.010;
constexpr int kUdpIp = 28;  // IPv4 20 + UDP 8
constexpr int kPpp = 2;     // point-to-point framing ns-3 adds to every packet

Topology line(int hosts, double loss = 0) {
  TopologySpec s;
  s.kind = TopologyKind::Line;
  s.hosts = hosts;
  s.link = {kBandwidth, kLatency, loss};
  return build_topology(s);
}

Ns3Options udp(int mtu = 9000, uint64_t seed = 0) {
  Ns3Options o;
  o.transport = Transport::Udp;
  o.mtu = mtu;
  o.seed = seed;
  return o;
}

Message datagrams(uint64_t id, int src, int dst, uint64_t bytes, double element_bytes) {
  Message m{id, src, dst, bytes};
  m.datagrams = true;
  m.element_bytes = element_bytes;
  return m;
}

std::vector<Delivery> simulate(const Topology& topology, const std::vector<Message>& messages,
                               const Ns3Options& options) {
  return deliveries([&](EventClock& clock) { return make_ns3_network(clock, topology, options); }, messages);
}

// Seconds to put `bytes` of payload on a 100 Mb/s wire as datagrams of at most `per` bytes.
double wire_time(uint64_t bytes, uint64_t per) {
  const uint64_t n = (bytes + per - 1) / per;
  return static_cast<double>(bytes + n * (kUdpIp + kPpp)) * 8 / kBandwidth;
}

// (a) Lossless: everything arrives, and the time is alpha + beta x (payload + per-datagram
// headers). One hop is exactly that; two hops pipeline the datagrams.
TEST(UdpTransport, LosslessMessageArrivesWholeAtTheAlphaBetaTimeWithHeaders) {
  const uint64_t bytes = 1'000'000;  // floats: datagrams of (9000 - 28) / 4 = 2243 elements, 8972 bytes
  const auto one = simulate(line(2), {datagrams(7, 0, 1, bytes, 4)}, udp());
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].message.id, 7u);
  EXPECT_EQ(one[0].lost_bytes, 0u);
  EXPECT_TRUE(one[0].lost.empty());
  const double bound = kLatency + wire_time(bytes, 8972);
  const double took = one[0].t_recv - one[0].t_send;
  EXPECT_GE(took, bound - 1e-9);
  EXPECT_LE(took, bound + 1e-6);

  const auto two = simulate(line(3), {datagrams(1, 0, 2, bytes, 4)}, udp());
  ASSERT_EQ(two.size(), 1u);
  // Store and forward, datagram by datagram: hop 2 starts once the first full datagram has
  // crossed hop 1 and then is busy back to back (hop 1 feeds it at the same rate).
  const double full_s = (8972 + kUdpIp + kPpp) * 8 / kBandwidth;
  const double pipelined = 2 * kLatency + full_s + wire_time(bytes, 8972);
  EXPECT_NEAR(two[0].t_recv - two[0].t_send, pipelined, 1e-6);
}

// Pacing at the first hop's rate: a message many times a tiny queue still arrives whole.
TEST(UdpTransport, PacedDatagramsDoNotOverflowTheFirstQueue) {
  Ns3Options o = udp();
  o.queue_packets = 2;
  const auto d = simulate(line(2), {datagrams(1, 0, 1, 2'000'000, 4), datagrams(2, 0, 1, 500'000, 4)}, o);
  ASSERT_EQ(d.size(), 2u);
  for (const auto& x : d) EXPECT_EQ(x.lost_bytes, 0u);
  // Both messages share the host's link: the second leaves after the first.
  EXPECT_NEAR(d[1].t_recv, kLatency + wire_time(2'000'000, 8972) + wire_time(500'000, 8972), 1e-6);
}

// (b) 10 % packet loss on the one link: the lost fraction follows Binomial(n, 0.1) / n, and
// each lost range is whole datagrams. bf16 at MTU 1501: (1501 - 28) / 2 = 736 elements a
// datagram, 1472 bytes (not 1473: whole elements).
TEST(UdpTransport, TenPercentLossLosesAboutATenthInWholeDatagrams) {
  constexpr int n = 2000;
  constexpr int64_t per = 736;
  const uint64_t bytes = uint64_t{n} * per * 2;
  Message reliable{2, 0, 1, 100'000};  // not marked: still TCP, every byte
  const auto d = simulate(line(2, 0.1), {datagrams(1, 0, 1, bytes, 2), reliable}, udp(1501, 3));
  ASSERT_EQ(d.size(), 2u);
  for (const auto& x : d) {
    if (x.message.id == 2) {
      EXPECT_EQ(x.lost_bytes, 0u);
      EXPECT_TRUE(x.lost.empty());
      continue;
    }
    const double fraction = static_cast<double>(x.lost_bytes) / static_cast<double>(bytes);
    const double sigma = std::sqrt(0.1 * 0.9 / n);  // 0.0067
    std::printf("lost %.4f of %d datagrams (sigma %.4f), %zu ranges\n", fraction, n, sigma, x.lost.size());
    EXPECT_NEAR(fraction, 0.1, 4 * sigma);
    int64_t lost_elements = 0;
    for (size_t i = 0; i < x.lost.size(); ++i) {
      const auto& r = x.lost[i];
      EXPECT_EQ(r.begin % per, 0) << i;
      EXPECT_EQ(r.end % per, 0) << i;
      EXPECT_LT(r.begin, r.end);
      EXPECT_LE(r.end, n * per);
      if (i > 0) EXPECT_GT(r.begin, x.lost[i - 1].end);  // ascending, adjacent ones merged
      lost_elements += r.end - r.begin;
    }
    EXPECT_EQ(static_cast<uint64_t>(lost_elements) * 2, x.lost_bytes);
    // Settled when the last datagram arrived or was dropped: never before the lossless time.
    EXPECT_GE(x.t_recv - x.t_send, kLatency + wire_time(bytes, 1472) - 1e-9);
  }
}

// (d) The error model draws from the run's seed only.
TEST(UdpTransport, SameSeedSameLossesOtherSeedOtherLosses) {
  auto lost = [](uint64_t seed) {
    const auto d = simulate(line(2, 0.1), {datagrams(1, 0, 1, 1'000'000, 4)}, udp(9000, seed));
    EXPECT_EQ(d.size(), 1u);
    return d.at(0).lost;
  };
  const auto a = lost(5), b = lost(5), c = lost(6);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// fp4: half a byte an element, so a datagram's 8972 bytes carry 17944 elements, and the odd
// message's last datagram ends in half a byte of padding.
TEST(UdpTransport, Fp4DatagramsSplitOnWholeBytes) {
  const int64_t elements = 17944 * 20 + 1;
  const uint64_t bytes = (elements + 1) / 2;
  const auto d = simulate(line(2, 0.3), {datagrams(1, 0, 1, bytes, 0.5)}, udp(9000, 1));
  ASSERT_EQ(d.size(), 1u);
  ASSERT_FALSE(d[0].lost.empty());
  uint64_t lost_bytes = 0;
  for (const auto& r : d[0].lost) {
    EXPECT_EQ(r.begin % 17944, 0);
    if (r.end <= 17944 * 20)
      EXPECT_EQ(r.end % 17944, 0);
    else
      EXPECT_EQ(r.end, 17944 * 20 + 2);  // the padded last datagram: 1 byte, 2 element slots
    lost_bytes += static_cast<uint64_t>(r.end - r.begin) / 2;
  }
  EXPECT_EQ(lost_bytes, d[0].lost_bytes);
}

}  // namespace
}  // namespace udp_transport
}  // namespace testbed
