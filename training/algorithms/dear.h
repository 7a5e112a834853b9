// DeAR's fusion groups (Zhang et al., "DeAR: Accelerating Distributed Deep Learning with
// Fine-Grained All-Reduce Pipelining", arXiv 2302.12445; lzhangbv/dear_pytorch, dear_dopt.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "training/algorithms/gradient_buckets.h"

namespace testbed {

// The module each trainable tensor belongs to (its name without the last component, so
// "fc1.weight" and "fc1.bias" share "fc1"), numbered in order; without names, a module a tensor.
std::vector<int> tensor_modules(const std::vector<std::string>& tensor_names, size_t tensors);

// Groups in forward order, as _generate_groups_with_threshold forms them: a module (all its
// tensors) joins the open group while the group is empty or the module keeps it strictly under
// threshold_mb (sizes in MiB of 4-byte elements); else it opens the next group. A group's
// slice of the flat vector ends where the next begins.
std::vector<GradientBucket> dear_groups(const std::vector<int64_t>& tensor_sizes, const std::vector<int>& modules,
                                        double threshold_mb);

// A group's buffer on the wire: padded to a multiple of the world size by size - n % size, so
// by a whole `size` when n is already one (the reference's _get_pad_tensor).
int64_t dear_padded(int64_t elements, int nodes);

}  // namespace testbed
