// DDP's scenario keys (ddp.cpp).
#pragma once

#include <cstdint>
#include <optional>

#include "training/algorithms/option_fields.h"

namespace testbed {

struct DdpOptions {
  double bucket_mb = 25;  // PyTorch's bucket_cap_mb (MiB); the first bucket is capped at 1 MiB
  // Each bucket's all-reduce starts during backward once its gradients exist, and the update
  // waits for the last (PyTorch DDP). false: one all-reduce of every gradient after the step's
  // compute, update included.
  bool overlap = true;

  template <class V>
  void fields(V& v) {
    v.field("bucket_mb", bucket_mb, Range{0, 1e6, true});
    v.field("overlap", overlap);
  }
  // Buckets of different sizes each need their plan: at most one per tensor.
  int64_t plans_held(int parameter_tensors, int, int) const { return overlap ? parameter_tensors : 1; }
  bool operator==(const DdpOptions&) const = default;
};

}  // namespace testbed
