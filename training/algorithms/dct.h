// The orthonormal DCT-II and its inverse along the last dimension, through LibTorch's FFT
// (Makhoul's reordering), for DeMo's chunked transform of the momentum.
#pragma once

#include <torch/types.h>

namespace testbed {

torch::Tensor dct(const torch::Tensor& x);   // [..., n] -> [..., n]
torch::Tensor idct(const torch::Tensor& X);  // inverse: idct(dct(x)) == x

}  // namespace testbed
