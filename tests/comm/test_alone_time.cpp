// A collective's alone time (comm/alone_time.h) against the alpha-beta formulas worked by hand,
// and the ring's closed form against its plan on a ring whose hops all differ.
#include <gtest/gtest.h>

#include <vector>

#include "comm/alone_time.h"
#include "comm/plan_runner.h"
#include "comm/plans/collectives.h"
#include "netmodels/analytical_network.h"
#include "netmodels/event_clock.h"
#include "topologies/builders.h"

namespace testbed {
namespace alone_time {  // its own names: network_tests compiles as one unity file
namespace {

// By hand, a ring all-reduce of n bytes over p ranks: the launch once, 2 (p - 1) dependent
// hops each paying the link's latency and the library's message cost at both ends, and each
// rank's 2 (p - 1) / p n bytes at share x bandwidth; the analytical backend takes exactly that
// for a ring (every hop alone on its link). Slips caught: the message cost paid at one end
// only, the launch left out, the rate share ignored or applied the wrong way.
TEST(AloneTime, RingAllReduceIsItsAlphaBetaFormula) {
  const int p = 4;
  const int64_t elements = 1'000'000;
  const double bandwidth = 1e9, latency = 10e-6, n = elements * 4.0;
  TopologySpec spec;
  spec.kind = TopologyKind::Ring;
  spec.hosts = p;
  spec.link = {bandwidth, latency, 0};
  const Topology topology = build_topology(spec);
  LibraryCosts library{50e-6, 20e-6};
  library.network.rate.share = 0.5;
  const PathOf path = [&](int a, int b) { return path_properties(topology, shortest_path(topology, a, b)); };
  const std::vector<int> hosts{0, 1, 2, 3};
  const double by_hand = 50e-6 + 2 * (p - 1) * (latency + 2 * 20e-6) + 2.0 * (p - 1) / p * n * 8 / (0.5 * bandwidth);
  const CollectivePlan plan = ring_all_reduce(p, elements, 4);
  EXPECT_NEAR(plan_alone_time(plan, hosts, library, path), by_hand, 1e-12);
  EventClock clock;
  auto network = make_analytical_network(clock, topology);
  EXPECT_NEAR(simulate_plan(clock, *network, plan, hosts, library), by_hand, 1e-8);
}

// On a ring whose hops 0..4 take 5, 1, 2, 3 and 4 us (plus 2 x 3 us of the library's), the
// longest chain of 2 (p - 1) = 8 hops on 5 ranks is the ring once (15 us) and the 3 longest
// consecutive hops, which wrap round (hops 3, 4, 0: 12 us): 27 us + 8 x 6 us. Each rank sends
// 8 chunks of n / 5 at its hop's rate (rank r's link 1 + r Gb/s, so rank 0's is the slowest).
// The closed form (lanes) and the plan agree with it, sliced or not. Slips caught: the window
// not wrapped round the ring (9 us), the chain taken as 2 (p - 1) mean hops, the bytes of the
// fastest rank instead of the slowest.
TEST(AloneTime, RingsClosedFormIsItsPlansOnAnUnevenRing) {
  const int p = 5;
  const int64_t elements = 5'000'000;
  const PathOf path = [&](int a, int b) {
    EXPECT_EQ(b, (a + 1) % p) << "a ring all-reduce sends to the next rank";
    return PathProperties{1, ((a + 4) % p + 1) * 1e-6, (1 + a) * 1e9};
  };
  const LibraryCosts library{0, 3e-6};
  const std::vector<int> hosts{0, 1, 2, 3, 4};
  const double by_hand = (15 + 12) * 1e-6 + 8 * 6e-6 + 8.0 * (elements / p) * 4 * 8 / 1e9;
  for (int slices : {1, 3}) {
    const double plan = plan_alone_time(ring_all_reduce(p, elements, 4, slices), hosts, library, path);
    const double closed = ring_all_reduce_alone_time(hosts, elements, 4, slices, library, path);
    EXPECT_NEAR(plan, by_hand, 1e-12) << slices << " slices";
    EXPECT_NEAR(closed, by_hand, 1e-12) << slices << " slices";
  }
}

// The fleet's alpha and beta (what MG-WFBP merges by), by hand for a ring of p hosts: alpha is
// the launch and 2 (p - 1) hops of latency and both ends' message cost; beta is 2 (p - 1) / p
// bytes on the wire for each byte reduced, at the transport's share of the link. The tree's
// fit, from its plan, is a line through its alone times too: its alpha is at least the ring's
// depth of hops. Slips caught: beta per byte on the wire rather than per byte reduced (p / 2(p-1)
// off), alpha without the launch.
TEST(AloneTime, AllReduceAlphaBetaIsTheRingsFormula) {
  const int p = 6;
  const PathOf path = [](int, int) { return PathProperties{1, 4e-6, 10e9}; };
  LibraryCosts library{30e-6, 5e-6};
  library.network.rate.share = 0.8;
  std::vector<int> hosts(p);
  for (int r = 0; r < p; ++r) hosts[r] = r;
  CollectiveOptions ring;
  const AlphaBeta fit = all_reduce_alpha_beta(ring, hosts, library, path);
  EXPECT_NEAR(fit.alpha_s, 30e-6 + 2 * (p - 1) * (4e-6 + 2 * 5e-6), 1e-12);
  EXPECT_NEAR(fit.beta_s_per_byte, 2.0 * (p - 1) / p * 8 / (0.8 * 10e9), 1e-18);
  CollectiveOptions tree;
  tree.algorithm = CollectiveAlgorithm::Tree;
  const AlphaBeta tree_fit = all_reduce_alpha_beta(tree, hosts, library, path);
  EXPECT_GE(tree_fit.alpha_s, 30e-6 + 4 * (4e-6 + 2 * 5e-6) - 1e-12);
  EXPECT_GT(tree_fit.beta_s_per_byte, 0);
}

TEST(AloneTime, NothingToSendTakesNoTime) {
  const PathOf path = [](int, int) { return PathProperties{1, 1e-6, 1e9}; };
  EXPECT_EQ(plan_alone_time(ring_all_reduce(1, 100, 4), {0}, LibraryCosts{1e-3, 0}, path), 0);
  EXPECT_EQ(ring_all_reduce_alone_time({0}, 100, 4, 1, LibraryCosts{1e-3, 0}, path), 0);
}

}  // namespace
}  // namespace alone_time
}  // namespace testbed
