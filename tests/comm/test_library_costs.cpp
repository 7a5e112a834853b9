// A collective library's own time (comm/library_costs.h) on every backend, against the
// alpha-beta time of a ring all-reduce worked by hand: each rank's launch once, then each of
// the 2 (p - 1) dependent steps pays the sender's and the receiver's message latency beside
// the link's latency and the chunk at line rate.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "comm/library_costs.h"
#include "comm/plan_runner.h"
#include "comm/plans/collectives.h"
#include "netmodels/analytical_network.h"
#include "netmodels/event_clock.h"
#include "netmodels/flow_network.h"
#include "netmodels/ns3/ns3_network.h"
#include "topologies/builders.h"

namespace testbed {
namespace library_costs {  // its own names: network_tests compiles as one unity file
namespace {

enum class Backend { Ns3, Flow, Analytical };

constexpr double kBandwidth = 1e9, kLatency = 10e-6;

double ring_time(Backend backend, int p, int64_t elements, const LibraryCosts& library) {
  TopologySpec spec;
  spec.kind = TopologyKind::Ring;
  spec.hosts = p;
  spec.link = {kBandwidth, kLatency, 0};
  const Topology topology = build_topology(spec);
  std::vector<int> hosts(p);
  for (int r = 0; r < p; ++r) hosts[r] = r;
  EventClock clock;
  std::unique_ptr<Network> network;
  if (backend == Backend::Ns3) network = make_ns3_network(clock, topology, {});
  if (backend == Backend::Flow) network = make_flow_network(clock, topology);
  if (backend == Backend::Analytical) network = make_analytical_network(clock, topology);
  const double t = simulate_plan(clock, *network, ring_all_reduce(p, elements, 4), hosts, library);
  network.reset();  // before the clock
  return t;
}

// By hand: L + 2 (p - 1) (m + alpha + chunk bytes x 8 / bandwidth + m). Slips caught: the
// receiver's latency dropped (each step 20 us short), the launch paid per message instead of
// once per collective, or the sender's latency paid only by a rank's first message.
TEST(LibraryCosts, RingAllReduceAddsLaunchOnceAndBothEndsPerStep) {
  const int p = 4;
  const int64_t elements = 1'000'000;  // 4 MB a rank, chunks of 1 MB
  const LibraryCosts library{50e-6, 20e-6};
  const double chunk_s = 1'000'000.0 / p * 4 * 8 / kBandwidth;
  const double bare = 2 * (p - 1) * (kLatency + chunk_s);
  const double with = library.launch_s + 2 * (p - 1) * (2 * library.network.message_s + kLatency + chunk_s);
  EXPECT_NEAR(ring_time(Backend::Analytical, p, elements, {}), bare, 1e-8);
  EXPECT_NEAR(ring_time(Backend::Analytical, p, elements, library), with, 1e-8);
  // The flow backend charges its own connection set-up on top (the same with or without the
  // library); the library adds what it adds on the analytical backend, to the tick.
  EXPECT_NEAR(ring_time(Backend::Flow, p, elements, library) - ring_time(Backend::Flow, p, elements, {}), with - bare,
              1e-8);
  // ns-3's TCP adds its own handshake and headers; the library's share of the time is the same.
  const double ns3_bare = ring_time(Backend::Ns3, p, elements, {});
  const double ns3_with = ring_time(Backend::Ns3, p, elements, library);
  std::printf("ring all-reduce, 4 MB, 4 ranks: ns-3 %.6f s bare, %.6f s with the library (by hand %.6f, %.6f)\n",
              ns3_bare, ns3_with, bare, with);
  EXPECT_NEAR(ns3_with - ns3_bare, with - bare, 0.05 * (with - bare));
}

// No costs: the runner schedules nothing of its own, so a plan's time is the network's alone.
TEST(LibraryCosts, NoneIsTheNetworkAlone) {
  EXPECT_FALSE(LibraryCosts{}.any());
  EXPECT_TRUE((LibraryCosts{0, 1e-9}.any()));
  EXPECT_TRUE((LibraryCosts{1e-9, 0}.any()));
  LibraryCosts shared;
  shared.local.rate.share = 0.9;
  EXPECT_TRUE(shared.any());
  LibraryCosts capped;
  capped.network.rate.cap_bps = 1e9;
  EXPECT_TRUE(capped.any());
}

// A transport below line rate: each ring step's chunk goes at the share of the link (or the
// cap, when lower). By hand on the analytical backend: 2 (p - 1) (alpha + chunk x 8 / rate)
// with rate = min(share x bandwidth, cap); on flow the same increment over the bare ring's
// (its headers scale with the rate, so the increment is the payload's, to the tick), and
// ns-3 within 5 %. Slips caught: the share applied as a multiplier of the time the wrong way
// (0.5 making it twice as fast), the cap ignored when it is lower than the share.
TEST(LibraryCosts, ATransportBelowLineRateTakesItsShareOfEachStep) {
  const int p = 4;
  const int64_t elements = 1'000'000;
  const double chunk_bits = 1'000'000.0 / p * 4 * 8;
  for (const RateLimit limit : {RateLimit{0.5, 0}, RateLimit{0.8, 0.3e9}}) {
    LibraryCosts library;
    library.network.rate = limit;
    const double rate = std::min(limit.share * kBandwidth, limit.cap_bps > 0 ? limit.cap_bps : 1e300);
    const double bare = 2 * (p - 1) * (kLatency + chunk_bits / kBandwidth);
    const double with = 2 * (p - 1) * (kLatency + chunk_bits / rate);
    EXPECT_NEAR(ring_time(Backend::Analytical, p, elements, library), with, 1e-8);
    // On flow the headers go at the same rate as the payload: the bare ring's time scaled by
    // bandwidth / rate in its transmission, latency unchanged.
    const double flow_bare = ring_time(Backend::Flow, p, elements, {});
    const double flow_with = ring_time(Backend::Flow, p, elements, library);
    const double flow_wire = flow_bare - 2 * (p - 1) * kLatency;
    EXPECT_NEAR(flow_with, 2 * (p - 1) * kLatency + flow_wire * kBandwidth / rate, 2 * (p - 1) * 1e-9 + 1e-9);
    const double ns3_with = ring_time(Backend::Ns3, p, elements, library);
    std::printf("rate share %.2f, cap %.2g: ns-3 %.6f s, by hand %.6f s (line rate %.6f)\n", limit.share, limit.cap_bps,
                ns3_with, with, bare);
    EXPECT_NEAR(ns3_with, with, 0.05 * with);
  }
}

// A message takes the transport of the two hosts it joins: between GPUs of one machine the
// local one, between machines the network's. By hand, one message of 1 MB on two hosts of two
// GPUs (GPU links of 100 Gb/s and 1 us, the hosts' of 10 Gb/s and 5 us), on the analytical
// backend: inside a host 2 m_local + 2 us + bytes / (share_local x 100 Gb/s); across,
// 2 m_net + 12 us + bytes / (share_net x 10 Gb/s). Slip caught: every message given the network
// transport (or the local one), the machines compared by rank instead of by host.
TEST(LibraryCosts, AMessageTakesTheTransportOfTheMachinesItJoins) {
  TopologySpec spec;
  spec.kind = TopologyKind::GpuHosts;
  spec.hosts = 4;
  spec.gpus_per_host = 2;
  spec.link = {10e9, 5e-6, 0};
  spec.gpu_link = {100e9, 1e-6, 0};
  const Topology topology = build_topology(spec);
  LibraryCosts library;
  library.launch_s = 3e-6;
  library.network = {20e-6, {0.5, 0}};
  library.local = {2e-6, {0.25, 0}};
  library.machine_of_host = std::make_shared<std::vector<int>>(std::vector<int>{0, 0, 1, 1});
  const uint64_t bytes = 1'000'000;
  const double local = 3e-6 + 2 * 2e-6 + 2e-6 + bytes * 8 / (0.25 * 100e9);
  const double network = 3e-6 + 2 * 20e-6 + (1e-6 + 5e-6 + 5e-6 + 1e-6) + bytes * 8 / (0.5 * 10e9);
  for (const auto& [hosts, expected] : {std::pair{std::vector<int>{0, 1}, local},
                                        {std::vector<int>{3, 2}, local},
                                        {std::vector<int>{1, 2}, network},
                                        {std::vector<int>{0, 3}, network}}) {
    EventClock clock;
    auto net = make_analytical_network(clock, topology);
    const double t = simulate_plan(clock, *net, direct_broadcast(2, bytes / 4, 4), hosts, library);
    EXPECT_NEAR(t, expected, 1e-9) << hosts[0] << " to " << hosts[1];
  }
}

}  // namespace
}  // namespace library_costs
}  // namespace testbed
