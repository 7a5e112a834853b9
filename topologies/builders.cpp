// Builders for the standard topologies (dispatch to the larger kinds' files), with validation.
#include "topologies/builders.h"

#include <cmath>
#include <stdexcept>

#include "topologies/graphml.h"
#include "topologies/kinds.h"

namespace testbed {

namespace {

void validate_link(const LinkSpec& link, const std::string& what) {
  // Negated comparisons so that NaN is rejected too.
  if (!(link.bandwidth_bps > 0))
    throw std::invalid_argument(what + ": bandwidth must be > 0, got " + std::to_string(link.bandwidth_bps));
  if (!(link.reverse_bandwidth_bps >= 0))
    throw std::invalid_argument(what + ": reverse bandwidth must be >= 0 (0: symmetric), got " +
                                std::to_string(link.reverse_bandwidth_bps));
  if (!(link.p_good_bad >= 0 && link.p_good_bad <= 1 && link.p_bad_good > 0 && link.p_bad_good <= 1 &&
        link.loss_bad >= 0 && link.loss_bad <= 1))
    throw std::invalid_argument(what + ": Gilbert-Elliott parameters must be probabilities (p_bad_good > 0)");
  for (size_t i = 0; i < link.trace.size(); ++i) {
    const RateChange& c = link.trace[i];
    if (!(c.bps > 0) || !(c.time_s >= 0) || (i > 0 && !(c.time_s > link.trace[i - 1].time_s)))
      throw std::invalid_argument(what + ": a bandwidth trace needs increasing times >= 0 and rates > 0");
  }
  if (!(link.latency_s >= 0))
    throw std::invalid_argument(what + ": latency must be >= 0, got " + std::to_string(link.latency_s));
  if (!(link.jitter_s >= 0))
    throw std::invalid_argument(what + ": jitter must be >= 0, got " + std::to_string(link.jitter_s));
  if (!(link.loss >= 0 && link.loss < 1))
    throw std::invalid_argument(what + ": loss must be in [0, 1), got " + std::to_string(link.loss));
}

void link(Topology::Graph& g, int a, int b, const LinkSpec& spec) { detail::add_link(g, a, b, spec); }

std::string kinds_list() {
  std::string out;
  for (const auto& k : topology_kinds()) out += (out.empty() ? "" : ", ") + k;
  return out;
}

}  // namespace

// Skips self-loops and duplicates: small torus dimensions wrap onto existing
// neighbours, random graphs may draw a link twice, and the graph must stay simple.
void detail::add_link(Topology::Graph& g, int a, int b, const LinkSpec& spec) {
  if (a == b || boost::edge(a, b, g).second) return;
  boost::add_edge(a, b, spec, g);
}

const std::vector<std::string>& topology_kinds() {
  static const std::vector<std::string> kinds = {"ring",      "line",        "star",           "mesh",
                                                 "torus2d",   "tree",        "fat_tree",       "hierarchical",
                                                 "gpu_hosts", "erdos_renyi", "watts_strogatz", "graphml"};
  return kinds;
}

const std::string& topology_kind_name(TopologyKind kind) { return topology_kinds().at(static_cast<size_t>(kind)); }

TopologyKind topology_kind(const std::string& name) {
  const auto& kinds = topology_kinds();
  for (size_t i = 0; i < kinds.size(); ++i)
    if (kinds[i] == name) return static_cast<TopologyKind>(i);
  throw std::invalid_argument("unknown topology kind '" + name + "'; valid kinds: " + kinds_list());
}

Topology build_topology(const TopologySpec& spec) {
  const int n = spec.hosts;
  if (n < 1) throw std::invalid_argument("topology: hosts must be >= 1, got " + std::to_string(n));
  validate_link(spec.link, "topology.link");

  Topology t;
  if (spec.kind == TopologyKind::Graphml) {
    // The file brings its own vertices; overrides and validation apply as for the others.
    t = load_graphml(spec);
  }
  t.kind = topology_kind_name(spec.kind);
  Topology::Graph& g = t.graph;
  if (spec.kind != TopologyKind::Graphml)
    for (int i = 0; i < n; ++i) boost::add_vertex(VertexInfo{VertexKind::Host}, g);
  const LinkSpec& l = spec.link;

  if (spec.kind == TopologyKind::Graphml) {
    // Built above.
  } else if (spec.kind == TopologyKind::FatTree) {
    detail::build_fat_tree(spec, t);
  } else if (spec.kind == TopologyKind::Hierarchical) {
    validate_link(spec.wan, "topology.wan");
    detail::build_hierarchical(spec, t);
  } else if (spec.kind == TopologyKind::GpuHosts) {
    validate_link(spec.gpu_link, "topology.gpu_link");
    detail::build_gpu_hosts(spec, t);
  } else if (spec.kind == TopologyKind::ErdosRenyi) {
    detail::build_erdos_renyi(spec, t);
  } else if (spec.kind == TopologyKind::WattsStrogatz) {
    detail::build_watts_strogatz(spec, t);
  } else if (spec.kind == TopologyKind::Ring) {
    for (int i = 0; i < n; ++i) link(g, i, (i + 1) % n, l);
  } else if (spec.kind == TopologyKind::Line) {
    for (int i = 0; i + 1 < n; ++i) link(g, i, i + 1, l);
  } else if (spec.kind == TopologyKind::Star) {
    const int hub = static_cast<int>(boost::add_vertex(VertexInfo{VertexKind::Switch}, g));
    for (int i = 0; i < n; ++i) link(g, i, hub, l);
  } else if (spec.kind == TopologyKind::Mesh) {
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j) link(g, i, j, l);
  } else if (spec.kind == TopologyKind::Torus2d) {
    int rows = spec.torus_rows;
    if (rows == 0) {
      // Most square factorisation with rows <= cols.
      rows = static_cast<int>(std::sqrt(static_cast<double>(n)));
      while (rows > 1 && n % rows != 0) --rows;
      if (rows < 1) rows = 1;
    }
    if (rows < 1 || n % rows != 0)
      throw std::invalid_argument("torus2d: torus_rows " + std::to_string(spec.torus_rows) + " does not divide hosts " +
                                  std::to_string(n));
    const int cols = n / rows;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const int v = r * cols + c;
        link(g, v, r * cols + (c + 1) % cols, l);
        link(g, v, ((r + 1) % rows) * cols + c, l);
      }
  } else if (spec.kind == TopologyKind::Tree) {
    for (int i = 1; i < n; ++i) link(g, i, (i - 1) / 2, l);
  } else {
    throw std::invalid_argument("unknown topology kind " + std::to_string(static_cast<int>(spec.kind)) +
                                "; valid kinds: " + kinds_list());
  }

  for (const auto& o : spec.overrides) {
    const int nv = t.num_vertices();
    if (o.a < 0 || o.a >= nv || o.b < 0 || o.b >= nv)
      throw std::invalid_argument("link override names vertex outside 0.." + std::to_string(nv - 1) + ": " +
                                  std::to_string(o.a) + ", " + std::to_string(o.b));
    auto [e, found] = boost::edge(o.a, o.b, g);
    if (!found) throw std::invalid_argument("no link between " + std::to_string(o.a) + " and " + std::to_string(o.b));
    LinkSpec& s = g[e];
    // The override names its directions by its own vertex order; the link stores them
    // by index order (bandwidth_bps from the lower end).
    double a_to_b = s.rate_bps(o.a, o.b), b_to_a = s.rate_bps(o.b, o.a);
    if (o.bandwidth_bps >= 0) a_to_b = b_to_a = o.bandwidth_bps;
    if (o.reverse_bandwidth_bps >= 0) b_to_a = o.reverse_bandwidth_bps;
    s.bandwidth_bps = o.a < o.b ? a_to_b : b_to_a;
    const double reverse = o.a < o.b ? b_to_a : a_to_b;
    s.reverse_bandwidth_bps = reverse == s.bandwidth_bps ? 0 : reverse;
    if (o.latency_s >= 0) s.latency_s = o.latency_s;
    if (o.loss >= 0) s.loss = o.loss;
    if (o.gilbert_elliott >= 0) s.gilbert_elliott = o.gilbert_elliott == 1;
    if (o.p_good_bad >= 0) s.p_good_bad = o.p_good_bad;
    if (o.p_bad_good >= 0) s.p_bad_good = o.p_bad_good;
    if (o.loss_bad >= 0) s.loss_bad = o.loss_bad;
    if (o.trace) s.trace = *o.trace;
    if (o.jitter_s >= 0) s.jitter_s = o.jitter_s;
    validate_link(s, "link override " + std::to_string(o.a) + "-" + std::to_string(o.b));
  }

  validate_topology(t);
  return t;
}

void validate_topology(const Topology& topology) {
  for (auto e : boost::make_iterator_range(boost::edges(topology.graph)))
    validate_link(topology.graph[e], "link " + std::to_string(boost::source(e, topology.graph)) + "-" +
                                         std::to_string(boost::target(e, topology.graph)));
  if (topology.num_hosts() < 1) throw std::invalid_argument("topology has no hosts");
  if (!topology.is_connected())
    throw std::invalid_argument("topology '" + topology.kind + "' with " + std::to_string(topology.num_vertices()) +
                                " vertices is disconnected");
}

}  // namespace testbed
