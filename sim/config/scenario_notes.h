// What the keys whose value stands for something else resolve to (0: the preset's, -1: the
// host after the clients', []: the topology's clusters), as comments beside them in to_yaml.
#pragma once

#include <map>
#include <string>

#include "sim/config/scenario.h"

namespace testbed {

// By dotted key path ("compute.peak_flops"): a few words on what that value means here.
std::map<std::string, std::string> resolved_notes(const Scenario& scenario);

}  // namespace testbed
