// The model zoo's real shapes: parameter counts and forward FLOPs against the published figures
// (torchvision's model tables), each layer kind's cost against a hand count, and the modules
// training for real on small inputs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <torch/torch.h>

#include "training/models/imagenet.h"
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
  lora.kind = AdapterKind::Lora;
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

// The papers' other ImageNet models against the published tables: torchvision's densenet201
// (20 013 928 parameters, 4.29 GFLOPS) and vit_b_16 (86 567 656, 17.56), exactly to the two
// decimals printed; timm's inception_v4 (42 679 816) and its multiply-adds against the hand
// counts below (timm's table prints 12.28 GMACs, 0.2 % more: its counter's own choice of what
// to add, not matched here). Every parameter is some layer's weights, once. Slips caught: a
// dense layer fed only the last map (not the concatenation), a transition not halving, a
// factorised 1 x 7 written 7 x 7, a branch's pool or fork left out, the class token or the
// positions not counted, the MLP 4 C wide written 3 C.
int64_t inception_v4_by_hand() {
  // Figures 3 to 9: each convolution's in x out x kh x kw, and its batch norm's 2 out.
  const int64_t stem = 3 * 32 * 9 + 32 * 32 * 9 + 32 * 64 * 9 + 2 * (32 + 32 + 64);
  const int64_t mixed_3a = 64 * 96 * 9 + 2 * 96;
  const int64_t mixed_4a =
      160 * 64 + 64 * 96 * 9 + 160 * 64 + 64 * 64 * 7 + 64 * 64 * 7 + 64 * 96 * 9 + 2 * (64 + 96 + 64 + 64 + 64 + 96);
  const int64_t mixed_5a = 192 * 192 * 9 + 2 * 192;
  const int64_t a = 384 * 96 + 384 * 64 + 64 * 96 * 9 + 384 * 64 + 64 * 96 * 9 + 96 * 96 * 9 + 384 * 96 +
                    2 * (96 + 64 + 96 + 64 + 96 + 96 + 96);
  const int64_t reduction_a = 384 * 384 * 9 + 384 * 192 + 192 * 224 * 9 + 224 * 256 * 9 + 2 * (384 + 192 + 224 + 256);
  const int64_t b = 1024 * 384 + 1024 * 192 + 192 * 224 * 7 + 224 * 256 * 7 + 1024 * 192 + 192 * 192 * 7 +
                    192 * 224 * 7 + 224 * 224 * 7 + 224 * 256 * 7 + 1024 * 128 +
                    2 * (384 + 192 + 224 + 256 + 192 + 192 + 224 + 224 + 256 + 128);
  const int64_t reduction_b = 1024 * 192 + 192 * 192 * 9 + 1024 * 256 + 256 * 256 * 7 + 256 * 320 * 7 + 320 * 320 * 9 +
                              2 * (192 + 192 + 256 + 256 + 320 + 320);
  const int64_t c = 1536 * 256 + 1536 * 384 + 2 * 384 * 256 * 3 + 1536 * 384 + 384 * 448 * 3 + 448 * 512 * 3 +
                    2 * 512 * 256 * 3 + 1536 * 256 + 2 * (256 + 384 + 256 + 256 + 384 + 448 + 512 + 256 + 256 + 256);
  return stem + mixed_3a + mixed_4a + mixed_5a + 4 * a + reduction_a + 7 * b + reduction_b + 3 * c + 1536 * 1000 + 1000;
}

// Multiply-adds: each convolution's weights times its output positions (299 -> 149, 147, 147,
// 73, 71, 35, 17, 8), and the classifier's.
double inception_v4_macs_by_hand() {
  auto sq = [](double side) { return side * side; };
  return 3 * 32 * 9 * sq(149) + 32 * 32 * 9 * sq(147) + 32 * 64 * 9 * sq(147) + 64 * 96 * 9 * sq(73) +
         (160 * 64 + 160 * 64 + 2 * 64 * 64 * 7) * sq(73) + 2 * 64 * 96 * 9 * sq(71) + 192 * 192 * 9 * sq(35) +
         4.0 * (384 * 96 + 384 * 64 + 64 * 96 * 9 + 384 * 64 + 64 * 96 * 9 + 96 * 96 * 9 + 384 * 96) * sq(35) +
         (384 * 192 + 192 * 224 * 9) * sq(35) + (384 * 384 * 9 + 224 * 256 * 9) * sq(17) +
         7.0 *
             (1024 * 384 + 1024 * 192 + 192 * 224 * 7 + 224 * 256 * 7 + 1024 * 192 + 192 * 192 * 7 + 192 * 224 * 7 +
              224 * 224 * 7 + 224 * 256 * 7 + 1024 * 128) *
             sq(17) +
         (1024 * 192 + 1024 * 256 + 256 * 256 * 7 + 256 * 320 * 7) * sq(17) + (192 * 192 * 9 + 320 * 320 * 9) * sq(8) +
         3.0 *
             (1536 * 256 + 1536 * 384 + 2 * 384 * 256 * 3 + 1536 * 384 + 384 * 448 * 3 + 448 * 512 * 3 +
              2 * 512 * 256 * 3 + 1536 * 256) *
             sq(8) +
         1536.0 * 1000;
}

TEST(ImageNetZoo, ParametersAndMultiplyAddsArePublished) {
  EXPECT_EQ(inception_v4_by_hand(), 42679816);
  struct Case {
    const char* name;
    int64_t parameters;
    double gmacs, tolerance;
  };
  for (const Case& p : {Case{"densenet201", 20013928, 4.29, 0.005}, Case{"vit_b_16", 86567656, 17.56, 0.005},
                        Case{"inception_v4", 42679816, inception_v4_macs_by_hand() / 1e9, 1e-12}}) {
    SCOPED_TRACE(p.name);
    auto m = make_imagenet_model(p.name, 1000);
    EXPECT_EQ(parameters(*m), p.parameters);
    EXPECT_NEAR(macs(*m) / 1e9, p.gmacs, p.tolerance);
    double weights = 0;
    for (const auto& layer : m->layer_costs()) weights += layer.weights;
    EXPECT_EQ(static_cast<int64_t>(weights), p.parameters);
    std::vector<std::string> names;
    for (const auto& q : m->named_parameters()) names.push_back(q.key());
    TrainingWork work;
    work.layers = m->layer_costs();
    EXPECT_NO_THROW(gradient_layers(work, names));  // every parameter's gradient has a layer
  }
  EXPECT_EQ(imagenet_side("inception_v4"), 299);
  EXPECT_EQ(imagenet_side("densenet201"), 224);
}

// Layers by hand: DenseNet's last layer of block 3 sees 256 + 47 x 32 = 1760 channels at 14 x 14;
// Inception-B's 1 x 7 (192 -> 224) at 17 x 17 reads 7 inputs a channel; ViT's attention over 197
// tokens (12 heads) and its 16 x 16 stride-16 patch embedding.
TEST(ImageNetZoo, LayersByHand) {
  auto find = [](const std::vector<LayerCost>& c, const std::string& name) {
    for (const auto& l : c)
      if (l.name == name) return l;
    ADD_FAILURE() << "no layer " << name;
    return LayerCost{};
  };
  const auto dense = make_densenet201(1000)->layer_costs();
  const LayerCost last = find(dense, "features.denseblock3.denselayer48.conv1");
  EXPECT_EQ(last.inputs, 1760.0 * 14 * 14);
  EXPECT_EQ(last.flops, 2.0 * 128 * 14 * 14 * 1760);
  EXPECT_EQ(find(dense, "features.transition3.conv").weights, 1792.0 * 896);
  EXPECT_EQ(find(dense, "classifier").weights, 1920.0 * 1000 + 1000);

  const auto inception = make_inception_v4(1000)->layer_costs();
  const LayerCost row = find(inception, "features.11.branch1.1.conv");  // the first Inception-B's 1 x 7
  EXPECT_EQ(row.flops, 2.0 * 224 * 17 * 17 * 192 * 7);
  EXPECT_EQ(row.gemm_k, 192.0 * 7);
  EXPECT_EQ(find(inception, "features.21.branch2.fork1.conv").flops, 2.0 * 256 * 8 * 8 * 512 * 3);
  EXPECT_EQ(find(inception, "features.10.branch2.pool").outputs, 384.0 * 17 * 17);  // Reduction-A's max pool

  const auto vit = make_vit_b_16(1000)->layer_costs();
  EXPECT_EQ(find(vit, "conv_proj").flops, 2.0 * 768 * 196 * 3 * 16 * 16);
  EXPECT_EQ(find(vit, "encoder.layers.11.self_attention.qk").flops, 2.0 * 197 * 197 * 768);
  EXPECT_EQ(find(vit, "encoder.layers.11.self_attention.softmax").outputs, 12.0 * 197 * 197);
  EXPECT_EQ(find(vit, "encoder.layers.0.mlp.0").flops, 2.0 * 197 * 768 * 3072);
}

// The modules run: logits [B, 1000] from images of their input side, and backward reaches every
// parameter (two images, so batch norm has a batch).
TEST(ImageNetZoo, ModulesRunAndTrain) {
  torch::manual_seed(3);
  for (const std::string name : {"densenet201", "inception_v4", "vit_b_16"}) {
    SCOPED_TRACE(name);
    auto m = make_imagenet_model(name, 1000);
    // The convolutional ones at a smaller side (their pools are adaptive), to keep the test short;
    // ViT's 197 positions fix its side.
    const int64_t side = name == "vit_b_16"      ? 224
                         : name == "densenet201" ? 64
                                                 : 139,
                  batch = name == "vit_b_16" ? 1 : 2;
    const auto x = torch::randn({batch, 3, side, side});
    const auto logits = m->forward(x);
    EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{batch, 1000}));
    torch::nn::functional::cross_entropy(logits, torch::tensor({1, 7}, torch::kInt64).slice(0, 0, batch)).backward();
    for (const auto& p : m->named_parameters()) EXPECT_TRUE(p.value().grad().defined()) << p.key();
  }
}

}  // namespace
}  // namespace testbed
