// Softmax over the last dimension with its own exp: the same bits on every machine and thread count.
#pragma once

#include <torch/torch.h>

namespace testbed {

// torch::softmax(x, -1) for a float tensor on the CPU; anything else goes to torch::softmax.
// Why: with portable numerics ATen's softmax is a scalar loop over glibc's expf (the attention
// scores of the GPT, BERT and ViT; issue 52). A row is one thread's; exp is a polynomial
// (Cody-Waite reduction, the Taylor series to r^7) evaluated with the same fused multiply-adds in
// every lane and in a row's tail, and the sums go lane by lane in a fixed order, so a row's bits
// depend on nothing but the row. -inf (a masked score) gives exactly 0. Within a few float ulps of
// double precision (tests/training/test_softmax.cpp); not ATen's bits.
torch::Tensor softmax_last_dim(const torch::Tensor& x);

}  // namespace testbed
