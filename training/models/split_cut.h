// Edge-cloud split fine-tuning's cut (Liao et al., "An Efficient Split Fine-tuning Framework for
// Edge and Cloud Collaborative Learning"; reference code only as a third-party copy,
// Brudalaxe/BERTSplitFineTuning: SvdLinear and SvdBlock). A block's feed-forward first matrix W1
// becomes its truncated SVD and the cut falls after x V_r S_r, so r values a token cross to the
// other side instead of the block's width.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "training/models/layer_cost.h"

namespace testbed {

struct SplitConfig {
  int layer = 6;          // the block the cut falls in, counted from 1 (the reference's --split)
  int rank = 8;           // of W1's truncated SVD; 0: a plain cut before the block's feed-forward
  bool residual = false;  // keep the split feed-forward's residual link: its input crosses too
  // Values a token sends across the cut in a model of width `width`.
  int64_t crossing(int64_t width) const { return rank == 0 ? width : rank + (residual ? width : 0); }
};

// W1 (out x in, y = x W1^T + b) as W1 = U S V^T truncated at rank r, three trainable products
// as the reference's dense_v, dense_s, dense_u: v = V_r^T (r x in), s = diag(S_r) (r x r, trained
// as a full matrix, being an nn.Linear's weight there), u = U_r (out x r) with W1's bias.
// back(front(x)) = x V_r S_r U_r^T + b, which is x W1^T + b at full rank.
class SvdDenseImpl : public torch::nn::Module {
 public:
  SvdDenseImpl(const torch::Tensor& weight, const torch::Tensor& bias, int rank);
  torch::Tensor front(const torch::Tensor& x);  // x V_r S_r: what crosses the cut
  torch::Tensor back(const torch::Tensor& z);   // z U_r^T + b
  int64_t rank() const { return rank_; }
  void append_front_costs(std::vector<LayerCost>& costs, const std::string& name, double rows) const;
  void append_back_costs(std::vector<LayerCost>& costs, const std::string& name, double rows) const;

  torch::nn::Linear v{nullptr}, s{nullptr}, u{nullptr};

 private:
  int64_t in_, out_, rank_;
};
TORCH_MODULE(SvdDense);

// What crossed the cut in the last training pass: the activations the front sent and, once
// backward has run, their gradient that came back. Evaluation passes record nothing.
struct CutValues {
  std::string back_first;         // the first of layer_costs() the back half runs
  int64_t values_per_sample = 0;  // what a sample sends across (its tokens x crossing)
  torch::Tensor activations, gradient;
  // Records `x` (and, in backward, its gradient); returns it unchanged.
  torch::Tensor cross(const torch::Tensor& x);
};

}  // namespace testbed
