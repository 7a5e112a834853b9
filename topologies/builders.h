// Builders for the standard topologies, from a small description.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "topologies/topology.h"

namespace testbed {

// A per-link override: the link between two vertices gets other properties.
// A negative field keeps the default.
struct LinkOverride {
  int a = -1, b = -1;
  double bandwidth_bps = -1;  // from a to b (and b to a unless reverse_bandwidth_bps is set)
  double latency_s = -1;
  double loss = -1;
  double reverse_bandwidth_bps = -1;  // from b to a
  int gilbert_elliott = -1;           // 0: Bernoulli loss, 1: Gilbert-Elliott (LinkSpec)
  double p_good_bad = -1, p_bad_good = -1, loss_bad = -1;
  std::optional<std::vector<RateChange>> trace;  // replaces the link's bandwidth trace
  double jitter_s = -1;
};

// The kinds build_topology builds, in the order topology_kinds() names them.
enum class TopologyKind {
  Ring,
  Line,
  Star,
  Mesh,
  Torus2d,
  Tree,
  FatTree,
  Hierarchical,
  GpuHosts,
  ErdosRenyi,
  WattsStrogatz,
  Graphml
};

struct TopologySpec {
  TopologyKind kind = TopologyKind::Ring;
  int hosts = 4;
  LinkSpec link;                        // default for every link
  std::vector<LinkOverride> overrides;  // applied after building
  int torus_rows = 0;                   // torus2d: rows (0: the most square factorisation)
  int fat_tree_k = 4;                   // fat_tree: switch radix (even, >= 2)
  int clusters = 2, per_cluster = 2;    // hierarchical: clusters x hosts per cluster
  int extra_hosts = 0;  // hierarchical: hosts after the clusters' (a federated server), on cluster 0's switch
  LinkSpec wan{.bandwidth_bps = 1e9, .latency_s = 0.050};         // hierarchical: links between cluster switches
  int gpus_per_host = 4;                                          // gpu_hosts: GPUs on each host's local switch
  LinkSpec gpu_link{.bandwidth_bps = 2.4e12, .latency_s = 1e-6};  // gpu_hosts: GPU to its local switch
  double edge_probability = 0.5;                                  // erdos_renyi: p
  int degree = 2;                                                 // watts_strogatz: lattice degree (even)
  double beta = 0.1;                                              // watts_strogatz: rewiring probability
  uint64_t seed = 0;                   // random kinds: first draw (later draws: seed + 1, ...)
  std::string file;                    // graphml: path of the Topology Zoo file
  std::vector<std::string> placement;  // graphml: node ids or labels of the hosts, in order
};

// The kinds' names (a scenario's topology.kind, a built Topology's kind), in TopologyKind's order.
const std::vector<std::string>& topology_kinds();
const std::string& topology_kind_name(TopologyKind kind);
// The kind a name names; throws std::invalid_argument listing the names for any other.
TopologyKind topology_kind(const std::string& name);

// Throws std::invalid_argument with a readable message for an unknown kind, an
// impossible size, an override naming a link that does not exist, or a
// disconnected result.
Topology build_topology(const TopologySpec& spec);

// The checks build_topology applies to its result, for graphs from elsewhere
// (files, hand-built): every link's properties are valid and the graph is
// connected. Throws std::invalid_argument otherwise.
void validate_topology(const Topology& topology);

}  // namespace testbed
