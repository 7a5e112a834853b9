// Minimum-hop routing by breadth-first search, ties broken towards lower vertex indices.
#include "topologies/routing.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>

namespace testbed {

std::vector<int> shortest_path(const Topology& topology, int src, int dst) {
  const int nv = topology.num_vertices();
  if (src < 0 || src >= nv || dst < 0 || dst >= nv)
    throw std::invalid_argument("shortest_path: vertex out of range: " + std::to_string(src) +
                                " -> " + std::to_string(dst));
  const auto& g = topology.graph;
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
    neighbours.clear();
    for (auto v : boost::make_iterator_range(boost::adjacent_vertices(u, g)))
      neighbours.push_back(static_cast<int>(v));
    std::sort(neighbours.begin(), neighbours.end());
    for (int v : neighbours)
      if (!seen[v]) {
        seen[v] = true;
        parent[v] = u;
        queue.push_back(v);
      }
  }
  if (!seen[dst])
    throw std::invalid_argument("no path from " + std::to_string(src) + " to " +
                                std::to_string(dst));
  std::vector<int> path;
  for (int v = dst; v != -1; v = parent[v]) path.push_back(v);
  std::reverse(path.begin(), path.end());
  return path;
}

PathProperties path_properties(const Topology& topology, int src, int dst) {
  const auto path = shortest_path(topology, src, dst);
  PathProperties p;
  p.hops = static_cast<int>(path.size()) - 1;
  // Starts at infinity so that src == dst (no links) costs no transfer time.
  p.bottleneck_bps = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    const auto& link = topology.graph[boost::edge(path[i], path[i + 1], topology.graph).first];
    p.latency_s += link.latency_s;
    p.bottleneck_bps = std::min(p.bottleneck_bps, link.rate_bps(path[i], path[i + 1]));
  }
  return p;
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

}  // namespace testbed
