// Replica bookkeeping: optimizers, flattening, one step of local training.
#include "training/replica.h"

#include <stdexcept>

#include <torch/torch.h>

namespace testbed {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(std::vector<torch::Tensor> parameters,
                                                        const OptimizerConfig& c) {
  if (c.name == "adamw") {
    return std::make_unique<torch::optim::AdamW>(
        parameters, torch::optim::AdamWOptions(c.lr).betas({c.beta1, c.beta2}).weight_decay(c.weight_decay));
  }
  if (c.name == "adam") {
    return std::make_unique<torch::optim::Adam>(
        parameters, torch::optim::AdamOptions(c.lr).betas({c.beta1, c.beta2}).weight_decay(c.weight_decay));
  }
  if (c.name == "sgd") {
    return std::make_unique<torch::optim::SGD>(
        parameters, torch::optim::SGDOptions(c.lr).momentum(c.momentum).weight_decay(c.weight_decay));
  }
  throw std::invalid_argument("unknown optimizer '" + c.name + "'");
}

torch::Tensor flatten_parameters(const torch::nn::Module& module) {
  std::vector<torch::Tensor> parts;
  for (const auto& p : module.parameters()) parts.push_back(p.detach().reshape(-1));
  return torch::cat(parts);
}

torch::Tensor flatten_gradients(const torch::nn::Module& module) {
  std::vector<torch::Tensor> parts;
  for (const auto& p : module.parameters()) {
    parts.push_back(p.grad().defined() ? p.grad().reshape(-1) : torch::zeros({p.numel()}, p.options()));
  }
  return torch::cat(parts);
}

namespace {
// Copies consecutive slices of `flat` into each tensor that `target` picks.
template <class Target>
void scatter_flat(const torch::nn::Module& module, const torch::Tensor& flat, Target target) {
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (auto& p : module.parameters()) {
    auto n = p.numel();
    target(p).copy_(flat.slice(0, offset, offset + n).view_as(p));
    offset += n;
  }
  if (offset != flat.numel()) throw std::invalid_argument("flat tensor does not match the model's size");
}
}  // namespace

void load_flat_parameters(torch::nn::Module& module, const torch::Tensor& flat) {
  scatter_flat(module, flat, [](torch::Tensor& p) -> torch::Tensor { return p; });
}

void load_flat_gradients(torch::nn::Module& module, const torch::Tensor& flat) {
  scatter_flat(module, flat, [](torch::Tensor& p) -> torch::Tensor {
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    return p.grad();
  });
}

int64_t count_parameters(const torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

Replica::Replica(std::shared_ptr<Model> model, const OptimizerConfig& optimizer, ShardSampler sampler,
                 torch::Device device)
    : model_(std::move(model)), sampler_(std::move(sampler)), device_(device) {
  model_->to(device_);
  gradients_ = torch::zeros({count_parameters(*model_)}, torch::TensorOptions().device(device_));
  int64_t offset = 0;
  for (auto& p : model_->parameters()) {
    p.mutable_grad() = gradients_.slice(0, offset, offset + p.numel()).view_as(p);
    offset += p.numel();
  }
  optimizer_ = make_optimizer(model_->parameters(), optimizer);
}

Batch Replica::next_batch(const Dataset& data, int batch_size) {
  auto index = sampler_.next(batch_size);
  return {data.train_inputs.index_select(0, index).to(device_),
          data.train_targets.index_select(0, index).to(device_)};
}

double Replica::forward_backward(const Batch& batch) {
  model_->train();
  gradients_.zero_();  // not Optimizer::zero_grad(), which would detach the views
  auto logits = model_->forward(batch.inputs);
  auto loss = torch::nn::functional::cross_entropy(logits.flatten(0, -2), batch.targets.flatten());
  loss.backward();
  // Autograd must have accumulated into the views, not replaced them.
  if (model_->parameters().front().grad().data_ptr() != gradients_.data_ptr()) {
    throw std::logic_error("gradients no longer alias the replica's gradient buffer");
  }
  return loss.item<double>();
}

void Replica::optimizer_step() { optimizer_->step(); }

}  // namespace testbed
