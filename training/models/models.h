// The networks a workload trains: each describes its layers' costs for the compute model.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "training/models/dense.h"
#include "training/models/layer_cost.h"
#include "training/models/layer_tap.h"
#include "training/models/split_cut.h"

namespace testbed {

class Model : public torch::nn::Module {
 public:
  // Logits [..., classes] for a batch of inputs.
  virtual torch::Tensor forward(const torch::Tensor& inputs) = 0;
  // The same in two halves for classifiers: the penultimate features (after the last hidden
  // activation) and the head's logits on them, forward(x) == classify(features(x)) (VHL
  // calibrates the features). Models without the split throw std::logic_error.
  virtual torch::Tensor features(const torch::Tensor& inputs);
  virtual torch::Tensor classify(const torch::Tensor& features);
  // The training step's layers in forward order, per sample, ending with the loss over the
  // logits; frozen parameters are marked so they cost no weight gradient.
  virtual std::vector<LayerCost> layer_costs() const = 0;
  // Its Linear and Conv2d layers, in forward order, as second-order optimizers read them (none:
  // the model offers none to them).
  virtual std::vector<LayerTap*> layer_taps() { return {}; }
  // Cuts the model for split fine-tuning (split_cut.h) where its weights stand now, so that the
  // SVD factors a loaded checkpoint, as the reference factors the pretrained weights. Models
  // that cannot be cut throw std::invalid_argument.
  virtual void split(const SplitConfig& config);
  // What crossed the cut in the last training pass, once split; null otherwise.
  virtual CutValues* cut() { return nullptr; }
  // Multiply-adds x 2 for one sample's forward pass (the sum over layer_costs()).
  double forward_flops_per_sample() const;
};

// The model names a scenario may use with 28x28 image data: mlp, cnn, resnet18/34/50/101/152.
std::shared_ptr<Model> make_image_model(const std::string& name, int classes, const AdapterConfig& adapter = {});

// The ImageNet classifiers: the ResNets in torchvision's form (3 x 224 x 224 inputs, a 7 x 7
// stride-2 stem and max pool), resnet18/34/50/101/152, and densenet201, inception_v4 (299 x 299)
// and vit_b_16 (imagenet.h).
std::shared_ptr<Model> make_imagenet_model(const std::string& name, int classes);

// A multilayer perceptron over flat inputs: inputs -> hidden -> hidden -> outputs (ReLU).
std::shared_ptr<Model> make_mlp(int64_t inputs, int64_t hidden, int64_t outputs, const AdapterConfig& adapter = {});

// With an adapter, everything but the adapters' trainable factors is frozen.
void freeze_all_but_adapters(Model& model);

// The loss over `logits` elements per sample: log-softmax then NLL (two kernels); its
// gradient rereads the saved log-probabilities.
LayerCost loss_cost(double logits);

}  // namespace testbed
