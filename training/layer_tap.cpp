// Keeping a layer's input and output gradient for second-order optimizers.
#include "training/layer_tap.h"

#include <torch/torch.h>

namespace testbed {

torch::Tensor LayerTap::operator()(const torch::Tensor& x, const std::function<torch::Tensor(const torch::Tensor&)>& layer) {
  const bool recording = keep > 0 && torch::GradMode::is_enabled();
  if (recording) input = x.detach().slice(0, 0, keep).clone();
  auto y = layer(x);
  if (recording && y.requires_grad()) {
    y.register_hook([this](const torch::Tensor& grad) { output_grad = grad.detach().slice(0, 0, keep).clone(); });
  }
  return y;
}

}  // namespace testbed
