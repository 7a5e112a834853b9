// The keys under `algorithm:` in a scenario, as plain values: no LibTorch, so the scenario and
// the tools that only read it (validate, netbench, topology) need none.
#pragma once

#include <optional>
#include <string>
#include <vector>

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

// Every algorithm's name, in registry order (training/algorithms/registry.cpp).
std::vector<std::string> algorithm_names();

}  // namespace testbed
