// The exact GELU, x * Phi(x), with its own erf: the same bits on every machine, thread count and position.
#pragma once

#include <torch/torch.h>

namespace testbed {

// GELU in its exact (erf) form, x * 0.5 * (1 + erf(x / sqrt(2))), torch::gelu's default, for a
// float tensor on the CPU; anything else goes to torch::gelu. Why: with portable numerics ATen's
// GELU is a scalar loop over glibc's erff and expf (erff alone 11 % of a tiny-GPT run's host
// time, issue 52), and its AVX2 loop gives a chunk's tail to the scalar function, so bits would
// follow the thread count. Here erf(z) and exp(-z^2) are piecewise polynomials
// (scripts/fit_gelu.py) evaluated with the same fused multiply-adds in every lane and for every
// element, a tail included, so an element's value depends on nothing but itself, with or without
// AVX2. Within a few float ulps of double-precision GELU and its derivative (tests/training/test_gelu.cpp);
// not ATen's bits.
torch::Tensor exact_gelu(const torch::Tensor& x);

}  // namespace testbed
