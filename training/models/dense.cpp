// Dense layer with optional LoRA / LoRA-FA adapter.
#include "training/models/dense.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

namespace testbed {

DenseImpl::DenseImpl(int64_t in, int64_t out, const AdapterConfig& adapter) : in_(in), out_(out), adapter_(adapter) {
  if (has_adapter() && (adapter_.rank < 1 || adapter_.rank > std::min(in_, out_))) {
    throw std::invalid_argument("adapter rank " + std::to_string(adapter_.rank) + " is larger than a " +
                                std::to_string(in_) + " x " + std::to_string(out_) + " layer allows (at most " +
                                std::to_string(std::min(in_, out_)) + ")");
  }
  reset();
}

void DenseImpl::reset() {
  // nn.Linear's initialisation: U(-1/sqrt(in), 1/sqrt(in)) for weight and bias.
  double bound = 1.0 / std::sqrt(static_cast<double>(in_));
  weight = register_parameter("weight", torch::empty({out_, in_}).uniform_(-bound, bound));
  bias = register_parameter("bias", torch::empty({out_}).uniform_(-bound, bound));
  tap.weight = weight;
  tap.bias = bias;
  if (!has_adapter()) return;
  weight.set_requires_grad(false);
  bias.set_requires_grad(false);
  lora_a = register_parameter("lora_a", torch::empty({adapter_.rank, in_}).uniform_(-bound, bound),
                              adapter_.kind == AdapterKind::Lora);
  lora_b = register_parameter("lora_b", torch::zeros({out_, adapter_.rank}));
}

torch::Tensor DenseImpl::forward(const torch::Tensor& x) {
  auto y = tap(x, [this](const torch::Tensor& in) { return torch::nn::functional::linear(in, weight, bias); });
  if (!has_adapter()) return y;
  double scale = adapter_.alpha > 0 ? adapter_.alpha / adapter_.rank : 1.0;
  return y + scale * torch::nn::functional::linear(torch::nn::functional::linear(x, lora_a), lora_b);
}

void DenseImpl::append_costs(std::vector<LayerCost>& costs, const std::string& name, double rows) const {
  // Whether a factor trains is read from the parameter itself, so freezing done anywhere
  // (the adapter, freeze_all_but_adapters) is what the compute model sees.
  costs.push_back(linear_cost(name, in_, out_, rows, true, weight.requires_grad()));
  if (!has_adapter()) return;
  const double r = adapter_.rank;
  costs.push_back(linear_cost(name + ".lora_a", in_, r, rows, false, lora_a.requires_grad()));
  costs.push_back(linear_cost(name + ".lora_b", r, out_, rows, false, lora_b.requires_grad()));
  // y + scale * z: a mul (reads z, writes) and an add (reads both, writes).
  costs.push_back(elementwise_cost(name + ".lora_add", 3 * rows * out_, 2 * rows * out_, 2, false));
}

}  // namespace testbed
