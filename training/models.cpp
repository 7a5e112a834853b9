// MLP and small CNN for 28x28 grey images.
#include "training/models.h"

#include <stdexcept>

#include <torch/torch.h>

namespace testbed {
namespace {

class Mlp : public Model {
 public:
  explicit Mlp(int classes)
      : fc1_(register_module("fc1", torch::nn::Linear(784, 256))),
        fc2_(register_module("fc2", torch::nn::Linear(256, 128))),
        fc3_(register_module("fc3", torch::nn::Linear(128, classes))),
        classes_(classes) {}

  torch::Tensor forward(const torch::Tensor& x) override {
    auto h = torch::relu(fc1_(x.flatten(1)));
    return fc3_(torch::relu(fc2_(h)));
  }
  double forward_flops_per_sample() const override { return 2.0 * (784 * 256 + 256 * 128 + 128 * classes_); }

 private:
  torch::nn::Linear fc1_, fc2_, fc3_;
  int classes_;
};

// Two 5x5 convolutions with pooling, then two dense layers (~80k parameters).
class Cnn : public Model {
 public:
  explicit Cnn(int classes)
      : conv1_(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 16, 5)))),
        conv2_(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 5)))),
        fc1_(register_module("fc1", torch::nn::Linear(32 * 4 * 4, 128))),
        fc2_(register_module("fc2", torch::nn::Linear(128, classes))),
        classes_(classes) {}

  torch::Tensor forward(const torch::Tensor& x) override {
    auto h = torch::max_pool2d(torch::relu(conv1_(x)), 2);  // 16 x 12 x 12
    h = torch::max_pool2d(torch::relu(conv2_(h)), 2);       // 32 x 4 x 4
    return fc2_(torch::relu(fc1_(h.flatten(1))));
  }
  double forward_flops_per_sample() const override {
    double conv1 = 16.0 * 24 * 24 * (1 * 5 * 5);
    double conv2 = 32.0 * 8 * 8 * (16 * 5 * 5);
    double dense = 512.0 * 128 + 128.0 * classes_;
    return 2.0 * (conv1 + conv2 + dense);
  }

 private:
  torch::nn::Conv2d conv1_, conv2_;
  torch::nn::Linear fc1_, fc2_;
  int classes_;
};

}  // namespace

std::shared_ptr<Model> make_image_model(const std::string& name, int classes) {
  if (name == "mlp") return std::make_shared<Mlp>(classes);
  if (name == "cnn") return std::make_shared<Cnn>(classes);
  throw std::invalid_argument("unknown image model '" + name + "'");
}

}  // namespace testbed
