// Human-readable views of a topology: a summary with per-host-pair paths, and Graphviz DOT.
#pragma once

#include <ostream>

#include "topologies/topology.h"

namespace testbed {

// Vertices (hosts and switches), links with their properties, then for every pair of hosts
// the minimum-hop path's hops, latency and bottleneck bandwidth.
void describe_topology(const Topology& topology, std::ostream& out);

// The graph in DOT: hosts as boxes h0..hN-1, switches as circles, links labelled.
void write_dot(const Topology& topology, std::ostream& out);

}  // namespace testbed
