// Human-readable views of a topology: a summary with per-host-pair paths, and Graphviz DOT.
#pragma once

#include <ostream>

#include "topologies/routing.h"
#include "topologies/topology.h"

namespace testbed {

// Vertices (hosts and switches), links with their properties, then for every pair of hosts
// its route's hops, latency and bottleneck bandwidth under `routing`: for shortest routing
// one line per pair (from the lower host), otherwise, or with `paths`, one per direction (ecmp
// routes each direction as a connection of its own), `paths` adding the route's vertices.
void describe_topology(const Topology& topology, std::ostream& out, const RoutingOptions& routing = {},
                       bool paths = false);

// The graph in DOT: hosts as boxes h0..hN-1, switches as circles, links labelled.
void write_dot(const Topology& topology, std::ostream& out);

}  // namespace testbed
