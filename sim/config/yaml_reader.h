// Strict YAML reading, whatever the document: every map is read through a fields() list
// (see scenario.h), so unknown keys, duplicate keys, wrong types and out-of-range values are
// caught at their position in the file or in the --set argument that gave them.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "sim/config/field_types.h"
#include "sim/config/input_error.h"
#include "sim/config/units.h"

namespace testbed {

struct Location {
  std::string origin;
  int line = 1, col = 1;
  std::string str() const { return origin + ":" + std::to_string(line) + ":" + std::to_string(col); }
};

// One --set argument.
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
  Location locate(const std::string& path, const YAML::Mark& mark, bool is_key = false) const;

  void remember(const std::string& path, const Location& loc) { seen_[path] = loc; }
  std::map<std::string, std::string> all() const {
    std::map<std::string, std::string> out;
    for (const auto& [path, loc] : seen_) out[path] = loc.str();
    return out;
  }
  bool seen(const std::string& path) const { return seen_.count(path) > 0; }
  // Of keys that break a rule together, the one to blame: the first given by --set (the value
  // the user just changed), else the first given in the file, else the last of them.
  std::string blame(const std::vector<std::string>& keys) const {
    for (const auto& k : keys)
      if (seen(k) && where(k).origin.rfind("--set ", 0) == 0) return k;
    for (const auto& k : keys)
      if (seen(k)) return k;
    return keys.back();
  }
  Location where(const std::string& path) const {
    auto it = seen_.find(path);
    return it == seen_.end() ? Location{origin_, 1, 1} : it->second;
  }

 private:
  std::string origin_;
  std::vector<Override> overrides_;
  std::map<std::string, Location> seen_;
};

// Throws ScenarioError "file:line:col: message".
[[noreturn]] void fail(const Location& loc, const std::string& message);

// " (did you mean 'x'?)" for the candidate nearest to `word`, or "" when none is close.
std::string nearest_hint(const std::string& word, const std::vector<std::string>& candidates);
std::string join(const std::vector<std::string>& words);

// Why `name` cannot be one file name (FileName in field_types.h), or "" when it can.
std::string file_name_problem(const std::string& name, size_t max_length);

// The YAML text's root map; `origin` names it in errors, `document` what it should hold.
YAML::Node read_root_map(const std::string& yaml_text, const std::string& origin, const std::string& document);

// Applies "a.b.c=value" arguments to `root`, creating sections as needed.
std::vector<Override> apply_overrides(YAML::Node& root, const std::vector<std::string>& sets);

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};
// A list of numbers, written on one line.
template <class T>
struct IsNumberList : std::false_type {};
template <class T>
struct IsNumberList<std::vector<T>> : std::is_arithmetic<T> {};

inline double numeric_value(const Bandwidth& v) { return v.bps; }
inline double numeric_value(const Duration& v) { return v.s; }
inline double numeric_value(const Fraction& v) { return v.value; }
inline double numeric_value(const ByteRate& v) { return v.bytes_per_s; }
inline double numeric_value(const FlopRate& v) { return v.flops; }

// A value as a scenario writes it: in its unit ("100Mbps", "10ms", "2.039TB/s", "312TFLOPS").
inline std::string format_quantity(const Bandwidth& v) { return format_bandwidth(v.bps); }
inline std::string format_quantity(const Duration& v) { return format_duration(v.s); }
inline std::string format_quantity(const Fraction& v) { return format_number(v.value); }
inline std::string format_quantity(const ByteRate& v) { return format_byte_rate(v.bytes_per_s); }
inline std::string format_quantity(const FlopRate& v) { return format_flop_rate(v.flops); }
template <class T>
constexpr bool is_quantity_v =
    std::is_same_v<T, Bandwidth> || std::is_same_v<T, Duration> || std::is_same_v<T, Fraction> ||
    std::is_same_v<T, ByteRate> || std::is_same_v<T, FlopRate>;

// Reads one YAML map into a section through its fields() list.
class FieldReader {
 public:
  // `every_key`: the document's every dotted key, so that a key given at the wrong level can
  // name the right one (`workload.lr` -> `optimizer.lr`).
  FieldReader(YAML::Node node, std::string prefix, Origins& origins,
              const std::vector<std::string>* every_key = nullptr)
      : node_(std::move(node)), prefix_(std::move(prefix)), origins_(origins), every_key_(every_key) {}

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

  // `message(key, known)`: the section's own words for an unknown key ("" for the default).
  using UnknownKeyMessage = std::function<std::string(const std::string& key, const std::vector<std::string>& known)>;
  void finish(const UnknownKeyMessage& message = {}) {
    std::vector<std::string> seen;
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      std::string key = it->first.Scalar();
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        fail(origins_.locate(prefix_ + key, it->first.Mark(), true), "duplicate key '" + key + "'");
      }
      seen.push_back(key);
      if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
      Location loc = origins_.locate(prefix_ + key, it->first.Mark(), true);
      if (message) {
        if (std::string own = message(key, known_); !own.empty()) fail(loc, own);
      }
      std::string where = prefix_.empty() ? "top level" : "'" + prefix_.substr(0, prefix_.size() - 1) + "'";
      fail(loc, "unknown key '" + key + "' in " + where + elsewhere(key) + nearest_hint(key, known_) +
                    "; valid keys: " + join(known_));
    }
  }

 private:
  // " ('lr' is a key of 'optimizer')" when the key belongs to another section.
  std::string elsewhere(const std::string& key) const {
    if (!every_key_) return "";
    std::vector<std::string> homes;
    for (const auto& path : *every_key_) {
      const auto dot = path.rfind('.');
      if (dot == std::string::npos || path.compare(dot + 1, std::string::npos, key) != 0) continue;
      std::string home = path.substr(0, dot);
      if (home + "." != prefix_ && std::find(homes.begin(), homes.end(), home) == homes.end()) homes.push_back(home);
    }
    if (homes.empty()) return "";
    return " ('" + key + "' is a key of '" + join(homes) + "': " + homes.front() + "." + key + ")";
  }

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
    } else if constexpr (std::is_enum_v<T>) {
      const std::string& s = scalar(n, loc, "a name");
      for (const auto& [v, name] : EnumNames<T>::all()) {
        if (name == s) return void(value = v);
      }
      fail(loc, "'" + s + "' is not one of: " + join(enum_names<T>()) + nearest_hint(s, enum_names<T>()));
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
      read_unit(n, loc, value.bps, parse_bandwidth_bps, "a bandwidth such as 100Mbps or 1Gbps", {"Mbps", "Gbps"});
    } else if constexpr (std::is_same_v<T, Duration>) {
      read_unit(n, loc, value.s, parse_duration_s, "a duration such as 10ms or 500us", {"ms", "s"});
    } else if constexpr (std::is_same_v<T, Fraction>) {
      read_unit(n, loc, value.value, parse_fraction, "a fraction such as 0.01 or 1%");
    } else if constexpr (std::is_same_v<T, ByteRate>) {
      read_unit(n, loc, value.bytes_per_s, parse_byte_rate, "a memory bandwidth such as 2TB/s", {"GB/s", "TB/s"});
    } else if constexpr (std::is_same_v<T, FlopRate>) {
      read_unit(n, loc, value.flops, parse_flop_rate, "a FLOP rate such as 312TFLOPS", {"GFLOPS", "TFLOPS"});
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
      FieldReader sub(n, path + ".", origins_, every_key_);
      value.fields(sub);
      sub.finish([&value](const std::string& key, const std::vector<std::string>& known) {
        if constexpr (requires { value.unknown_key_message(key, known); })
          return value.unknown_key_message(key, known);
        else
          return std::string();
      });
    }
  }

  // `iid`, `category`, or a one-key map {dirichlet: alpha}.
  void read_partition(const YAML::Node& n, const std::string& path, const Location& loc, Partition& value) {
    if (n.IsScalar()) {
      const std::string& name = n.Scalar();
      if (name == "dirichlet") fail(loc, "a dirichlet partition takes its alpha: {dirichlet: 0.5}");
      if (name != "iid" && name != "category") {
        fail(loc, "partition '" + name + "' is not iid, category or {dirichlet: alpha}" +
                      nearest_hint(name, partition_kinds()));
      }
      value.kind = name == "iid" ? PartitionKind::Iid : PartitionKind::Category;
      return;
    }
    if (!n.IsMap() || n.size() != 1 || n.begin()->first.Scalar() != "dirichlet") {
      fail(loc, "partition takes iid, category or {dirichlet: alpha}");
    }
    value.kind = PartitionKind::Dirichlet;
    const YAML::Node alpha = n.begin()->second;
    Location alpha_loc = origins_.locate(path + ".dirichlet", alpha.Mark());
    read(alpha, path + ".dirichlet", alpha_loc, value.alpha);
    check(alpha_loc, value.alpha, Range{0, 1e6, true});
  }

  // A quantity carries its unit: a bare number other than 0 is refused with the two readings
  // it most likely meant (`units`: `latency: 5` -> "write 5ms or 5s"), in files and in --set.
  // Fractions (`units` empty) stay bare.
  template <class Parse>
  static void read_unit(const YAML::Node& n, const Location& loc, double& out, Parse parse, const char* expected,
                        std::pair<const char*, const char*> units = {nullptr, nullptr}) {
    const std::string& s = scalar(n, loc, expected);
    auto parsed = parse(s);
    if (!parsed) fail(loc, "cannot read '" + s + "' as " + expected);
    if (units.first && *parsed != 0 && bare_number(s))
      fail(loc,
           "'" + s + "' has no unit: write " + s + units.first + " or " + s + units.second + " (" + expected + ")");
    out = *parsed;
  }
  static bool bare_number(const std::string& s) {
    size_t end = s.find_last_not_of(' ');
    return end != std::string::npos && (std::isdigit(static_cast<unsigned char>(s[end])) || s[end] == '.');
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
        // In the key's own unit, as the scenario writes it.
        auto text = [](double x) {
          if constexpr (is_quantity_v<T>)
            return format_quantity(T{x});
          else
            return format_number(x);
        };
        fail(loc, "value " + text(v) + " is out of range " + (r.lo_open ? "(" : "[") + text(r.lo) + ", " + text(r.hi) +
                      (r.hi_open ? ")" : "]"));
      }
    }
  }

  template <class T>
  static double numeric_value_of(const T& value) {
    if constexpr (std::is_arithmetic_v<T>)
      return static_cast<double>(value);
    else
      return numeric_value(value);
  }

  static void check(const Location& loc, const std::optional<std::string>& value, const Choices& c) {
    if (value) check(loc, *value, c);
  }
  static void check(const Location& loc, const std::string& value, const Choices& c) {
    if (std::find(c.allowed.begin(), c.allowed.end(), value) != c.allowed.end()) return;
    fail(loc, "'" + value + "' is not one of: " + join(c.allowed) + nearest_hint(value, c.allowed));
  }

  static void check(const Location& loc, const std::string& value, const FileName& f) {
    if (std::string why = file_name_problem(value, f.max_length); !why.empty()) fail(loc, why);
  }

  YAML::Node node_;
  std::string prefix_;
  Origins& origins_;
  const std::vector<std::string>* every_key_;
  std::vector<std::string> known_;
};

// Writes a section through the same fields() list. `notes` (by dotted path) become comments
// after their key's value: what a sentinel such as 0 or -1 resolves to.
class FieldWriter {
 public:
  explicit FieldWriter(YAML::Emitter& out, const std::map<std::string, std::string>* notes = nullptr,
                       std::string prefix = "")
      : out_(out), notes_(notes), prefix_(std::move(prefix)) {}

  template <class T, class... Check>
  void field(const char* key, const T& value, const Check&...) {
    const std::string path = prefix_ + key;
    if constexpr (IsOptional<T>::value) {
      if (!value) {
        // An unset key is not written (it would read back as set); its note says what that means.
        if (notes_)
          if (auto it = notes_->find(path); it != notes_->end())
            out_ << YAML::Newline << YAML::Comment(std::string(key) + ": " + it->second);
        return;
      }
      out_ << YAML::Key << key << YAML::Value;
      write(*value, path);
    } else {
      out_ << YAML::Key << key << YAML::Value;
      write(value, path);
    }
    if (notes_)
      if (auto it = notes_->find(path); it != notes_->end()) out_ << YAML::Comment(it->second);
  }

 private:
  template <class T>
  void write(const T& value, const std::string& path) {
    if constexpr (std::is_same_v<T, std::string>) {
      out_ << value;
    } else if constexpr (std::is_same_v<T, bool>) {
      out_ << value;
    } else if constexpr (std::is_enum_v<T>) {
      out_ << enum_name(value);
    } else if constexpr (std::is_arithmetic_v<T>) {
      out_ << (std::is_integral_v<T> ? std::to_string(value) : format_number(static_cast<double>(value)));
    } else if constexpr (is_quantity_v<T>) {
      out_ << format_quantity(value);
    } else if constexpr (std::is_same_v<T, Partition>) {
      if (value.kind == PartitionKind::Dirichlet) {
        out_ << YAML::Flow << YAML::BeginMap << YAML::Key << "dirichlet" << YAML::Value << format_number(value.alpha)
             << YAML::EndMap;
      } else {
        out_ << partition_kinds().at(static_cast<size_t>(value.kind));
      }
    } else if constexpr (IsVector<T>::value) {
      using Item = typename T::value_type;
      bool flat = std::is_arithmetic_v<Item> || std::is_same_v<Item, std::string> || is_quantity_v<Item> ||
                  IsNumberList<Item>::value;
      if (flat || value.empty()) out_ << YAML::Flow;
      out_ << YAML::BeginSeq;
      for (size_t i = 0; i < value.size(); ++i) write(value[i], path + "." + std::to_string(i));
      out_ << YAML::EndSeq;
    } else {
      out_ << YAML::BeginMap;
      FieldWriter sub(out_, notes_, path + ".");
      const_cast<T&>(value).fields(sub);
      out_ << YAML::EndMap;
    }
  }

  YAML::Emitter& out_;
  const std::map<std::string, std::string>* notes_;
  std::string prefix_;
};

}  // namespace testbed
