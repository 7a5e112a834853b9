// Netbench: a sizes-only collective through the scenario's backend, timed on the host.
#include "sim/tools/netbench.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "comm/alone_time.h"
#include "comm/collective_options.h"
#include "comm/plan_runner.h"
#include "comm/plans/collectives.h"
#include "netmodels/alpha_beta.h"
#include "sim/core/network_factory.h"
#include "topologies/routing.h"

namespace testbed {
namespace {

// The largest latency and the slowest bottleneck (s/byte) among the host pairs.
std::pair<double, double> alpha_beta_of(const PathOf& path, const std::set<std::pair<int, int>>& pairs) {
  double alpha = 0, beta = 0;
  for (auto [a, b] : pairs) {
    const PathProperties route = path(a, b);
    alpha = std::max(alpha, route.latency_s);
    beta = std::max(beta, 8.0 / route.bottleneck_bps);
  }
  return {alpha, beta};
}

// Seconds per byte through all of a host's links at once: whatever the routes, what a host
// sends (or receives) leaves (arrives) through them.
double access_beta(const Topology& topology, int host) {
  double bps = 0;
  for (auto [e, end] = boost::out_edges(host, topology.graph); e != end; ++e) bps += topology.graph[*e].bandwidth_bps;
  return 8.0 / bps;
}

std::set<std::pair<int, int>> pairs_of(const CollectivePlan& plan,
                                       const std::function<bool(const CollectiveMessage&)>& keep) {
  std::set<std::pair<int, int>> pairs;
  for (const auto& m : plan.messages)
    if (keep(m)) pairs.emplace(m.src, m.dst);
  return pairs;
}

// Edges on the longest root-to-leaf path of the binary tree tree_all_reduce uses.
int tree_depth(int p) {
  const auto children = binary_tree_children(p);
  std::vector<int> depth(p, 0);
  int deepest = 0;
  // Children are found from their parent, so a breadth-first pass from the root sets depths.
  std::vector<int> queue{0};
  for (size_t i = 0; i < queue.size(); ++i)
    for (int c : children[queue[i]]) {
      depth[c] = depth[queue[i]] + 1;
      deepest = std::max(deepest, depth[c]);
      queue.push_back(c);
    }
  return deepest;
}

// A lower bound on an all-reduce of n bytes by `o`: the plan's latency critical path plus
// the bandwidth term of the algorithm's formula (netmodels/alpha_beta.h's where it has one). beta is the
// slowest bottleneck among the pairs the plan uses; beta_host(r) is rank r's links together.
double all_reduce_bound(const Topology& topology, const PathOf& path, const CollectivePlan& plan,
                        const std::vector<int>& hosts, const CollectiveOptions& o, double n) {
  const int p = plan.ranks;
  if (p < 2) return 0;
  // The latency part of the plan's time: its longest chain of dependent messages, each taking
  // its route's latency (comm/alone_time.h, no library costs). Equals the formulas' k alpha
  // terms when every pair has the same latency, and stays a lower bound when they differ
  // (halving-doubling's partners on a ring are 1 and 2 hops apart; the formula's max latency
  // for every step would overstate it).
  const double latency = plan_latency_chain(plan, hosts, LibraryCosts{}, path);
  auto all = [](const CollectiveMessage&) { return true; };
  const double beta = alpha_beta_of(path, pairs_of(plan, all)).second;
  switch (o.algorithm) {
    case CollectiveAlgorithm::Ring:
      // 2(p-1) alpha + 2(p-1)/p n beta with one slice; with more, the pipelined form
      // (alpha_beta.h), alpha the mean latency along the 2(p-1) hops of the critical path.
      return alpha_beta::ring_all_reduce_sliced(latency / (2 * (p - 1)), beta, n, p, o.slices);
    case CollectiveAlgorithm::HalvingDoubling:
      // 2 log2(p) alpha + 2(p-1)/p n beta: a rank's steps are sequential.
      return latency + alpha_beta::halving_doubling(0, beta, n, p);
    case CollectiveAlgorithm::ParameterServer:
      // The textbook 2(alpha + p n beta) counts the workers of a separate server; here the
      // server is one of the p ranks, so p - 1 buffers go in and p - 1 come back out, all
      // through the server's own links, and the two phases cannot overlap.
      return latency + 2.0 * (p - 1) * n * access_beta(topology, o.server);
    case CollectiveAlgorithm::Tree:
      // Without pipelining a half climbs D store-and-forward hops to its root and comes back
      // down D more, each carrying n/2: 2 D alpha + D n beta, D the tree's depth.
      return latency + tree_depth(p) * n * beta;
    case CollectiveAlgorithm::Direct: {
      // Each rank sends 2(p-1)/p n (its p-1 foreign chunks, then its reduced chunk p-1
      // times) through its own links whatever the routes: 2 alpha + 2(p-1)/p n beta_host
      // (a mesh sends to its peers in parallel, so beta_host, not the paths' beta).
      double host_beta = 0;
      for (int r = 0; r < p; ++r) host_beta = std::max(host_beta, access_beta(topology, r));
      return latency + 2.0 * (p - 1) / p * n * host_beta;
    }
    case CollectiveAlgorithm::Hierarchical: {
      // A leader of a cluster of m takes in (m-1) n and sends (m-1) n back through its own
      // links, one member-leader latency each way; between the two the leaders run a ring
      // all-reduce (pipelined when sliced), alpha the mean latency of the leaders' ring links:
      // 2 (alpha_in + (m-1) n beta_leader) + the leaders' ring.
      std::map<int, std::vector<int>> clusters;
      for (int r = 0; r < p; ++r) clusters[o.cluster_of.at(r)].push_back(r);
      std::vector<int> leaders;
      double intra = 0;
      for (auto& [id, ranks] : clusters) {
        leaders.push_back(ranks.front());
        if (ranks.size() < 2) continue;
        std::set<std::pair<int, int>> member_pairs;
        for (size_t i = 1; i < ranks.size(); ++i) member_pairs.emplace(ranks[i], ranks[0]);
        const double in_alpha = alpha_beta_of(path, member_pairs).first;
        const double m = static_cast<double>(ranks.size());
        intra = std::max(intra, 2.0 * (in_alpha + (m - 1) * n * access_beta(topology, ranks[0])));
      }
      std::sort(leaders.begin(), leaders.end());
      const int l = static_cast<int>(leaders.size());
      if (l < 2) return intra;
      double wan_latency = 0, wan_beta = 0;
      for (int i = 0; i < l; ++i) {
        const PathProperties route = path(leaders[i], leaders[(i + 1) % l]);
        wan_latency += route.latency_s / l;
        wan_beta = std::max(wan_beta, 8.0 / route.bottleneck_bps);
      }
      return intra + alpha_beta::ring_all_reduce_sliced(wan_latency, wan_beta, n, l, o.slices);
    }
  }
  throw std::logic_error("netbench: unknown algorithm");
}

}  // namespace

NetbenchResult netbench(const Scenario& scenario, const std::string& collective, double bytes) {
  const int p = scenario.nodes;
  if (!(bytes > 0)) throw std::invalid_argument("netbench: size must be positive");
  const Topology topology = build_topology(topology_spec(scenario));
  const PathOf path = path_of(topology, routing_options(scenario));
  const int64_t elements = static_cast<int64_t>(bytes / 4);
  const double n = static_cast<double>(elements) * 4;
  std::vector<int> hosts(p);
  for (int i = 0; i < p; ++i) hosts[i] = i;
  const CollectiveOptions options = collective_options(collective_choice(scenario), hosts);
  CollectivePlan plan;
  NetbenchResult r;
  if (collective == "allreduce") {
    plan = all_reduce(options, p, elements, 4);
    r.bound_s = all_reduce_bound(topology, path, plan, hosts, options, n);
  } else if (collective == "allgather") {
    plan = all_gather(options, p, elements, 4);
    const auto [alpha, beta] = alpha_beta_of(path, pairs_of(plan, [](const CollectiveMessage&) { return true; }));
    if (options.algorithm == CollectiveAlgorithm::Direct) {
      // Each rank sends its block to p-1 ranks through its own links in one step.
      double host_beta = 0;
      for (int h = 0; h < p; ++h) host_beta = std::max(host_beta, access_beta(topology, h));
      r.bound_s = p > 1 ? alpha + (p - 1) * n * host_beta : 0;
    } else {
      r.bound_s = alpha_beta::ring_all_gather_sliced(alpha, beta, n * p, p, options.slices);
    }
  } else if (collective == "p2p") {
    if (p < 2) throw std::invalid_argument("netbench: p2p needs 2 nodes or more");
    plan.ranks = p;
    plan.inbox.assign(p, {});
    CollectiveMessage m;
    m.src = 0;
    m.dst = p - 1;
    m.count = elements;
    m.bytes = static_cast<uint64_t>(elements) * 4;
    plan.inbox[p - 1].push_back(0);
    plan.messages.push_back(m);
    const auto [alpha, beta] = alpha_beta_of(path, {{0, p - 1}});
    r.bound_s = alpha_beta::point_to_point(alpha, beta, n);
  } else {
    throw std::invalid_argument("netbench: unknown collective '" + collective + "' (allreduce, allgather, p2p)");
  }
  for (const auto& m : plan.messages) r.payload_bytes += m.bytes;
  const auto start = std::chrono::steady_clock::now();
  {
    EventClock clock;
    auto network = make_network(scenario, clock, topology);
    r.simulated_s = simulate_plan(clock, *network, plan, hosts, collective_choice(scenario).library);
    network.reset();  // before the clock, as ns-3 requires
  }
  r.host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace testbed
