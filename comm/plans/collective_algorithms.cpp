// The collective algorithm a scenario names, and the plan it gives for each collective.
#include <stdexcept>
#include <string>

#include "comm/plans/collectives.h"

namespace testbed {

const std::vector<std::string>& collective_algorithm_names() {
  static const std::vector<std::string> names = {
      "ring", "tree", "halving_doubling", "direct", "parameter_server", "hierarchical"};
  return names;
}

CollectiveAlgorithm collective_algorithm(const std::string& name) {
  const auto& names = collective_algorithm_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<CollectiveAlgorithm>(i);
  throw std::invalid_argument("unknown collective algorithm '" + name + "'");
}

CollectivePlan all_reduce(const CollectiveOptions& o, int ranks, int64_t elements, double element_bytes) {
  switch (o.algorithm) {
    case CollectiveAlgorithm::Ring:
      return ring_all_reduce(ranks, elements, element_bytes, o.slices);
    case CollectiveAlgorithm::Tree:
      return tree_all_reduce(ranks, elements, element_bytes);
    case CollectiveAlgorithm::HalvingDoubling:
      return halving_doubling_all_reduce(ranks, elements, element_bytes);
    case CollectiveAlgorithm::Direct:
      return direct_all_reduce(ranks, elements, element_bytes);
    case CollectiveAlgorithm::ParameterServer:
      return parameter_server_all_reduce(ranks, elements, element_bytes, o.server);
    case CollectiveAlgorithm::Hierarchical:
      if (static_cast<int>(o.cluster_of.size()) != ranks)
        throw std::invalid_argument("hierarchical all-reduce: " + std::to_string(o.cluster_of.size()) +
                                    " cluster entries for " + std::to_string(ranks) + " ranks");
      return hierarchical_all_reduce(o.cluster_of, elements, element_bytes, o.slices);
  }
  throw std::logic_error("all_reduce: unknown algorithm");
}

CollectivePlan all_gather(const CollectiveOptions& o, int ranks, int64_t elements, double element_bytes) {
  if (o.algorithm == CollectiveAlgorithm::Direct) return direct_all_gather(ranks, elements, element_bytes);
  return ring_all_gather(ranks, elements, element_bytes, o.slices);
}

CollectivePlan reduce_scatter(const CollectiveOptions& o, int ranks, int64_t elements, double element_bytes) {
  if (o.algorithm == CollectiveAlgorithm::Direct) return direct_reduce_scatter(ranks, elements, element_bytes);
  return ring_reduce_scatter(ranks, elements, element_bytes, o.slices);
}

}  // namespace testbed
