// Turns the scenario's workload, optimizer and algorithm sections into training objects.
#pragma once

#include <memory>
#include <vector>

#include "sim/scenario.h"
#include "training/algorithm.h"
#include "training/dataset.h"
#include "training/models.h"
#include "training/replica.h"

namespace testbed {

// Process-wide compute settings: LibTorch intra-op threads from the scenario (0: all
// cores; Debian's build starts with one), OpenBLAS kept single-threaded, allocator tuned.
void configure_host(const Scenario& scenario);

Dataset load_dataset(const Scenario& scenario);

// A freshly initialised model; every call with the same scenario gives the same weights.
std::shared_ptr<Model> make_model(const Scenario& scenario, const Dataset& data);

OptimizerConfig optimizer_config(const Scenario& scenario);

// Each node's shard sampler, seeded from the scenario.
std::vector<ShardSampler> make_samplers(const Scenario& scenario, const Dataset& data);

std::unique_ptr<Algorithm> make_algorithm(const Scenario& scenario);

}  // namespace testbed
