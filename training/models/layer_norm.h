// LayerNorm whose weight and bias gradients do not depend on LibTorch's thread count.
#pragma once

#include <torch/torch.h>

namespace testbed {

// torch::nn::LayerNorm's fused backward sums the weight and bias gradients in one partial
// buffer per thread, so their bits follow `threads`. Here the normalisation is LibTorch's
// (its input gradient is a per-row kernel) and the affine part is plain element-wise ops,
// whose gradients are column sums in row order. Same parameters ("weight", "bias") and values.
class LayerNormImpl : public torch::nn::Module {
 public:
  explicit LayerNormImpl(int64_t width, double eps = 1e-5);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight, bias;

 private:
  int64_t width_;
  double eps_;
};
TORCH_MODULE(LayerNorm);

}  // namespace testbed
