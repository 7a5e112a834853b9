// Loading a scenario: strict reading through Scenario::fields (yaml_reader.h), then the
// domain rules (scenario_rules.h); writing the resolved scenario back through the same list.
#include "sim/config/scenario_loader.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/config/scenario_rules.h"
#include "sim/config/yaml_reader.h"

namespace testbed {

Scenario parse_scenario(const std::string& yaml_text, const std::string& origin,
                        const std::vector<std::string>& overrides) {
  YAML::Node root = read_root_map(yaml_text, origin, "scenario");
  Origins origins(origin, apply_overrides(root, overrides));
  Scenario scenario;
  FieldReader reader(root, "", origins);
  scenario.fields(reader);
  reader.finish();
  scenario.source = origin;
  scenario.locations = origins.all();
  resolve_scenario(scenario, origins);
  check_scenario(scenario, origins);
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
  FieldWriter writer(out);
  out << YAML::BeginMap;
  const_cast<Scenario&>(scenario).fields(writer);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace testbed
