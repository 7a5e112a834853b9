// The scenario's `collective:` section as the options a collective plan is built with, in the
// rank space of one op's participants. Shared by the engine and netbench; no LibTorch.
#pragma once

#include <vector>

#include "netmodels/collectives/collectives.h"
#include "sim/config/scenario.h"

namespace testbed {

// Each rank's cluster from `node_cluster` (node_clusters(scenario), computed once), and the
// server's rank, or rank 0 when the server node does not take part.
CollectiveOptions collective_options(const Scenario& scenario, const std::vector<int>& node_cluster,
                                     const std::vector<int>& participants);

}  // namespace testbed
