// ACP-SGD's scenario keys (acpsgd.cpp).
#pragma once

#include <cstdint>

#include "training/algorithms/option_fields.h"

namespace testbed {

struct AcpSgdOptions {
  int rank = 4;           // of each matrix's factors (at most its rows and columns)
  double bucket_mb = 25;  // fusion threshold of the gradients; each step's factors are fused in proportion

  template <class V>
  void fields(V& v) {
    v.field("rank", rank, Range{1, 1 << 16});
    v.field("bucket_mb", bucket_mb, Range{0, 1e6, true});
  }
  // Buckets of P's and of Q's sizes: at most one plan per tensor for each.
  int64_t plans_held(int parameter_tensors, int, int) const { return 2 * static_cast<int64_t>(parameter_tensors); }
  bool operator==(const AcpSgdOptions&) const = default;
};

}  // namespace testbed
