// Tests for topology builders, validation and minimum-hop routing.
#include <gtest/gtest.h>

#include <stdexcept>

#include "topologies/builders.h"
#include "topologies/routing.h"

namespace testbed {
namespace {

TopologySpec spec(const std::string& kind, int hosts) {
  TopologySpec s;
  s.kind = kind;
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
  for (const auto& kind : topology_kinds()) EXPECT_NO_THROW(build_topology(spec(kind, 6))) << kind;
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
    s.kind = kind;
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

}  // namespace
}  // namespace testbed
