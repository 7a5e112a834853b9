// Every all-reduce algorithm on idle small topologies: the packet-level (ns-3) and flow-level
// backends agree, and neither beats the contention-free alpha-beta backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/plan_runner.h"
#include "comm/plans/collectives.h"
#include "netmodels/analytical_network.h"
#include "netmodels/event_clock.h"
#include "netmodels/flow_network.h"
#include "netmodels/ns3/ns3_network.h"
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
    case Backend::Ns3:
      network = make_ns3_network(clock, topology, {});
      break;
    case Backend::Flow:
      network = make_flow_network(clock, topology);
      break;
    case Backend::Analytical:
      network = make_analytical_network(clock, topology);
      break;
  }
  const double t = simulate_plan(clock, *network, plan, hosts);
  network.reset();  // before the clock
  return t;
}

Topology topology(const std::string& kind, int hosts) {
  TopologySpec s;
  s.kind = topology_kind(kind);
  s.hosts = hosts;
  s.link = {1e9, 50e-6, 0};  // 1 Gbps, 50 us
  s.fat_tree_k = 4;
  return build_topology(s);
}

// Hosts of four GPUs: local links of `local_bps` (1 us), a 10 Gb/s NIC (5 us) each to one switch.
Topology gpu_hosts(int gpus, double local_bps) {
  TopologySpec spec;
  spec.kind = TopologyKind::GpuHosts;
  spec.hosts = gpus;
  spec.gpus_per_host = 4;
  spec.link = {10e9, 5e-6, 0};
  spec.gpu_link = {local_bps, 1e-6, 0};
  return build_topology(spec);
}

struct Case {
  std::string algorithm;
  int slices = 1;
};

TEST(CollectiveBackends, Ns3AndFlowAgreeAndNeitherBeatsAlphaBeta) {
  const int p = 4;
  const int64_t elements = 2'000'000 / 4;  // 2 MB per rank
  const std::vector<Case> cases = {{"ring"},   {"ring", 4},          {"tree"},         {"halving_doubling"},
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
  const Topology t = gpu_hosts(8, 2.4e12);
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

// Back-to-back all-reduces as a training run issues them: rank r enters collective k + 1
// `gap` seconds after the last message addressed to it in collective k has arrived, so a
// fast rank's next messages can queue behind a slow pair's last ones. Returns each
// collective's span, from its first rank's entry to its last delivery.
std::vector<double> back_to_back(Network& network, EventClock& clock, const CollectivePlan& plan, int times,
                                 double gap) {
  const int p = plan.ranks;
  std::vector<int> hosts(p), expected(p, 0);
  for (int r = 0; r < p; ++r) hosts[r] = r;
  for (const auto& m : plan.messages) ++expected[m.dst];
  auto shared = std::make_shared<const CollectivePlan>(plan);
  uint64_t next_id = 0;
  std::vector<std::unique_ptr<PlanRunner>> runners;
  std::vector<std::vector<int>> received(times, std::vector<int>(p, 0));
  std::vector<double> first(times, 1e300), last(times, 0);
  auto enter = [&](int k, int r) {
    first[k] = std::min(first[k], clock.now());
    runners[k]->enter(r);
  };
  for (int k = 0; k < times; ++k) {
    PlanRunner::Hooks hooks;
    hooks.delivered = [&, k](int message, const Delivery& d) {
      last[k] = std::max(last[k], d.t_recv);
      const int r = plan.messages[message].dst;
      if (++received[k][r] == expected[r] && k + 1 < times) clock.schedule(gap, [&enter, k, r] { enter(k + 1, r); });
    };
    runners.push_back(std::make_unique<PlanRunner>(shared, hosts, network, next_id, MessageTransport{}, hooks));
  }
  clock.schedule(0, [&] {
    for (int r = 0; r < p; ++r) enter(0, r);
  });
  clock.run();
  std::vector<double> spans;
  for (int k = 0; k < times; ++k) {
    EXPECT_TRUE(runners[k]->all_delivered());
    spans.push_back(last[k] - first[k]);
  }
  return spans;
}

// The DeAR reproduction's cluster (16 hosts x 4 GPUs, PCIe 3 inside, 10 Gb/s NICs) with four
// blocking ring all-reduces of 64 MiB, 10 ms of compute between them. Each NIC carries its
// pair's 2 (p - 1) chunks of S / p one after another, so every collective takes the NIC bound
// 2 (p - 1) S / p W / 10 Gb/s (W: wire bytes a payload byte), plus at most the fill and drain
// of the pipeline: one path latency a step and the few chunks that wait on local hops before
// the NIC. Before the flow backend kept a pair's messages in order, the second to fourth
// spans grew (0.1063, 0.1064, 0.1298, 0.1302 s): ranks entered at different times, a fast rank's
// chunk met its pair's previous one on the NIC, the two shared it, and the earlier chunk, the
// one the ring waits on, arrived late. Slip caught: a pair's queued messages sharing a link.
TEST(CollectiveBackends, BackToBackRingAllReducesStayAtTheNicBoundAt64Ranks) {
  const Topology t = gpu_hosts(64, 128e9);
  const int p = 64;
  const int64_t elements = int64_t{16} << 20;  // 64 MiB of fp32, 1 MiB a chunk
  CollectiveOptions o;
  o.algorithm = collective_algorithm("ring");
  const CollectivePlan plan = all_reduce(o, p, elements, 4);
  const double wire = (9000.0 + 2) / (9000 - 52);  // MTU 9000: payload to wire bytes
  const double chunk_bits = double(elements) / p * 4 * 8 * wire;
  const double nic_bound = 2.0 * (p - 1) * chunk_bits / 10e9;
  const double slack = 2.0 * (p - 1) * 12e-6 + 8 * chunk_bits / 128e9;
  auto spans_of = [&](FlowSolve solve) {
    EventClock clock;
    auto network = make_flow_network(clock, t, 9000, FlowSharing::MaxMin, {}, solve);
    std::vector<double> spans = back_to_back(*network, clock, plan, 4, 0.010);
    network.reset();  // before the clock
    return spans;
  };
  const std::vector<double> spans = spans_of(FlowSolve::Component), global = spans_of(FlowSolve::Global);
  for (size_t k = 0; k < spans.size(); ++k) {
    SCOPED_TRACE("collective " + std::to_string(k));
    std::printf("collective %zu: %.6f s (NIC bound %.6f s)\n", k, spans[k], nic_bound);
    EXPECT_GE(spans[k], nic_bound);
    EXPECT_LE(spans[k], nic_bound + slack);
    // The component solve (the default) and the global one: the same collectives.
    EXPECT_NEAR(spans[k], global[k], 1e-9 * global[k]);
  }
}

// Agreement at scale: a ring all-reduce of 4 MiB a rank over 16 hosts of 4 GPUs (10 Gb/s NICs,
// as DeAR's cluster). Each NIC carries 2 (p - 1) chunks of 64 KiB one after another, about a
// millisecond of them, so bandwidth decides and ns-3's TCP and the flow model agree within 5 %;
// neither beats the NIC bound 2 (p - 1) / p S / 10 Gb/s, worked out here (flow 6.658 ms, ns-3
// 6.775 ms, bound 6.606 ms). Slip caught: headers left out of the flow's bits (6.619 ms, below
// the bound with headers); docs/results.md has the same at 256 ranks and on fat-trees.
TEST(CollectiveBackends, Ns3AndFlowAgreeOnA64RankRingOfGpuHosts) {
  const Topology t = gpu_hosts(64, 128e9);
  const int p = 64;
  const int64_t elements = int64_t{1} << 20;
  CollectiveOptions o;
  o.algorithm = collective_algorithm("ring");
  const CollectivePlan plan = all_reduce(o, p, elements, 4);
  const double nic_bound = 2.0 * (p - 1) / p * elements * 4 * 8 / 10e9;
  const double flow = run(Backend::Flow, t, plan), ns3 = run(Backend::Ns3, t, plan);
  std::printf("64-rank ring of 4 MiB: flow %.6f s, ns-3 %.6f s, NIC bound %.6f s\n", flow, ns3, nic_bound);
  EXPECT_GE(flow, nic_bound * (9000.0 + 2) / (9000 - 52));
  EXPECT_GE(ns3, nic_bound);
  EXPECT_NEAR(flow / ns3, 1.0, 0.05);
}

// A rank sends nothing before it has entered, even once a message it depends on has reached
// it: in a two-rank ring all-reduce rank 0 enters at 0 and rank 1 at 1 s, so rank 0's first
// chunk lands on rank 1 after 66 us (1 Gbps, 50 us), but every message of rank 1 leaves at 1 s or
// later. Slip caught: the plan runner sending an arrival's dependents without asking whether
// their sender has entered (rank 1's second message then leaves at 66 us).
TEST(CollectiveBackends, ARankSendsNothingBeforeItEnters) {
  const Topology t = topology("ring", 2);
  CollectiveOptions o;
  o.algorithm = collective_algorithm("ring");
  auto plan = std::make_shared<const CollectivePlan>(all_reduce(o, 2, 1000, 4));
  EventClock clock;
  auto network = make_analytical_network(clock, t);
  uint64_t next_id = 0;
  std::vector<double> sent_by_1;
  PlanRunner::Hooks hooks;
  hooks.delivered = [&](int message, const Delivery& d) {
    if (plan->messages[message].src == 1) sent_by_1.push_back(d.t_send);
  };
  PlanRunner runner(plan, {0, 1}, *network, next_id, MessageTransport{}, hooks);
  clock.schedule(0, [&] { runner.enter(0); });
  clock.schedule(1.0, [&] { runner.enter(1); });
  clock.run();
  EXPECT_TRUE(runner.all_delivered());
  ASSERT_EQ(sent_by_1.size(), 2u);  // 2 (p - 1) messages a rank
  for (double t_send : sent_by_1) EXPECT_GE(t_send, 1.0);
  network.reset();  // before the clock
}

}  // namespace
}  // namespace collective_backends
}  // namespace testbed

namespace testbed {
namespace collective_backends {
namespace {

// Split learning's cut (cut_exchange): the activations to rank 1, which holds them for its
// compute, then their gradient back. On the alpha-beta backend over one 1 Gb/s, 50 us link:
// 2 (50 us + 4000 B x 8 / 1 Gb/s) + the hold. Slips caught: the hold skipped, the gradient
// leaving before the activations arrive, a message sent twice.
TEST(CutExchange, ActivationsOutHoldGradientBack) {
  const CollectivePlan plan = cut_exchange(1000, 4, 0.25);
  ASSERT_EQ(plan.messages.size(), 2u);
  EXPECT_EQ(plan.messages[0].src, 0);
  EXPECT_EQ(plan.messages[1].src, 1);
  EXPECT_EQ(plan.messages[1].after, std::vector<int>{0});
  EXPECT_EQ(plan.messages[1].offset, 1000);
  EXPECT_EQ(bytes_sent_per_rank(plan), (std::vector<uint64_t>{4000, 4000}));
  const double one_way = 50e-6 + 4000 * 8 / 1e9;
  EXPECT_NEAR(run(Backend::Analytical, topology("line", 2), plan), 2 * one_way + 0.25, 1e-9);
  EXPECT_NEAR(run(Backend::Analytical, topology("line", 2), cut_exchange(1000, 4, 0)), 2 * one_way, 1e-9);
}

}  // namespace
}  // namespace collective_backends
}  // namespace testbed
