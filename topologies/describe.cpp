// Topology summaries for `testbed topology`.
#include "topologies/describe.h"

#include <cstdio>
#include <string>

#include "topologies/routing.h"

namespace testbed {
namespace {

std::string name_of(const Topology& t, int v) {
  return (t.graph[v].kind == VertexKind::Host ? "h" : "s") + std::to_string(v);
}

std::string format(const char* pattern, double a, double b) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, a, b);
  return text;
}

// bandwidth and latency as a researcher reads them: Mbps, ms.
std::string link_text(const LinkSpec& l) {
  std::string s = format("%g Mbps, %g ms", l.bandwidth_bps / 1e6, l.latency_s * 1e3);
  if (l.reverse_bandwidth_bps > 0)  // lower-index end to higher, then back
    s = format("%g / %g Mbps", l.bandwidth_bps / 1e6, l.reverse_bandwidth_bps / 1e6) + s.substr(s.find(','));
  if (l.loss > 0) {
    char text[32];
    std::snprintf(text, sizeof text, ", loss %g %%", l.loss * 100);
    s += text;
  }
  if (l.jitter_s > 0) {
    char text[32];
    std::snprintf(text, sizeof text, ", jitter %g ms", l.jitter_s * 1e3);
    s += text;
  }
  return s;
}

}  // namespace

void describe_topology(const Topology& t, std::ostream& out, const RoutingOptions& routing, bool paths) {
  const auto& g = t.graph;
  out << "topology " << t.kind << ": " << t.num_hosts() << " hosts, " << t.num_vertices() - t.num_hosts()
      << " switches, " << t.num_links() << " links\n";
  out << "links:\n";
  for (auto e : boost::make_iterator_range(boost::edges(g))) {
    const int a = static_cast<int>(boost::source(e, g)), b = static_cast<int>(boost::target(e, g));
    out << "  " << name_of(t, a) << " - " << name_of(t, b) << "  " << link_text(g[e]) << "\n";
  }
  const bool directed = paths || routing.policy != RoutingPolicy::Shortest;
  out << "host pairs (" << routing_name(routing.policy) << " routing" << (directed ? ", each direction" : "")
      << "): hops, latency, bottleneck" << (paths ? ", path" : "") << "\n";
  for (int a = 0; a < t.num_hosts(); ++a) {
    for (int b = directed ? 0 : a + 1; b < t.num_hosts(); ++b) {
      if (a == b) continue;
      const std::vector<int> path = route(t, a, b, routing);
      const PathProperties p = path_properties(t, path);
      out << "  h" << a << (directed ? " -> h" : " - h") << b << "  " << p.hops << " hops, "
          << format("%g ms, %g Mbps", p.latency_s * 1e3, p.bottleneck_bps / 1e6);
      if (paths) {
        out << " ";
        for (int v : path) out << " " << name_of(t, v);
      }
      out << "\n";
    }
  }
}

void write_dot(const Topology& t, std::ostream& out) {
  const auto& g = t.graph;
  out << "graph \"" << t.kind << "\" {\n";
  for (int v = 0; v < t.num_vertices(); ++v) {
    out << "  " << name_of(t, v) << " [shape=" << (g[v].kind == VertexKind::Host ? "box" : "circle") << "];\n";
  }
  for (auto e : boost::make_iterator_range(boost::edges(g))) {
    const int a = static_cast<int>(boost::source(e, g)), b = static_cast<int>(boost::target(e, g));
    out << "  " << name_of(t, a) << " -- " << name_of(t, b) << " [label=\"" << link_text(g[e]) << "\"];\n";
  }
  out << "}\n";
}

}  // namespace testbed
