// MG-WFBP's buckets (Shi et al., "MG-WFBP: Merging Gradients Wisely for Efficient Communication
// in Distributed Deep Learning", TPDS 2021; the rule of its reference code, HKBU-HPML/MG-WFBP's
// distributed_optimizer.py): from each tensor's backward time and an all-reduce's alpha-beta
// cost, merge a gradient into the next one whenever that is expected to finish no later.
#pragma once

#include <cstdint>
#include <vector>

#include "training/algorithms/gradient_buckets.h"

namespace testbed {

struct MergeTimes {
  // Per trainable tensor (registration order): seconds from the step's start to the end of its
  // layer's backward pass, when its gradient exists (the reference profiles them once).
  std::vector<double> ready_s;
  // An all-reduce of m bytes over the fleet takes alpha + beta m (the reference's per-cluster
  // table; here the fleet's alpha-beta fit, comm/alone_time.h).
  double alpha_s = 0;
  double beta_s_per_byte = 0;
};

// Tensors in gradient-ready order (gradient_buckets's: layers from the last, a layer's tensors
// in reverse registration order), each all-reduce queued behind the previous on one stream.
// Visiting them in that order, tensor q merges into q + 1 (its all-reduce deferred to go with
// q + 1's) when q + 1's gradient is ready before q's all-reduce would end and either q's would
// not have started by then or would have started less than alpha before. After each merge the
// bucket's cost and every start are recomputed. A bucket whose tensors hold fewer than
// `merge_below` elements merges on regardless (0: never; DeAR's copy of the rule, the baseline
// in its paper, uses 8192).
std::vector<GradientBucket> merged_gradient_buckets(const std::vector<int64_t>& tensor_sizes,
                                                    const std::vector<int>& tensor_layers, const MergeTimes& times,
                                                    double element_bytes = 4, int64_t merge_below = 0);

}  // namespace testbed
