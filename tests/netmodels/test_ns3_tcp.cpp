// TCP behaviour of the ns-3 backend: congestion-control variants against the alpha-beta
// bound, and Linux's slow start after idle.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "netmodels/alpha_beta.h"
#include "netmodels/event_clock.h"
#include "netmodels/ns3/ns3_network.h"
#include "topologies/builders.h"

namespace testbed {
namespace ns3_tcp {  // its own names: network_tests compiles as one unity file
namespace {

constexpr double kBandwidth = 100e6;
constexpr double kLatency = 0.010;

Topology line() {
  TopologySpec s;
  s.kind = TopologyKind::Line;
  s.hosts = 2;
  s.link = {kBandwidth, kLatency, 0};
  return build_topology(s);
}

// Sends `bytes` from host 0 to 1 at each of `times`; returns each message's transfer time.
std::vector<double> transfers(const std::vector<double>& times, uint64_t bytes, Ns3Options options) {
  std::vector<double> took(times.size(), -1);
  EventClock clock;
  {
    auto network = make_ns3_network(clock, line(), options);
    for (size_t i = 0; i < times.size(); ++i) {
      clock.schedule(times[i], [&, i] {
        network->send({i, 0, 1, bytes}, [&, i](const Delivery& d) { took[i] = d.t_recv - d.t_send; });
      });
    }
    clock.run();
  }
  return took;
}

TEST(Ns3Tcp, EveryVariantMovesTenMegabytesNearTheBound) {
  const uint64_t bytes = 10'000'000;
  const double bound = alpha_beta::point_to_point(kLatency, 8 / kBandwidth, bytes);
  for (const auto& [variant, name] : std::vector<std::pair<TcpVariant, const char*>>{{TcpVariant::NewReno, "newreno"},
                                                                                     {TcpVariant::Cubic, "cubic"},
                                                                                     {TcpVariant::Bbr, "bbr"},
                                                                                     {TcpVariant::Dctcp, "dctcp"}}) {
    Ns3Options options;
    options.tcp = variant;
    const double took = transfers({0}, bytes, options)[0];
    std::printf("%-8s 10 MB: %.4f s (%.3fx alpha-beta)\n", name, took, took / bound);
    EXPECT_GE(took, bound) << name;
    EXPECT_LE(took, 1.25 * bound) << name;
  }
}

// 2 MB on a 100 Mbps / 20 ms RTT path: the window needs ~2 RTTs of slow start from the
// initial 10 segments to cover the 250 kB bandwidth-delay product.
TEST(Ns3Tcp, SlowStartAfterIdleRestartsFromTheInitialWindow) {
  const uint64_t bytes = 2'000'000;
  const double rtt = 2 * kLatency;
  Ns3Options on, off;
  off.slow_start_after_idle = false;
  // The second message leaves 5 s after the first: far longer than the 200 ms RTO.
  const auto restarted = transfers({0, 5}, bytes, on);
  const auto kept = transfers({0, 5}, bytes, off);
  std::printf("first %.4f s; after 5 s idle: %.4f s (restart) vs %.4f s (window kept)\n", restarted[0], restarted[1],
              kept[1]);
  // Without a restart the grown window sends at the link rate at once: within 5 % of alpha-beta.
  EXPECT_LE(kept[1], 1.05 * alpha_beta::point_to_point(kLatency, 8 / kBandwidth, bytes));
  // A restarted connection is no slower than a fresh one, which also pays the handshake.
  EXPECT_LT(restarted[1], restarted[0]);
  // Slow start costs at least the 2 RTTs it takes to reach the BDP, less what those
  // rounds carried (10 + 20 segments of 8948 bytes), and not more than a third.
  const double lower = 2 * rtt - 30 * 8948 * 8 / kBandwidth;
  EXPECT_GE(restarted[1] - kept[1], lower);
  EXPECT_LE(restarted[1] - kept[1], 3 * rtt);
}

TEST(Ns3Tcp, NoRestartWhenIdleIsShorterThanTheRto) {
  const uint64_t bytes = 2'000'000;
  Ns3Options on, off;
  off.slow_start_after_idle = false;
  // The first message takes ~0.2 s; the second starts at 0.3 s, well within an RTO of its last data.
  EXPECT_EQ(transfers({0, 0.3}, bytes, on)[1], transfers({0, 0.3}, bytes, off)[1]);
}

}  // namespace
}  // namespace ns3_tcp
}  // namespace testbed
