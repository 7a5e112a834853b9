// DeAR's fusion groups (Zhang et al., "DeAR: Accelerating Distributed Deep Learning with
// Fine-Grained All-Reduce Pipelining", arXiv 2302.12445; lzhangbv/dear_pytorch, dear_dopt.py).
#pragma once

#include <cstdint>
#include <vector>

namespace testbed {

struct DearGroup {
  std::vector<int> tensors;  // trainable tensors (registration index), in forward order
  int64_t elements = 0;      // theirs, unpadded
};

// Groups in forward order, as _generate_groups_with_threshold forms them from the modules in
// forward order: a module (the tensors of one layer) joins the open group while the group is
// empty or the module keeps it strictly under threshold_mb (sizes in MiB of 4-byte elements);
// else it opens the next group. `tensor_layers`: each tensor's layer in forward order (empty:
// a tensor a layer, in registration order). The reference takes modules in registration order,
// which is forward order for the models it trains; the GPT registers its head before its blocks.
// A group's gradients all exist once backward reaches its first tensor's layer, and the next
// forward needs its gather there.
std::vector<DearGroup> dear_groups(const std::vector<int64_t>& tensor_sizes, const std::vector<int>& tensor_layers,
                                   double threshold_mb);

// A group's buffer on the wire: padded to a multiple of the world size by size - n % size, so
// by a whole `size` when n is already one (the reference's _get_pad_tensor).
int64_t dear_padded(int64_t elements, int nodes);

}  // namespace testbed
