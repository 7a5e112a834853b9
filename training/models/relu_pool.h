// ReLU then max pooling over non-overlapping k x k windows, in one pass, with the bits of LibTorch's pair.
#pragma once

#include <torch/torch.h>

namespace testbed {

// max_pool2d(relu(x), k) for a contiguous float [N, C, H, W] on the CPU (windows of k x k, stride
// k, no padding, the last rows and columns dropped when H or W is not a multiple of k); anything
// else goes to LibTorch's two operations. Why: with portable numerics ATen's relu, max pool and
// their backward are scalar loops over the full-size map, 30 % of the CNN's step (issue 52).
// Values and gradients are LibTorch's bit for bit, both being exact: a window's first largest
// element after the ReLU (NaN wins), -0 kept by the ReLU, the gradient 0 + g at that element
// unless the output is <= 0 (tests/training/test_relu_pool.cpp).
torch::Tensor relu_max_pool2d(const torch::Tensor& x, int64_t k);

}  // namespace testbed
