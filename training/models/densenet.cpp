// DenseNet-201: torchvision's module names and shapes, and its layers' costs.
#include "training/models/imagenet.h"

#include <vector>

#include <torch/torch.h>

namespace testbed {
namespace {

namespace nn = torch::nn;

constexpr int64_t kGrowth = 32, kBottleneck = 4 * kGrowth, kStem = 64;
const int kBlockLayers[] = {6, 12, 48, 32};

nn::Conv2d plain_conv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t padding) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(padding).bias(false));
}

// A dense layer: the concatenation of every earlier feature map in the block, then batch norm,
// ReLU, a 1 x 1 convolution to 4 x growth channels, batch norm, ReLU, a 3 x 3 one to growth.
struct DenseLayerImpl : nn::Module {
  explicit DenseLayerImpl(int64_t in)
      : in(in),
        norm1(register_module("norm1", nn::BatchNorm2d(in))),
        conv1(register_module("conv1", plain_conv(in, kBottleneck, 1, 1, 0))),
        norm2(register_module("norm2", nn::BatchNorm2d(kBottleneck))),
        conv2(register_module("conv2", plain_conv(kBottleneck, kGrowth, 3, 1, 1))) {}

  torch::Tensor forward(const std::vector<torch::Tensor>& features) {
    const auto x = torch::cat(features, 1);
    return conv2(torch::relu(norm2(conv1(torch::relu(norm1(x))))));
  }

  void append_costs(std::vector<LayerCost>& c, const std::string& p, int64_t side, bool trains) const {
    const double positions = static_cast<double>(side * side), wide = static_cast<double>(in) * positions;
    // torch.cat copies the block's maps so far into one tensor (the first layer's is its input).
    c.push_back(elementwise_cost(p + "cat", wide, wide, 1, false));
    c.push_back(batch_norm_cost(p + "norm1", in, side, trains));
    c.push_back(elementwise_cost(p + "relu1", wide, wide));
    c.push_back(convolution_cost(p + "conv1", in, kBottleneck, 1, 1, 0, 1, side, false, trains));
    c.push_back(batch_norm_cost(p + "norm2", kBottleneck, side, trains));
    c.push_back(elementwise_cost(p + "relu2", kBottleneck * positions, kBottleneck * positions));
    c.push_back(convolution_cost(p + "conv2", kBottleneck, kGrowth, 3, 1, 1, 1, side, false, trains));
  }

  int64_t in;
  nn::BatchNorm2d norm1;
  nn::Conv2d conv1;
  nn::BatchNorm2d norm2;
  nn::Conv2d conv2;
};
TORCH_MODULE(DenseLayer);

// Between blocks: batch norm, ReLU, a 1 x 1 convolution to half the channels, 2 x 2 average pool.
struct TransitionImpl : nn::Module {
  explicit TransitionImpl(int64_t in)
      : in(in),
        norm(register_module("norm", nn::BatchNorm2d(in))),
        conv(register_module("conv", plain_conv(in, in / 2, 1, 1, 0))) {}

  torch::Tensor forward(const torch::Tensor& x) { return torch::avg_pool2d(conv(torch::relu(norm(x))), 2, 2); }

  void append_costs(std::vector<LayerCost>& c, const std::string& p, int64_t side, bool trains) const {
    const double wide = static_cast<double>(in * side * side), half = wide / 2;
    c.push_back(batch_norm_cost(p + "norm", in, side, trains));
    c.push_back(elementwise_cost(p + "relu", wide, wide));
    c.push_back(convolution_cost(p + "conv", in, in / 2, 1, 1, 0, 1, side, false, trains));
    c.push_back(elementwise_cost(p + "pool", half, half / 4));
  }

  int64_t in;
  nn::BatchNorm2d norm;
  nn::Conv2d conv;
};
TORCH_MODULE(Transition);

class DenseNet : public Model {
 public:
  explicit DenseNet(int classes) : classes_(classes) {
    features_ = register_module("features", std::make_shared<nn::Module>());
    conv0_ = features_->register_module("conv0", plain_conv(3, kStem, 7, 2, 3));
    norm0_ = features_->register_module("norm0", nn::BatchNorm2d(kStem));
    int64_t channels = kStem;
    for (int b = 0; b < 4; ++b) {
      auto block = features_->register_module("denseblock" + std::to_string(b + 1), std::make_shared<nn::Module>());
      std::vector<DenseLayer> layers;
      for (int l = 0; l < kBlockLayers[b]; ++l) {
        layers.push_back(block->register_module("denselayer" + std::to_string(l + 1), DenseLayer(channels)));
        channels += kGrowth;
      }
      blocks_.push_back(layers);
      if (b < 3) {
        transitions_.push_back(features_->register_module("transition" + std::to_string(b + 1), Transition(channels)));
        channels /= 2;
      }
    }
    norm5_ = features_->register_module("norm5", nn::BatchNorm2d(channels));
    classifier_ = register_module("classifier", nn::Linear(channels, classes));
  }

  torch::Tensor forward(const torch::Tensor& x) override { return classify(features(x)); }
  torch::Tensor features(const torch::Tensor& x) override {
    auto h = torch::max_pool2d(torch::relu(norm0_(conv0_(x))), 3, 2, 1);
    for (size_t b = 0; b < blocks_.size(); ++b) {
      std::vector<torch::Tensor> maps{h};
      for (auto& layer : blocks_[b]) maps.push_back(layer->forward(maps));
      h = torch::cat(maps, 1);
      if (b < transitions_.size()) h = transitions_[b]->forward(h);
    }
    return torch::adaptive_avg_pool2d(torch::relu(norm5_(h)), {1, 1}).flatten(1);
  }
  torch::Tensor classify(const torch::Tensor& h) override { return classifier_(h); }

  std::vector<LayerCost> layer_costs() const override {
    std::vector<LayerCost> c;
    const bool trains = conv0_->weight.requires_grad();
    c.push_back(convolution_cost("features.conv0", 3, kStem, 7, 2, 3, 1, 224, false, trains));
    int64_t side = convolution_side(224, 7, 2, 3);
    c.push_back(batch_norm_cost("features.norm0", kStem, side, trains));
    c.push_back(elementwise_cost("features.relu0", kStem * side * side, kStem * side * side));
    const int64_t pooled = convolution_side(side, 3, 2, 1);
    c.push_back(elementwise_cost("features.pool0", kStem * side * side, kStem * pooled * pooled));
    side = pooled;
    int64_t channels = kStem;
    for (size_t b = 0; b < blocks_.size(); ++b) {
      const std::string block = "features.denseblock" + std::to_string(b + 1) + ".";
      for (size_t l = 0; l < blocks_[b].size(); ++l) {
        blocks_[b][l]->append_costs(c, block + "denselayer" + std::to_string(l + 1) + ".", side, trains);
        channels += kGrowth;
      }
      const double out = static_cast<double>(channels * side * side);
      c.push_back(elementwise_cost(block + "cat", out, out, 1, false));
      if (b < transitions_.size()) {
        transitions_[b]->append_costs(c, "features.transition" + std::to_string(b + 1) + ".", side, trains);
        channels /= 2;
        side /= 2;
      }
    }
    const double wide = static_cast<double>(channels * side * side);
    c.push_back(batch_norm_cost("features.norm5", channels, side, trains));
    c.push_back(elementwise_cost("relu", wide, wide));
    c.push_back(elementwise_cost("avgpool", wide, static_cast<double>(channels)));
    c.push_back(linear_cost("classifier", static_cast<double>(channels), classes_, 1, true,
                            classifier_->weight.requires_grad()));
    c.push_back(loss_cost(classes_));
    return c;
  }

 private:
  int classes_;
  std::shared_ptr<nn::Module> features_;
  nn::Conv2d conv0_{nullptr};
  nn::BatchNorm2d norm0_{nullptr}, norm5_{nullptr};
  std::vector<std::vector<DenseLayer>> blocks_;
  std::vector<Transition> transitions_;
  nn::Linear classifier_{nullptr};
};

}  // namespace

std::shared_ptr<Model> make_densenet201(int classes) { return std::make_shared<DenseNet>(classes); }

int64_t imagenet_side(const std::string& model) { return model == "inception_v4" ? 299 : 224; }

}  // namespace testbed
