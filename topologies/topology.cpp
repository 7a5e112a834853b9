// Topology queries: host count, connectivity and degree over the Boost graph.
#include "topologies/topology.h"

#include <boost/graph/connected_components.hpp>

namespace testbed {

int Topology::num_hosts() const {
  int hosts = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(graph)))
    if (graph[v].kind == VertexKind::Host) ++hosts;
  return hosts;
}

bool Topology::is_connected() const {
  if (boost::num_vertices(graph) <= 1) return true;
  std::vector<int> component(boost::num_vertices(graph));
  return boost::connected_components(graph, component.data()) == 1;
}

int Topology::degree(int vertex) const { return static_cast<int>(boost::degree(static_cast<Vertex>(vertex), graph)); }

}  // namespace testbed
