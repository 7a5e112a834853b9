// Top-k SGD's scenario keys (topk.cpp).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "training/algorithms/option_fields.h"

namespace testbed {

// What one top-k is taken over: each tensor on its own (Stich et al.'s and most libraries'
// per-layer form), or the whole model's gradient as one buffer (Shi et al.'s TopK-SGD,
// hclhkbu/gtopkssgd: its allreducer merges every gradient into one buffer first).
enum class TopkScope { Tensor, Model };

template <>
struct EnumNames<TopkScope> {
  static const std::vector<std::pair<TopkScope, std::string>>& all() {
    static const std::vector<std::pair<TopkScope, std::string>> names = {{TopkScope::Tensor, "tensor"},
                                                                         {TopkScope::Model, "model"}};
    return names;
  }
};

struct TopkOptions {
  double ratio = 0.001;  // of the entries sent a step: k = max(1, floor(ratio x n)), n a tensor's or the model's
  TopkScope scope = TopkScope::Tensor;
  // Shi et al.'s code runs its first epoch at a higher density (0.004) before `ratio`: the
  // first warmup_steps steps use warmup_ratio (0: no warm-up).
  double warmup_ratio = 0;
  int warmup_steps = 0;

  template <class V>
  void fields(V& v) {
    v.field("ratio", ratio, Range{0, 1, true});
    v.field("scope", scope);
    v.field("warmup_ratio", warmup_ratio, Range{0, 1});
    v.field("warmup_steps", warmup_steps, Range{0, 1e9});
  }
  std::optional<OptionError> check() const {
    if ((warmup_ratio > 0) != (warmup_steps > 0))
      return OptionError{{"warmup_steps", "warmup_ratio"},
                         "a warm-up needs both warmup_ratio (> 0) and warmup_steps (> 0; Shi et al.: one epoch)"};
    return std::nullopt;
  }
  // The ratio of step `step`.
  double ratio_at(int step) const { return step < warmup_steps ? warmup_ratio : ratio; }
  bool operator==(const TopkOptions&) const = default;
};

}  // namespace testbed
