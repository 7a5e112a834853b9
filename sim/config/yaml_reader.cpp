// The strict YAML reader's non-template parts: where a value came from, hints, --set.
#include "sim/config/yaml_reader.h"

#include <cctype>

#include <sstream>

namespace testbed {

Location Origins::locate(const std::string& path, const YAML::Mark& mark, bool is_key) const {
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

[[noreturn]] void fail(const Location& loc, const std::string& message) {
  throw ScenarioError(loc.str() + ": " + message);
}

namespace {

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

}  // namespace

std::string nearest_hint(const std::string& word, const std::vector<std::string>& candidates) {
  auto lower = [](std::string text) {
    for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return text;
  };
  // Names are lower case: a candidate that differs only in case is the one meant (A100, PowerSGD).
  for (const auto& c : candidates)
    if (c != word && lower(c) == lower(word)) return " (did you mean '" + c + "'?)";
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    if (c == word) continue;  // never suggest the refused value itself
    size_t d = edit_distance(lower(word), lower(c));
    if (d < best_distance) best_distance = d, best = c;
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

std::string file_name_problem(const std::string& name, size_t max_length) {
  if (name.empty()) return "a name cannot be empty";
  if (name.size() > max_length) {
    return "a name is at most " + std::to_string(max_length) + " bytes (this one has " + std::to_string(name.size()) +
           ")";
  }
  if (name == "." || name == "..") return "'" + name + "' is not a name: it names a folder";
  for (unsigned char c : name) {
    if (c == '/' || c == '\\')
      return "a name cannot hold '" + std::string(1, static_cast<char>(c)) + "': it becomes a file name";
    if (c < 0x20 || c == 0x7f) return "a name cannot hold control characters (byte " + std::to_string(c) + ")";
  }
  return "";
}

YAML::Node read_root_map(const std::string& yaml_text, const std::string& origin, const std::string& document) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    fail({origin, e.mark.line + 1, e.mark.column + 1}, "invalid YAML: " + e.msg);
  }
  // An empty or comment-only file is more likely the wrong file than a wish for every
  // default; `{}` says the latter explicitly.
  if (!root.IsDefined() || root.IsNull())
    fail({origin, 1, 1},
         "the file holds no " + document + ": a " + document + " is a map of keys (write {} for all defaults)");
  if (!root.IsMap())
    fail({origin, root.Mark().line + 1, root.Mark().column + 1}, "a " + document + " is a map of keys");
  return root;
}

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

}  // namespace testbed
