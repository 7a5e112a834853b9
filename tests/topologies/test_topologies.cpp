// Tests for topology builders (also fat-tree, hierarchical, random, GraphML), validation and routing.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "topologies/builders.h"
#include "topologies/describe.h"
#include "topologies/graphml.h"
#include "topologies/routing.h"

namespace testbed {
namespace topologies {  // its own names: network_tests compiles as one unity file
namespace {

TopologySpec spec(const std::string& kind, int hosts) {
  TopologySpec s;
  s.kind = topology_kind(kind);
  s.hosts = hosts;
  s.link = {100e6, 0.01, 0.0};
  return s;
}

void expect_all_host_degrees(const Topology& t, int degree) {
  for (int v = 0; v < t.num_hosts(); ++v) EXPECT_EQ(t.degree(v), degree) << "vertex " << v;
}

TEST(Builders, Ring) {
  auto t = build_topology(spec("ring", 5));
  EXPECT_EQ(t.num_hosts(), 5);
  EXPECT_EQ(t.num_vertices(), 5);
  EXPECT_EQ(t.num_links(), 5);
  expect_all_host_degrees(t, 2);
  EXPECT_EQ(build_topology(spec("ring", 3)).num_links(), 3);
  EXPECT_EQ(build_topology(spec("ring", 2)).num_links(), 1);
  EXPECT_EQ(build_topology(spec("ring", 1)).num_links(), 0);
}

TEST(Builders, Line) {
  auto t = build_topology(spec("line", 6));
  EXPECT_EQ(t.num_links(), 5);
  EXPECT_EQ(t.degree(0), 1);
  EXPECT_EQ(t.degree(3), 2);
  EXPECT_EQ(t.degree(5), 1);
  EXPECT_EQ(build_topology(spec("line", 1)).num_links(), 0);
}

TEST(Builders, Star) {
  auto t = build_topology(spec("star", 6));
  EXPECT_EQ(t.num_hosts(), 6);
  EXPECT_EQ(t.num_vertices(), 7);
  EXPECT_EQ(t.num_links(), 6);
  EXPECT_EQ(t.graph[6].kind, VertexKind::Switch);
  EXPECT_EQ(t.degree(6), 6);
  expect_all_host_degrees(t, 1);
}

TEST(Builders, Mesh) {
  auto t = build_topology(spec("mesh", 5));
  EXPECT_EQ(t.num_links(), 10);
  expect_all_host_degrees(t, 4);
  EXPECT_EQ(build_topology(spec("mesh", 8)).num_links(), 28);
}

TEST(Builders, Torus) {
  auto t = build_topology(spec("torus2d", 12));  // 3 x 4
  EXPECT_EQ(t.num_links(), 24);
  expect_all_host_degrees(t, 4);
  // Dimensions of 2 or 1 must not produce parallel links or self-loops.
  auto t4 = build_topology(spec("torus2d", 4));  // 2 x 2: a 4-cycle
  EXPECT_EQ(t4.num_links(), 4);
  expect_all_host_degrees(t4, 2);
  auto t6 = build_topology(spec("torus2d", 6));  // 2 x 3: 3 row links x 2 + 3 column links
  EXPECT_EQ(t6.num_links(), 9);
  expect_all_host_degrees(t6, 3);
  auto t5 = build_topology(spec("torus2d", 5));  // prime: 1 x 5, a ring
  EXPECT_EQ(t5.num_links(), 5);
  expect_all_host_degrees(t5, 2);
  auto explicit_rows = spec("torus2d", 12);
  explicit_rows.torus_rows = 2;  // 2 x 6
  EXPECT_EQ(build_topology(explicit_rows).num_links(), 18);
  explicit_rows.torus_rows = 5;
  EXPECT_THROW(build_topology(explicit_rows), std::invalid_argument);
}

TEST(Builders, Tree) {
  auto t = build_topology(spec("tree", 7));
  EXPECT_EQ(t.num_links(), 6);
  EXPECT_EQ(t.degree(0), 2);
  EXPECT_EQ(t.degree(1), 3);
  EXPECT_EQ(t.degree(6), 1);
  EXPECT_TRUE(t.is_connected());
}

TEST(Builders, KindsListed) {
  for (const auto& kind : topology_kinds()) {
    auto s = spec(kind, 6);
    s.per_cluster = 3;    // hierarchical: 2 clusters x 3
    s.gpus_per_host = 3;  // gpu_hosts: 2 hosts of 3
    // graphml needs a file; its own tests cover it.
    if (kind == "graphml") continue;
    EXPECT_NO_THROW(build_topology(s)) << kind;
  }
}

TEST(Builders, OverrideChangesOnlyThatLink) {
  auto s = spec("ring", 4);
  LinkOverride o;
  o.a = 2;
  o.b = 1;  // either order names the link
  o.bandwidth_bps = 10e6;
  o.loss = 0.05;
  s.overrides.push_back(o);
  auto t = build_topology(s);
  for (auto e : boost::make_iterator_range(boost::edges(t.graph))) {
    const auto a = boost::source(e, t.graph), b = boost::target(e, t.graph);
    const bool is_override = std::min(a, b) == 1 && std::max(a, b) == 2;
    EXPECT_DOUBLE_EQ(t.graph[e].bandwidth_bps, is_override ? 10e6 : 100e6);
    EXPECT_DOUBLE_EQ(t.graph[e].loss, is_override ? 0.05 : 0.0);
    EXPECT_DOUBLE_EQ(t.graph[e].latency_s, 0.01);  // not overridden
  }
}

TEST(Builders, BadInputThrows) {
  auto missing = spec("ring", 5);
  missing.overrides.push_back({0, 2, 1e6, -1, -1});
  try {
    build_topology(missing);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no link between 0 and 2"), std::string::npos) << e.what();
  }

  try {
    build_topology(spec("hypercube", 4));
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("torus2d"), std::string::npos) << e.what();
  }

  auto zero_bw = spec("ring", 4);
  zero_bw.link.bandwidth_bps = 0;
  EXPECT_THROW(build_topology(zero_bw), std::invalid_argument);
  auto bad_loss = spec("ring", 4);
  bad_loss.link.loss = 1.0;
  EXPECT_THROW(build_topology(bad_loss), std::invalid_argument);
  auto bad_latency = spec("ring", 4);
  bad_latency.link.latency_s = -1e-3;
  EXPECT_THROW(build_topology(bad_latency), std::invalid_argument);
  EXPECT_THROW(build_topology(spec("mesh", 0)), std::invalid_argument);
  auto bad_override = spec("line", 3);
  bad_override.overrides.push_back({0, 1, 0.0, -1, -1});  // bandwidth 0 is not "keep"
  EXPECT_THROW(build_topology(bad_override), std::invalid_argument);
}

TEST(Builders, DisconnectedThrows) {
  // No builder can produce a disconnected graph from valid input, so check
  // the validation build_topology runs on a graph built by hand.
  Topology t;
  t.kind = "hand";
  for (int i = 0; i < 4; ++i) boost::add_vertex(VertexInfo{}, t.graph);
  boost::add_edge(0, 1, LinkSpec{}, t.graph);
  boost::add_edge(2, 3, LinkSpec{}, t.graph);
  EXPECT_FALSE(t.is_connected());
  EXPECT_THROW(validate_topology(t), std::invalid_argument);
  boost::add_edge(1, 2, LinkSpec{}, t.graph);
  EXPECT_TRUE(t.is_connected());
  EXPECT_NO_THROW(validate_topology(t));
}

TEST(Routing, RingPath) {
  auto s = spec("ring", 6);
  s.overrides.push_back({1, 2, 10e6, 0.05, -1});
  auto t = build_topology(s);
  const auto path = shortest_path(t, 0, 3);
  ASSERT_EQ(path.size(), 4u);
  EXPECT_EQ(path.front(), 0);
  EXPECT_EQ(path.back(), 3);
  // Both ways round are 3 hops; the lower-index neighbour wins the tie.
  EXPECT_EQ(path, (std::vector<int>{0, 1, 2, 3}));
  const auto p = path_properties(t, 0, 3);
  EXPECT_EQ(p.hops, 3);
  EXPECT_DOUBLE_EQ(p.latency_s, 0.01 + 0.05 + 0.01);
  EXPECT_DOUBLE_EQ(p.bottleneck_bps, 10e6);
  EXPECT_EQ(path_properties(t, 0, 5).hops, 1);
  EXPECT_EQ(shortest_path(t, 4, 4), (std::vector<int>{4}));
  EXPECT_EQ(path_properties(t, 4, 4).hops, 0);
}

TEST(Routing, StarGoesThroughSwitch) {
  auto t = build_topology(spec("star", 4));
  EXPECT_EQ(shortest_path(t, 0, 3), (std::vector<int>{0, 4, 3}));
  EXPECT_DOUBLE_EQ(path_properties(t, 0, 3).latency_s, 0.02);
}

TEST(Routing, HostNeighbours) {
  auto build = [](const std::string& kind, int hosts) {
    TopologySpec s;
    s.kind = topology_kind(kind);
    s.hosts = hosts;
    return host_neighbours(build_topology(s));
  };
  using N = std::vector<std::vector<int>>;
  EXPECT_EQ(build("ring", 4), (N{{1, 3}, {0, 2}, {1, 3}, {0, 2}}));
  EXPECT_EQ(build("line", 3), (N{{1}, {0, 2}, {1}}));
  EXPECT_EQ(build("star", 3), (N{{1, 2}, {0, 2}, {0, 1}}));  // through the hub switch
  EXPECT_EQ(build("mesh", 3), (N{{1, 2}, {0, 2}, {0, 1}}));
  EXPECT_EQ(build("tree", 4), (N{{1, 2}, {0, 3}, {0}, {1}}));
  EXPECT_EQ(build("ring", 1), (N{{}}));
}

// ---- ECMP ----

RoutingOptions ecmp(uint64_t seed) { return {RoutingPolicy::Ecmp, seed}; }

Topology fat_tree(int k, int hosts) {
  auto s = spec("fat_tree", hosts);
  s.fat_tree_k = k;
  return build_topology(s);
}

// Hosts of a k-ary fat-tree by hand (Al-Fares et al.): k/2 hosts per edge switch, (k/2)^2 per
// pod; same edge switch 2 hops, same pod 4, else 6 (up to a core switch and down).
int fat_tree_hops(int a, int b, int k) {
  const int half = k / 2;
  if (a / half == b / half) return 2;
  return a / (half * half) == b / (half * half) ? 4 : 6;
}

// Host h of the torus sits at row h / cols, column h % cols; each dimension the shorter way round.
int torus_hops(int a, int b, int rows, int cols) {
  const int dr = std::abs(a / cols - b / cols), dc = std::abs(a % cols - b % cols);
  return std::min(dr, rows - dr) + std::min(dc, cols - dc);
}

// A path from a to b over links, visiting no vertex twice.
void expect_walk(const Topology& t, const std::vector<int>& path, int a, int b) {
  ASSERT_FALSE(path.empty());
  EXPECT_EQ(path.front(), a);
  EXPECT_EQ(path.back(), b);
  for (size_t i = 0; i + 1 < path.size(); ++i) EXPECT_TRUE(boost::edge(path[i], path[i + 1], t.graph).second);
  EXPECT_EQ(std::set<int>(path.begin(), path.end()).size(), path.size());
}

// The core switch an inter-pod path crosses: the middle of its 7 vertices.
int core_of(const std::vector<int>& path) { return path.at(3); }

TEST(Ecmp, AlwaysAMinimumHopPath) {
  // Hop counts by hand per topology; a ring of 6 also has a 5-hop way round every 1-hop pair.
  const Topology ft = fat_tree(4, 16), torus = build_topology(spec("torus2d", 16)),
                 ring = build_topology(spec("ring", 6));
  for (uint64_t seed : {0, 1, 2, 3}) {
    for (int a = 0; a < 16; ++a)
      for (int b = 0; b < 16; ++b) {
        if (a == b) continue;
        const auto p = route(ft, a, b, ecmp(seed));
        expect_walk(ft, p, a, b);
        EXPECT_EQ(static_cast<int>(p.size()) - 1, fat_tree_hops(a, b, 4)) << a << "->" << b;
        const auto q = route(torus, a, b, ecmp(seed));
        expect_walk(torus, q, a, b);
        EXPECT_EQ(static_cast<int>(q.size()) - 1, torus_hops(a, b, 4, 4)) << a << "->" << b;
      }
    for (int a = 0; a < 6; ++a)
      for (int b = 0; b < 6; ++b)
        EXPECT_EQ(static_cast<int>(route(ring, a, b, ecmp(seed)).size()) - 1,
                  std::min(std::abs(a - b), 6 - std::abs(a - b)));
  }
}

TEST(Ecmp, CountsTheEqualCostPaths) {
  // By hand. Ring of 4: the opposite host both ways round. Torus 4x4 from (0,0): to (2,2)
  // each dimension either way round (2 x 2) times the C(4,2) orders of the four hops; to
  // (1,1) the two orders; to (0,2) the two ways round. Fat-tree k: k/2 aggregation switches
  // within a pod, (k/2)^2 cores between pods.
  const Topology ring = build_topology(spec("ring", 4)), torus = build_topology(spec("torus2d", 16));
  EXPECT_EQ(equal_cost_path_count(ring, 0, 2), 2u);
  EXPECT_EQ(equal_cost_path_count(ring, 0, 1), 1u);
  EXPECT_EQ(equal_cost_path_count(torus, 0, 10), 24u);
  EXPECT_EQ(equal_cost_path_count(torus, 0, 5), 2u);
  EXPECT_EQ(equal_cost_path_count(torus, 0, 2), 2u);
  EXPECT_EQ(equal_cost_path_count(fat_tree(4, 16), 0, 1), 1u);
  EXPECT_EQ(equal_cost_path_count(fat_tree(4, 16), 0, 2), 2u);
  EXPECT_EQ(equal_cost_path_count(fat_tree(4, 16), 0, 4), 4u);
  EXPECT_EQ(equal_cost_path_count(fat_tree(8, 128), 0, 5), 4u);
  EXPECT_EQ(equal_cost_path_count(fat_tree(8, 128), 0, 127), 16u);
}

TEST(Ecmp, DeterministicForASeedAndDifferentAcrossSeeds) {
  const Topology ft = fat_tree(4, 16), again = fat_tree(4, 16);
  int pairs = 0, differ = 0;
  for (int a = 0; a < 16; ++a)
    for (int b = 0; b < 16; ++b) {
      if (fat_tree_hops(a, b, 4) != 6) continue;
      const auto p = route(ft, a, b, ecmp(7));
      EXPECT_EQ(route(ft, a, b, ecmp(7)), p);
      EXPECT_EQ(route(again, a, b, ecmp(7)), p);
      ++pairs;
      differ += route(ft, a, b, ecmp(8)) != p;
    }
  // Independent uniform picks among 4 paths agree with probability 1/4: 144 of 192 differ on
  // average, standard deviation 6; a salt that did not reach the hash would give 0.
  ASSERT_EQ(pairs, 192);
  EXPECT_GE(differ, 120);
  EXPECT_LE(differ, 168);
}

// ECMP's point on a fat-tree (Al-Fares et al.): inter-pod connections spread evenly over the
// (k/2)^2 core switches, where shortest sends them all through the lowest-index one.
TEST(Ecmp, SpreadsConnectionsOverTheCoreSwitches) {
  const Topology ft = fat_tree(4, 16);
  const int core0 = 16 + 8 + 8;  // hosts, then 8 edge and 8 aggregation switches
  for (uint64_t seed : {0, 1, 2, 3, 4}) {
    std::map<int, int> per_core;
    std::map<int, std::set<int>> cores_to, cores_from;  // per destination, per source host
    for (int a = 0; a < 16; ++a)
      for (int b = 0; b < 16; ++b) {
        if (fat_tree_hops(a, b, 4) != 6) continue;
        const int core = core_of(route(ft, a, b, ecmp(seed)));
        ++per_core[core];
        cores_to[b].insert(core);
        cores_from[a].insert(core);
      }
    // 192 connections over 4 cores: 48 each on average, standard deviation 6.
    ASSERT_EQ(per_core.size(), 4u) << "seed " << seed;
    for (const auto& [core, n] : per_core) {
      EXPECT_GE(core, core0);
      EXPECT_GE(n, 30) << "core " << core << " seed " << seed;
      EXPECT_LE(n, 66) << "core " << core << " seed " << seed;
    }
    // Each host's 12 connections to (from) the other pods: all on one core would happen
    // with probability 4^-11 if each were hashed on its own; a hash that ignored the
    // source (destination) puts them all on one.
    for (const auto& [host, cores] : cores_to) EXPECT_GE(cores.size(), 2u) << "to " << host;
    for (const auto& [host, cores] : cores_from) EXPECT_GE(cores.size(), 2u) << "from " << host;
  }
  std::set<int> shortest_cores;
  for (int a = 0; a < 16; ++a)
    for (int b = 0; b < 16; ++b)
      if (fat_tree_hops(a, b, 4) == 6) shortest_cores.insert(core_of(route(ft, a, b, {})));
  EXPECT_EQ(shortest_cores, (std::set<int>{core0}));

  // k = 8: 14 336 inter-pod connections over 16 cores, 896 each, standard deviation 29.
  const Topology big = fat_tree(8, 128);
  std::map<int, int> per_core;
  for (int a = 0; a < 128; ++a)
    for (int b = 0; b < 128; ++b)
      if (fat_tree_hops(a, b, 8) == 6) ++per_core[core_of(route(big, a, b, ecmp(0)))];
  ASSERT_EQ(per_core.size(), 16u);
  for (const auto& [core, n] : per_core) {
    EXPECT_GE(n, 896 - 134) << "core " << core;
    EXPECT_LE(n, 896 + 134) << "core " << core;
  }
}

TEST(Ecmp, AvoidsCutLinksAndSaysWhenNoneAreLeft) {
  // Fat-tree k = 4: aggregation switch 24 (pod 0) reaches cores 32 and 33; without its link
  // to 32, three of host 0's four ways to pod 1 are left.
  const Topology ft = fat_tree(4, 16);
  const CutLinks cut{{24, 32}};
  EXPECT_EQ(equal_cost_path_count(ft, 0, 4, cut), 3u);
  std::set<int> cores;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    const auto p = route(ft, 0, 4, ecmp(seed), cut);
    expect_walk(ft, p, 0, 4);
    EXPECT_EQ(p.size(), 7u);
    for (size_t i = 0; i + 1 < p.size(); ++i)
      EXPECT_FALSE(std::min(p[i], p[i + 1]) == 24 && std::max(p[i], p[i + 1]) == 32);
    cores.insert(core_of(p));
  }
  EXPECT_EQ(cores.size(), 3u);  // all three used by some seed; 0.75^64 x 3 odds otherwise
  // Shortest around a cut on a ring of 4: 0 reaches 1 the long way.
  const Topology ring = build_topology(spec("ring", 4));
  EXPECT_EQ(route(ring, 0, 1, {}, {{0, 1}}), (std::vector<int>{0, 3, 2, 1}));
  EXPECT_THROW(route(ring, 0, 1, ecmp(0), {{0, 1}, {2, 3}}), std::invalid_argument);
  EXPECT_THROW(route(ring, 0, 1, {}, {{0, 1}, {2, 3}}), std::invalid_argument);
}

// `testbed topology`: one line per pair under shortest, per direction with paths or ecmp.
TEST(Describe, PairsAndPathsUnderTheRouting) {
  const Topology ring = build_topology(spec("ring", 4));  // 100 Mbps, 10 ms links
  std::ostringstream plain, paths, hashed;
  describe_topology(ring, plain);
  describe_topology(ring, paths, {}, true);
  describe_topology(ring, hashed, ecmp(4), true);
  EXPECT_NE(plain.str().find("host pairs (shortest routing): hops, latency, bottleneck\n"), std::string::npos);
  EXPECT_NE(plain.str().find("  h0 - h2  2 hops, 20 ms, 100 Mbps\n"), std::string::npos) << plain.str();
  EXPECT_EQ(plain.str().find("h2 - h0"), std::string::npos);
  // shortest: both directions go through the lower-index middle vertex, 0 -> 2 and 2 -> 0 via 1.
  EXPECT_NE(paths.str().find("  h0 -> h2  2 hops, 20 ms, 100 Mbps  h0 h1 h2\n"), std::string::npos) << paths.str();
  EXPECT_NE(paths.str().find("  h2 -> h0  2 hops, 20 ms, 100 Mbps  h2 h1 h0\n"), std::string::npos);
  EXPECT_NE(paths.str().find("  h3 -> h1  2 hops, 20 ms, 100 Mbps  h3 h0 h1\n"), std::string::npos);
  // ecmp: whatever the hash chose, printed as the route is.
  for (auto [a, b] : std::vector<std::pair<int, int>>{{0, 2}, {2, 0}, {1, 3}, {3, 1}}) {
    const auto p = route(ring, a, b, ecmp(4));
    const std::string line = "  h" + std::to_string(a) + " -> h" + std::to_string(b) + "  2 hops, 20 ms, 100 Mbps  h" +
                             std::to_string(p[0]) + " h" + std::to_string(p[1]) + " h" + std::to_string(p[2]) + "\n";
    EXPECT_NE(hashed.str().find(line), std::string::npos) << line << hashed.str();
  }
  EXPECT_NE(hashed.str().find("host pairs (ecmp routing, each direction): hops, latency, bottleneck, path\n"),
            std::string::npos);
}

TEST(Ecmp, PolicyNames) {
  EXPECT_EQ(routing_name(RoutingPolicy::Shortest), "shortest");
  EXPECT_EQ(routing_name(RoutingPolicy::Ecmp), "ecmp");
}

// ---- fat-tree ----

TEST(FatTree, FullK4) {
  auto s = spec("fat_tree", 16);
  s.fat_tree_k = 4;
  auto t = build_topology(s);
  const int k = 4;
  // k^3/4 hosts, 5k^2/4 switches (k^2/2 edge, k^2/2 aggregation, k^2/4 core), 3k^3/4 links.
  EXPECT_EQ(t.num_hosts(), 16);
  EXPECT_EQ(t.num_vertices(), k * k * k / 4 + 5 * k * k / 4);
  EXPECT_EQ(t.num_vertices() - t.num_hosts(), 20);
  EXPECT_EQ(t.num_links(), 48);
  expect_all_host_degrees(t, 1);
  for (int v = t.num_hosts(); v < t.num_vertices(); ++v) EXPECT_EQ(t.degree(v), k) << "switch " << v;
  // Same edge switch: 2 hops; same pod: 4; other pod: 6 (through a core switch).
  EXPECT_EQ(path_properties(t, 0, 1).hops, 2);
  EXPECT_EQ(path_properties(t, 0, 2).hops, 4);
  EXPECT_EQ(path_properties(t, 0, 4).hops, 6);
  EXPECT_EQ(path_properties(t, 0, 15).hops, 6);
}

TEST(FatTree, PartlyPopulated) {
  auto s = spec("fat_tree", 8);
  s.fat_tree_k = 4;
  auto t = build_topology(s);
  // All 20 switches stay; 8 host links, 4 pods x 2 x 2 edge-aggregation links, 4 pods x 2 x 2
  // aggregation-core links.
  EXPECT_EQ(t.num_hosts(), 8);
  EXPECT_EQ(t.num_vertices(), 8 + 20);
  EXPECT_EQ(t.num_links(), 8 + 16 + 16);
  // A pod holds (k/2)^2 = 4 slots: hosts 0..3 in pod 0, 4..7 in pod 1.
  EXPECT_EQ(path_properties(t, 3, 2).hops, 2);
  EXPECT_EQ(path_properties(t, 3, 4).hops, 6);
}

TEST(FatTree, K6AndErrors) {
  auto s = spec("fat_tree", 54);
  s.fat_tree_k = 6;
  auto t = build_topology(s);
  EXPECT_EQ(t.num_vertices(), 54 + 45);
  EXPECT_EQ(t.num_links(), 3 * 216 / 4);
  s.hosts = 55;
  EXPECT_THROW(build_topology(s), std::invalid_argument);
  s.hosts = 4;
  s.fat_tree_k = 3;
  try {
    build_topology(s);
    FAIL() << "odd k accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("even"), std::string::npos) << e.what();
  }
}

// ---- hierarchical ----

TEST(Hierarchical, CountsAndWanPath) {
  auto s = spec("hierarchical", 12);
  s.clusters = 3;
  s.per_cluster = 4;
  s.wan = {1e9, 0.05, 0.0};
  auto t = build_topology(s);
  EXPECT_EQ(t.num_vertices(), 12 + 3);
  EXPECT_EQ(t.num_links(), 12 + 3);  // a host link each, a ring of three WAN links
  expect_all_host_degrees(t, 1);
  // Same cluster: host, switch, host; no WAN.
  auto local = path_properties(t, 0, 3);
  EXPECT_EQ(local.hops, 2);
  EXPECT_NEAR(local.latency_s, 2 * 0.01, 1e-12);
  // Other cluster: two access links and one WAN link.
  auto remote = path_properties(t, 0, 4);
  EXPECT_EQ(remote.hops, 3);
  EXPECT_NEAR(remote.latency_s, 2 * 0.01 + 0.05, 1e-12);
  EXPECT_DOUBLE_EQ(remote.bottleneck_bps, 100e6);

  s.clusters = 4, s.per_cluster = 2, s.hosts = 8;
  EXPECT_EQ(build_topology(s).num_links(), 8 + 4);
  s.hosts = 9;
  EXPECT_THROW(build_topology(s), std::invalid_argument);
}

// ---- random graphs ----

std::set<std::pair<int, int>> links_of(const Topology& t) {
  std::set<std::pair<int, int>> out;
  for (auto e : boost::make_iterator_range(boost::edges(t.graph))) {
    int a = static_cast<int>(boost::source(e, t.graph)), b = static_cast<int>(boost::target(e, t.graph));
    out.insert({std::min(a, b), std::max(a, b)});
  }
  return out;
}

TEST(RandomGraphs, ErdosRenyi) {
  auto s = spec("erdos_renyi", 12);
  s.edge_probability = 0.3;
  s.seed = 7;
  auto a = build_topology(s), b = build_topology(s);
  EXPECT_TRUE(a.is_connected());
  EXPECT_EQ(a.num_vertices(), 12);
  EXPECT_EQ(links_of(a), links_of(b));
  s.seed = 8;
  EXPECT_NE(links_of(a), links_of(build_topology(s)));
  s.edge_probability = 1;
  EXPECT_EQ(build_topology(s).num_links(), 12 * 11 / 2);
  // Far below the connectivity threshold ln(n)/n: every draw fails, and it says so.
  s.hosts = 40;
  s.edge_probability = 0.001;
  EXPECT_THROW(build_topology(s), std::invalid_argument);
}

TEST(RandomGraphs, WattsStrogatzLatticeAtBetaZero) {
  auto s = spec("watts_strogatz", 10);
  s.degree = 4;
  s.beta = 0;
  auto t = build_topology(s);
  EXPECT_EQ(t.num_links(), 10 * 4 / 2);
  expect_all_host_degrees(t, 4);
  for (int i = 0; i < 10; ++i)
    for (int j : {1, 2}) EXPECT_TRUE(boost::edge(i, (i + j) % 10, t.graph).second) << i << "+" << j;
}

TEST(RandomGraphs, WattsStrogatzRewired) {
  auto s = spec("watts_strogatz", 20);
  s.degree = 4;
  s.beta = 0.3;
  s.seed = 1;
  auto a = build_topology(s);
  EXPECT_TRUE(a.is_connected());
  EXPECT_EQ(a.num_links(), 20 * 4 / 2);  // rewiring moves links, never adds or drops one
  EXPECT_EQ(links_of(a), links_of(build_topology(s)));
  s.seed = 2;
  EXPECT_NE(links_of(a), links_of(build_topology(s)));
  s.degree = 3;
  EXPECT_THROW(build_topology(s), std::invalid_argument);
  s.degree = 20;
  EXPECT_THROW(build_topology(s), std::invalid_argument);
}

// ---- GraphML (Topology Zoo) ----

// Great-circle distance (haversine, Earth radius 6371 km) over light speed in fibre (2/3 c).
double haversine_latency(double lat1, double lon1, double lat2, double lon2) {
  const double r = std::numbers::pi / 180;
  double a = std::pow(std::sin((lat2 - lat1) * r / 2), 2) +
             std::cos(lat1 * r) * std::cos(lat2 * r) * std::pow(std::sin((lon2 - lon1) * r / 2), 2);
  double km = 2 * 6371 * std::atan2(std::sqrt(a), std::sqrt(1 - a));
  return km * 1e3 / (299792458.0 * 2 / 3);
}

const std::string kAbilene = TESTBED_SOURCE_DIR "/../shared/data/topology-zoo/Abilene.graphml";

TEST(Graphml, Abilene) {
  if (!std::filesystem::exists(kAbilene)) GTEST_SKIP() << "no " << kAbilene << " (shared data not next to the repo)";
  auto s = spec("graphml", 2);
  s.file = kAbilene;
  s.placement = {"New York", "Los Angeles"};
  auto t = build_topology(s);
  EXPECT_EQ(t.num_vertices(), 11);
  EXPECT_EQ(t.num_links(), 14);
  EXPECT_EQ(t.num_hosts(), 2);
  // Every link is OC-192.
  for (auto e : boost::make_iterator_range(boost::edges(t.graph)))
    EXPECT_DOUBLE_EQ(t.graph[e].bandwidth_bps, 9953.28e6);
  // Coordinates from the file: New York, Los Angeles, Chicago.
  const double ny_lat = 40.71427, ny_lon = -74.00597, la_lat = 34.05223, la_lon = -118.24368;
  const double direct = haversine_latency(ny_lat, ny_lon, la_lat, la_lon);
  EXPECT_NEAR(direct, 0.020, 0.001);
  EXPECT_NEAR(great_circle_latency_s(ny_lat, ny_lon, la_lat, la_lon), direct, 1e-9);
  // The New York - Chicago link (New York is host 0; Chicago the first switch, vertex 2).
  auto [ny_chi, found] = boost::edge(0, 2, t.graph);
  ASSERT_TRUE(found);
  EXPECT_NEAR(t.graph[ny_chi].latency_s, haversine_latency(ny_lat, ny_lon, 41.85003, -87.65005), 1e-9);
  // The routed path is longer than the great circle but not absurdly so.
  auto path = path_properties(t, 0, 1);
  EXPECT_GT(path.latency_s, direct);
  EXPECT_LT(path.latency_s, 1.5 * direct);
  std::cout << "Abilene New York - Los Angeles: great circle " << direct * 1e3 << " ms, routed path "
            << path.latency_s * 1e3 << " ms over " << path.hops << " links\n";

  // Placement by id gives the same graph; the default places the first nodes.
  s.placement = {"0", "5"};
  EXPECT_EQ(links_of(build_topology(s)), links_of(t));
  s.placement.clear();
  s.hosts = 11;
  EXPECT_EQ(build_topology(s).num_hosts(), 11);
  s.hosts = 12;
  EXPECT_THROW(build_topology(s), std::invalid_argument);
}

class GraphmlFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("graphml_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A three-node Zoo-style file; `nodes` and `edges` are the element text.
  std::string write(const std::string& name, const std::string& nodes, const std::string& edges) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
                           "<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\">\n"
                           "<key attr.name=\"Latitude\" attr.type=\"double\" for=\"node\" id=\"d1\"/>\n"
                           "<key attr.name=\"Longitude\" attr.type=\"double\" for=\"node\" id=\"d2\"/>\n"
                           "<key attr.name=\"label\" attr.type=\"string\" for=\"node\" id=\"d3\"/>\n"
                           "<key attr.name=\"LinkSpeedRaw\" attr.type=\"double\" for=\"edge\" id=\"d4\"/>\n"
                           "<key attr.name=\"LinkSpeed\" attr.type=\"string\" for=\"edge\" id=\"d5\"/>\n"
                           "<key attr.name=\"LinkSpeedUnits\" attr.type=\"string\" for=\"edge\" id=\"d6\"/>\n"
                           "<key attr.name=\"LinkLabel\" attr.type=\"string\" for=\"edge\" id=\"d7\"/>\n"
                           "<graph edgedefault=\"undirected\">\n"  // line 10
                        << nodes << edges << "</graph>\n</graphml>\n";
    return path;
  }
  static std::string node(const std::string& id, const std::string& lat, const std::string& label) {
    return "<node id=\"" + id + "\">\n<data key=\"d1\">" + lat +
           "</data>\n<data key=\"d2\">0</data>\n"
           "<data key=\"d3\">" +
           label + "</data>\n</node>\n";
  }
  std::string message(const std::string& path, const std::vector<std::string>& placement, int hosts = 2) {
    auto s = spec("graphml", hosts);
    s.file = path;
    s.placement = placement;
    try {
      build_topology(s);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(accepted)";
  }
  std::filesystem::path dir_;
};

TEST_F(GraphmlFiles, SpeedsAndLatency) {
  // Three nodes on the equator's meridian 0, one degree of latitude apart.
  std::string nodes = node("a", "0", "A") + node("b", "1", "B") + node("c", "2", "C");
  std::string edges =
      "<edge source=\"a\" target=\"b\"><data key=\"d4\">2500000000</data></edge>\n"
      "<edge source=\"b\" target=\"c\"><data key=\"d5\">40</data><data key=\"d6\">M</data></edge>\n"
      "<edge source=\"c\" target=\"a\"><data key=\"d7\">10GE</data></edge>\n";
  auto s = spec("graphml", 3);
  s.file = write("ok.graphml", nodes, edges);
  auto t = build_topology(s);
  EXPECT_DOUBLE_EQ(t.graph[boost::edge(0, 1, t.graph).first].bandwidth_bps, 2.5e9);
  EXPECT_DOUBLE_EQ(t.graph[boost::edge(1, 2, t.graph).first].bandwidth_bps, 40e6);
  EXPECT_DOUBLE_EQ(t.graph[boost::edge(2, 0, t.graph).first].bandwidth_bps, 10e9);
  // One degree of a great circle: 6371 km x pi/180 = 111.19 km, at 2/3 c.
  EXPECT_NEAR(t.graph[boost::edge(0, 1, t.graph).first].latency_s,
              6371e3 * std::numbers::pi / 180 / (299792458.0 * 2 / 3), 1e-12);

  // No speed at all: the scenario's bandwidth, with a warning naming the link.
  s.file = write("nospeed.graphml", nodes, "<edge source=\"a\" target=\"b\"/>\n<edge source=\"b\" target=\"c\"/>\n");
  testing::internal::CaptureStderr();
  t = build_topology(s);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_DOUBLE_EQ(t.graph[boost::edge(0, 1, t.graph).first].bandwidth_bps, 100e6);
  EXPECT_NE(err.find("link a-b (A - B) has no speed"), std::string::npos) << err;
}

TEST_F(GraphmlFiles, BadFilesNameFileAndLine) {
  std::string good = node("a", "0", "A") + node("b", "1", "B");
  // The first node starts on line 11.
  auto path =
      write("number.graphml", node("a", "4o.7", "A") + node("b", "1", "B"), "<edge source=\"a\" target=\"b\"/>\n");
  std::string m = message(path, {});
  EXPECT_EQ(m.rfind(path + ":11: ", 0), 0u) << m;
  EXPECT_NE(m.find("malformed number '4o.7'"), std::string::npos) << m;

  // Two nodes of five lines each: the edge is on line 21.
  path = write("edge.graphml", good, "<edge source=\"a\" target=\"z\"/>\n");
  m = message(path, {});
  EXPECT_EQ(m.rfind(path + ":21: ", 0), 0u) << m;
  EXPECT_NE(m.find("unknown node 'z'"), std::string::npos) << m;

  path = write("xml.graphml", good, "<edge source=\"a\" target=\"b\">\n</graph>\n");
  m = message(path, {});
  EXPECT_EQ(m.rfind(path + ":22: ", 0), 0u) << m;
  EXPECT_NE(m.find("does not match"), std::string::npos) << m;

  path = write("ok.graphml", good, "<edge source=\"a\" target=\"b\"/>\n");
  m = message(path, {"A", "nowhere"});
  EXPECT_NE(m.find("unknown node 'nowhere'"), std::string::npos) << m;
  EXPECT_NE(m.find(path), std::string::npos) << m;
  EXPECT_NE(message(path, {"A"}).find("lists 1 nodes but nodes is 2"), std::string::npos);
  EXPECT_NE(message(path, {"A", "a"}).find("twice"), std::string::npos);

  path = write("split.graphml", good + node("c", "2", "C") + node("d", "3", "D"),
               "<edge source=\"a\" target=\"b\"/>\n<edge source=\"c\" target=\"d\"/>\n");
  m = message(path, {"A", "C"});
  EXPECT_NE(m.find("disconnected"), std::string::npos) << m;
  EXPECT_NE(m.find("cannot reach node 'c'"), std::string::npos) << m;

  EXPECT_NE(message((dir_ / "missing.graphml").string(), {}).find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace topologies
}  // namespace testbed
