// Strict YAML reading: every field is read through Scenario::fields, so unknown keys,
// wrong types and out-of-range values are caught with their position in the file.
#include "sim/scenario_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <type_traits>

#include "sim/bandwidth_trace.h"
#include "sim/units.h"
#include "topologies/routing.h"
#include "sim/workload.h"
#include "training/algorithms/registry.h"
#include "training/shifts.h"

namespace testbed {
namespace {

struct Location {
  std::string origin;
  int line = 1, col = 1;
  std::string str() const {
    return origin + ":" + std::to_string(line) + ":" + std::to_string(col);
  }
};

struct Override {
  std::string path;  // a.b.c
  std::string text;  // the whole --set argument
  int value_col = 1;
};

// Where each dotted path came from: the file, or a --set argument.
class Origins {
 public:
  Origins(std::string origin, std::vector<Override> overrides)
      : origin_(std::move(origin)), overrides_(std::move(overrides)) {}

  // `is_key`: the location of the key `path` itself rather than of its value.
  Location locate(const std::string& path, const YAML::Mark& mark, bool is_key = false) const {
    // The last --set of a path is the one that took effect.
    for (auto o = overrides_.rbegin(); o != overrides_.rend(); ++o) {
      std::string origin = "--set " + o->text;
      bool inside = path == o->path || path.rfind(o->path + ".", 0) == 0;
      bool created_for_it = mark.line < 0 && o->path.rfind(path + ".", 0) == 0;
      if (is_key && (path == o->path || created_for_it)) {
        // The key is a segment of the dotted path, which starts the argument.
        size_t dot = path.rfind('.');
        return {origin, 1, dot == std::string::npos ? 1 : static_cast<int>(dot) + 2};
      }
      if (inside && mark.line >= 0) {
        // A node parsed from the value text: its mark is relative to the value.
        int col = mark.line == 0 ? o->value_col + mark.column : mark.column + 1;
        return {origin, mark.line + 1, col};
      }
      if (inside || created_for_it) return {origin, 1, o->value_col};
    }
    if (mark.line < 0) return {origin_, 1, 1};
    return {origin_, mark.line + 1, mark.column + 1};
  }

  void remember(const std::string& path, const Location& loc) { seen_[path] = loc; }
  std::map<std::string, std::string> all() const {
    std::map<std::string, std::string> out;
    for (const auto& [path, loc] : seen_) out[path] = loc.str();
    return out;
  }
  bool seen(const std::string& path) const { return seen_.count(path) > 0; }
  Location where(const std::string& path) const {
    auto it = seen_.find(path);
    return it == seen_.end() ? Location{origin_, 1, 1} : it->second;
  }

 private:
  std::string origin_;
  std::vector<Override> overrides_;
  std::map<std::string, Location> seen_;
};

[[noreturn]] void fail(const Location& loc, const std::string& message) {
  throw ScenarioError(loc.str() + ": " + message);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t next = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = row[j];
      row[j] = next;
    }
  }
  return row[b.size()];
}

std::string nearest_hint(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_distance) best_distance = d, best = c;
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

template <class T> struct IsOptional : std::false_type {};
template <class T> struct IsOptional<std::optional<T>> : std::true_type {};
template <class T> struct IsVector : std::false_type {};
template <class T> struct IsVector<std::vector<T>> : std::true_type {};

double numeric_value(const Bandwidth& v) { return v.bps; }
double numeric_value(const Duration& v) { return v.s; }
double numeric_value(const Fraction& v) { return v.value; }

// Reads one YAML map into a section through its fields() list.
class Reader {
 public:
  Reader(YAML::Node node, std::string prefix, Origins& origins)
      : node_(std::move(node)), prefix_(std::move(prefix)), origins_(origins) {}

  template <class T, class... Check>
  void field(const char* key, T& value, const Check&... checks) {
    known_.emplace_back(key);
    const YAML::Node& map = node_;
    YAML::Node child = map[key];
    if (!child.IsDefined()) return;
    std::string path = prefix_ + key;
    Location loc = origins_.locate(path, child.Mark());
    // `key: ~` or `key:` is more likely a slip than a wish for the default. A missing value
    // has no position of its own (yaml-cpp puts it on the next line), so blame the key.
    if (child.IsNull()) {
      Location key_loc = loc;
      for (auto it = map.begin(); it != map.end(); ++it) {
        if (it->first.Scalar() == key) key_loc = origins_.locate(path, it->first.Mark(), true);
      }
      fail(key_loc, "'" + path + "' has no value; give one, or leave the key out for its default");
    }
    origins_.remember(path, loc);
    read(child, path, loc, value);
    (check(loc, value, checks), ...);
  }

  void finish() {
    std::vector<std::string> seen;
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      std::string key = it->first.Scalar();
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        fail(origins_.locate(prefix_ + key, it->first.Mark(), true), "duplicate key '" + key + "'");
      }
      seen.push_back(key);
      if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
      Location loc = origins_.locate(prefix_ + key, it->first.Mark(), true);
      std::string where = prefix_.empty() ? "top level" : "'" + prefix_.substr(0, prefix_.size() - 1) + "'";
      fail(loc, "unknown key '" + key + "' in " + where + nearest_hint(key, known_) +
                    "; valid keys: " + join(known_));
    }
  }

 private:
  static std::string kind_name(const YAML::Node& n) {
    if (n.IsMap()) return "a map";
    if (n.IsSequence()) return "a list";
    return "'" + n.Scalar() + "'";
  }

  static const std::string& scalar(const YAML::Node& n, const Location& loc, const char* expected) {
    if (!n.IsScalar()) fail(loc, std::string("expected ") + expected + ", got " + kind_name(n));
    return n.Scalar();
  }

  template <class T>
  void read(const YAML::Node& n, const std::string& path, const Location& loc, T& value) {
    if constexpr (std::is_same_v<T, std::string>) {
      value = scalar(n, loc, "a string");
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!YAML::convert<bool>::decode(n, value)) fail(loc, "expected true or false, got " + kind_name(n));
    } else if constexpr (std::is_integral_v<T>) {
      const std::string& s = scalar(n, loc, "an integer");
      long double parsed = 0;
      size_t used = 0;
      try {
        parsed = std::stold(s, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != s.size() || !std::isfinite(parsed) || parsed != std::truncl(parsed))
        fail(loc, "expected an integer, got '" + s + "'");
      if (parsed < static_cast<long double>(std::numeric_limits<T>::min()) ||
          parsed > static_cast<long double>(std::numeric_limits<T>::max()))
        fail(loc, "integer '" + s + "' is out of range");
      value = static_cast<T>(parsed);
    } else if constexpr (std::is_floating_point_v<T>) {
      const std::string& s = scalar(n, loc, "a number");
      auto parsed = parse_fraction(s);  // a number, or a percentage
      if (!parsed) fail(loc, "expected a number, got '" + s + "'");
      value = *parsed;
    } else if constexpr (std::is_same_v<T, Bandwidth>) {
      read_unit(n, loc, value.bps, parse_bandwidth_bps, "a bandwidth such as 100Mbps or 1Gbps");
    } else if constexpr (std::is_same_v<T, Duration>) {
      read_unit(n, loc, value.s, parse_duration_s, "a duration such as 10ms or 500us");
    } else if constexpr (std::is_same_v<T, Fraction>) {
      read_unit(n, loc, value.value, parse_fraction, "a fraction such as 0.01 or 1%");
    } else if constexpr (IsOptional<T>::value) {
      value.emplace();
      read(n, path, loc, *value);
    } else if constexpr (std::is_same_v<T, Partition>) {
      read_partition(n, path, loc, value);
    } else if constexpr (IsVector<T>::value) {
      if (!n.IsSequence()) fail(loc, "expected a list, got " + kind_name(n));
      value.clear();
      for (size_t i = 0; i < n.size(); ++i) {
        std::string item_path = path + "." + std::to_string(i);
        Location item_loc = origins_.locate(item_path, n[i].Mark());
        origins_.remember(item_path, item_loc);
        read(n[i], item_path, item_loc, value.emplace_back());
      }
    } else {
      if (!n.IsMap()) fail(loc, "expected a map of keys for '" + path + "', got " + kind_name(n));
      Reader sub(n, path + ".", origins_);
      value.fields(sub);
      sub.finish();
    }
  }

  // `iid`, `category`, or a one-key map {dirichlet: alpha}.
  void read_partition(const YAML::Node& n, const std::string& path, const Location& loc, Partition& value) {
    const std::vector<std::string> kinds = {"iid", "category", "dirichlet"};
    if (n.IsScalar()) {
      value.kind = n.Scalar();
      if (value.kind != "iid" && value.kind != "category") {
        fail(loc, "partition '" + value.kind + "' is not iid, category or {dirichlet: alpha}" +
                      nearest_hint(value.kind, kinds));
      }
      return;
    }
    if (!n.IsMap() || n.size() != 1 || n.begin()->first.Scalar() != "dirichlet") {
      fail(loc, "partition takes iid, category or {dirichlet: alpha}");
    }
    value.kind = "dirichlet";
    const YAML::Node alpha = n.begin()->second;
    Location alpha_loc = origins_.locate(path + ".dirichlet", alpha.Mark());
    read(alpha, path + ".dirichlet", alpha_loc, value.alpha);
    check(alpha_loc, value.alpha, Range{0, 1e6, true});
  }

  template <class Parse>
  static void read_unit(const YAML::Node& n, const Location& loc, double& out, Parse parse,
                        const char* expected) {
    const std::string& s = scalar(n, loc, expected);
    auto parsed = parse(s);
    if (!parsed) fail(loc, "cannot read '" + s + "' as " + expected);
    out = *parsed;
  }

  template <class T>
  static void check(const Location& loc, const T& value, const Range& r) {
    if constexpr (IsOptional<T>::value) {
      if (value) check(loc, *value, r);
    } else {
      double v = numeric_value_of(value);
      bool low = r.lo_open ? !(v > r.lo) : !(v >= r.lo);  // NaN is out of range
      bool high = r.hi_open ? !(v < r.hi) : !(v <= r.hi);
      if (low || high) {
        fail(loc, "value " + format_number(v) + " is out of range " + (r.lo_open ? "(" : "[") +
                      format_number(r.lo) + ", " + format_number(r.hi) + (r.hi_open ? ")" : "]"));
      }
    }
  }

  template <class T>
  static double numeric_value_of(const T& value) {
    if constexpr (std::is_arithmetic_v<T>) return static_cast<double>(value);
    else return numeric_value(value);
  }

  static void check(const Location& loc, const std::optional<std::string>& value, const Choices& c) {
    if (value) check(loc, *value, c);
  }
  static void check(const Location& loc, const std::string& value, const Choices& c) {
    if (std::find(c.allowed.begin(), c.allowed.end(), value) != c.allowed.end()) return;
    fail(loc, "'" + value + "' is not one of: " + join(c.allowed) + nearest_hint(value, c.allowed));
  }

  YAML::Node node_;
  std::string prefix_;
  Origins& origins_;
  std::vector<std::string> known_;
};

// Writes a section through the same fields() list.
class Writer {
 public:
  explicit Writer(YAML::Emitter& out) : out_(out) {}

  template <class T, class... Check>
  void field(const char* key, const T& value, const Check&...) {
    if constexpr (IsOptional<T>::value) {
      if (!value) return;
      out_ << YAML::Key << key << YAML::Value;
      write(*value);
    } else {
      out_ << YAML::Key << key << YAML::Value;
      write(value);
    }
  }

 private:
  template <class T>
  void write(const T& value) {
    if constexpr (std::is_same_v<T, std::string>) {
      out_ << value;
    } else if constexpr (std::is_same_v<T, bool>) {
      out_ << value;
    } else if constexpr (std::is_arithmetic_v<T>) {
      out_ << (std::is_integral_v<T> ? std::to_string(value) : format_number(static_cast<double>(value)));
    } else if constexpr (std::is_same_v<T, Bandwidth> || std::is_same_v<T, Duration> ||
                         std::is_same_v<T, Fraction>) {
      out_ << format_number(numeric_value(value));
    } else if constexpr (std::is_same_v<T, Partition>) {
      if (value.kind == "dirichlet") {
        out_ << YAML::Flow << YAML::BeginMap << YAML::Key << "dirichlet" << YAML::Value
             << format_number(value.alpha) << YAML::EndMap;
      } else {
        out_ << value.kind;
      }
    } else if constexpr (IsVector<T>::value) {
      bool flat = std::is_arithmetic_v<typename T::value_type> ||
                  std::is_same_v<typename T::value_type, std::string>;
      if (flat) out_ << YAML::Flow;
      out_ << YAML::BeginSeq;
      for (const auto& item : value) write(item);
      out_ << YAML::EndSeq;
    } else {
      out_ << YAML::BeginMap;
      const_cast<T&>(value).fields(*this);
      out_ << YAML::EndMap;
    }
  }

  YAML::Emitter& out_;
};

std::vector<Override> apply_overrides(YAML::Node& root, const std::vector<std::string>& sets) {
  std::vector<Override> out;
  for (const auto& text : sets) {
    auto eq = text.find('=');
    Location loc{"--set " + text, 1, 1};
    if (eq == std::string::npos || eq == 0) fail(loc, "expected KEY=VALUE, such as topology.link.bandwidth=1Gbps");
    Override o{text.substr(0, eq), text, static_cast<int>(eq) + 2};
    std::vector<std::string> parts;
    std::stringstream ss(o.path);
    for (std::string part; std::getline(ss, part, '.');) {
      if (part.empty()) fail(loc, "empty key segment in '" + o.path + "'");
      parts.push_back(part);
    }
    YAML::Node value;
    try {
      value = YAML::Load(text.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      fail({loc.origin, 1, o.value_col}, "cannot read value: " + e.msg);
    }
    YAML::Node cur = root;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node next = cur[parts[i]];
      if (!next.IsDefined() || next.IsNull()) {
        cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
        next = cur[parts[i]];
      } else if (!next.IsMap()) {
        fail(loc, "'" + parts[i] + "' is not a section, so '" + o.path + "' cannot be set");
      }
      cur.reset(next);
    }
    cur[parts.back()] = value;
    out.push_back(std::move(o));
  }
  return out;
}

void check_workload(Scenario& s, const Origins& origins);
void check_compute(const Scenario& s, const Origins& origins);
void check_algorithm(const Scenario& s, const Origins& origins);
void check_collective(const Scenario& s, const Origins& origins);
void check_network(const Scenario& s, const Origins& origins);
void check_faults(const Scenario& s, const Origins& origins);

// Each link's bandwidth trace: only ns3 follows one; its path, relative to the scenario file
// (as topology.file), becomes absolute; the file must read cleanly, its errors at its own lines.
void check_traces(Scenario& s, const Origins& origins) {
  auto check = [&](std::string& path, const std::string& key) {
    if (path.empty()) return;
    const Location loc = origins.where(key);
    if (s.network.backend != "ns3") {
      fail(loc, "the " + s.network.backend + " backend keeps bandwidth fixed; use ns3 for '" + key + "'");
    }
    std::filesystem::path file = path;
    if (file.is_relative() && origins.seen(key) && loc.origin.rfind("--set ", 0) != 0)
      file = std::filesystem::path(loc.origin).parent_path() / file;
    path = std::filesystem::absolute(file).lexically_normal().string();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) fail(loc, "bandwidth trace '" + path + "' not found");
    try {
      read_bandwidth_trace(path);
    } catch (const TraceError& e) {
      fail({e.path, e.line, e.col}, e.message);
    }
  };
  check(s.topology.link.trace, "topology.link.trace");
  check(s.topology.wan.trace, "topology.wan.trace");
  for (size_t i = 0; i < s.topology.links.size(); ++i)
    if (s.topology.links[i].trace) check(*s.topology.links[i].trace, "topology.links." + std::to_string(i) + ".trace");
}

// The key a topology builder's error is best reported at: the key of the kind's own
// size or file when the scenario gives it, else topology.kind.
std::string topology_error_key(const Scenario& s, const Origins& origins, const std::string& message) {
  const std::string& kind = s.topology.kind;
  auto mentions = [&](const char* word) { return message.find(word) != std::string::npos; };
  std::vector<std::string> candidates;
  if (kind == "torus2d") candidates = {"topology.rows"};
  if (kind == "fat_tree") candidates = {mentions("nodes") ? "nodes" : "topology.k"};
  if (kind == "hierarchical")
    candidates = {mentions("topology.wan") ? "topology.wan" : "topology.per_cluster", "topology.clusters", "nodes"};
  if (kind == "erdos_renyi") candidates = {"topology.p"};
  if (kind == "watts_strogatz")
    candidates = {mentions("beta") ? "topology.beta" : "topology.degree"};
  if (kind == "graphml") {
    // A placement entry that names no node: point at that entry.
    for (size_t i = 0; i < s.topology.placement.size(); ++i)
      if (mentions("placement names") && mentions(("node '" + s.topology.placement[i] + "'").c_str()))
        candidates.push_back("topology.placement." + std::to_string(i));
    if (mentions("placement")) candidates.push_back("topology.placement");
    if (mentions("but the graph has only")) candidates.push_back("nodes");
    candidates.push_back("topology.file");
  }
  for (const auto& key : candidates)
    if (origins.seen(key)) return key;
  return "topology.kind";
}

void check_cross_fields(Scenario& s, const Origins& origins) {
  if (s.output.path.empty()) s.output.path = "results/" + s.name + ".h5";
  if (!std::regex_match(s.device, std::regex("cpu|cuda(:[0-9]+)?|mps"))) {
    fail(origins.where("device"), "device '" + s.device + "' is not cpu, cuda, cuda:N or mps");
  }
  for (size_t i = 0; i < s.topology.links.size(); ++i) {
    const auto& l = s.topology.links[i];
    std::string item = "topology.links." + std::to_string(i);
    if (l.between.size() != 2) {
      fail(origins.where(origins.seen(item + ".between") ? item + ".between" : item),
           "'between' takes two vertex indices, such as [0, 1]");
    }
  }
  if (!s.topology.file.empty() && origins.seen("topology.file")) {
    // A path in a scenario file is relative to that file, so that scenarios in the repository
    // can name ../shared data wherever they are run from; a --set path is relative to the
    // working directory. Absolute afterwards, so that re-reading the written scenario agrees.
    std::filesystem::path file = s.topology.file;
    const Location loc = origins.where("topology.file");
    if (file.is_relative() && loc.origin.rfind("--set ", 0) != 0)
      file = std::filesystem::path(loc.origin).parent_path() / file;
    s.topology.file = std::filesystem::absolute(file).lexically_normal().string();
  }
  check_traces(s, origins);
  // The topology without overrides first, so its errors are not blamed on a link entry.
  TopologySpec spec = topology_spec(s);
  std::vector<LinkOverride> overrides = std::move(spec.overrides);
  spec.overrides.clear();
  try {
    build_topology(spec);
  } catch (const std::invalid_argument& e) {
    fail(origins.where(topology_error_key(s, origins, e.what())), e.what());
  }
  for (size_t i = 0; i < overrides.size(); ++i) {
    spec.overrides = {overrides[i]};
    try {
      build_topology(spec);
    } catch (const std::invalid_argument& e) {
      fail(origins.where("topology.links." + std::to_string(i)), e.what());
    }
  }
  if (s.network.backend != "ns3") {
    // Only packets can be dropped; a lossy scenario there would silently be lossless.
    bool lossy = false;
    const Topology built = build_topology(topology_spec(s));
    for (auto e : boost::make_iterator_range(boost::edges(built.graph))) lossy = lossy || built.graph[e].mean_loss() > 0;
    if (lossy) {
      fail(origins.where("network.backend"),
           "the " + s.network.backend + " backend models no loss; use ns3 for lossy links");
    }
    // Jitter is a per-packet delay; a backend without packets would silently ignore it.
    std::string jittery;
    if (s.topology.link.jitter.s > 0) jittery = "topology.link.jitter";
    if (jittery.empty() && s.topology.kind == "hierarchical" && s.topology.wan.jitter.s > 0)
      jittery = "topology.wan.jitter";
    for (size_t i = 0; i < s.topology.links.size() && jittery.empty(); ++i)
      if (s.topology.links[i].jitter && s.topology.links[i].jitter->s > 0)
        jittery = "topology.links." + std::to_string(i) + ".jitter";
    if (!jittery.empty()) {
      fail(origins.where(jittery),
           "the " + s.network.backend + " backend models no per-packet jitter; use ns3 for jittery links");
    }
    // Datagrams, their headers and their loss are packets' business; flow and analytical
    // model reliable byte streams only, so udp there would silently mean tcp.
    if (s.network.transport == "udp") {
      fail(origins.where("network.transport"),
           "transport udp needs the ns3 backend (the " + s.network.backend + " backend carries reliable streams only)");
    }
  }
  check_network(s, origins);
  if (s.compute.model == "fixed" && s.compute.step_time.s <= 0) {
    fail(origins.where("compute.step_time"), "the fixed compute model needs step_time > 0");
  }
  check_workload(s, origins);
  check_compute(s, origins);
  check_algorithm(s, origins);
  check_collective(s, origins);
}

// The server is a node; explicit clusters partition the nodes; the hierarchical algorithm
// needs clusters from somewhere.
void check_collective(const Scenario& s, const Origins& origins) {
  const auto& c = s.collective;
  if (c.server >= s.nodes)
    fail(origins.where("collective.server"), "server " + std::to_string(c.server) + " is not a node (0.." +
                                                 std::to_string(s.nodes - 1) + ")");
  std::vector<int> owner(s.nodes, -1);
  for (size_t i = 0; i < c.clusters.size(); ++i) {
    const std::string item = "collective.clusters." + std::to_string(i);
    if (c.clusters[i].empty()) fail(origins.where(item), "a cluster needs at least one node");
    for (size_t j = 0; j < c.clusters[i].size(); ++j) {
      const int node = c.clusters[i][j];
      const Location loc = origins.where(item + "." + std::to_string(j));
      if (node < 0 || node >= s.nodes)
        fail(loc, "node " + std::to_string(node) + " is not a node (0.." + std::to_string(s.nodes - 1) + ")");
      if (owner[node] >= 0)
        fail(loc, "node " + std::to_string(node) + " is already in cluster " + std::to_string(owner[node]));
      owner[node] = static_cast<int>(i);
    }
  }
  if (!c.clusters.empty()) {
    for (int n = 0; n < s.nodes; ++n)
      if (owner[n] < 0) fail(origins.where("collective.clusters"), "node " + std::to_string(n) + " is in no cluster");
  }
  if (c.algorithm == "hierarchical" && node_clusters(s).empty())
    fail(origins.where("collective.algorithm"),
         "the hierarchical collective needs clusters: use topology.kind hierarchical or fat_tree, or give "
         "collective.clusters such as [[0, 1], [2, 3]]");
}

// Collects the keys a section's fields() declares.
struct KeyNames {
  std::vector<std::string> names;
  template <class T, class... Check>
  void field(const char* key, T&, const Check&...) {
    names.emplace_back(key);
  }
};

void check_algorithm(const Scenario& s, const Origins& origins) {
  const auto& a = s.algorithm;
  const AlgorithmEntry* entry = find_algorithm(a.name);
  if (!entry) fail(origins.where("algorithm.name"), "unknown algorithm '" + a.name + "'");
  KeyNames keys;
  AlgorithmSection().fields(keys);
  for (const auto& key : keys.names) {
    if (key == "name" || !origins.seen("algorithm." + key)) continue;
    if (std::find(entry->keys.begin(), entry->keys.end(), key) != entry->keys.end()) continue;
    fail(origins.where("algorithm." + key),
         "'" + key + "' is not a key of algorithm '" + a.name + "'" +
             (entry->keys.empty() ? " (it takes none)" : " (its keys: " + join(entry->keys) + ")"));
  }
  if (a.keys.outer_dtype == "fp4" && a.name != "streaming_diloco") {
    fail(origins.where("algorithm.outer_dtype"), "fp4 outer gradients are streaming_diloco's; use fp32, bf16 or fp16");
  }
  if (a.name == "streaming_diloco") {
    // A fragment syncs every H steps; with tau >= H it would be issued again while its
    // previous sync is still in flight, against a global copy that sync has not updated yet.
    const int H = a.keys.H.value_or(100), tau = a.keys.tau.value_or(1);
    if (tau >= H)
      fail(origins.where(origins.seen("algorithm.tau") ? "algorithm.tau" : "algorithm.H"),
           "tau (" + std::to_string(tau) + ") must be below H (" + std::to_string(H) +
               "): a fragment's sync must land before its next one is issued");
  }
  if (a.keys.k && *a.keys.k > a.keys.chunk.value_or(64)) {
    fail(origins.where("algorithm.k"), "k must not exceed chunk (" + std::to_string(a.keys.chunk.value_or(64)) + ")");
  }
  const bool neighbourly = a.name == "gossip" || (a.keys.exchange && *a.keys.exchange != "allreduce");
  if (neighbourly) {
    const auto neighbours = host_neighbours(build_topology(topology_spec(s)));
    for (size_t n = 0; n < neighbours.size(); ++n) {
      if (!neighbours[n].empty()) continue;
      fail(origins.where(a.name == "gossip" ? "algorithm.name" : "algorithm.exchange"),
           "node " + std::to_string(n) + " has no topology neighbour to exchange with");
    }
  }
}

void check_workload(Scenario& s, const Origins& origins) {
  auto& w = s.workload;
  if (w.data_dir.empty()) w.data_dir = default_data_dir(w.dataset);
  const std::map<std::string, std::string> marker = {{"fashion_mnist", "train-images-idx3-ubyte.gz"},
                                                     {"brown", "ca01"}};
  if (auto it = marker.find(w.dataset); it != marker.end()) {
    auto file = std::filesystem::path(w.data_dir) / it->second;
    if (!std::filesystem::exists(file)) {
      fail(origins.where(w.data_dir == default_data_dir(w.dataset) ? "workload.dataset" : "workload.data_dir"),
           "data set '" + w.dataset + "' not found (no " + file.string() + "); run scripts/install-deps.sh");
    }
  }
  bool language_model = w.model == "gpt";
  if (language_model != (w.dataset == "brown")) {
    fail(origins.where("workload.model"), "model '" + w.model + "' does not fit dataset '" + w.dataset +
                                              "' (gpt trains on brown; mlp and cnn on images or synthetic)");
  }
  if (w.dataset == "synthetic" && w.model != "mlp") {
    fail(origins.where("workload.model"), "the synthetic task trains an mlp");
  }
  for (size_t i = 0; i < w.shifts.size(); ++i) {
    Location loc = origins.where("workload.shifts." + std::to_string(i));
    if (w.dataset != "fashion_mnist") fail(loc, "test-set shifts apply to image data sets only");
    const auto& names = image_shift_names();
    if (std::find(names.begin(), names.end(), w.shifts[i]) == names.end()) {
      fail(loc, "unknown shift '" + w.shifts[i] + "'; valid: " + join(names) + nearest_hint(w.shifts[i], names));
    }
  }
  bool regression = w.dataset == "synthetic" && w.synthetic.task == "regression";
  int labels = w.dataset == "fashion_mnist" ? 10 : (w.dataset == "synthetic" ? w.synthetic.outputs : 0);
  for (size_t i = 0; i < w.classes.size(); ++i) {
    Location loc = origins.where("workload.classes." + std::to_string(i));
    if (labels == 0 || regression) fail(loc, "'classes' selects labels of a classification data set");
    if (w.classes[i] < 0 || w.classes[i] >= labels) {
      fail(loc, "class " + std::to_string(w.classes[i]) + " is not a label of '" + w.dataset + "' (0.." +
                    std::to_string(labels - 1) + ")");
    }
  }
  if (w.partition.kind == "dirichlet" && (w.dataset == "brown" || regression)) {
    fail(origins.where("workload.partition"), "a dirichlet partition needs class labels; use iid or category");
  }
  // Building the model checks shapes (adapter rank, heads) and any checkpoint it starts from.
  try {
    make_model(s);
  } catch (const std::invalid_argument& e) {
    std::string where = w.adapter.kind != "none" && std::string(e.what()).find("rank") != std::string::npos
                            ? "workload.adapter.rank"
                            : (language_model ? "workload.gpt" : "workload.model");
    fail(origins.where(where), e.what());
  } catch (const std::runtime_error& e) {
    fail(origins.where("workload.init_from"), e.what());
  }
}

void check_faults(const Scenario& s, const Origins& origins) {
  if (s.network.backend != "ns3") {
    fail(origins.where("network.faults"),
         "the " + s.network.backend + " backend models no faults; use ns3 for 'network.faults'");
  }
  const Topology topology = build_topology(topology_spec(s));
  const int nv = topology.num_vertices();
  for (size_t i = 0; i < s.network.faults.size(); ++i) {
    const auto& f = s.network.faults[i];
    const std::string item = "network.faults." + std::to_string(i);
    if (f.link.empty() == !f.node) fail(origins.where(item), "a fault names either 'link: [a, b]' or 'node: n'");
    if (f.node && (*f.node < 0 || *f.node >= nv)) {
      fail(origins.where(item + ".node"),
           "node " + std::to_string(*f.node) + " is not a vertex of the topology (0.." + std::to_string(nv - 1) + ")");
    }
    if (!f.link.empty()) {
      const bool pair = f.link.size() == 2;
      const bool inside = pair && f.link[0] >= 0 && f.link[0] < nv && f.link[1] >= 0 && f.link[1] < nv;
      if (!inside || !boost::edge(f.link[0], f.link[1], topology.graph).second) {
        std::string named;
        for (int v : f.link) named += (named.empty() ? "" : ", ") + std::to_string(v);
        fail(origins.where(item + ".link"), "[" + named + "] is not a link of the topology");
      }
    }
    if (f.down.size() != 2) fail(origins.where(origins.seen(item + ".down") ? item + ".down" : item),
                                 "'down' takes an interval [start, end], such as [30s, 45s]");
    if (!(f.down[0].s >= 0)) fail(origins.where(item + ".down.0"), "a fault cannot start before time 0");
    if (!(f.down[1].s > f.down[0].s)) {
      fail(origins.where(item + ".down.1"), "the fault's end " + format_number(f.down[1].s) +
                                                " s is not after its start " + format_number(f.down[0].s) + " s");
    }
  }
}

// Each background flow joins two vertices over an interval; onoff needs its rate, bulk has none.
void check_background(const Scenario& s, const Origins& origins) {
  if (s.network.backend != "ns3") {
    fail(origins.where("network.background"),
         "the " + s.network.backend + " backend carries no background traffic; use ns3 for 'network.background'");
  }
  const int nv = build_topology(topology_spec(s)).num_vertices();
  for (size_t i = 0; i < s.network.background.size(); ++i) {
    const auto& b = s.network.background[i];
    const std::string item = "network.background." + std::to_string(i);
    for (const auto& [key, end] : {std::pair{"from", b.from}, std::pair{"to", b.to}}) {
      if (!end) fail(origins.where(item), std::string("a background flow needs '") + key + "' (a vertex)");
      if (*end >= nv) {
        fail(origins.where(item + "." + key),
             "vertex " + std::to_string(*end) + " is not in the topology (0.." + std::to_string(nv - 1) + ")");
      }
    }
    if (*b.from == *b.to) fail(origins.where(item + ".to"), "a background flow cannot go from a vertex to itself");
    if (b.kind == "onoff" && !b.rate) fail(origins.where(item), "an onoff flow needs 'rate' (its rate while on)");
    if (b.kind == "bulk" && b.rate) {
      fail(origins.where(item + ".rate"), "a bulk flow sends as fast as TCP lets it; 'rate' is for kind onoff");
    }
    // Without an end the simulation would never run out of events.
    if (!b.stop) fail(origins.where(item), "a background flow needs 'stop' (when it ends)");
    if (!(b.stop->s > b.start.s)) {
      fail(origins.where(item + ".stop"), "stop " + format_number(b.stop->s) + " s is not after start " +
                                              format_number(b.start.s) + " s");
    }
  }
}

void check_network(const Scenario& s, const Origins& origins) {
  const auto& n = s.network;
  if (!n.background.empty()) check_background(s, origins);
  // Only the flow backend shares links by a rule; elsewhere rtt would silently do nothing.
  if (n.backend != "flow" && n.flow_sharing != "maxmin") {
    fail(origins.where("network.flow_sharing"),
         "flow_sharing " + n.flow_sharing + " needs the flow backend (" +
             (n.backend == "ns3" ? "in ns3 the TCP connections themselves share the links"
                                 : "the analytical backend does not share links") + ")");
  }
  // A queue is given when it differs from the default: to_yaml writes every key, and its
  // output must load again (flow and analytical scenarios, ns3 ones with queue_packets).
  const bool queue_given = origins.seen("network.queue") && n.queue != NetworkSection{}.queue;
  for (const auto& [key, given] : {std::pair{"network.queue", queue_given},
                                    std::pair{"network.queue_packets", n.queue_packets.has_value()}}) {
    if (n.backend != "ns3" && given) {
      fail(origins.where(key), "the " + n.backend + " backend models no queues; use ns3 for '" + std::string(key) + "'");
    }
  }
  if (!n.faults.empty()) check_faults(s, origins);
  if (n.queue_packets && queue_given) {
    fail(origins.where("network.queue_packets"), "give the device queue once: 'queue' or 'queue_packets'");
  }
  if (auto bdp = parse_bdp_multiple(n.queue)) {
    if (!(*bdp > 0 && *bdp <= 1e6)) fail(origins.where("network.queue"), "a queue of " + n.queue + " must be in (0, 1e6] bdp");
  } else if (auto bytes = parse_bytes(n.queue)) {
    // Smaller than one packet, the queue would drop every packet it is offered.
    if (!(*bytes >= n.mtu + 2 && *bytes < 4.0e9)) {
      fail(origins.where("network.queue"), "a queue of " + n.queue + " does not hold one " + std::to_string(n.mtu) +
                                               "-byte packet (or exceeds 4 GB)");
    }
  } else {
    fail(origins.where("network.queue"),
         "cannot read queue '" + n.queue + "'; give a multiple of each link's bandwidth-delay product (1bdp, 0.5bdp) or bytes (256KB)");
  }
}

void check_compute(const Scenario& s, const Origins& origins) {
  const auto& c = s.compute;
  for (size_t i = 0; i < c.speeds.size(); ++i) {
    if (!(c.speeds[i] > 0)) {
      fail(origins.where("compute.speeds." + std::to_string(i)), "a node's speed must be positive");
    }
  }
  if (c.speed_min > c.speed_max) {
    fail(origins.where("compute.speed_min"), "speed_min is larger than speed_max");
  }
}

}  // namespace

Scenario parse_scenario(const std::string& yaml_text, const std::string& origin,
                        const std::vector<std::string>& overrides) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    fail({origin, e.mark.line + 1, e.mark.column + 1}, "invalid YAML: " + e.msg);
  }
  // An empty or comment-only file is more likely the wrong file than a wish for every
  // default; `{}` says the latter explicitly.
  if (!root.IsDefined() || root.IsNull())
    fail({origin, 1, 1}, "the file holds no scenario: a scenario is a map of keys (write {} for all defaults)");
  if (!root.IsMap()) fail({origin, root.Mark().line + 1, root.Mark().column + 1}, "a scenario is a map of keys");
  Origins origins(origin, apply_overrides(root, overrides));
  Scenario scenario;
  Reader reader(root, "", origins);
  scenario.fields(reader);
  reader.finish();
  scenario.source = origin;
  scenario.locations = origins.all();
  check_cross_fields(scenario, origins);
  return scenario;
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ScenarioError(path + ":1:1: is a directory, not a scenario file");
  std::ifstream in(path);
  if (!in) throw ScenarioError(path + ":1:1: cannot open scenario file");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ScenarioError(path + ":1:1: cannot read scenario file");
  return parse_scenario(text.str(), path, overrides);
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  return nearest_hint(word, candidates);
}

std::string to_yaml(const Scenario& scenario) {
  YAML::Emitter out;
  Writer writer(out);
  out << YAML::BeginMap;
  const_cast<Scenario&>(scenario).fields(writer);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace testbed
