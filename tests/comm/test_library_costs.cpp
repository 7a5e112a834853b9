// A collective library's own time (comm/library_costs.h) on every backend, against the
// alpha-beta time of a ring all-reduce worked by hand: each rank's launch once, then each of
// the 2 (p - 1) dependent steps pays the sender's and the receiver's message latency beside
// the link's latency and the chunk at line rate.
#include <gtest/gtest.h>

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
  const double with = library.launch_s + 2 * (p - 1) * (2 * library.message_s + kLatency + chunk_s);
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
}

}  // namespace
}  // namespace library_costs
}  // namespace testbed
