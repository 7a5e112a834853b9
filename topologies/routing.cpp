// Minimum-hop routing by breadth-first search: ties broken towards lower vertex indices, or per
// connection by a salted hash over all equal-cost paths (ECMP).
#include "topologies/routing.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>

namespace testbed {
namespace {

void check_vertices(const Topology& topology, int src, int dst) {
  const int nv = topology.num_vertices();
  if (src < 0 || src >= nv || dst < 0 || dst >= nv)
    throw std::invalid_argument("route: vertex out of range: " + std::to_string(src) + " -> " + std::to_string(dst));
}

bool is_cut(const CutLinks& cut, int a, int b) {
  return !cut.empty() && cut.count({std::min(a, b), std::max(a, b)}) > 0;
}

// u's neighbours over links in service, ascending.
void neighbours_of(const Topology& topology, int u, const CutLinks& cut, std::vector<int>& out) {
  out.clear();
  for (auto v : boost::make_iterator_range(boost::adjacent_vertices(u, topology.graph)))
    if (!is_cut(cut, u, static_cast<int>(v))) out.push_back(static_cast<int>(v));
  std::sort(out.begin(), out.end());
}

std::invalid_argument no_path(int src, int dst) {
  return std::invalid_argument("no path from " + std::to_string(src) + " to " + std::to_string(dst));
}

std::vector<int> lowest_index_path(const Topology& topology, int src, int dst, const CutLinks& cut) {
  check_vertices(topology, src, dst);
  const int nv = topology.num_vertices();
  // BFS from src, visiting neighbours in ascending index order, so each
  // vertex's parent is the lowest-index vertex among the earliest reachers.
  std::vector<int> parent(nv, -1);
  std::vector<bool> seen(nv, false);
  std::deque<int> queue{src};
  seen[src] = true;
  std::vector<int> neighbours;
  while (!queue.empty()) {
    const int u = queue.front();
    queue.pop_front();
    if (u == dst) break;
    neighbours_of(topology, u, cut, neighbours);
    for (int v : neighbours)
      if (!seen[v]) {
        seen[v] = true;
        parent[v] = u;
        queue.push_back(v);
      }
  }
  if (!seen[dst]) throw no_path(src, dst);
  std::vector<int> path;
  for (int v = dst; v != -1; v = parent[v]) path.push_back(v);
  std::reverse(path.begin(), path.end());
  return path;
}

constexpr uint64_t kSaturated = uint64_t{1} << 63;

// Hops from every vertex to dst over links in service (-1: unreachable), and how many
// minimum-hop paths lead from each vertex to dst (saturating at kSaturated).
struct EqualCost {
  std::vector<int> hops;
  std::vector<uint64_t> paths;
};

EqualCost equal_cost(const Topology& topology, int dst, const CutLinks& cut) {
  const int nv = topology.num_vertices();
  EqualCost e{std::vector<int>(nv, -1), std::vector<uint64_t>(nv, 0)};
  e.hops[dst] = 0;
  e.paths[dst] = 1;
  // Breadth-first from dst: a vertex is dequeued after every vertex one hop closer to dst,
  // so its count is complete by then and adds into the vertices one hop further out.
  std::deque<int> queue{dst};
  std::vector<int> neighbours;
  while (!queue.empty()) {
    const int u = queue.front();
    queue.pop_front();
    neighbours_of(topology, u, cut, neighbours);
    for (int v : neighbours) {
      if (e.hops[v] < 0) {
        e.hops[v] = e.hops[u] + 1;
        queue.push_back(v);
      }
      if (e.hops[v] == e.hops[u] + 1) e.paths[v] = std::min(kSaturated, e.paths[v] + e.paths[u]);
    }
  }
  return e;
}

// splitmix64's finaliser: every input bit moves every output bit.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::vector<int> shortest_path(const Topology& topology, int src, int dst) {
  return lowest_index_path(topology, src, dst, {});
}

PathProperties path_properties(const Topology& topology, int src, int dst) {
  return path_properties(topology, shortest_path(topology, src, dst));
}

PathProperties path_properties(const Topology& topology, const std::vector<int>& path) {
  PathProperties p;
  p.hops = static_cast<int>(path.size()) - 1;
  // Starts at infinity so that src == dst (no links) costs no transfer time.
  p.bottleneck_bps = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    const auto [e, found] = boost::edge(path[i], path[i + 1], topology.graph);
    if (!found)
      throw std::invalid_argument("path_properties: no link between " + std::to_string(path[i]) + " and " +
                                  std::to_string(path[i + 1]));
    const auto& link = topology.graph[e];
    p.latency_s += link.latency_s;
    p.bottleneck_bps = std::min(p.bottleneck_bps, link.rate_bps(path[i], path[i + 1]));
  }
  return p;
}

std::string routing_name(RoutingPolicy policy) { return policy == RoutingPolicy::Ecmp ? "ecmp" : "shortest"; }

uint64_t ecmp_hash(uint64_t seed, int src, int dst) {
  // Chained, so the source and the destination each change the result, and (a, b) and (b, a)
  // hash apart: the two directions of a pair are two connections, each with its own path.
  return mix64(mix64(mix64(seed) ^ static_cast<uint32_t>(src)) ^ static_cast<uint32_t>(dst));
}

uint64_t equal_cost_path_count(const Topology& topology, int src, int dst, const CutLinks& cut) {
  check_vertices(topology, src, dst);
  return equal_cost(topology, dst, cut).paths[src];
}

std::vector<int> route(const Topology& topology, int src, int dst, const RoutingOptions& options, const CutLinks& cut) {
  if (options.policy == RoutingPolicy::Shortest) return lowest_index_path(topology, src, dst, cut);
  check_vertices(topology, src, dst);
  const EqualCost e = equal_cost(topology, dst, cut);
  if (e.hops[src] < 0) throw no_path(src, dst);
  // The k-th of the equal-cost paths in ascending order of their vertex lists: at each vertex
  // the next hops closer to dst come in ascending order, each heading paths[next] of them.
  uint64_t k = ecmp_hash(options.seed, src, dst) % e.paths[src];
  std::vector<int> path{src};
  std::vector<int> neighbours;
  for (int u = src; u != dst;) {
    neighbours_of(topology, u, cut, neighbours);
    int next = -1;
    for (int v : neighbours) {
      if (e.hops[v] != e.hops[u] - 1) continue;
      if (k < e.paths[v]) {
        next = v;
        break;
      }
      k -= e.paths[v];
    }
    if (next < 0) throw std::logic_error("route: equal-cost path counts are inconsistent");
    path.push_back(next);
    u = next;
  }
  return path;
}

std::vector<std::vector<int>> host_neighbours(const Topology& topology) {
  const auto& g = topology.graph;
  const int hosts = topology.num_hosts();
  std::vector<std::vector<int>> out(hosts);
  std::vector<int> seen(topology.num_vertices(), -1);  // the host whose search last saw it
  for (int h = 0; h < hosts; ++h) {
    // Search outward from h, passing through switches but stopping at the first host.
    std::deque<int> queue{h};
    seen[h] = h;
    while (!queue.empty()) {
      const int u = queue.front();
      queue.pop_front();
      for (auto v : boost::make_iterator_range(boost::adjacent_vertices(u, g))) {
        const int w = static_cast<int>(v);
        if (seen[w] == h) continue;
        seen[w] = h;
        if (g[v].kind == VertexKind::Host) {
          out[h].push_back(w);
        } else {
          queue.push_back(w);
        }
      }
    }
    std::sort(out[h].begin(), out[h].end());
  }
  return out;
}

PathOf path_of(const Topology& topology, RoutingOptions options) {
  return [&topology, options](int a, int b) { return path_properties(topology, route(topology, a, b, options)); };
}

}  // namespace testbed
