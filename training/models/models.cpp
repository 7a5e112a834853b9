// MLP and small CNN for 28x28 grey images (and the ResNets, training/models/resnet.h).
#include "training/models/models.h"
#include "training/models/imagenet.h"
#include "training/models/relu_pool.h"
#include "training/models/resnet.h"

#include <stdexcept>

#include <torch/torch.h>

namespace testbed {
namespace {

// A square-kernel, stride-1, unpadded convolution with bias over a side x side input: each
// output element is one dot product over in_channels x k x k inputs.
LayerCost conv_cost(const std::string& name, const torch::nn::Conv2d& conv, int64_t side) {
  const auto& o = conv->options;
  const double in_c = o.in_channels(), out_c = o.out_channels(), k = (*o.kernel_size())[0];
  const double out_side = side - k + 1;
  LayerCost c;
  c.name = name;
  c.flops = 2.0 * out_c * out_side * out_side * in_c * k * k;
  c.weights = out_c * in_c * k * k + out_c;
  c.tensors = 2;
  c.trains = conv->weight.requires_grad();
  c.inputs = in_c * side * side;
  c.outputs = out_c * out_side * out_side;
  c.convolution = true;
  c.gemm_k = in_c * k * k;
  c.gemm_k_backward = out_c * k * k;
  return c;
}

class Mlp : public Model {
 public:
  Mlp(int64_t inputs, int64_t hidden, int64_t outputs, const AdapterConfig& adapter)
      : fc1_(register_module("fc1", Dense(inputs, 2 * hidden, adapter))),
        fc2_(register_module("fc2", Dense(2 * hidden, hidden, adapter))),
        fc3_(register_module("fc3", Dense(hidden, outputs, adapter))) {
    fc1_->tap.name = "fc1";
    fc2_->tap.name = "fc2";
    fc3_->tap.name = "fc3";
  }

  torch::Tensor forward(const torch::Tensor& x) override { return classify(features(x)); }
  torch::Tensor features(const torch::Tensor& x) override { return torch::relu(fc2_(torch::relu(fc1_(x.flatten(1))))); }
  torch::Tensor classify(const torch::Tensor& h) override { return fc3_(h); }
  std::vector<LayerTap*> layer_taps() override { return {&fc1_->tap, &fc2_->tap, &fc3_->tap}; }
  std::vector<LayerCost> layer_costs() const override {
    std::vector<LayerCost> c;
    fc1_->append_costs(c, "fc1");
    c.push_back(elementwise_cost("relu1", fc1_->out_features(), fc1_->out_features()));
    fc2_->append_costs(c, "fc2");
    c.push_back(elementwise_cost("relu2", fc2_->out_features(), fc2_->out_features()));
    fc3_->append_costs(c, "fc3");
    c.push_back(loss_cost(fc3_->out_features()));
    return c;
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
        fc2_(register_module("fc2", Dense(128, classes, adapter))) {
    conv1_tap_ = conv_tap("conv1", conv1_);
    conv2_tap_ = conv_tap("conv2", conv2_);
    fc1_->tap.name = "fc1";
    fc2_->tap.name = "fc2";
  }

  torch::Tensor forward(const torch::Tensor& x) override { return classify(features(x)); }
  torch::Tensor features(const torch::Tensor& x) override {
    auto h = relu_max_pool2d(conv1_tap_(x, [this](const torch::Tensor& in) { return conv1_(in); }), 2);  // 16 x 12 x 12
    h = relu_max_pool2d(conv2_tap_(h, [this](const torch::Tensor& in) { return conv2_(in); }), 2);       // 32 x 4 x 4
    return torch::relu(fc1_(h.flatten(1)));
  }
  torch::Tensor classify(const torch::Tensor& h) override { return fc2_(h); }
  std::vector<LayerTap*> layer_taps() override { return {&conv1_tap_, &conv2_tap_, &fc1_->tap, &fc2_->tap}; }
  std::vector<LayerCost> layer_costs() const override {
    std::vector<LayerCost> c;
    c.push_back(conv_cost("conv1", conv1_, 28));
    c.push_back(elementwise_cost("relu1", 16 * 24 * 24, 16 * 24 * 24));
    c.push_back(elementwise_cost("pool1", 16 * 24 * 24, 16 * 12 * 12));
    c.push_back(conv_cost("conv2", conv2_, 12));
    c.push_back(elementwise_cost("relu2", 32 * 8 * 8, 32 * 8 * 8));
    c.push_back(elementwise_cost("pool2", 32 * 8 * 8, 32 * 4 * 4));
    fc1_->append_costs(c, "fc1");
    c.push_back(elementwise_cost("relu3", fc1_->out_features(), fc1_->out_features()));
    fc2_->append_costs(c, "fc2");
    c.push_back(loss_cost(fc2_->out_features()));
    return c;
  }

 private:
  torch::nn::Conv2d conv1_, conv2_;
  Dense fc1_, fc2_;
  LayerTap conv1_tap_, conv2_tap_;
};

}  // namespace

torch::Tensor Model::features(const torch::Tensor&) {
  throw std::logic_error("this model has no split into features and a classifier head");
}
torch::Tensor Model::classify(const torch::Tensor&) {
  throw std::logic_error("this model has no split into features and a classifier head");
}
void Model::split(const SplitConfig&) {
  throw std::invalid_argument(
      "split fine-tuning cuts a transformer block's feed-forward: this model has none (use gpt or bert)");
}

double Model::forward_flops_per_sample() const {
  double flops = 0;
  for (const auto& layer : layer_costs()) flops += layer.flops;
  return flops;
}

LayerCost loss_cost(double logits) { return elementwise_cost("loss", logits, logits, 2, true); }

void freeze_all_but_adapters(Model& model) {
  for (auto& item : model.named_parameters()) {
    bool adapter_factor = item.key().find("lora_") != std::string::npos;
    if (!adapter_factor) item.value().set_requires_grad(false);
  }
}

std::shared_ptr<Model> make_mlp(int64_t inputs, int64_t hidden, int64_t outputs, const AdapterConfig& adapter) {
  auto model = std::make_shared<Mlp>(inputs, hidden, outputs, adapter);
  if (adapter.kind != AdapterKind::None) freeze_all_but_adapters(*model);
  return model;
}

std::shared_ptr<Model> make_image_model(const std::string& name, int classes, const AdapterConfig& adapter) {
  if (name == "mlp") return make_mlp(784, 128, classes, adapter);
  if (name == "cnn") {
    auto model = std::make_shared<Cnn>(classes, adapter);
    if (adapter.kind != AdapterKind::None) freeze_all_but_adapters(*model);
    return model;
  }
  // The ResNets in their CIFAR form (a 3 x 3 stem, no pool) on the 28 x 28 grey images.
  for (int depth : {18, 34, 50, 101, 152}) {
    if (name != "resnet" + std::to_string(depth)) continue;
    if (adapter.kind != AdapterKind::None)
      throw std::invalid_argument(name + " takes no adapter (its layers are convolutions)");
    return make_resnet({depth, classes, 1, 28, false});
  }
  throw std::invalid_argument("unknown image model '" + name + "'");
}

std::shared_ptr<Model> make_imagenet_model(const std::string& name, int classes) {
  for (int depth : {18, 34, 50, 101, 152})
    if (name == "resnet" + std::to_string(depth)) return make_resnet({depth, classes, 3, 224, true});
  if (name == "densenet201") return make_densenet201(classes);
  if (name == "inception_v4") return make_inception_v4(classes);
  if (name == "vit_b_16") return make_vit_b_16(classes);
  throw std::invalid_argument("model '" + name +
                              "' has no ImageNet form (the resnets, densenet201, inception_v4 and vit_b_16 have)");
}

}  // namespace testbed
