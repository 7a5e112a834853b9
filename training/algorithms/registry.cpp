// The algorithm registry: a name, the scenario keys it reads, and its factory.
#include "training/algorithms/registry.h"

#include "training/algorithms/ddp.h"

namespace testbed {

const std::vector<AlgorithmEntry>& algorithm_registry() {
  static const std::vector<AlgorithmEntry> entries = {
      {"ddp", {}, [](const AlgorithmSettings& s) { return std::make_unique<Ddp>(s.nodes, s.batch_size); }},
      {"lofi", {}, make_lofi},
      {"fedavg", {"H", "fraction"}, make_fedavg},
      {"diloco", {"H", "outer_lr", "outer_momentum", "outer_dtype"}, make_diloco},
      {"streaming_diloco",
       {"H", "outer_lr", "outer_momentum", "outer_dtype", "fragments", "tau", "alpha"},
       make_streaming_diloco},
      {"sparta", {"p", "selection", "exchange", "interval", "delay"}, make_sparta},
      {"sparta_diloco",
       {"p", "selection", "exchange", "interval", "delay", "H", "outer_lr", "outer_momentum", "outer_dtype"},
       make_sparta_diloco},
      {"demo", {"beta", "chunk", "k", "sign"}, make_demo},
      {"gossip", {}, make_gossip},
  };
  return entries;
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> out;
  for (const auto& e : algorithm_registry()) out.push_back(e.name);
  return out;
}

const AlgorithmEntry* find_algorithm(const std::string& name) {
  for (const auto& e : algorithm_registry()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

}  // namespace testbed
