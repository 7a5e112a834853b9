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
  // MG-WFBP's merged-gradient buckets (merged_gradient_buckets.h): buckets chosen once, before
  // the run, from each tensor's backward time and the fleet's all-reduce alpha and beta, as its
  // reference code does; bucket_mb is then not read. merge_below: a bucket of fewer elements
  // merges on regardless (0 as in Shi et al.'s code; DeAR's copy, its paper's baseline, 8192).
  bool mgwfbp = false;
  int merge_below = 0;

  template <class V>
  void fields(V& v) {
    v.field("bucket_mb", bucket_mb, Range{0, 1e6, true});
    v.field("overlap", overlap);
    v.field("per_tensor", per_tensor);
    v.field("mgwfbp", mgwfbp);
    v.field("merge_below", merge_below, Range{0, 1 << 30});
  }
  std::optional<OptionError> check() const {
    if (per_tensor && !overlap)
      return OptionError{{"per_tensor", "overlap"},
                         "per_tensor all-reduces each gradient during backward: it needs overlap"};
    if (per_tensor && bucket_mb != DdpOptions{}.bucket_mb)
      return OptionError{{"bucket_mb", "per_tensor"},
                         "per_tensor makes a bucket of each tensor: bucket_mb has no effect"};
    if (mgwfbp && (per_tensor || !overlap))
      return OptionError{{"mgwfbp", per_tensor ? "per_tensor" : "overlap"},
                         "mgwfbp merges gradients into buckets that leave during backward: it needs overlap and "
                         "no per_tensor"};
    if (mgwfbp && bucket_mb != DdpOptions{}.bucket_mb)
      return OptionError{{"bucket_mb", "mgwfbp"}, "mgwfbp chooses its buckets by time: bucket_mb has no effect"};
    if (merge_below != 0 && !mgwfbp)
      return OptionError{{"merge_below", "mgwfbp"}, "merge_below is MG-WFBP's: it needs mgwfbp: true"};
    return std::nullopt;
  }
  // Buckets of different sizes each need their plan: at most one per tensor.
  int64_t plans_held(int parameter_tensors, int, int) const { return overlap ? parameter_tensors : 1; }
  bool operator==(const DdpOptions&) const = default;
};

}  // namespace testbed
