// One node's copy of the model: its parameters, optimizer and data shard.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>

#include "training/data/dataset.h"
#include "training/data/partition.h"
#include "training/models/models.h"
#include "training/optimizers/eva.h"
#include "training/optimizers/kfac.h"
#include "training/optimizers/optimizer_kind.h"

namespace testbed {

struct OptimizerConfig {
  OptimizerKind name = OptimizerKind::AdamW;
  double lr = 1e-3;
  double weight_decay = 0.0;
  double momentum = 0.0;
  double beta1 = 0.9, beta2 = 0.999;
  EvaOptions eva;
  KfacOptions kfac;
  // The fleet a second-order optimizer deals its layers over, and this replica's place in it.
  int fleet = 1, rank = 0;
  // Preconditions the gradient before SGD's update (and may send messages of its own).
  bool second_order() const { return testbed::second_order(name); }
};

std::unique_ptr<torch::optim::Optimizer> make_optimizer(std::vector<torch::Tensor> parameters,
                                                        const OptimizerConfig& config);

// The parameters that train (requires_grad), in registration order.
std::vector<torch::Tensor> trainable_parameters(const torch::nn::Module& module);

// Parameters of a module as one 1-D tensor, in registration order: all of them, or
// only the trainable ones (what algorithms exchange when adapters freeze the rest).
torch::Tensor flatten_parameters(const torch::nn::Module& module, bool trainable_only = false);
void load_flat_parameters(torch::nn::Module& module, const torch::Tensor& flat, bool trainable_only = false);
int64_t count_parameters(const torch::nn::Module& module, bool trainable_only = false);

struct Batch {
  torch::Tensor inputs, targets;
};

class Replica {
 public:
  Replica(std::shared_ptr<Model> model, const OptimizerConfig& optimizer, ShardSampler sampler, torch::Device device,
          Task task = Task::Classification);

  Batch next_batch(const Dataset& data, int batch_size);
  // Zeroes the gradients, then computes the task's loss and its gradients.
  double forward_backward(const Batch& batch);
  // A replica group's GPU (training/algorithms/replica_groups.cpp) hands the algorithm across
  // groups the gradients its group has already reduced: the next next_batch draws nothing and
  // the next forward_backward returns `loss`, leaving the gradients as they are.
  void hold_gradients(double loss) { held_loss_ = loss; }
  bool holds_gradients() const { return held_loss_.has_value(); }  // not yet handed over
  // Zeroes the gradients and back-propagates a loss the caller built from model() (VHL's);
  // a preconditioner then folds the pass's layer statistics in.
  void backward(const torch::Tensor& loss);
  // The preconditioner (if any) on the gradients, then the optimizer.
  void optimizer_step();
  double learning_rate() const;  // the optimizer's, this step

  // All trainable parameters' gradients as one 1-D tensor. Each one's .grad() is a view into
  // it (as DDP's gradient buckets are), so reducing it in place reduces the gradients
  // the optimizer will use, without a copy.
  torch::Tensor& gradients() { return gradients_; }
  // All trainable parameters as one 1-D tensor, each parameter a view into it, so that
  // algorithms that average or exchange parameters read and write them without copies.
  torch::Tensor& parameters() { return parameters_; }

  Model& model() { return *model_; }
  const Model& model() const { return *model_; }
  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  // The second-order preconditioner the optimizer step runs first (null: none).
  Preconditioner* preconditioner() { return preconditioner_.get(); }
  const ShardSampler& sampler() const { return sampler_; }  // where its shard's batches stand

  // Everything that decides this replica's future (parameters, gradients, buffers, optimizer
  // state, the sampler's position), for checkpoints. load() writes into the existing tensors,
  // so the parameters' views and the optimizer's references stay valid.
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);
  torch::Device device() const { return device_; }

 private:
  std::shared_ptr<Model> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<Preconditioner> preconditioner_;
  ShardSampler sampler_;
  torch::Device device_;
  Task task_;
  torch::Tensor gradients_;
  torch::Tensor parameters_;
  std::optional<double> held_loss_;
};

}  // namespace testbed
