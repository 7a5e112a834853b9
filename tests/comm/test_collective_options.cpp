// The run's collective choices as one op's plan options, in the rank space of its participants,
// and the timed wrapper every collective's messages go through, which must hand the comm layer
// the same network beneath it.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "comm/collective_options.h"
#include "netmodels/event_clock.h"
#include "netmodels/flow_network.h"
#include "netmodels/host_times.h"
#include "netmodels/network_hold.h"
#include "topologies/builders.h"

namespace testbed {
namespace collective_options_test {  // its own names: network_tests compiles as one unity file
namespace {

// The server is named by node; a plan knows ranks. Nodes 3, 5 and 7 take part: node 5 is
// rank 1. Slip caught: the node index kept as the rank (5, past the plan's 3 ranks).
TEST(CollectiveOptions, TheServerNodeBecomesItsRankAmongTheParticipants) {
  CollectiveChoice choice;
  choice.algorithm = CollectiveAlgorithm::ParameterServer;
  choice.slices = 4;
  choice.server_node = 5;
  const CollectiveOptions o = collective_options(choice, {3, 5, 7});
  EXPECT_EQ(o.algorithm, CollectiveAlgorithm::ParameterServer);
  EXPECT_EQ(o.slices, 4);
  EXPECT_EQ(o.server, 1);
  // A server that does not take part leaves rank 0 serving.
  EXPECT_EQ(collective_options(choice, {0, 2, 4}).server, 0);
}

// Each rank's cluster is its node's: nodes 6, 1 and 4 of clusters {0, 0, 1, 1, 2, 2, 3} are in
// clusters 3, 0 and 2. Slip caught: indexing the clusters by rank (0, 0, 1).
TEST(CollectiveOptions, EachRanksClusterIsItsNodes) {
  CollectiveChoice choice;
  choice.algorithm = CollectiveAlgorithm::Hierarchical;
  choice.node_cluster = {0, 0, 1, 1, 2, 2, 3};
  EXPECT_EQ(collective_options(choice, {6, 1, 4}).cluster_of, (std::vector<int>{3, 0, 2}));
  // Only the hierarchical algorithm reads them, and it cannot run without.
  choice.algorithm = CollectiveAlgorithm::Ring;
  EXPECT_TRUE(collective_options(choice, {6, 1, 4}).cluster_of.empty());
  choice.algorithm = CollectiveAlgorithm::Hierarchical;
  choice.node_cluster.clear();
  EXPECT_THROW(collective_options(choice, {0, 1}), std::invalid_argument);
}

// What the flow backend offers beyond messages (its lanes) and what its links carried reach the
// comm layer through the timed wrapper too: 1 000 bytes from host 0 to host 2 of a line cross
// links 0->1 and 1->2. Slip caught: a wrapper that forgets to forward hold() or link_bytes()
// (it once lacked link_bytes and the lane calls).
TEST(TimedNetwork, ForwardsWhatTheNetworkBeneathOffers) {
  TopologySpec spec;
  spec.kind = TopologyKind::Line;
  spec.hosts = 3;
  spec.link = {1e9, 0, 0};
  const Topology topology = build_topology(spec);
  EventClock clock;
  {
    std::shared_ptr<Network> flow = make_flow_network(clock, topology);
    HostTimes times;
    TimedNetwork timed(flow, times);
    ASSERT_NE(timed.hold(), nullptr);
    EXPECT_EQ(timed.hold(), flow->hold());
    clock.schedule(0, [&] { timed.send({1, 0, 2, 1000}, [](const Delivery&) {}); });
    clock.run();
    const LinkBytes expected{{{0, 1}, 1000}, {{1, 2}, 1000}};
    EXPECT_EQ(timed.link_bytes(), expected);
    EXPECT_EQ(timed.name(), flow->name());
  }
}

}  // namespace
}  // namespace collective_options_test
}  // namespace testbed
