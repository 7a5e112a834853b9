// Replicas larger than one GPU (docs/replica_groups.md): the scenario's nodes are GPUs, taken G
// at a time as groups that train one replica together; an algorithm built over the groups runs
// across them, and this wraps it with what the parallelism inside a group sends.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "training/algorithm.h"
#include "training/algorithms/algorithm_settings.h"

namespace testbed {

// `across`: the algorithm built over the groups (its node g is group g), one instance for each
// member rank of a group (G of them: ring r of the groups' members r keeps its own state).
// `gpus`: the GPUs' settings (nodes, tensors, group keys).
std::unique_ptr<Algorithm> make_replica_groups(std::vector<std::unique_ptr<Algorithm>> across,
                                               const AlgorithmSettings& gpus);

// Group member `rank`'s slice of a vector of `elements` split over `gpus` as evenly as whole
// elements allow (the first elements % gpus members hold one more).
int64_t group_slice(int64_t elements, int gpus, int rank);

}  // namespace testbed
