// Reads a YAML scenario strictly (with --set overrides) and writes the resolved one back.
#pragma once

#include <string>
#include <vector>

#include "sim/config/input_error.h"
#include "sim/config/scenario.h"

namespace testbed {

// A ScenarioError for a check made after loading: "where(key): message".
inline ScenarioError scenario_error(const Scenario& scenario, const std::string& key, const std::string& message) {
  return ScenarioError(scenario.where(key) + ": " + message);
}

// `overrides` are "a.b.c=value" strings, applied on top of the file with the
// same checks. Throws ScenarioError before anything is written anywhere.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});

// Same as load_scenario, from YAML text; `origin` names it in error messages.
Scenario parse_scenario(const std::string& yaml_text, const std::string& origin,
                        const std::vector<std::string>& overrides = {});

// Every dotted key a scenario may hold (sections and their leaves; lists' items not), every
// algorithm's keys included as algorithm.KEY.
const std::vector<std::string>& every_scenario_key();

// " (did you mean 'x'?)" for the candidate nearest to `word`, or "" when none is close.
// Shared with the sweep file reader so both suggest keys the same way.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

// Every key with its resolved value, defaults included; parse_scenario(to_yaml(s)) == s.
std::string to_yaml(const Scenario& scenario);

}  // namespace testbed
