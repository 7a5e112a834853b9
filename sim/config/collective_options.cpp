// The scenario's `collective:` section as the options a collective plan is built with.
#include "sim/config/collective_options.h"

#include <stdexcept>

namespace testbed {

CollectiveOptions collective_options(const Scenario& scenario, const std::vector<int>& node_cluster,
                                     const std::vector<int>& participants) {
  CollectiveOptions o;
  o.algorithm = collective_algorithm(scenario.collective.algorithm);
  o.slices = scenario.collective.slices;
  o.server = 0;
  for (size_t r = 0; r < participants.size(); ++r) {
    if (participants[r] == scenario.collective.server) o.server = static_cast<int>(r);
  }
  if (o.algorithm == CollectiveAlgorithm::Hierarchical) {
    if (node_cluster.empty())
      throw std::invalid_argument("the hierarchical collective needs clusters (collective.clusters)");
    for (int node : participants) o.cluster_of.push_back(node_cluster.at(node));
  }
  return o;
}

}  // namespace testbed
