// A fully connected layer that can carry a low-rank adapter (LoRA or LoRA-FA).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "training/models/adapter_kind.h"
#include "training/models/layer_cost.h"
#include "training/models/layer_tap.h"

namespace testbed {

struct AdapterConfig {
  AdapterKind kind = AdapterKind::None;
  int rank = 4;
  double alpha = 0;  // scale = alpha / rank; 0 means 1
};

// y = x W^T + b + scale * (x A^T) B^T. With an adapter, W and b are frozen; LoRA trains
// A (random) and B (zero, so training starts from the base model); LoRA-FA freezes A too.
// A is drawn from the global generator like every other initial weight, so replicas built
// from the same seed share it, which is what makes averaging B exact under LoRA-FA.
class DenseImpl : public torch::nn::Cloneable<DenseImpl> {
 public:
  DenseImpl(int64_t in, int64_t out, const AdapterConfig& adapter = {});
  void reset() override;
  torch::Tensor forward(const torch::Tensor& x);

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  bool has_adapter() const { return adapter_.kind != AdapterKind::None; }
  // Appends this layer's costs for `rows` input rows per sample: the base product (frozen
  // under an adapter), then the adapter's x A^T, its B^T product and the scaled add.
  void append_costs(std::vector<LayerCost>& costs, const std::string& name, double rows = 1) const;

  torch::Tensor weight, bias, lora_a, lora_b;
  LayerTap tap;  // the base product's input and output gradient, for second-order optimizers

 private:
  int64_t in_, out_;
  AdapterConfig adapter_;
};
TORCH_MODULE(Dense);

}  // namespace testbed
