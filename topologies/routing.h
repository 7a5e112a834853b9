// Routes over a topology: minimum-hop paths (lowest-index ties, or per-connection ECMP), and
// the alpha-beta parameters of a path.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "topologies/topology.h"

namespace testbed {

struct PathProperties {
  int hops = 0;
  double latency_s = 0;       // sum of link latencies
  double bottleneck_bps = 0;  // min link bandwidth on the path, each link's rate in the path's direction
};

// Vertices from src to dst inclusive along a minimum-hop path (ties broken deterministically).
std::vector<int> shortest_path(const Topology& topology, int src, int dst);

PathProperties path_properties(const Topology& topology, int src, int dst);
// The same for a given path (vertices in order, consecutive ones joined by a link).
PathProperties path_properties(const Topology& topology, const std::vector<int>& path);

// How a connection's path is chosen among the minimum-hop paths. shortest: shortest_path's
// one. ecmp: as a fabric's per-flow ECMP, a hash of the connection (its source and destination
// vertices, salted by `seed`) picks one of them; all of its packets then follow that path.
enum class RoutingPolicy { Shortest, Ecmp };

struct RoutingOptions {
  RoutingPolicy policy = RoutingPolicy::Shortest;
  uint64_t seed = 0;  // ecmp: the salt (the scenario passes its seed's "routing" stream)
};

// A route's latency and bottleneck between two hosts, as the backends take it.
using PathOf = std::function<PathProperties(int src_host, int dst_host)>;
// The properties of route(topology, a, b, options); `topology` must outlive the function.
PathOf path_of(const Topology& topology, RoutingOptions options);

// "shortest" or "ecmp" (the scenario's network.routing names).
std::string routing_name(RoutingPolicy policy);

// Links out of service, each as (lower vertex, higher vertex): routes avoid them.
using CutLinks = std::set<std::pair<int, int>>;

// The path (vertices from src to dst inclusive) a connection from src to dst takes under
// `options`, over the links not in `cut`. Throws std::invalid_argument when none is left.
std::vector<int> route(const Topology& topology, int src, int dst, const RoutingOptions& options,
                       const CutLinks& cut = {});

// How many minimum-hop paths lead from src to dst (saturating at 2^63).
uint64_t equal_cost_path_count(const Topology& topology, int src, int dst, const CutLinks& cut = {});

// The index ecmp takes among the equal-cost paths, in their order of ascending vertex lists:
// ecmp_hash(seed, src, dst) modulo their count.
uint64_t ecmp_hash(uint64_t seed, int src, int dst);

// Each host's neighbours among the hosts, in ascending order: hosts joined to it by a link,
// or reached through switches only (so the hosts of a star are all neighbours). Symmetric.
std::vector<std::vector<int>> host_neighbours(const Topology& topology);

}  // namespace testbed
