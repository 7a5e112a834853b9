// Keeping a layer's input and output gradient for second-order optimizers.
#include "training/models/layer_tap.h"

#include <torch/torch.h>

namespace testbed {

LayerTap conv_tap(const std::string& name, const torch::nn::Conv2d& conv) {
  const auto& o = conv->options;
  const auto pad = c10::get<torch::ExpandingArray<2>>(o.padding());
  LayerTap t;
  t.name = name;
  t.weight = conv->weight;
  t.bias = conv->bias;
  t.kernel = {(*o.kernel_size())[0], (*o.kernel_size())[1]};
  t.stride = {(*o.stride())[0], (*o.stride())[1]};
  t.padding = {(*pad)[0], (*pad)[1]};
  return t;
}

LayerTap linear_tap(const std::string& name, const torch::nn::Linear& linear) {
  LayerTap t;
  t.name = name;
  t.weight = linear->weight;
  t.bias = linear->bias;
  return t;
}

torch::Tensor LayerTap::gradient_matrix() const {
  auto grad = weight.grad().reshape({d_g(), -1});
  if (bias.defined()) grad = torch::cat({grad, bias.grad().reshape({-1, 1})}, 1);
  return grad;
}

std::pair<torch::Tensor, torch::Tensor> LayerTap::split_gradient_matrix(const torch::Tensor& v) const {
  const int64_t w = weight.numel() / d_g();
  return {v.slice(1, 0, w).reshape(weight.sizes()),
          bias.defined() ? v.slice(1, w).reshape(bias.sizes()) : torch::Tensor()};
}

void LayerTap::set_gradient_matrix(const torch::Tensor& v) {
  const auto [vw, vb] = split_gradient_matrix(v);
  weight.mutable_grad().copy_(vw);
  if (bias.defined()) bias.mutable_grad().copy_(vb);
}

void LayerTap::scale_gradient(double factor) {
  weight.mutable_grad().mul_(factor);
  if (bias.defined()) bias.mutable_grad().mul_(factor);
}

torch::Tensor LayerTap::operator()(const torch::Tensor& x,
                                   const std::function<torch::Tensor(const torch::Tensor&)>& layer) {
  const bool recording = keep > 0 && torch::GradMode::is_enabled();
  if (recording) input = x.detach().slice(0, 0, keep).clone();
  auto y = layer(x);
  if (recording && y.requires_grad()) {
    y.register_hook([this](const torch::Tensor& grad) { output_grad = grad.detach().slice(0, 0, keep).clone(); });
  }
  return y;
}

}  // namespace testbed
