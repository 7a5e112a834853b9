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
  // Wait-free backpropagation (WFBP, as the scheduling papers' baseline runs it, and Horovod's
  // hooks submit): one all-reduce per gradient tensor, each leaving as its gradient exists, no
  // buckets and no 1 MiB first bucket. bucket_mb is then not read.
  bool per_tensor = false;

  template <class V>
  void fields(V& v) {
    v.field("bucket_mb", bucket_mb, Range{0, 1e6, true});
    v.field("overlap", overlap);
    v.field("per_tensor", per_tensor);
  }
  std::optional<OptionError> check() const {
    if (per_tensor && !overlap)
      return OptionError{{"per_tensor", "overlap"},
                         "per_tensor all-reduces each gradient during backward: it needs overlap"};
    if (per_tensor && bucket_mb != DdpOptions{}.bucket_mb)
      return OptionError{{"bucket_mb", "per_tensor"},
                         "per_tensor makes a bucket of each tensor: bucket_mb has no effect"};
    return std::nullopt;
  }
  // Buckets of different sizes each need their plan: at most one per tensor.
  int64_t plans_held(int parameter_tensors, int, int) const { return overlap ? parameter_tensors : 1; }
  bool operator==(const DdpOptions&) const = default;
};

}  // namespace testbed
