// Loading a scenario: strict reading through Scenario::fields (yaml_reader.h), then the
// domain rules (scenario_rules.h); writing the resolved scenario back through the same list.
#include "sim/config/scenario_loader.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/config/scenario_notes.h"
#include "sim/config/scenario_rules.h"
#include "sim/config/yaml_reader.h"

namespace testbed {

namespace {

// Lists every dotted key of a section (not inside lists), for the reader's wrong-level hints.
class KeyLister {
 public:
  explicit KeyLister(std::vector<std::string>& keys, std::string prefix = "")
      : keys_(keys), prefix_(std::move(prefix)) {}
  template <class T, class... Check>
  void field(const char* key, T& value, const Check&...) {
    const std::string path = prefix_ + key;
    keys_.push_back(path);
    if constexpr (requires(KeyLister & l) { value.fields(l); }) {
      KeyLister sub(keys_, path + ".");
      value.fields(sub);
    }
  }

 private:
  std::vector<std::string>& keys_;
  std::string prefix_;
};

}  // namespace

// Every key a scenario may hold, every algorithm's keys included.
const std::vector<std::string>& every_scenario_key() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    KeyLister lister(out);
    Scenario().fields(lister);
    for (const auto& name : algorithm_names()) {
      AlgorithmOptions options = find_algorithm(name)->defaults;
      KeyLister algorithm(out, "algorithm.");
      std::visit([&algorithm](auto& o) { o.fields(algorithm); }, options);
    }
    return out;
  }();
  return keys;
}

Scenario parse_scenario(const std::string& yaml_text, const std::string& origin,
                        const std::vector<std::string>& overrides) {
  YAML::Node root = read_root_map(yaml_text, origin, "scenario");
  Origins origins(origin, apply_overrides(root, overrides));
  Scenario scenario;
  FieldReader reader(root, "", origins, &every_scenario_key());
  scenario.fields(reader);
  reader.finish();
  scenario.source = origin;
  scenario.locations = origins.all();
  resolve_scenario(scenario, origins);
  check_scenario(scenario, origins);
  scenario.warnings = scenario_warnings(scenario, origins);
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
  const auto notes = resolved_notes(scenario);
  FieldWriter writer(out, &notes);
  out << YAML::BeginMap;
  const_cast<Scenario&>(scenario).fields(writer);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace testbed
