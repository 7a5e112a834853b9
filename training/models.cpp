// MLP and small CNN for 28x28 grey images.
#include "training/models.h"

#include <stdexcept>

#include <torch/torch.h>

namespace testbed {
namespace {

class Mlp : public Model {
 public:
  Mlp(int64_t inputs, int64_t hidden, int64_t outputs, const AdapterConfig& adapter)
      : fc1_(register_module("fc1", Dense(inputs, 2 * hidden, adapter))),
        fc2_(register_module("fc2", Dense(2 * hidden, hidden, adapter))),
        fc3_(register_module("fc3", Dense(hidden, outputs, adapter))) {}

  torch::Tensor forward(const torch::Tensor& x) override {
    auto h = torch::relu(fc1_(x.flatten(1)));
    return fc3_(torch::relu(fc2_(h)));
  }
  double forward_flops_per_sample() const override {
    return fc1_->forward_flops() + fc2_->forward_flops() + fc3_->forward_flops();
  }

 private:
  Dense fc1_, fc2_, fc3_;
};

// Two 5x5 convolutions with pooling, then two dense layers (~80k parameters).
class Cnn : public Model {
 public:
  Cnn(int classes, const AdapterConfig& adapter)
      : conv1_(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 16, 5)))),
        conv2_(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 5)))),
        fc1_(register_module("fc1", Dense(32 * 4 * 4, 128, adapter))),
        fc2_(register_module("fc2", Dense(128, classes, adapter))) {}

  torch::Tensor forward(const torch::Tensor& x) override {
    auto h = torch::max_pool2d(torch::relu(conv1_(x)), 2);  // 16 x 12 x 12
    h = torch::max_pool2d(torch::relu(conv2_(h)), 2);       // 32 x 4 x 4
    return fc2_(torch::relu(fc1_(h.flatten(1))));
  }
  double forward_flops_per_sample() const override {
    double conv1 = 16.0 * 24 * 24 * (1 * 5 * 5);
    double conv2 = 32.0 * 8 * 8 * (16 * 5 * 5);
    return 2.0 * (conv1 + conv2) + fc1_->forward_flops() + fc2_->forward_flops();
  }

 private:
  torch::nn::Conv2d conv1_, conv2_;
  Dense fc1_, fc2_;
};

}  // namespace

void freeze_all_but_adapters(Model& model) {
  for (auto& item : model.named_parameters()) {
    bool adapter_factor = item.key().find("lora_") != std::string::npos;
    if (!adapter_factor) item.value().set_requires_grad(false);
  }
}

std::shared_ptr<Model> make_mlp(int64_t inputs, int64_t hidden, int64_t outputs, const AdapterConfig& adapter) {
  auto model = std::make_shared<Mlp>(inputs, hidden, outputs, adapter);
  if (adapter.kind != "none") freeze_all_but_adapters(*model);
  return model;
}

std::shared_ptr<Model> make_image_model(const std::string& name, int classes, const AdapterConfig& adapter) {
  if (name == "mlp") return make_mlp(784, 128, classes, adapter);
  if (name == "cnn") {
    auto model = std::make_shared<Cnn>(classes, adapter);
    if (adapter.kind != "none") freeze_all_but_adapters(*model);
    return model;
  }
  throw std::invalid_argument("unknown image model '" + name + "'");
}

}  // namespace testbed
