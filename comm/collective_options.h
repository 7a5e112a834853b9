// The collective choices a run makes once (algorithm, pipelining, server, clusters) as the
// options one op's plan is built with, in the rank space of its participants. Plain values:
// sim/config fills a CollectiveChoice from the scenario (collective_choice in scenario.h).
#pragma once

#include <vector>

#include "comm/library_costs.h"
#include "comm/plans/collectives.h"

namespace testbed {

struct CollectiveChoice {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  int slices = 1;                 // ring pipelining
  int server_node = 0;            // parameter_server: the server's node index
  std::vector<int> node_cluster;  // hierarchical: each node's cluster (empty: none)
  LibraryCosts library;           // the library's own time on every collective's messages
};

// The server's rank is rank 0 when the server node does not take part.
CollectiveOptions collective_options(const CollectiveChoice& choice, const std::vector<int>& participants);

}  // namespace testbed
