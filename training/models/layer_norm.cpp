// LayerNorm as LibTorch's normalisation then an element-wise affine map.
#include "training/models/layer_norm.h"

namespace testbed {

LayerNormImpl::LayerNormImpl(int64_t width, double eps) : width_(width), eps_(eps) {
  weight = register_parameter("weight", torch::ones({width}));
  bias = register_parameter("bias", torch::zeros({width}));
}

torch::Tensor LayerNormImpl::forward(const torch::Tensor& x) {
  return torch::layer_norm(x, {width_}, {}, {}, eps_) * weight + bias;
}

}  // namespace testbed
