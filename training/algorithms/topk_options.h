// Top-k SGD's scenario keys (topk.cpp).
#pragma once

#include <optional>

#include "training/algorithms/option_fields.h"

namespace testbed {

struct TopkOptions {
  double ratio = 0.001;  // of each tensor's entries sent a step: max(1, floor(ratio x numel))

  template <class V> void fields(V& v) { v.field("ratio", ratio, Range{0, 1, true}); }
  bool operator==(const TopkOptions&) const = default;
};

}  // namespace testbed
