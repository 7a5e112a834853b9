// The task the reference tests train beside the engine: the synthetic teacher on
// make_mlp(16, 32, 4), i.e. 16-64-32-4 (d = 3300 in six tensors: 1024, 64, 2048, 32, 128, 4),
// so a dozen steps of every node take well under a second.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/scenario_loader.h"

namespace testbed {

inline Scenario reference_scenario(uint64_t seed, int nodes, int steps, const std::string& topology,
                                   const std::string& optimizer, const std::string& algorithm,
                                   const std::vector<std::string>& sets = {}) {
  return parse_scenario(R"(
name: reference
seed: )" + std::to_string(seed) +
                            R"(
nodes: )" + std::to_string(nodes) +
                            R"(
threads: 1
topology: )" + topology + R"(
workload:
  model: mlp
  dataset: synthetic
  synthetic: {inputs: 16, outputs: 4, hidden: 32, train_samples: 2000, test_samples: 200}
  batch_size: 32
  steps: )" + std::to_string(steps) +
                            R"(
  eval_every: 1000
  eval_samples: 100
optimizer: )" + optimizer + R"(
compute: {model: fixed, step_time: 10ms}
algorithm: )" + algorithm + "\n",
                        "reference", sets);
}

}  // namespace testbed
