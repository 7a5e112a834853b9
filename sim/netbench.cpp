// Netbench: a sizes-only collective through the scenario's backend, timed on the host.
#include "sim/netbench.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "netmodels/alpha_beta.h"
#include "netmodels/collectives.h"
#include "netmodels/plan_runner.h"
#include "sim/network_factory.h"
#include "topologies/routing.h"

namespace testbed {

NetbenchResult netbench(const Scenario& scenario, const std::string& collective, double bytes) {
  const int p = scenario.nodes;
  if (!(bytes > 0)) throw std::invalid_argument("netbench: size must be positive");
  const Topology topology = build_topology(topology_spec(scenario));
  const int64_t elements = static_cast<int64_t>(bytes / 4);
  CollectivePlan plan;
  std::vector<std::pair<int, int>> pairs;  // the host pairs the collective uses
  if (collective == "allreduce" || collective == "allgather") {
    plan = collective == "allreduce" ? ring_all_reduce(p, elements, 4) : ring_all_gather(p, elements, 4);
    for (int r = 0; r < p && p > 1; ++r) pairs.emplace_back(r, (r + 1) % p);
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
    pairs.emplace_back(0, p - 1);
  } else {
    throw std::invalid_argument("netbench: unknown collective '" + collective + "' (allreduce, allgather, p2p)");
  }
  double alpha = 0, beta = 0;
  for (auto [a, b] : pairs) {
    const PathProperties path = path_properties(topology, a, b);
    alpha = std::max(alpha, path.latency_s);
    beta = std::max(beta, 8.0 / path.bottleneck_bps);
  }
  const double n = static_cast<double>(elements) * 4;
  NetbenchResult r;
  if (collective == "allreduce") r.bound_s = alpha_beta::ring_all_reduce(alpha, beta, n, p);
  if (collective == "allgather") r.bound_s = alpha_beta::ring_all_gather(alpha, beta, n * p, p);
  if (collective == "p2p") r.bound_s = alpha_beta::point_to_point(alpha, beta, n);
  for (const auto& m : plan.messages) r.payload_bytes += m.bytes;
  std::vector<int> hosts(p);
  for (int i = 0; i < p; ++i) hosts[i] = i;
  const auto start = std::chrono::steady_clock::now();
  {
    EventClock clock;
    auto network = make_network(scenario, clock, topology);
    r.simulated_s = simulate_plan(clock, *network, plan, hosts);
    network.reset();  // before the clock, as ns-3 requires
  }
  r.host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace testbed
