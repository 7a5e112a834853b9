// The model zoo's real shapes: parameter counts and forward FLOPs against the published figures
// (torchvision's model tables), each layer kind's cost against a hand count, and the modules
// training for real on small inputs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <torch/torch.h>

#include "training/models/layer_cost.h"
#include "training/models/resnet.h"

namespace testbed {
namespace {

int64_t parameters(Model& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

// Multiply-adds of the convolutions and the classifier: what model tables call "GFLOPS".
double macs(const Model& m) {
  double flops = 0;
  for (const auto& layer : m.layer_costs()) flops += layer.flops;  // elementwise layers count 0
  return flops / 2;
}

// torchvision's ResNet table (ImageNet, 224 x 224, 1000 classes): parameters exactly, GFLOPS
// (multiply-adds) to the two decimals it prints.
struct Published {
  int depth;
  int64_t parameters;
  double gmacs;
};
const std::vector<Published> kTorchvision = {
    {18, 11689512, 1.81}, {34, 21797672, 3.66}, {50, 25557032, 4.09}, {101, 44549160, 7.80}, {152, 60192808, 11.51}};

TEST(ResNet, ParametersAndFlopsAreTorchvisions) {
  for (const auto& p : kTorchvision) {
    SCOPED_TRACE("resnet" + std::to_string(p.depth));
    auto m = make_resnet({p.depth, 1000, 3, 224, true});
    EXPECT_EQ(parameters(*m), p.parameters);
    EXPECT_NEAR(macs(*m) / 1e9, p.gmacs, 0.006);
    // The costs account for every parameter once (weights read by the compute model).
    double weights = 0;
    for (const auto& layer : m->layer_costs()) weights += layer.weights;
    EXPECT_EQ(static_cast<int64_t>(weights), p.parameters);
  }
}

// The stem of ResNet-50 by hand: 64 filters of 3 x 7 x 7 over a 112 x 112 output (stride 2,
// padding 3 on 224), then batch norm of 64 x 112 x 112 with a scale and shift a channel.
TEST(ResNet, StemAndBottleneckLayersByHand) {
  auto m = make_resnet({50, 1000, 3, 224, true});
  const auto c = m->layer_costs();
  ASSERT_EQ(c[0].name, "conv1");
  EXPECT_EQ(c[0].flops, 2.0 * 64 * 112 * 112 * 3 * 7 * 7);
  EXPECT_EQ(c[0].weights, 64.0 * 3 * 7 * 7);
  EXPECT_EQ(c[0].inputs, 3.0 * 224 * 224);
  EXPECT_EQ(c[0].outputs, 64.0 * 112 * 112);
  EXPECT_EQ(c[1].name, "bn1");
  EXPECT_EQ(c[1].weights, 128.0);
  EXPECT_EQ(c[1].flops, 0.0);
  EXPECT_EQ(c[3].name, "maxpool");
  EXPECT_EQ(c[3].outputs, 64.0 * 56 * 56);
  // layer2.0: 1 x 1 256 -> 128 on 56 x 56, the 3 x 3 at stride 2 to 28 x 28, 1 x 1 to 512, and
  // the projection 256 -> 512 at stride 2.
  auto find = [&](const std::string& name) {
    for (const auto& l : c)
      if (l.name == name) return l;
    ADD_FAILURE() << "no layer " << name;
    return LayerCost{};
  };
  EXPECT_EQ(find("layer2.0.conv1").flops, 2.0 * 128 * 56 * 56 * 256);
  EXPECT_EQ(find("layer2.0.conv2").flops, 2.0 * 128 * 28 * 28 * 128 * 9);
  EXPECT_EQ(find("layer2.0.conv3").flops, 2.0 * 512 * 28 * 28 * 128);
  EXPECT_EQ(find("layer2.0.downsample.0").flops, 2.0 * 512 * 28 * 28 * 256);
  EXPECT_EQ(find("layer2.0.downsample.1").weights, 2.0 * 512);
  EXPECT_EQ(find("fc").flops, 2.0 * 2048 * 1000);
}

// A grouped, strided, padded convolution: 8 -> 16 channels, 3 x 3, stride 2, padding 1, 4 groups
// on 9 x 9: a 5 x 5 output, each element a dot product over 8 / 4 x 3 x 3 = 18 inputs.
TEST(ResNet, GroupedStridedConvolutionByHand) {
  EXPECT_EQ(convolution_side(9, 3, 2, 1), 5);
  const LayerCost c = convolution_cost("g", 8, 16, 3, 2, 1, 4, 9, true, true);
  EXPECT_EQ(c.flops, 2.0 * 16 * 25 * 18);
  EXPECT_EQ(c.weights, 16.0 * 18 + 16);
  EXPECT_EQ(c.tensors, 2);
  EXPECT_EQ(c.inputs, 8.0 * 81);
  EXPECT_EQ(c.outputs, 16.0 * 25);
}

// What `workload.model: resnetNN` builds: the CIFAR form on 28 x 28 x 1 with 10 classes, whose
// parameters are torchvision's less its 7 x 7 x 3 stem and 1000-way head, plus a 3 x 3 x 1 stem
// and a 10-way head.
TEST(ResNet, ScenarioModelsAreTheCifarForm) {
  for (const auto& p : kTorchvision) {
    const int64_t features = p.depth >= 50 ? 2048 : 512;
    const int64_t expected = p.parameters - 64 * 3 * 49 + 64 * 9 - (features * 1000 + 1000) + (features * 10 + 10);
    auto m = make_image_model("resnet" + std::to_string(p.depth), 10);
    EXPECT_EQ(parameters(*m), expected) << p.depth;
  }
  AdapterConfig lora;
  lora.kind = "lora";
  EXPECT_THROW(make_image_model("resnet18", 10, lora), std::invalid_argument);
}

// The CIFAR form on Fashion-MNIST's 28 x 28 x 1 trains: the logits' shape, a gradient for every
// parameter a layer of the costs owns, and a few SGD steps on one batch lower its loss.
TEST(ResNet, CifarStemTrainsOnSmallImages) {
  torch::manual_seed(0);
  auto m = make_resnet({18, 10, 1, 28, false});
  std::vector<std::string> names;
  for (const auto& p : m->named_parameters()) names.push_back(p.key());
  TrainingWork work;
  work.layers = m->layer_costs();
  EXPECT_NO_THROW(gradient_layers(work, names));
  const auto x = torch::randn({8, 1, 28, 28});
  const auto y = torch::arange(8, torch::kInt64) % 10;
  EXPECT_EQ(m->forward(x).sizes(), (std::vector<int64_t>{8, 10}));
  EXPECT_EQ(m->features(x).size(1), 512);
  torch::optim::SGD sgd(m->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  double first = 0, last = 0;
  for (int step = 0; step < 6; ++step) {
    sgd.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(m->forward(x), y);
    loss.backward();
    sgd.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, first);
  EXPECT_THROW(make_resnet({20, 10, 1, 28, false}), std::invalid_argument);
}

}  // namespace
}  // namespace testbed
