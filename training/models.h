// The networks a workload trains: each knows its forward FLOPs for the compute model.
#pragma once

#include <memory>
#include <string>

#include <torch/nn/module.h>

#include "training/dense.h"

namespace testbed {

class Model : public torch::nn::Module {
 public:
  // Logits [..., classes] for a batch of inputs.
  virtual torch::Tensor forward(const torch::Tensor& inputs) = 0;
  // Multiply-adds x 2 for one sample's forward pass.
  virtual double forward_flops_per_sample() const = 0;
};

// The model names a scenario may use with 28x28 image data (mlp, cnn).
std::shared_ptr<Model> make_image_model(const std::string& name, int classes, const AdapterConfig& adapter = {});

// A multilayer perceptron over flat inputs: inputs -> hidden -> hidden -> outputs (ReLU).
std::shared_ptr<Model> make_mlp(int64_t inputs, int64_t hidden, int64_t outputs, const AdapterConfig& adapter = {});

// With an adapter, everything but the adapters' trainable factors is frozen.
void freeze_all_but_adapters(Model& model);

// Training FLOPs per sample: forward plus a backward pass twice as costly.
inline double training_flops_per_sample(const Model& model) { return 3.0 * model.forward_flops_per_sample(); }

}  // namespace testbed
