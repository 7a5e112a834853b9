// Shortest paths over a topology: hop lists and the alpha-beta parameters of a path.
#pragma once

#include <vector>

#include "topologies/topology.h"

namespace testbed {

struct PathProperties {
  int hops = 0;
  double latency_s = 0;           // sum of link latencies
  double bottleneck_bps = 0;      // min link bandwidth on the path, each link's rate in the path's direction
};

// Vertices from src to dst inclusive along a minimum-hop path (ties broken deterministically).
std::vector<int> shortest_path(const Topology& topology, int src, int dst);

PathProperties path_properties(const Topology& topology, int src, int dst);

// Each host's neighbours among the hosts, in ascending order: hosts joined to it by a link,
// or reached through switches only (so the hosts of a star are all neighbours). Symmetric.
std::vector<std::vector<int>> host_neighbours(const Topology& topology);

}  // namespace testbed
