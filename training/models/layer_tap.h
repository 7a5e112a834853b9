// What a second-order optimizer reads of one Linear or Conv2d layer in a training step: the
// layer's input and the gradient at its output (PyTorch's forward pre-hook and backward hook).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>

namespace testbed {

class LayerTap {
 public:
  std::string name;
  torch::Tensor weight, bias;  // the layer's parameters (bias undefined when it has none)
  // Conv2d's geometry (empty for a Linear layer): kernel, stride and padding, height then width.
  std::vector<int64_t> kernel, stride, padding;
  bool conv() const { return !kernel.empty(); }
  // Rows of the weight's gradient as a matrix (out features or filters) and its columns with a
  // column for the bias (in features or in_channels x kh x kw, plus one).
  int64_t d_g() const { return weight.size(0); }
  int64_t d_a() const { return weight.numel() / weight.size(0) + (bias.defined() ? 1 : 0); }
  // The weight's gradient as that d_g x d_a matrix, its last column the bias's.
  torch::Tensor gradient_matrix() const;
  // Such a matrix's weight part and bias part (undefined without a bias), in their shapes.
  std::pair<torch::Tensor, torch::Tensor> split_gradient_matrix(const torch::Tensor& v) const;
  // Writes such a matrix into the weight's and the bias's gradients; scales both.
  void set_gradient_matrix(const torch::Tensor& v);
  void scale_gradient(double factor);

  // How many leading samples of each training batch to keep (0: none, the default). Kept only
  // while autograd records, as the reference's hooks (evaluation passes are not training).
  int64_t keep = 0;
  torch::Tensor input, output_grad;  // the last training pass's first `keep` samples

  // Runs `layer` on `x`, keeping what the optimizer reads.
  torch::Tensor operator()(const torch::Tensor& x, const std::function<torch::Tensor(const torch::Tensor&)>& layer);
};

// Taps of LibTorch's own layers (a Conv2d's explicit padding; not "same" or "valid").
LayerTap conv_tap(const std::string& name, const torch::nn::Conv2d& conv);
LayerTap linear_tap(const std::string& name, const torch::nn::Linear& linear);

}  // namespace testbed
