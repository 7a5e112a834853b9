// A network graph: training hosts and switches joined by links (Boost.Graph).
#pragma once

#include <boost/graph/adjacency_list.hpp>

#include <string>
#include <vector>

#include "topologies/link_spec.h"

namespace testbed {

enum class VertexKind { Host, Switch };

struct VertexInfo {
  VertexKind kind = VertexKind::Host;
};

// Hosts are vertices 0..num_hosts-1 (host i trains replica i); switches follow.
struct Topology {
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, VertexInfo, LinkSpec>;
  using Vertex = Graph::vertex_descriptor;
  using Edge = Graph::edge_descriptor;

  std::string kind;
  Graph graph;

  int num_hosts() const;
  int num_vertices() const { return static_cast<int>(boost::num_vertices(graph)); }
  int num_links() const { return static_cast<int>(boost::num_edges(graph)); }
  bool is_connected() const;
  // Degree of a vertex (number of incident links).
  int degree(int vertex) const;
};

}  // namespace testbed
