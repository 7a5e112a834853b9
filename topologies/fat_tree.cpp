// The k-ary fat-tree (Al-Fares et al.) and the two-level hierarchical (clusters joined by a WAN ring).
#include <stdexcept>
#include <string>

#include "topologies/kinds.h"

namespace testbed::detail {

void build_fat_tree(const TopologySpec& spec, Topology& t) {
  const int k = spec.fat_tree_k;
  if (k < 2 || k % 2 != 0) throw std::invalid_argument("fat_tree: k must be even and >= 2, got " + std::to_string(k));
  const int half = k / 2;
  const int slots = k * k * k / 4;
  if (spec.hosts > slots)
    throw std::invalid_argument("fat_tree: k=" + std::to_string(k) + " has " + std::to_string(slots) +
                                " host slots, but nodes is " + std::to_string(spec.hosts));
  Topology::Graph& g = t.graph;
  const LinkSpec& l = spec.link;
  // Switches after the hosts: edge switches pod by pod, then aggregation, then core.
  const int edge0 = spec.hosts;
  const int agg0 = edge0 + k * half;
  const int core0 = agg0 + k * half;
  for (int i = 0; i < k * half * 2 + half * half; ++i) boost::add_vertex(VertexInfo{VertexKind::Switch}, g);
  // Host slot h sits on edge switch h / half (pods are consecutive runs of half edge switches);
  // only the first `hosts` slots exist.
  for (int h = 0; h < spec.hosts; ++h) add_link(g, h, edge0 + h / half, l);
  for (int pod = 0; pod < k; ++pod)
    for (int e = 0; e < half; ++e)
      for (int a = 0; a < half; ++a) add_link(g, edge0 + pod * half + e, agg0 + pod * half + a, l);
  // Aggregation switch a of every pod reaches core switches a*half .. a*half+half-1.
  for (int pod = 0; pod < k; ++pod)
    for (int a = 0; a < half; ++a)
      for (int j = 0; j < half; ++j) add_link(g, agg0 + pod * half + a, core0 + a * half + j, l);
}

void build_hierarchical(const TopologySpec& spec, Topology& t) {
  const int c = spec.clusters, m = spec.per_cluster;
  if (c < 1) throw std::invalid_argument("hierarchical: clusters must be >= 1, got " + std::to_string(c));
  // per_cluster 0 is what the scenario passes when nodes does not divide into the clusters.
  if (m < 1)
    throw std::invalid_argument("hierarchical: nodes (" + std::to_string(spec.hosts) +
                                ") is not a multiple of clusters (" + std::to_string(c) + ")");
  if (static_cast<long long>(c) * m + spec.extra_hosts != spec.hosts)
    throw std::invalid_argument("hierarchical: nodes (" + std::to_string(spec.hosts - spec.extra_hosts) +
                                ") must equal clusters x per_cluster (" + std::to_string(c) + " x " +
                                std::to_string(m) + ")");
  Topology::Graph& g = t.graph;
  const int sw0 = spec.hosts;
  for (int i = 0; i < c; ++i) boost::add_vertex(VertexInfo{VertexKind::Switch}, g);
  // Hosts past the clusters' blocks (a federated run's server) sit in cluster 0.
  for (int h = 0; h < spec.hosts; ++h) add_link(g, h, sw0 + (h < c * m ? h / m : 0), spec.link);
  // A ring rather than a full mesh: WAN sites are usually chained, and a ring keeps
  // cross-cluster paths multi-hop, which is what the kind is for. Two clusters: one link.
  for (int i = 0; i < c; ++i) add_link(g, sw0 + i, sw0 + (i + 1) % c, spec.wan);
}

}  // namespace testbed::detail
