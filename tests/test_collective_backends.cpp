// Every all-reduce algorithm on idle small topologies: the packet-level (ns-3) and flow-level
// backends agree, and neither beats the contention-free alpha-beta backend.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "netmodels/analytical_network.h"
#include "netmodels/collectives/collectives.h"
#include "netmodels/event_clock.h"
#include "netmodels/flow_network.h"
#include "netmodels/ns3/ns3_network.h"
#include "netmodels/collectives/plan_runner.h"
#include "topologies/builders.h"

namespace testbed {
namespace collective_backends {  // its own names: network_tests compiles as one unity file
namespace {

enum class Backend { Ns3, Flow, Analytical };

double run(Backend backend, const Topology& topology, const CollectivePlan& plan) {
  std::vector<int> hosts(plan.ranks);
  for (int r = 0; r < plan.ranks; ++r) hosts[r] = r;
  EventClock clock;
  std::unique_ptr<Network> network;
  switch (backend) {
    case Backend::Ns3: network = make_ns3_network(clock, topology, {}); break;
    case Backend::Flow: network = make_flow_network(clock, topology); break;
    case Backend::Analytical: network = make_analytical_network(clock, topology); break;
  }
  const double t = simulate_plan(clock, *network, plan, hosts);
  network.reset();  // before the clock
  return t;
}

Topology topology(const std::string& kind, int hosts) {
  TopologySpec s;
  s.kind = kind;
  s.hosts = hosts;
  s.link = {1e9, 50e-6, 0};  // 1 Gbps, 50 us
  s.fat_tree_k = 4;
  return build_topology(s);
}

struct Case {
  std::string algorithm;
  int slices = 1;
};

TEST(CollectiveBackends, Ns3AndFlowAgreeAndNeitherBeatsAlphaBeta) {
  const int p = 4;
  const int64_t elements = 2'000'000 / 4;  // 2 MB per rank
  const std::vector<Case> cases = {{"ring"},   {"ring", 4},          {"tree"},        {"halving_doubling"},
                                   {"direct"}, {"parameter_server"}, {"hierarchical"}, {"hierarchical", 4}};
  for (const char* kind : {"ring", "star", "mesh", "fat_tree"}) {
    const Topology t = topology(kind, p);
    for (const auto& c : cases) {
      CollectiveOptions o;
      o.algorithm = collective_algorithm(c.algorithm);
      o.slices = c.slices;
      o.server = 1;
      o.cluster_of = {0, 0, 1, 1};
      const CollectivePlan plan = all_reduce(o, p, elements, 4);
      const double ns3 = run(Backend::Ns3, t, plan);
      const double flow = run(Backend::Flow, t, plan);
      const double analytical = run(Backend::Analytical, t, plan);
      std::printf("%-9s %-17s slices %d: ns3 %.5f  flow %.5f  analytical %.5f  ns3/flow %.3f\n", kind,
                  c.algorithm.c_str(), c.slices, ns3, flow, analytical, ns3 / flow);
      SCOPED_TRACE(std::string(kind) + " " + c.algorithm + " slices " + std::to_string(c.slices));
      // Within 15 % everywhere. Direct on the fat-tree is the closest call (1.079 at fcf3c2e):
      // its 4 hosts sit on two edge switches, so two senders' flows to the other edge share one
      // edge-to-aggregation queue, where lossless TCP flows keep the shares their start gave
      // them instead of the flow model's fair shares.
      EXPECT_GE(ns3 / flow, 0.85);
      EXPECT_LE(ns3 / flow, 1.15);
      EXPECT_GE(ns3, analytical);
      EXPECT_GE(flow, analytical);
    }
  }
}

}  // namespace
}  // namespace collective_backends
}  // namespace testbed
