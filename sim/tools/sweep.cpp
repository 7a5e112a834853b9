// Sweep files: every key is checked with its position, so a sweep fails like a scenario
// does (file:line:col, exit 2) before any run starts or any file is written.
#include "sim/tools/sweep.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/config/scenario_loader.h"

namespace testbed {
namespace {

namespace fs = std::filesystem;

std::string at(const std::string& origin, const YAML::Mark& m) {
  // yaml-cpp gives -1 for nodes without a position (such as a missing key).
  if (m.line < 0) return origin + ":1:1";
  return origin + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

[[noreturn]] void fail(const std::string& where, const std::string& message) {
  throw ScenarioError(where + ": " + message);
}

// A --set value: scalars as written, lists and maps in YAML flow style, which the
// scenario loader parses back into the same node.
std::string value_text(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

struct Axis {
  std::string key, key_where;
  std::vector<std::string> texts, wheres;
};

// `grid:` or `zip:`: a map of dotted key -> non-empty list of values.
std::vector<Axis> read_axes(const YAML::Node& node, const std::string& section, const std::string& origin,
                            std::vector<std::string>& all_keys) {
  std::vector<Axis> axes;
  if (!node.IsMap()) fail(at(origin, node.Mark()), "'" + section + "' is a map of dotted keys to lists of values");
  for (auto it = node.begin(); it != node.end(); ++it) {
    Axis axis;
    axis.key = it->first.Scalar();
    axis.key_where = at(origin, it->first.Mark());
    if (!it->first.IsScalar() || axis.key.empty()) fail(axis.key_where, "a swept key is a dotted scenario key");
    if (std::find(all_keys.begin(), all_keys.end(), axis.key) != all_keys.end()) {
      fail(axis.key_where, "'" + axis.key + "' is swept twice (keys are unique across grid and zip)");
    }
    all_keys.push_back(axis.key);
    // A copy (a Node is a handle): `it->second` belongs to a temporary the iterator's
    // operator-> returns, so a reference to it dangles (found by fuzz_sweep under ASan).
    const YAML::Node list = it->second;
    if (!list.IsSequence()) {
      fail(at(origin, list.Mark()), "'" + section + "." + axis.key + "' must be a list of values, such as [1, 2]");
    }
    if (list.size() == 0) fail(at(origin, list.Mark()), "'" + section + "." + axis.key + "' has no values");
    for (size_t i = 0; i < list.size(); ++i) {
      std::string where = at(origin, list[i].Mark());
      if (!list[i].IsDefined() || list[i].IsNull()) fail(where, "an empty value in '" + axis.key + "'");
      axis.texts.push_back(value_text(list[i]));
      axis.wheres.push_back(where);
    }
    axes.push_back(std::move(axis));
  }
  return axes;
}

// Keeps letters, digits and ._+- ; commas and '=' only separate the parts of a name, so a
// value's own ("[noise, invert]") become '_' as well.
std::string sanitise_part(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    bool safe = std::isalnum(static_cast<unsigned char>(c)) || std::string("._+-").find(c) != std::string::npos;
    if (!safe) c = '_';
  }
  return out;
}

std::string shorten(const std::string& text) {
  std::string out = text;
  // File names are limited to 255 bytes: keep the start readable, a hash keeps it unique.
  if (out.size() > 200) {
    uint32_t h = 2166136261u;
    for (unsigned char c : text) h = (h ^ c) * 16777619u;
    char tail[16];
    std::snprintf(tail, sizeof tail, "~%08x", h);
    out = out.substr(0, 190) + tail;
  }
  return out;
}

std::vector<std::string> split_dots(const std::string& key) {
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
  return parts;
}

std::string suffix(const std::vector<std::string>& parts, size_t n) {
  std::string out;
  for (size_t i = parts.size() - std::min(n, parts.size()); i < parts.size(); ++i) {
    out += (out.empty() ? "" : ".") + parts[i];
  }
  return out;
}

// The shortest dotted suffix of `key` that no other key ends with.
std::string label(const std::string& key, const std::vector<std::string>& keys) {
  auto parts = split_dots(key);
  for (size_t n = 1; n < parts.size(); ++n) {
    std::string s = suffix(parts, n);
    bool unique = std::none_of(keys.begin(), keys.end(), [&](const std::string& other) {
      return other != key && suffix(split_dots(other), n) == s;
    });
    if (unique) return s;
  }
  return key;
}

// A value as a name reads: a list's items joined by +, a map's name first and then its other
// entries as key-value, joined by + ({name: diloco, H: 100} -> diloco+H-100); a scalar as it is.
std::string readable(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  std::string out;
  auto add = [&out](const std::string& part) { out += (out.empty() ? "" : "+") + part; };
  if (n.IsSequence()) {
    for (const auto& item : n) add(readable(item));
  } else if (n.IsMap()) {
    if (n["name"] && n["name"].IsScalar()) add(n["name"].Scalar());
    for (const auto& entry : n) {
      const std::string key = entry.first.Scalar();
      if (key != "name") add(key + "-" + readable(entry.second));
    }
  }
  return out;
}

std::string readable(const std::string& text) {
  try {
    return readable(YAML::Load(text));
  } catch (const YAML::Exception&) {
    return text;
  }
}

}  // namespace

std::string run_name(const std::vector<std::string>& keys, const std::vector<SweptValue>& values) {
  std::string name;
  for (const auto& v : values) {
    name += (name.empty() ? "" : ",") + sanitise_part(label(v.key, keys)) + "=" + sanitise_part(readable(v.text));
  }
  return shorten(name);
}

Sweep parse_sweep(const std::string& yaml_text, const std::string& origin, const std::string& dir) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    fail(at(origin, e.mark), "invalid YAML: " + e.msg);
  }
  if (!root.IsDefined() || !root.IsMap())
    fail(origin + ":1:1", "a sweep file is a map with keys base, grid, zip, repeats, out");

  const std::vector<std::string> known = {"base", "grid", "zip", "repeats", "out"};
  std::map<std::string, YAML::Node> keys;
  std::map<std::string, std::string> key_where;
  for (auto it = root.begin(); it != root.end(); ++it) {
    std::string key = it->first.Scalar();
    std::string where = at(origin, it->first.Mark());
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      fail(where, "unknown key '" + key + "' in a sweep file" + did_you_mean(key, known) +
                      "; valid keys: base, grid, zip, repeats, out");
    }
    if (keys.count(key)) fail(where, "duplicate key '" + key + "'");
    if (it->second.IsNull()) fail(where, "'" + key + "' has no value");
    keys[key] = it->second;
    key_where[key] = where;
  }
  for (const char* required : {"base", "out"}) {
    if (!keys.count(required)) fail(origin + ":1:1", std::string("a sweep file needs '") + required + "'");
  }
  auto path_of = [&](const std::string& key) {
    const YAML::Node& n = keys[key];
    if (!n.IsScalar() || n.Scalar().empty()) fail(at(origin, n.Mark()), "'" + key + "' is a path");
    fs::path p(n.Scalar());
    return (p.is_absolute() ? p : fs::path(dir) / p).lexically_normal().string();
  };

  Sweep sweep;
  sweep.file = origin;
  sweep.base = path_of("base");
  sweep.out = path_of("out");
  std::string repeats_where = origin + ":1:1";
  if (keys.count("repeats")) {
    const YAML::Node& n = keys["repeats"];
    repeats_where = at(origin, n.Mark());
    int value = 0;
    if (!n.IsScalar() || !YAML::convert<int>::decode(n, value) || value < 1) {
      fail(repeats_where, "'repeats' is a whole number >= 1, got '" + value_text(n) + "'");
    }
    sweep.repeats = value;
  }
  if (!fs::is_regular_file(sweep.base)) {
    fail(at(origin, keys["base"].Mark()), "base scenario '" + sweep.base + "' not found");
  }

  std::vector<std::string> swept;
  std::vector<Axis> grid, zip;
  if (keys.count("grid")) grid = read_axes(keys["grid"], "grid", origin, swept);
  if (keys.count("zip")) zip = read_axes(keys["zip"], "zip", origin, swept);
  size_t zip_length = zip.empty() ? 1 : zip[0].texts.size();
  for (const auto& axis : zip) {
    if (axis.texts.size() != zip_length) {
      fail(axis.key_where, "zip lists must have equal lengths: '" + axis.key + "' has " +
                               std::to_string(axis.texts.size()) + " values, '" + zip[0].key + "' has " +
                               std::to_string(zip_length));
    }
  }
  bool seed_swept = std::find(swept.begin(), swept.end(), "seed") != swept.end();
  if (seed_swept && sweep.repeats > 1) fail(repeats_where, "'repeats' varies the seed, which the sweep already sets");
  // The runner's share of the cores is only a default: a base scenario that says its threads
  // keeps them, as does a sweep of threads.
  sweep.sets_threads = std::find(swept.begin(), swept.end(), "threads") != swept.end();
  try {
    const YAML::Node base = YAML::LoadFile(sweep.base);
    sweep.sets_threads = sweep.sets_threads || (base.IsMap() && base["threads"].IsDefined());
  } catch (const YAML::Exception&) {
    // load_scenario below reports it, at its position
  }
  // Base errors are the base file's own (file:line:col there); the sweep needs its seed.
  uint64_t base_seed = load_scenario(sweep.base).seed;
  sweep.keys = swept;
  if (!seed_swept) sweep.keys.push_back("seed");

  size_t grid_count = 1;
  for (const auto& axis : grid) grid_count *= axis.texts.size();
  size_t total = grid_count * zip_length * sweep.repeats;
  std::map<std::string, int> names;
  for (size_t index = 0; index < total; ++index) {
    // Mixed radix: the first grid key varies slowest, the repeat fastest.
    size_t rest = index;
    int repeat = static_cast<int>(rest % sweep.repeats);
    rest /= sweep.repeats;
    size_t zip_index = rest % zip_length;
    rest /= zip_length;
    std::vector<size_t> digits(grid.size());
    for (size_t g = grid.size(); g-- > 0;) {
      digits[g] = rest % grid[g].texts.size();
      rest /= grid[g].texts.size();
    }
    SweepRun run;
    run.index = static_cast<int>(index);
    for (size_t g = 0; g < grid.size(); ++g) {
      run.values.push_back({grid[g].key, grid[g].texts[digits[g]], grid[g].key_where, grid[g].wheres[digits[g]]});
    }
    for (const auto& axis : zip) {
      run.values.push_back({axis.key, axis.texts[zip_index], axis.key_where, axis.wheres[zip_index]});
    }
    if (!seed_swept) {
      run.values.push_back({"seed", std::to_string(base_seed + repeat), repeats_where, repeats_where});
    }
    run.name = run_name(sweep.keys, run.values);
    if (auto it = names.find(run.name); it != names.end()) {
      fail(run.values.front().value_where, "runs " + std::to_string(it->second) + " and " + std::to_string(index) +
                                               " would both be named '" + run.name + "'");
    }
    names[run.name] = static_cast<int>(index);
    sweep.runs.push_back(std::move(run));
  }
  return sweep;
}

bool is_sweep_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return false;
  try {
    const YAML::Node root = YAML::Load(in);
    return root.IsMap() && root["base"].IsDefined();
  } catch (const YAML::Exception&) {
    return false;  // the scenario reader reports it, with its position
  }
}

Sweep load_sweep(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw ScenarioError(path + ":1:1: is a directory, not a sweep file");
  std::ifstream in(path);
  if (!in) throw ScenarioError(path + ":1:1: cannot open sweep file");
  std::stringstream text;
  text << in.rdbuf();
  return parse_sweep(text.str(), path, fs::path(path).parent_path().string());
}

std::vector<std::string> run_overrides(const Sweep& sweep, const SweepRun& run, int threads) {
  std::vector<std::string> sets;
  for (const auto& v : run.values) sets.push_back(v.key + "=" + v.text);
  if (threads > 0 && !sweep.sets_threads) sets.push_back("threads=" + std::to_string(threads));
  return sets;
}

void validate_sweep(const Sweep& sweep, int threads) {
  for (const auto& run : sweep.runs) {
    try {
      load_scenario(sweep.base, run_overrides(sweep, run, threads));
    } catch (const ScenarioError& e) {
      const std::string message = e.what();
      for (const auto& v : run.values) {
        // The loader names an override as "--set key=value:line:col: message".
        std::string prefix = "--set " + v.key + "=" + v.text + ":";
        if (message.rfind(prefix, 0) != 0) continue;
        std::string rest = message.substr(prefix.size());
        int line = 0, col = 0, used = 0;
        if (std::sscanf(rest.c_str(), "%d:%d: %n", &line, &col, &used) < 2 || used == 0) break;
        // A column inside "key=" blames the key (unknown key); otherwise the value.
        bool on_key = col <= static_cast<int>(v.key.size()) + 1;
        fail(on_key ? v.key_where : v.value_where, rest.substr(used) + " (run " + run.name + ")");
      }
      // Blamed on the base file: the combination is at fault; point at its first swept value.
      const SweptValue* first = &run.values.front();
      for (const auto& v : run.values) {
        if (v.key != "seed") {
          first = &v;
          break;
        }
      }
      fail(first->value_where, "run " + run.name + ": " + message);
    }
  }
}

}  // namespace testbed
