// The rules a scenario must follow beyond each key's own type and range: keys that depend on
// each other, on the backend, on the topology, on the model or on files.
#pragma once

#include <string>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/config/yaml_reader.h"

namespace testbed {

// Fills in what depends on other keys or on where the file lies: the default output path and
// data directory, file paths made absolute (relative to the scenario file, or to the working
// directory for --set). Checks nothing.
void resolve_scenario(Scenario& scenario, const Origins& origins);

// Every cross-key rule, each stated once; throws ScenarioError at the key that broke it.
// Builds the topology and the model once each.
void check_scenario(const Scenario& scenario, const Origins& origins);

// Values a scenario may hold but no network or device has (a 50 s latency, a 100 bit/s link):
// "file:line:col: warning: ..." lines, for the CLI to print; never an error.
std::vector<std::string> scenario_warnings(const Scenario& scenario, const Origins& origins);

}  // namespace testbed
