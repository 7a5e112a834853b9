// Every algorithm by name: its scenario keys and how to build it (one line each in registry.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "training/algorithm.h"
#include "training/replica.h"

namespace testbed {

// The keys under `algorithm:` in a scenario. Unset keys take the algorithm's default; a key
// the chosen algorithm does not list is a scenario error.
struct AlgorithmKeys {
  std::optional<int> H;                   // steps between outer syncs (fedavg diloco sparta_diloco streaming_diloco)
  std::optional<double> fraction;         // fedavg: share of nodes in each round
  std::optional<double> outer_lr, outer_momentum;  // DiLoCo's outer Nesterov SGD
  std::optional<std::string> outer_dtype; // pseudo-gradient wire format: fp32 bf16 fp16 (fp4 for streaming)
  std::optional<int> fragments, tau;      // streaming_diloco: fragments, overlap steps
  std::optional<double> alpha;            // streaming_diloco: mixing of local and global fragments
  std::optional<double> p;                // sparta: fraction of parameters exchanged
  std::optional<std::string> selection;   // sparta: random shuffled_sequential partitioned layerwise
  std::optional<std::string> exchange;    // sparta: allreduce ring gossip
  std::optional<int> interval, delay;     // sparta: exchange every k steps, apply k steps late
  std::optional<double> beta;             // demo: momentum decay
  std::optional<int> chunk, k;            // demo: DCT chunk size, coefficients kept per chunk
  std::optional<bool> sign;               // demo: sign of the decoded update
};

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
const AlgorithmEntry* find_algorithm(const std::string& name);  // nullptr when unknown

}  // namespace testbed
