// Dense layer with optional LoRA / LoRA-FA adapter.
#include "training/dense.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

namespace testbed {

DenseImpl::DenseImpl(int64_t in, int64_t out, const AdapterConfig& adapter)
    : in_(in), out_(out), adapter_(adapter) {
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
  if (!has_adapter()) return;
  weight.set_requires_grad(false);
  bias.set_requires_grad(false);
  lora_a = register_parameter("lora_a", torch::empty({adapter_.rank, in_}).uniform_(-bound, bound),
                              adapter_.kind == "lora");
  lora_b = register_parameter("lora_b", torch::zeros({out_, adapter_.rank}));
}

torch::Tensor DenseImpl::forward(const torch::Tensor& x) {
  auto y = torch::nn::functional::linear(x, weight, bias);
  if (!has_adapter()) return y;
  double scale = adapter_.alpha > 0 ? adapter_.alpha / adapter_.rank : 1.0;
  return y + scale * torch::nn::functional::linear(torch::nn::functional::linear(x, lora_a), lora_b);
}

double DenseImpl::forward_flops() const {
  double flops = 2.0 * in_ * out_;
  if (has_adapter()) flops += 2.0 * adapter_.rank * (in_ + out_);
  return flops;
}

}  // namespace testbed
