// The rules a scenario must follow beyond each key's own type and range: keys that depend on
// each other, on the backend, on the topology, on the model or on files.
#pragma once

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

}  // namespace testbed
