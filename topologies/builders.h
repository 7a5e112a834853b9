// Builders for the standard topologies, from a small description.
#pragma once

#include <string>
#include <vector>

#include "topologies/topology.h"

namespace testbed {

// A per-link override: the link between two vertices gets other properties.
// A negative field keeps the default.
struct LinkOverride {
  int a = -1, b = -1;
  double bandwidth_bps = -1;
  double latency_s = -1;
  double loss = -1;
};

struct TopologySpec {
  std::string kind = "ring";  // ring line star mesh torus2d tree
  int hosts = 4;
  LinkSpec link;                         // default for every link
  std::vector<LinkOverride> overrides;   // applied after building
  int torus_rows = 0;                    // torus2d: rows (0: the most square factorisation)
};

// The topology kinds build_topology accepts, for error messages and suggestions.
const std::vector<std::string>& topology_kinds();

// Throws std::invalid_argument with a readable message for an unknown kind, an
// impossible size, an override naming a link that does not exist, or a
// disconnected result.
Topology build_topology(const TopologySpec& spec);

// The checks build_topology applies to its result, for graphs from elsewhere
// (files, hand-built): every link's properties are valid and the graph is
// connected. Throws std::invalid_argument otherwise.
void validate_topology(const Topology& topology);

}  // namespace testbed
