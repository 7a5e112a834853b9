// ResNet-18/34/50/101/152: torchvision's module names and shapes, and their layers' costs.
#include "training/models/resnet.h"

#include <stdexcept>
#include <vector>

#include <torch/torch.h>

namespace testbed {

namespace {

namespace nn = torch::nn;

nn::Conv2d resnet_conv(int64_t in, int64_t out, int64_t k, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(k / 2).bias(false));
}

// A residual block: basic (two 3 x 3 convolutions) or bottleneck (1 x 1 down to `width`, 3 x 3
// at `stride`, 1 x 1 up to 4 width), each convolution followed by batch norm, and a projection
// (1 x 1 convolution and batch norm) on the shortcut where the shape changes.
class ResidualBlock : public nn::Module {
 public:
  ResidualBlock(int64_t in, int64_t width, int64_t stride, bool bottleneck)
      : in_(in), width_(width), stride_(stride), bottleneck_(bottleneck), out_(bottleneck ? 4 * width : width) {
    if (bottleneck_) {
      conv1_ = register_module("conv1", resnet_conv(in, width, 1, 1));
      conv2_ = register_module("conv2", resnet_conv(width, width, 3, stride));
      conv3_ = register_module("conv3", resnet_conv(width, out_, 1, 1));
      bn3_ = register_module("bn3", nn::BatchNorm2d(out_));
    } else {
      conv1_ = register_module("conv1", resnet_conv(in, width, 3, stride));
      conv2_ = register_module("conv2", resnet_conv(width, width, 3, 1));
    }
    bn1_ = register_module("bn1", nn::BatchNorm2d(width));
    bn2_ = register_module("bn2", nn::BatchNorm2d(bottleneck_ ? width : out_));
    if (stride != 1 || in != out_) {
      // torchvision's downsample.0 and downsample.1.
      down_conv_ = resnet_conv(in, out_, 1, stride);
      down_bn_ = nn::BatchNorm2d(out_);
      downsample_ = register_module("downsample", nn::Sequential(down_conv_, down_bn_));
    }
  }

  // Its convolutions' taps, named under `prefix` as layer_costs names them, in forward order.
  void name_taps(const std::string& prefix) {
    tap1_ = conv_tap(prefix + "conv1", conv1_);
    tap2_ = conv_tap(prefix + "conv2", conv2_);
    if (bottleneck_) tap3_ = conv_tap(prefix + "conv3", conv3_);
    if (!downsample_.is_empty()) tap_down_ = conv_tap(prefix + "downsample.0", down_conv_);
  }
  void append_taps(std::vector<LayerTap*>& taps) {
    taps.push_back(&tap1_);
    taps.push_back(&tap2_);
    if (bottleneck_) taps.push_back(&tap3_);
    if (!downsample_.is_empty()) taps.push_back(&tap_down_);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    auto run = [](nn::Conv2d& conv) { return [&conv](const torch::Tensor& in) { return conv->forward(in); }; };
    auto h = torch::relu(bn1_(tap1_(x, run(conv1_))));
    h = bn2_(tap2_(h, run(conv2_)));
    if (bottleneck_) h = bn3_(tap3_(torch::relu(h), run(conv3_)));
    const auto shortcut = downsample_.is_empty() ? x : down_bn_(tap_down_(x, run(down_conv_)));
    return torch::relu(h + shortcut);
  }

  // Appends the block's layers in forward order; returns the output side.
  int64_t append_costs(std::vector<LayerCost>& c, const std::string& p, int64_t side) const {
    const bool trains = conv1_->weight.requires_grad();
    // Convolution `n` (k x k, in -> out at stride) and its batch norm, then a ReLU unless last.
    auto unit = [&](int n, int64_t in, int64_t out, int64_t k, int64_t stride, int64_t at, bool relu) {
      const std::string i = std::to_string(n);
      c.push_back(convolution_cost(p + "conv" + i, in, out, k, stride, k / 2, 1, at, false, trains));
      const int64_t after = convolution_side(at, k, stride, k / 2);
      c.push_back(batch_norm_cost(p + "bn" + i, out, after, trains));
      const double elements = static_cast<double>(out * after * after);
      if (relu) c.push_back(elementwise_cost(p + "relu" + i, elements, elements));
      return after;
    };
    int64_t at = side;
    if (bottleneck_) {
      at = unit(1, in_, width_, 1, 1, at, true);
      at = unit(2, width_, width_, 3, stride_, at, true);
      at = unit(3, width_, out_, 1, 1, at, false);
    } else {
      at = unit(1, in_, width_, 3, stride_, at, true);
      at = unit(2, width_, out_, 3, 1, at, false);
    }
    if (!downsample_.is_empty()) {
      c.push_back(convolution_cost(p + "downsample.0", in_, out_, 1, stride_, 0, 1, side, false, trains));
      c.push_back(batch_norm_cost(p + "downsample.1", out_, at, trains));
    }
    const double out = static_cast<double>(out_ * at * at);
    c.push_back(elementwise_cost(p + "add", 2 * out, out, 1, false));
    c.push_back(elementwise_cost(p + "relu", out, out));
    return at;
  }

  int64_t out_channels() const { return out_; }

 private:
  int64_t in_, width_, stride_;
  bool bottleneck_;
  int64_t out_;
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr};
  nn::Sequential downsample_{nullptr};
  nn::Conv2d down_conv_{nullptr};
  nn::BatchNorm2d down_bn_{nullptr};
  LayerTap tap1_, tap2_, tap3_, tap_down_;
};

std::vector<int> blocks_per_stage(int depth) {
  switch (depth) {
    case 18:
      return {2, 2, 2, 2};
    case 34:
      return {3, 4, 6, 3};
    case 50:
      return {3, 4, 6, 3};
    case 101:
      return {3, 4, 23, 3};
    case 152:
      return {3, 8, 36, 3};
  }
  throw std::invalid_argument("ResNet depth " + std::to_string(depth) + " is none of 18, 34, 50, 101, 152");
}

class ResNet : public Model {
 public:
  explicit ResNet(const ResNetShape& shape) : shape_(shape) {
    const bool bottleneck = shape.depth >= 50;
    stem_ = register_module("conv1",
                            shape.imagenet_stem
                                ? nn::Conv2d(nn::Conv2dOptions(shape.channels, 64, 7).stride(2).padding(3).bias(false))
                                : resnet_conv(shape.channels, 64, 3, 1));
    bn_ = register_module("bn1", nn::BatchNorm2d(64));
    int64_t in = 64;
    const auto counts = blocks_per_stage(shape.depth);
    for (size_t s = 0; s < counts.size(); ++s) {
      auto stage = register_module("layer" + std::to_string(s + 1), nn::ModuleList());
      const int64_t width = 64 << s;
      for (int b = 0; b < counts[s]; ++b) {
        auto block = std::make_shared<ResidualBlock>(in, width, b == 0 && s > 0 ? 2 : 1, bottleneck);
        block->name_taps("layer" + std::to_string(s + 1) + "." + std::to_string(b) + ".");
        in = block->out_channels();
        stage->push_back(block);
        blocks_.push_back(block);
      }
      stages_.push_back(stage);
    }
    fc_ = register_module("fc", nn::Linear(in, shape.classes));
    stem_tap_ = conv_tap("conv1", stem_);
    fc_tap_ = linear_tap("fc", fc_);
  }

  torch::Tensor forward(const torch::Tensor& x) override { return classify(features(x)); }
  torch::Tensor features(const torch::Tensor& x) override {
    auto h = torch::relu(bn_(stem_tap_(x, [this](const torch::Tensor& in) { return stem_->forward(in); })));
    if (shape_.imagenet_stem) h = torch::max_pool2d(h, 3, 2, 1);
    for (const auto& b : blocks_) h = b->forward(h);
    return torch::adaptive_avg_pool2d(h, {1, 1}).flatten(1);
  }
  torch::Tensor classify(const torch::Tensor& h) override {
    return fc_tap_(h, [this](const torch::Tensor& in) { return fc_->forward(in); });
  }
  std::vector<LayerTap*> layer_taps() override {
    std::vector<LayerTap*> taps{&stem_tap_};
    for (auto& b : blocks_) b->append_taps(taps);
    taps.push_back(&fc_tap_);
    return taps;
  }

  std::vector<LayerCost> layer_costs() const override {
    std::vector<LayerCost> c;
    const bool trains = stem_->weight.requires_grad();
    const int64_t k = shape_.imagenet_stem ? 7 : 3, stride = shape_.imagenet_stem ? 2 : 1;
    c.push_back(convolution_cost("conv1", shape_.channels, 64, k, stride, k / 2, 1, shape_.side, false, trains));
    int64_t side = convolution_side(shape_.side, k, stride, k / 2);
    c.push_back(batch_norm_cost("bn1", 64, side, trains));
    c.push_back(elementwise_cost("relu", 64.0 * side * side, 64.0 * side * side));
    if (shape_.imagenet_stem) {
      const int64_t pooled = convolution_side(side, 3, 2, 1);
      c.push_back(elementwise_cost("maxpool", 64.0 * side * side, 64.0 * pooled * pooled));
      side = pooled;
    }
    size_t b = 0;
    for (size_t s = 0; s < stages_.size(); ++s) {
      for (size_t j = 0; j < stages_[s]->size(); ++j, ++b)
        side = blocks_[b]->append_costs(c, "layer" + std::to_string(s + 1) + "." + std::to_string(j) + ".", side);
    }
    const double channels = static_cast<double>(fc_->options.in_features());
    c.push_back(elementwise_cost("avgpool", channels * side * side, channels));
    c.push_back(linear_cost("fc", channels, shape_.classes, 1, true, fc_->weight.requires_grad()));
    c.push_back(loss_cost(shape_.classes));
    return c;
  }

 private:
  ResNetShape shape_;
  nn::Conv2d stem_{nullptr};
  nn::BatchNorm2d bn_{nullptr};
  std::vector<nn::ModuleList> stages_;
  std::vector<std::shared_ptr<ResidualBlock>> blocks_;
  nn::Linear fc_{nullptr};
  LayerTap stem_tap_, fc_tap_;
};

}  // namespace

std::shared_ptr<Model> make_resnet(const ResNetShape& shape) {
  blocks_per_stage(shape.depth);  // a clear error before any module is built
  if (shape.classes < 1 || shape.channels < 1 || shape.side < 1)
    throw std::invalid_argument("ResNet: classes, channels and side must be positive");
  return std::make_shared<ResNet>(shape);
}

}  // namespace testbed
