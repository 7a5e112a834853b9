// Every algorithm by name: its scenario keys and how to build it (one line each in registry.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "training/algorithm.h"
#include "training/algorithms/algorithm_keys.h"
#include "training/replica.h"

namespace testbed {

// What an algorithm may know of the run besides its keys.
struct AlgorithmSettings {
  AlgorithmKeys keys;
  int nodes = 1;
  int batch_size = 1;
  int steps = 1;
  uint64_t seed = 0;                           // the scenario seed; algorithms derive named streams
  std::vector<std::vector<int>> neighbours;    // each node's topology neighbours (hosts)
  std::vector<int64_t> shard_sizes;            // each node's training samples
  std::vector<int64_t> tensor_sizes;           // trainable parameter tensors, in flat order
  OptimizerConfig optimizer;                   // the inner (local) optimizer
};

struct AlgorithmEntry {
  std::string name;
  std::vector<std::string> keys;  // which AlgorithmKeys it reads
  std::function<std::unique_ptr<Algorithm>(const AlgorithmSettings&)> make;
};

const std::vector<AlgorithmEntry>& algorithm_registry();
// Each algorithm's factory, defined in the algorithm's own file.
std::unique_ptr<Algorithm> make_lofi(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_fedavg(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_diloco(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_streaming_diloco(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_sparta(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_sparta_diloco(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_demo(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_gossip(const AlgorithmSettings&);
const AlgorithmEntry* find_algorithm(const std::string& name);  // nullptr when unknown

}  // namespace testbed
