// Replica bookkeeping: optimizers, flattening, one step of local training.
#include "training/replica.h"
#include "training/models/checkpoint.h"

#include <stdexcept>

#include <torch/torch.h>

namespace testbed {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(std::vector<torch::Tensor> parameters,
                                                        const OptimizerConfig& c) {
  if (c.name == OptimizerKind::AdamW) {
    return std::make_unique<torch::optim::AdamW>(
        parameters, torch::optim::AdamWOptions(c.lr).betas({c.beta1, c.beta2}).weight_decay(c.weight_decay));
  }
  if (c.name == OptimizerKind::Adam) {
    return std::make_unique<torch::optim::Adam>(
        parameters, torch::optim::AdamOptions(c.lr).betas({c.beta1, c.beta2}).weight_decay(c.weight_decay));
  }
  if (c.name == OptimizerKind::Sgd || c.second_order()) {
    return std::make_unique<torch::optim::SGD>(
        parameters, torch::optim::SGDOptions(c.lr).momentum(c.momentum).weight_decay(c.weight_decay));
  }
  throw std::invalid_argument("unknown optimizer " + std::to_string(static_cast<int>(c.name)));
}

std::vector<torch::Tensor> trainable_parameters(const torch::nn::Module& module) {
  std::vector<torch::Tensor> out;
  for (const auto& p : module.parameters()) {
    if (p.requires_grad()) out.push_back(p);
  }
  return out;
}

namespace {
std::vector<torch::Tensor> selected(const torch::nn::Module& module, bool trainable_only) {
  return trainable_only ? trainable_parameters(module) : module.parameters();
}
}  // namespace

torch::Tensor flatten_parameters(const torch::nn::Module& module, bool trainable_only) {
  std::vector<torch::Tensor> parts;
  for (const auto& p : selected(module, trainable_only)) parts.push_back(p.detach().reshape(-1));
  return torch::cat(parts);
}

void load_flat_parameters(torch::nn::Module& module, const torch::Tensor& flat, bool trainable_only) {
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (auto& p : selected(module, trainable_only)) {
    auto n = p.numel();
    p.copy_(flat.slice(0, offset, offset + n).view_as(p));
    offset += n;
  }
  if (offset != flat.numel()) throw std::invalid_argument("flat tensor does not match the model's size");
}

int64_t count_parameters(const torch::nn::Module& module, bool trainable_only) {
  int64_t n = 0;
  for (const auto& p : selected(module, trainable_only)) n += p.numel();
  return n;
}

Replica::Replica(std::shared_ptr<Model> model, const OptimizerConfig& optimizer, ShardSampler sampler,
                 torch::Device device, Task task)
    : model_(std::move(model)), sampler_(std::move(sampler)), device_(device), task_(task) {
  model_->to(device_);
  auto trainable = trainable_parameters(*model_);
  if (trainable.empty()) throw std::invalid_argument("the model has no trainable parameters");
  gradients_ = torch::zeros({count_parameters(*model_, true)}, torch::TensorOptions().device(device_));
  parameters_ = flatten_parameters(*model_, true).clone();
  int64_t offset = 0;
  for (auto& p : trainable) {
    p.mutable_grad() = gradients_.slice(0, offset, offset + p.numel()).view_as(p);
    p.set_data(parameters_.slice(0, offset, offset + p.numel()).view_as(p));
    offset += p.numel();
  }
  optimizer_ = make_optimizer(trainable, optimizer);
  if (optimizer.name == OptimizerKind::Eva)
    preconditioner_ = std::make_unique<Eva>(model_->layer_taps(), optimizer.eva);
  if (optimizer.name == OptimizerKind::Kfac || optimizer.name == OptimizerKind::DpKfac)
    preconditioner_ = std::make_unique<Kfac>(model_->layer_taps(), optimizer.kfac, optimizer.fleet, optimizer.rank);
}

Batch Replica::next_batch(const Dataset& data, int batch_size) {
  if (held_loss_) return {};
  auto index = sampler_.next(batch_size);
  return {data.train_inputs.index_select(0, index).to(device_), data.train_targets.index_select(0, index).to(device_)};
}

double Replica::forward_backward(const Batch& batch) {
  if (held_loss_) {
    const double loss = *held_loss_;
    held_loss_.reset();
    return loss;
  }
  model_->train();
  auto loss = task_loss(task_, model_->forward(batch.inputs), batch.targets);
  backward(loss);
  return loss.item<double>();
}

void Replica::backward(const torch::Tensor& loss) {
  gradients_.zero_();  // not Optimizer::zero_grad(), which would detach the views
  loss.backward();
  // Autograd must have accumulated into the views, not replaced them.
  if (trainable_parameters(*model_).front().grad().data_ptr() != gradients_.data_ptr()) {
    throw std::logic_error("gradients no longer alias the replica's gradient buffer");
  }
  if (preconditioner_) preconditioner_->observe();
}

void Replica::optimizer_step() {
  if (preconditioner_) preconditioner_->precondition(learning_rate());
  optimizer_->step();
}

double Replica::learning_rate() const { return optimizer_->param_groups().front().options().get_lr(); }

void Replica::save(torch::serialize::OutputArchive& archive) const {
  archive.write("parameters", parameters_);
  archive.write("gradients", gradients_);
  int i = 0;  // keys are TorchScript attribute names: no dots or slashes
  for (const auto& b : model_->buffers()) archive.write("buffer_" + std::to_string(i++), b, /*is_buffer=*/true);
  torch::serialize::OutputArchive optimizer(archive.compilation_unit());
  optimizer_->save(optimizer);
  archive.write("optimizer", optimizer);
  if (preconditioner_) {
    for (const auto& [key, tensor] : preconditioner_->state()) archive.write("preconditioner_" + key, tensor);
  }
  const auto sampler = sampler_.state();
  archive.write("sampler_order", sampler.order);
  archive.write("sampler_cursor", c10::IValue(sampler.cursor));
  archive.write("sampler_generator", c10::IValue(sampler.generator));
}

void Replica::load(torch::serialize::InputArchive& archive) {
  auto copy_into = [&](const std::string& key, torch::Tensor& into) {
    if (!read_into(archive, key, into)) throw std::runtime_error("checkpoint: the replica's '" + key + "' is missing");
  };
  copy_into("parameters", parameters_);
  copy_into("gradients", gradients_);
  int i = 0;
  for (auto b : model_->buffers()) copy_into("buffer_" + std::to_string(i++), b);
  torch::serialize::InputArchive optimizer;
  archive.read("optimizer", optimizer);
  optimizer_->load(optimizer);
  if (preconditioner_) {
    std::map<std::string, torch::Tensor> state;
    for (const auto& key : archive.keys()) {
      torch::Tensor t;
      const std::string prefix = "preconditioner_";
      if (key.rfind(prefix, 0) == 0 && archive.try_read(key, t)) state[key.substr(prefix.size())] = t;
    }
    preconditioner_->load_state(state);
  }
  ShardSampler::State sampler;
  archive.read("sampler_order", sampler.order);
  c10::IValue value;
  archive.read("sampler_cursor", value);
  sampler.cursor = value.toInt();
  archive.read("sampler_generator", value);
  sampler.generator = value.toStringRef();
  sampler_.load_state(sampler);
}

}  // namespace testbed
