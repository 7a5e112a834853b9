// DeAR's scenario keys (dear.cpp).
#pragma once

#include <cstdint>

#include "training/algorithms/option_fields.h"

namespace testbed {

struct DearOptions {
  // The reference's fusion threshold (MiB of fp32 gradients): a group takes modules in forward
  // order while it is empty or stays under it.
  double bucket_mb = 25;

  template <class V>
  void fields(V& v) {
    v.field("bucket_mb", bucket_mb, Range{0, 1e6, true});
  }
  // A reduce-scatter and an all-gather plan per group: at most a group per tensor.
  int64_t plans_held(int parameter_tensors, int, int) const { return 2 * static_cast<int64_t>(parameter_tensors); }
  bool operator==(const DearOptions&) const = default;
};

}  // namespace testbed
