// ViT-B/16: torchvision's module layout, attention written out (this LibTorch, 1.13, has no
// scaled_dot_product_attention), and its layers' costs.
#include "training/models/imagenet.h"

#include <cmath>
#include <vector>

#include <torch/torch.h>

#include "training/models/gelu.h"
#include "training/models/layer_norm.h"
#include "training/models/softmax.h"

namespace testbed {
namespace {

namespace nn = torch::nn;

constexpr int64_t kSide = 224, kPatch = 16, kWidth = 768, kHeads = 12, kMlp = 3072, kLayers = 12;
constexpr int64_t kPatches = (kSide / kPatch) * (kSide / kPatch), kTokens = kPatches + 1;
constexpr double kNormEps = 1e-6;

// A pre-norm block: x + attention(ln_1(x)), then x + mlp(ln_2(x)).
struct VitBlockImpl : nn::Module {
  VitBlockImpl()
      : ln_1(register_module("ln_1", LayerNorm(kWidth, kNormEps))),
        ln_2(register_module("ln_2", LayerNorm(kWidth, kNormEps))) {
    auto attention = register_module("self_attention", std::make_shared<nn::Module>());
    in_proj = attention->register_module("in_proj", nn::Linear(kWidth, 3 * kWidth));
    out_proj = attention->register_module("out_proj", nn::Linear(kWidth, kWidth));
    auto mlp = register_module("mlp", std::make_shared<nn::Module>());
    fc1 = mlp->register_module("0", nn::Linear(kWidth, kMlp));
    fc2 = mlp->register_module("3", nn::Linear(kMlp, kWidth));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1), d = kWidth / kHeads;
    auto qkv = in_proj(ln_1(x)).view({B, T, 3, kHeads, d}).permute({2, 0, 3, 1, 4});  // 3, B, heads, T, d
    const auto att =
        softmax_last_dim(torch::matmul(qkv[0], qkv[1].transpose(-2, -1)) / std::sqrt(static_cast<double>(d)));
    const auto merged = torch::matmul(att, qkv[2]).transpose(1, 2).contiguous().view({B, T, kWidth});
    const auto h = x + out_proj(merged);
    return h + fc2(exact_gelu(fc1(ln_2(h))));
  }

  void append_costs(std::vector<LayerCost>& c, const std::string& p) const {
    const double T = kTokens, C = kWidth, H = kMlp;
    c.push_back(norm_cost(p + "ln_1", T, C));
    c.push_back(linear_cost(p + "self_attention.in_proj", C, 3 * C, T, true, true));
    append_attention_costs(c, p + "self_attention", T, C, kHeads, /*causal=*/false);
    c.push_back(linear_cost(p + "self_attention.out_proj", C, C, T, true, true));
    c.push_back(elementwise_cost(p + "residual1", 2 * T * C, T * C, 1, false));
    c.push_back(norm_cost(p + "ln_2", T, C));
    c.push_back(linear_cost(p + "mlp.0", C, H, T, true, true));
    c.push_back(elementwise_cost(p + "mlp.gelu", T * H, T * H));
    c.push_back(linear_cost(p + "mlp.3", H, C, T, true, true));
    c.push_back(elementwise_cost(p + "residual2", 2 * T * C, T * C, 1, false));
  }

  LayerNorm ln_1, ln_2;
  nn::Linear in_proj{nullptr}, out_proj{nullptr}, fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(VitBlock);

class VisionTransformer : public Model {
 public:
  explicit VisionTransformer(int classes) : classes_(classes) {
    conv_proj_ = register_module("conv_proj", nn::Conv2d(nn::Conv2dOptions(3, kWidth, kPatch).stride(kPatch)));
    class_token_ = register_parameter("class_token", torch::zeros({1, 1, kWidth}));
    auto encoder = register_module("encoder", std::make_shared<nn::Module>());
    torch::NoGradGuard no_grad;
    positions_ = encoder->register_parameter("pos_embedding", torch::empty({1, kTokens, kWidth}).normal_(0.0, 0.02));
    auto layers = encoder->register_module("layers", nn::ModuleList());
    for (int64_t l = 0; l < kLayers; ++l) {
      VitBlock block;
      layers->push_back(block);
      blocks_.push_back(block);
    }
    ln_ = encoder->register_module("ln", LayerNorm(kWidth, kNormEps));
    auto heads = register_module("heads", std::make_shared<nn::Module>());
    head_ = heads->register_module("head", nn::Linear(kWidth, classes));
  }

  torch::Tensor forward(const torch::Tensor& x) override { return classify(features(x)); }
  torch::Tensor features(const torch::Tensor& x) override {
    const int64_t B = x.size(0);
    auto h = conv_proj_(x).flatten(2).transpose(1, 2);  // B, 196, C
    h = torch::cat({class_token_.expand({B, -1, -1}), h}, 1) + positions_;
    for (auto& block : blocks_) h = block->forward(h);
    return ln_(h).select(1, 0);
  }
  torch::Tensor classify(const torch::Tensor& h) override { return head_(h); }

  std::vector<LayerCost> layer_costs() const override {
    const double T = kTokens, C = kWidth, P = kPatches;
    std::vector<LayerCost> c;
    c.push_back(convolution_cost("conv_proj", 3, kWidth, kPatch, kPatch, 0, 1, kSide, true, true));
    c.push_back(elementwise_cost("patches", P * C, P * C, 1, false));           // flatten, transpose
    LayerCost token = elementwise_cost("class_token", P * C, T * C, 1, false);  // the concatenation
    token.weights = C;
    token.tensors = 1;
    token.trains = true;
    c.push_back(token);
    LayerCost positions = elementwise_cost("encoder.pos_embedding", T * C, T * C, 1, false);
    positions.weights = T * C;
    positions.tensors = 1;
    positions.trains = true;
    c.push_back(positions);
    for (size_t l = 0; l < blocks_.size(); ++l)
      blocks_[l]->append_costs(c, "encoder.layers." + std::to_string(l) + ".");
    c.push_back(norm_cost("encoder.ln", T, C));
    c.push_back(linear_cost("heads.head", C, classes_, 1, true, true));
    c.push_back(loss_cost(classes_));
    return c;
  }

 private:
  int classes_;
  nn::Conv2d conv_proj_{nullptr};
  torch::Tensor class_token_, positions_;
  std::vector<VitBlock> blocks_;
  LayerNorm ln_{nullptr};
  nn::Linear head_{nullptr};
};

}  // namespace

std::shared_ptr<Model> make_vit_b_16(int classes) { return std::make_shared<VisionTransformer>(classes); }

}  // namespace testbed
