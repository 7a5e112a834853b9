// Builders of the larger topology kinds, each in its own file; build_topology dispatches here.
#pragma once

#include "topologies/builders.h"

namespace testbed::detail {

// Each adds switches and links to `t`, whose vertices 0..hosts-1 are already the hosts.
// They throw std::invalid_argument for sizes they cannot build.
void build_fat_tree(const TopologySpec& spec, Topology& t);
void build_hierarchical(const TopologySpec& spec, Topology& t);
void build_gpu_hosts(const TopologySpec& spec, Topology& t);
void build_erdos_renyi(const TopologySpec& spec, Topology& t);
void build_watts_strogatz(const TopologySpec& spec, Topology& t);

// Adds a link unless it is a self-loop or a duplicate (the graph stays simple).
void add_link(Topology::Graph& g, int a, int b, const LinkSpec& spec);

}  // namespace testbed::detail
