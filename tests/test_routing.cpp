// Routing across the backends: which links each host pair's messages cross in ns-3, flow and
// analytical, under shortest (minimum hops, lowest-index ties) and ecmp routing.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "netmodels/analytical_network.h"
#include "netmodels/event_clock.h"
#include "netmodels/flow_network.h"
#include "netmodels/ns3_network.h"
#include "topologies/builders.h"
#include "topologies/routing.h"

namespace testbed {
namespace {

enum class Backend { Ns3, Flow, Analytical };
const char* name(Backend b) { return b == Backend::Ns3 ? "ns3" : b == Backend::Flow ? "flow" : "analytical"; }

using Links = std::set<std::pair<int, int>>;       // directed links (from vertex, to vertex)
using PairLinks = std::map<std::pair<int, int>, Links>;

std::unique_ptr<Network> make(Backend backend, EventClock& clock, const Topology& t) {
  switch (backend) {
    case Backend::Ns3: {
      Ns3Options o;
      o.count_link_bytes = true;
      return make_ns3_network(clock, t, o);
    }
    case Backend::Flow: return make_flow_network(clock, t);
    case Backend::Analytical: return make_analytical_network(clock, t);
  }
  return nullptr;
}

// Sends `bytes` from every host to every other host, one message at a time: each starts 1 ms
// after the previous one arrived, so that its ACKs have settled. For each ordered pair, the
// directed links that carried at least `bytes` meanwhile are its message's path; the reverse
// path's ACKs and handshake carry far less (a few hundred bytes for 6 segments).
PairLinks observed_links(Backend backend, const Topology& t, uint64_t bytes = 50'000) {
  std::vector<std::pair<int, int>> pairs;
  for (int s = 0; s < t.num_hosts(); ++s)
    for (int d = 0; d < t.num_hosts(); ++d)
      if (s != d) pairs.emplace_back(s, d);
  PairLinks out;
  EventClock clock;
  {
    auto network = make(backend, clock, t);
    size_t next = 0;
    LinkBytes before;
    std::function<void()> step = [&] {
      const LinkBytes now = network->link_bytes();
      if (next > 0) {
        Links& links = out[pairs[next - 1]];
        for (const auto& [link, n] : now) {
          const auto it = before.find(link);
          if (n - (it == before.end() ? 0 : it->second) >= bytes) links.insert(link);
        }
      }
      before = now;
      if (next == pairs.size()) return;
      const auto [s, d] = pairs[next];
      network->send(Message{next++, s, d, bytes}, [&](const Delivery&) { clock.schedule(1e-3, step); });
    };
    clock.schedule(0, step);
    clock.run();
  }
  return out;
}

Links links_of(const std::vector<int>& path) {
  Links out;
  for (size_t i = 0; i + 1 < path.size(); ++i) out.emplace(path[i], path[i + 1]);
  return out;
}

std::string text(const Links& links) {
  std::string s;
  for (auto [a, b] : links) s += std::to_string(a) + ">" + std::to_string(b) + " ";
  return s;
}

TopologySpec spec(const std::string& kind, int hosts) {
  TopologySpec s;
  s.kind = kind;
  s.hosts = hosts;
  s.link = {1e9, 10e-6, 0};
  return s;
}

// An irregular router graph in the manner of a Topology Zoo network: hosts 0-5 are routers
// that also carry transit traffic, 6-11 routers without hosts; many equal-hop alternatives.
Topology irregular() {
  Topology t;
  t.kind = "irregular";
  for (int v = 0; v < 12; ++v) boost::add_vertex(VertexInfo{v < 6 ? VertexKind::Host : VertexKind::Switch}, t.graph);
  const LinkSpec link{1e9, 10e-6, 0};
  for (auto [a, b] : std::vector<std::pair<int, int>>{{0, 6},  {0, 7}, {1, 6},  {1, 8}, {2, 7},  {2, 9},
                                                      {3, 8},  {3, 10}, {4, 9}, {4, 11}, {5, 10}, {5, 11},
                                                      {6, 9},  {7, 8}, {8, 11}, {9, 10}, {1, 2},  {4, 5}})
    boost::add_edge(a, b, link, t.graph);
  validate_topology(t);
  return t;
}

std::vector<Topology> tie_topologies() {
  std::vector<Topology> out;
  out.push_back(build_topology(spec("ring", 4)));
  out.push_back(build_topology(spec("torus2d", 16)));
  auto ft = spec("fat_tree", 16);
  ft.fat_tree_k = 4;
  out.push_back(build_topology(ft));
  auto ws = spec("watts_strogatz", 10);
  ws.degree = 4;
  ws.beta = 0.3;
  out.push_back(build_topology(ws));
  out.push_back(irregular());
  return out;
}

// Under shortest routing every backend's messages cross exactly the links of shortest_path.
TEST(RoutingAgreement, ShortestIsTheSamePathInEveryBackend) {
  for (const Topology& t : tie_topologies()) {
    for (Backend b : {Backend::Ns3, Backend::Flow, Backend::Analytical}) {
      const PairLinks seen = observed_links(b, t);
      int differ = 0;
      for (const auto& [pair, links] : seen) {
        const Links expected = links_of(shortest_path(t, pair.first, pair.second));
        if (links != expected) {
          ++differ;
          if (differ <= 5)
            std::printf("  %s %s %d->%d: crossed %s, shortest_path %s\n", t.kind.c_str(), name(b), pair.first,
                        pair.second, text(links).c_str(), text(expected).c_str());
        }
      }
      std::printf("%-15s %-10s %d of %zu pairs off shortest_path\n", t.kind.c_str(), name(b), differ, seen.size());
      EXPECT_EQ(differ, 0) << t.kind << " " << name(b);
    }
  }
}

}  // namespace
}  // namespace testbed
