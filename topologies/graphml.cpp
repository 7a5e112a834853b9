// Import of Internet Topology Zoo GraphML: nodes, links, link speeds and great-circle latencies.
#include "topologies/graphml.h"

#include <boost/graph/connected_components.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "topologies/xml_reader.h"

namespace testbed {

namespace {

struct ZooNode {
  std::string id, label;
  std::optional<double> latitude, longitude;
  int line = 0;
};

struct ZooLink {
  int a = 0, b = 0;                         // indices into the node list
  std::map<std::string, std::string> data;  // attr.name -> text
  int line = 0;
};

[[noreturn]] void fail(const std::string& path, int line, const std::string& message) {
  throw std::invalid_argument(path + ":" + std::to_string(line) + ": " + message);
}

// A whole-string number: "12abc", "" and "nan" are errors, not 12 or 0.
double number(const std::string& path, int line, const std::string& key, const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  while (*end && std::isspace(static_cast<unsigned char>(*end))) ++end;
  if (end == begin || *end != '\0' || !std::isfinite(v)) fail(path, line, "malformed number '" + text + "' for " + key);
  return v;
}

// Nominal line rates of the link types the Zoo names in LinkLabel/LinkType (bits/s).
// Longer names first, so that "100GE" is not read as "10GE"... of a longer token.
std::optional<double> rate_from_label(std::string label) {
  std::transform(label.begin(), label.end(), label.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  static const std::vector<std::pair<std::string, double>> table = {
      {"OC-768", 39813.12e6}, {"OC-192", 9953.28e6}, {"OC-48", 2488.32e6}, {"OC-12", 622.08e6}, {"OC-3", 155.52e6},
      {"100GE", 100e9},       {"40GE", 40e9},        {"10GE", 10e9},       {"1GE", 1e9},        {"GIGE", 1e9},
      {"T3", 44.736e6},       {"E3", 34.368e6},      {"T1", 1.544e6},      {"E1", 2.048e6}};
  for (const auto& [name, bps] : table) {
    const size_t at = label.find(name);
    if (at == std::string::npos) continue;
    // Whole token only: "OC-3" must not match inside "OC-36", nor "1GE" inside "11GE".
    const bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(label[at - 1]));
    const size_t after = at + name.size();
    const bool right = after == label.size() || !std::isdigit(static_cast<unsigned char>(label[after]));
    if (left && right) return bps;
  }
  return std::nullopt;
}

std::string get(const std::map<std::string, std::string>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? std::string() : it->second;
}

}  // namespace

double great_circle_latency_s(double lat1, double lon1, double lat2, double lon2) {
  constexpr double kPi = 3.14159265358979323846;
  constexpr double kEarthRadiusM = 6371e3;
  constexpr double kSignalSpeed = 299792458.0 * 2.0 / 3.0;  // light in fibre, about 2/3 c
  const double rad = kPi / 180;
  const double dlat = (lat2 - lat1) * rad, dlon = (lon2 - lon1) * rad;
  const double h = std::sin(dlat / 2) * std::sin(dlat / 2) +
                   std::cos(lat1 * rad) * std::cos(lat2 * rad) * std::sin(dlon / 2) * std::sin(dlon / 2);
  const double distance = 2 * kEarthRadiusM * std::asin(std::min(1.0, std::sqrt(h)));
  return distance / kSignalSpeed;
}

Topology load_graphml(const TopologySpec& spec) {
  const std::string& path = spec.file;
  if (path.empty()) throw std::invalid_argument("graphml: topology.file is not set");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ": cannot open the GraphML file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const auto root = parse_xml(buffer.str(), path);
  if (root->name != "graphml") fail(path, root->line, "root element is <" + root->name + ">, not <graphml>");

  // key id -> attribute name, per domain (node / edge): data elements refer to keys by id.
  std::map<std::string, std::string> node_keys, edge_keys;
  const XmlElement* graph = nullptr;
  for (const auto& child : root->children) {
    if (child->name == "key") {
      const std::string id = get(child->attributes, "id"), name = get(child->attributes, "attr.name");
      const std::string domain = get(child->attributes, "for");
      if (id.empty()) fail(path, child->line, "<key> without an id");
      if (domain == "node" || domain == "all") node_keys[id] = name;
      if (domain == "edge" || domain == "all") edge_keys[id] = name;
    } else if (child->name == "graph") {
      if (graph) fail(path, child->line, "more than one <graph>; only one is supported");
      graph = child.get();
    }
  }
  if (!graph) fail(path, root->line, "no <graph> element");

  std::vector<ZooNode> nodes;
  std::map<std::string, int> index_of_id;
  std::vector<ZooLink> links;
  auto data_of = [&](const XmlElement& e, const std::map<std::string, std::string>& keys) {
    std::map<std::string, std::string> out;
    for (const auto& d : e.children) {
      if (d->name != "data") continue;
      const std::string key = get(d->attributes, "key");
      auto it = keys.find(key);
      if (it == keys.end()) fail(path, d->line, "<data> names undeclared key '" + key + "'");
      out[it->second] = d->text;
    }
    return out;
  };
  // Nodes first (edges may precede their nodes in GraphML), then edges.
  for (const auto& e : graph->children) {
    if (e->name != "node") continue;
    ZooNode node;
    node.id = get(e->attributes, "id");
    node.line = e->line;
    if (node.id.empty()) fail(path, e->line, "<node> without an id");
    if (!index_of_id.emplace(node.id, static_cast<int>(nodes.size())).second)
      fail(path, e->line, "duplicate node id '" + node.id + "'");
    const auto data = data_of(*e, node_keys);
    node.label = get(data, "label");
    if (data.count("Latitude"))
      node.latitude = number(path, e->line, "Latitude of node " + node.id, data.at("Latitude"));
    if (data.count("Longitude"))
      node.longitude = number(path, e->line, "Longitude of node " + node.id, data.at("Longitude"));
    nodes.push_back(node);
  }
  for (const auto& e : graph->children) {
    if (e->name != "edge") continue;
    ZooLink link;
    link.line = e->line;
    for (auto [end, slot] : {std::pair{"source", &link.a}, std::pair{"target", &link.b}}) {
      const std::string id = get(e->attributes, end);
      auto it = index_of_id.find(id);
      if (it == index_of_id.end()) fail(path, e->line, "edge " + std::string(end) + " names unknown node '" + id + "'");
      *slot = it->second;
    }
    link.data = data_of(*e, edge_keys);
    links.push_back(link);
  }
  if (nodes.empty()) fail(path, graph->line, "the graph has no nodes");

  // Placement: which graph nodes are the training hosts, in host order.
  const int n = spec.hosts;
  if (n > static_cast<int>(nodes.size()))
    throw std::invalid_argument(path + ": nodes is " + std::to_string(n) + " but the graph has only " +
                                std::to_string(nodes.size()) + " nodes");
  std::vector<int> placed;
  if (spec.placement.empty()) {
    for (int i = 0; i < n; ++i) placed.push_back(i);
  } else {
    if (static_cast<int>(spec.placement.size()) != n)
      throw std::invalid_argument(path + ": topology.placement lists " + std::to_string(spec.placement.size()) +
                                  " nodes but nodes is " + std::to_string(n));
    for (const auto& name : spec.placement) {
      // A node id first (the Zoo's ids are the indices), then a label.
      int found = -1;
      if (auto it = index_of_id.find(name); it != index_of_id.end()) found = it->second;
      for (int i = 0; found < 0 && i < static_cast<int>(nodes.size()); ++i)
        if (nodes[i].label == name) found = i;
      if (found < 0) throw std::invalid_argument(path + ": topology.placement names unknown node '" + name + "'");
      if (std::find(placed.begin(), placed.end(), found) != placed.end())
        throw std::invalid_argument(path + ": topology.placement names node '" + name + "' twice");
      placed.push_back(found);
    }
  }
  // Placed nodes become vertices 0..n-1, the rest follow in file order.
  std::vector<int> vertex_of(nodes.size(), -1);
  for (int i = 0; i < n; ++i) vertex_of[placed[i]] = i;
  int next = n;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (vertex_of[i] < 0) vertex_of[i] = next++;

  Topology t;
  t.kind = "graphml";
  for (int v = 0; v < static_cast<int>(nodes.size()); ++v)
    boost::add_vertex(VertexInfo{v < n ? VertexKind::Host : VertexKind::Switch}, t.graph);
  for (const auto& link : links) {
    const ZooNode &a = nodes[link.a], &b = nodes[link.b];
    const std::string name = "link " + a.id + "-" + b.id + " (" + a.label + " - " + b.label + ")";
    if (link.a == link.b) continue;  // a self-loop carries no traffic between nodes
    LinkSpec s = spec.link;
    const std::string raw = get(link.data, "LinkSpeedRaw"), speed = get(link.data, "LinkSpeed");
    std::optional<double> bps;
    if (!raw.empty()) {
      bps = number(path, link.line, "LinkSpeedRaw of " + name, raw);
    } else if (!speed.empty()) {
      const std::string units = get(link.data, "LinkSpeedUnits");
      const double scale = units == "G" ? 1e9 : units == "M" ? 1e6 : units == "K" ? 1e3 : units == "T" ? 1e12 : 0;
      if (scale == 0) fail(path, link.line, "unknown LinkSpeedUnits '" + units + "' of " + name + " (G, M, K or T)");
      bps = number(path, link.line, "LinkSpeed of " + name, speed) * scale;
    } else {
      bps = rate_from_label(get(link.data, "LinkLabel"));
      if (!bps) bps = rate_from_label(get(link.data, "LinkType"));
    }
    if (bps) {
      if (!(*bps > 0)) fail(path, link.line, "link speed of " + name + " must be > 0");
      s.bandwidth_bps = *bps;
    } else {
      std::cerr << "warning: " << path << ":" << link.line << ": " << name
                << " has no speed; using topology.link.bandwidth\n";
    }
    if (a.latitude && a.longitude && b.latitude && b.longitude)
      s.latency_s = great_circle_latency_s(*a.latitude, *a.longitude, *b.latitude, *b.longitude);
    const int u = vertex_of[link.a], v = vertex_of[link.b];
    // Some Zoo files list parallel links; the testbed's graph is simple, so the first one stands.
    if (!boost::edge(u, v, t.graph).second) boost::add_edge(u, v, s, t.graph);
  }
  if (!t.is_connected()) {
    // Hosts must reach each other; say which placed nodes are cut off.
    std::vector<int> component(boost::num_vertices(t.graph));
    boost::connected_components(t.graph, component.data());
    for (int i = 1; i < n; ++i)
      if (component[i] != component[0])
        throw std::invalid_argument(path +
                                    ": topology.placement puts hosts on disconnected parts of the graph: node '" +
                                    nodes[placed[0]].id + "' cannot reach node '" + nodes[placed[i]].id + "'");
    throw std::invalid_argument(path + ": the graph is disconnected; every node must reach the hosts");
  }
  return t;
}

}  // namespace testbed
