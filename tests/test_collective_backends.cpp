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

// Two hosts of four GPUs (NVLink-class local links, a 10 Gbps NIC each to one switch): a ring
// all-reduce over the 8 GPUs crosses each NIC once a step in each direction, so the link from
// GPU 3's host to GPU 4's carries all 2 (p - 1) chunks of S / p, one after another: at least
// 2 (p - 1) S / p / 10 Gbps (flow and ns-3). Local hops are 240 times faster, so they add little.
TEST(CollectiveBackends, GpuHostsRingIsBoundByTheNics) {
  TopologySpec spec;
  spec.kind = "gpu_hosts";
  spec.hosts = 8;
  spec.gpus_per_host = 4;
  spec.link = {10e9, 5e-6, 0};
  spec.gpu_link = {2.4e12, 1e-6, 0};
  const Topology t = build_topology(spec);
  EXPECT_EQ(t.num_vertices(), 8u + 2 + 1);  // the GPUs, a local switch a host, the cluster's switch
  EXPECT_EQ(t.num_links(), 8u + 2);
  const int p = 8;
  const int64_t elements = 8'000'000 / 4;  // 8 MB per rank
  CollectiveOptions o;
  o.algorithm = collective_algorithm("ring");
  const CollectivePlan plan = all_reduce(o, p, elements, 4);
  const double nic_bound = 2.0 * (p - 1) * (8e6 / p) * 8 / 10e9;  // 11.2 ms
  // The last chunk still crosses the path's latencies (1 + 5 + 5 + 1 us) and a local hop.
  const double slack = 2.0 * (p - 1) * 12e-6 + 2 * (8e6 / p) * 8 / 2.4e12;
  const double flow = run(Backend::Flow, t, plan), ns3 = run(Backend::Ns3, t, plan);
  EXPECT_GE(flow, nic_bound);
  EXPECT_LE(flow, nic_bound + slack);
  EXPECT_GE(ns3 / flow, 0.85);
  EXPECT_LE(ns3 / flow, 1.15);
  // Contention-free, the analytical backend lets a chunk start while the one before it still
  // crosses the same NIC: it sees only the dependency chains, a quarter of whose hops cross a NIC.
  const double analytical = run(Backend::Analytical, t, plan);
  EXPECT_LE(analytical, flow);
  EXPECT_GE(analytical, nic_bound / 4);
}

}  // namespace
}  // namespace collective_backends
}  // namespace testbed
