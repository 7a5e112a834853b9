// The run's collective choices as the options one op's plan is built with.
#include "comm/collective_options.h"

#include <stdexcept>

namespace testbed {

CollectiveOptions collective_options(const CollectiveChoice& choice, const std::vector<int>& participants) {
  CollectiveOptions o;
  o.algorithm = choice.algorithm;
  o.slices = choice.slices;
  o.server = 0;
  for (size_t r = 0; r < participants.size(); ++r) {
    if (participants[r] == choice.server_node) o.server = static_cast<int>(r);
  }
  if (o.algorithm == CollectiveAlgorithm::Hierarchical) {
    if (choice.node_cluster.empty())
      throw std::invalid_argument("the hierarchical collective needs clusters (collective.clusters)");
    for (int node : participants) o.cluster_of.push_back(choice.node_cluster.at(node));
  }
  return o;
}

}  // namespace testbed
