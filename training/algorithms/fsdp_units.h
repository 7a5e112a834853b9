// FSDP's units (docs/replica_groups.md#fsdp): which module each parameter's flat parameter belongs
// to, by a name pattern, as an auto-wrap policy picks modules. Without LibTorch: the scenario
// rules check a pattern against the model's names with it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace testbed {

// The unit of the parameter named `name` under `pattern`, which ends in its one '*': the name's
// dotted prefix that is the pattern with '*' standing for characters other than '.', none or
// more ("layers.*": "layers.12" holds "layers.12.attention.wq.weight"; "layer*": "layer2" holds
// "layer2.0.conv1.weight"; "fc1*": "fc1" holds "fc1.weight"). Empty when the pattern matches no
// prefix: the root unit, which holds everything no unit holds (embeddings, final norm, head).
inline std::string fsdp_unit(const std::string& name, const std::string& pattern) {
  const std::string head = pattern.substr(0, pattern.size() - 1);
  if (name.compare(0, head.size(), head) != 0) return "";
  size_t end = head.size();
  while (end < name.size() && name[end] != '.') ++end;
  return end > 0 && name[end - 1] != '.' ? name.substr(0, end) : "";
}

// Whether `pattern` is one: non-empty, its only '*' the last character.
inline bool fsdp_pattern_valid(const std::string& pattern) {
  return !pattern.empty() && pattern.find('*') == pattern.size() - 1;
}

// Each tensor's unit as an index, units numbered in forward order (by their first layer in
// `tensor_layers`, each tensor's layer in forward order), -1 for the root unit.
inline std::vector<int> fsdp_unit_indices(const std::vector<std::string>& names, const std::vector<int>& tensor_layers,
                                          const std::string& pattern) {
  std::map<std::string, int> first_layer;
  for (size_t t = 0; t < names.size(); ++t) {
    const std::string unit = fsdp_unit(names[t], pattern);
    if (unit.empty()) continue;
    const int layer = tensor_layers.empty() ? static_cast<int>(t) : tensor_layers[t];
    auto [it, fresh] = first_layer.emplace(unit, layer);
    if (!fresh && layer < it->second) it->second = layer;
  }
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [unit, layer] : first_layer) order.push_back({layer, unit});
  std::sort(order.begin(), order.end());
  std::map<std::string, int> index;
  for (size_t u = 0; u < order.size(); ++u) index[order[u].second] = static_cast<int>(u);
  std::vector<int> units;
  for (const std::string& name : names) {
    const std::string unit = fsdp_unit(name, pattern);
    units.push_back(unit.empty() ? -1 : index.at(unit));
  }
  return units;
}

// The pattern a model's transformer blocks or ResNet stages have, "" when it has none to offer.
inline std::string default_fsdp_unit(const std::string& model) {
  if (model == "llama" || model == "bert") return "layers.*";
  if (model == "gpt") return "blocks.*";
  if (model == "vit_b_16") return "encoder.layers.*";
  if (model.rfind("resnet", 0) == 0) return "layer*";
  return "";
}

}  // namespace testbed
