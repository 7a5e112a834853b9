// Seeded random topologies over the hosts: Erdos-Renyi G(n, p) and Watts-Strogatz small worlds.
#include <random>
#include <stdexcept>
#include <string>

#include "topologies/kinds.h"

namespace testbed::detail {

namespace {

// Bounded redraws: a connected draw is likely for sensible p, and a hopeless p must
// end in an error rather than a loop.
constexpr int kAttempts = 100;

// Uniform in [0, 1) from the top 53 bits: std::uniform_real_distribution is not
// specified bit for bit, and the same seed must give the same graph everywhere.
double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

void clear_links(Topology::Graph& g) {
  for (int v = 0; v < static_cast<int>(boost::num_vertices(g)); ++v) boost::clear_vertex(v, g);
}

// Draws with seed, seed + 1, ... until `draw` yields a connected graph.
template <class Draw>
void draw_connected(const TopologySpec& spec, Topology& t, const std::string& what, Draw draw) {
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    clear_links(t.graph);
    std::mt19937_64 rng(spec.seed + static_cast<uint64_t>(attempt));
    draw(rng);
    if (t.is_connected()) return;
  }
  throw std::invalid_argument(what + ": no connected graph in " + std::to_string(kAttempts) +
                              " draws; raise the edge probability or degree");
}

}  // namespace

void build_erdos_renyi(const TopologySpec& spec, Topology& t) {
  const double p = spec.edge_probability;
  if (!(p > 0 && p <= 1)) throw std::invalid_argument("erdos_renyi: p must be in (0, 1], got " + std::to_string(p));
  const int n = spec.hosts;
  draw_connected(spec, t, "erdos_renyi with " + std::to_string(n) + " nodes and p=" + std::to_string(p),
                 [&](std::mt19937_64& rng) {
                   for (int i = 0; i < n; ++i)
                     for (int j = i + 1; j < n; ++j)
                       if (uniform(rng) < p) add_link(t.graph, i, j, spec.link);
                 });
}

void build_watts_strogatz(const TopologySpec& spec, Topology& t) {
  const int n = spec.hosts, d = spec.degree;
  if (d < 2 || d % 2 != 0 || d >= n)
    throw std::invalid_argument("watts_strogatz: degree must be even, >= 2 and < nodes (" + std::to_string(n) +
                                "), got " + std::to_string(d));
  if (!(spec.beta >= 0 && spec.beta <= 1))
    throw std::invalid_argument("watts_strogatz: beta must be in [0, 1], got " + std::to_string(spec.beta));
  draw_connected(spec, t, "watts_strogatz", [&](std::mt19937_64& rng) {
    Topology::Graph& g = t.graph;
    // Ring lattice: each host joined to its d/2 successors (and so its d/2 predecessors).
    for (int i = 0; i < n; ++i)
      for (int j = 1; j <= d / 2; ++j) add_link(g, i, (i + j) % n, spec.link);
    // Rewire each lattice link i-(i+j) with probability beta to a uniformly drawn host
    // that is neither i nor already its neighbour; a host joined to all keeps its link.
    for (int j = 1; j <= d / 2; ++j)
      for (int i = 0; i < n; ++i) {
        const int old = (i + j) % n;
        if (!(uniform(rng) < spec.beta) || !boost::edge(i, old, g).second) continue;
        if (static_cast<int>(boost::degree(i, g)) >= n - 1) continue;
        int target;
        do target = static_cast<int>(rng() % static_cast<uint64_t>(n));
        while (target == i || boost::edge(i, target, g).second);
        boost::remove_edge(i, old, g);
        add_link(g, i, target, spec.link);
      }
  });
}

}  // namespace testbed::detail
