// Inception-v4 (timm's inception_v4): its blocks written as data (branches of convolutions,
// pools and forks), from which both the module and its layers' costs are built.
#include "training/models/imagenet.h"

#include <vector>

#include <torch/torch.h>

namespace testbed {
namespace {

namespace nn = torch::nn;

// A convolution (no bias), its batch norm and ReLU: `out` channels, a kh x kw kernel.
struct InceptionConv {
  int64_t out, kh, kw, stride = 1, pad_h = 0, pad_w = 0;
};
InceptionConv square_conv(int64_t out, int64_t k, int64_t stride = 1, int64_t pad = 0) {
  return {out, k, k, stride, pad, pad};
}
InceptionConv row_conv(int64_t out, int64_t k) { return {out, 1, k, 1, 0, k / 2}; }     // 1 x k, same size
InceptionConv column_conv(int64_t out, int64_t k) { return {out, k, 1, 1, k / 2, 0}; }  // k x 1, same size

enum class Pool { None, Max, Average };  // Max: 3 x 3 stride 2; Average: 3 x 3 stride 1, padded, pads not counted

// A branch: an optional pool, a chain of convolutions, then optionally a fork of two
// convolutions on the chain's output whose outputs are concatenated (Inception-C's 1 x 3 / 3 x 1).
struct InceptionBranch {
  Pool pool = Pool::None;
  std::vector<InceptionConv> chain;
  std::vector<InceptionConv> fork;
};
using InceptionBlock = std::vector<InceptionBranch>;  // branches' outputs concatenated

// Figures 3 to 9 of Szegedy et al. 2017, as timm lays them out: features.0 .. features.21.
std::vector<InceptionBlock> inception_v4_blocks() {
  std::vector<InceptionBlock> b;
  b.push_back({{Pool::None, {square_conv(32, 3, 2)}, {}}});
  b.push_back({{Pool::None, {square_conv(32, 3)}, {}}});
  b.push_back({{Pool::None, {square_conv(64, 3, 1, 1)}, {}}});
  b.push_back({{Pool::Max, {}, {}}, {Pool::None, {square_conv(96, 3, 2)}, {}}});  // Mixed_3a
  b.push_back({{Pool::None, {square_conv(64, 1), square_conv(96, 3)}, {}},        // Mixed_4a
               {Pool::None, {square_conv(64, 1), row_conv(64, 7), column_conv(64, 7), square_conv(96, 3)}, {}}});
  b.push_back({{Pool::None, {square_conv(192, 3, 2)}, {}}, {Pool::Max, {}, {}}});  // Mixed_5a
  const InceptionBlock a = {{Pool::None, {square_conv(96, 1)}, {}},
                            {Pool::None, {square_conv(64, 1), square_conv(96, 3, 1, 1)}, {}},
                            {Pool::None, {square_conv(64, 1), square_conv(96, 3, 1, 1), square_conv(96, 3, 1, 1)}, {}},
                            {Pool::Average, {square_conv(96, 1)}, {}}};
  for (int i = 0; i < 4; ++i) b.push_back(a);
  b.push_back({{Pool::None, {square_conv(384, 3, 2)}, {}},  // Reduction-A
               {Pool::None, {square_conv(192, 1), square_conv(224, 3, 1, 1), square_conv(256, 3, 2)}, {}},
               {Pool::Max, {}, {}}});
  const InceptionBlock inception_b = {
      {Pool::None, {square_conv(384, 1)}, {}},
      {Pool::None, {square_conv(192, 1), row_conv(224, 7), column_conv(256, 7)}, {}},
      {Pool::None,
       {square_conv(192, 1), column_conv(192, 7), row_conv(224, 7), column_conv(224, 7), row_conv(256, 7)},
       {}},
      {Pool::Average, {square_conv(128, 1)}, {}}};
  for (int i = 0; i < 7; ++i) b.push_back(inception_b);
  b.push_back({{Pool::None, {square_conv(192, 1), square_conv(192, 3, 2)}, {}},  // Reduction-B
               {Pool::None, {square_conv(256, 1), row_conv(256, 7), column_conv(320, 7), square_conv(320, 3, 2)}, {}},
               {Pool::Max, {}, {}}});
  const InceptionBlock c = {{Pool::None, {square_conv(256, 1)}, {}},
                            {Pool::None, {square_conv(384, 1)}, {row_conv(256, 3), column_conv(256, 3)}},
                            {Pool::None,
                             {square_conv(384, 1), column_conv(448, 3), row_conv(512, 3)},
                             {row_conv(256, 3), column_conv(256, 3)}},
                            {Pool::Average, {square_conv(256, 1)}, {}}};
  for (int i = 0; i < 3; ++i) b.push_back(c);
  return b;
}

struct InceptionUnitImpl : nn::Module {
  InceptionUnitImpl(int64_t in, const InceptionConv& c)
      : conv(register_module(
            "conv",
            nn::Conv2d(
                nn::Conv2dOptions(in, c.out, {c.kh, c.kw}).stride(c.stride).padding({c.pad_h, c.pad_w}).bias(false)))),
        bn(register_module("bn", nn::BatchNorm2d(nn::BatchNorm2dOptions(c.out).eps(1e-3)))) {}
  torch::Tensor forward(const torch::Tensor& x) { return torch::relu(bn(conv(x))); }
  nn::Conv2d conv;
  nn::BatchNorm2d bn;
};
TORCH_MODULE(InceptionUnit);

torch::Tensor apply_pool(Pool kind, const torch::Tensor& x) {
  if (kind == Pool::Max) return torch::max_pool2d(x, 3, 2);
  if (kind == Pool::Average) return torch::avg_pool2d(x, 3, 1, 1, /*ceil_mode=*/false, /*count_include_pad=*/false);
  return x;
}

class InceptionV4 : public Model {
 public:
  explicit InceptionV4(int classes) : blocks_(inception_v4_blocks()), classes_(classes) {
    auto features = register_module("features", std::make_shared<nn::Module>());
    int64_t in = 3;
    for (size_t b = 0; b < blocks_.size(); ++b) {
      auto block = features->register_module(std::to_string(b), std::make_shared<nn::Module>());
      int64_t out = 0;
      std::vector<std::vector<InceptionUnit>> chains, forks;
      for (size_t r = 0; r < blocks_[b].size(); ++r) {
        const InceptionBranch& branch = blocks_[b][r];
        auto holder = block->register_module("branch" + std::to_string(r), std::make_shared<nn::Module>());
        int64_t channels = in;
        std::vector<InceptionUnit> chain, fork;
        for (size_t j = 0; j < branch.chain.size(); ++j) {
          chain.push_back(holder->register_module(std::to_string(j), InceptionUnit(channels, branch.chain[j])));
          channels = branch.chain[j].out;
        }
        for (size_t j = 0; j < branch.fork.size(); ++j)
          fork.push_back(holder->register_module("fork" + std::to_string(j), InceptionUnit(channels, branch.fork[j])));
        if (!branch.fork.empty()) channels = branch.fork[0].out + branch.fork[1].out;
        out += channels;
        chains.push_back(chain);
        forks.push_back(fork);
      }
      chains_.push_back(chains);
      forks_.push_back(forks);
      in = out;
    }
    last_linear_ = register_module("last_linear", nn::Linear(in, classes));
  }

  torch::Tensor forward(const torch::Tensor& x) override { return classify(features(x)); }
  torch::Tensor features(const torch::Tensor& x) override {
    auto h = x;
    for (size_t b = 0; b < blocks_.size(); ++b) {
      std::vector<torch::Tensor> outs;
      for (size_t r = 0; r < blocks_[b].size(); ++r) {
        auto y = apply_pool(blocks_[b][r].pool, h);
        for (auto& unit : chains_[b][r]) y = unit->forward(y);
        if (!forks_[b][r].empty()) y = torch::cat({forks_[b][r][0]->forward(y), forks_[b][r][1]->forward(y)}, 1);
        outs.push_back(y);
      }
      h = outs.size() == 1 ? outs[0] : torch::cat(outs, 1);
    }
    return torch::adaptive_avg_pool2d(h, {1, 1}).flatten(1);
  }
  torch::Tensor classify(const torch::Tensor& h) override { return last_linear_(h); }

  std::vector<LayerCost> layer_costs() const override {
    std::vector<LayerCost> c;
    const bool trains = last_linear_->weight.requires_grad();
    int64_t in = 3, side = 299;
    // A unit's three layers; returns its output side (the blocks keep images square_conv).
    auto unit = [&](const std::string& p, int64_t channels, const InceptionConv& v, int64_t at) {
      c.push_back(convolution_cost(p + ".conv", Conv2dShape{channels, v.out, v.kh, v.kw, v.stride, v.pad_h, v.pad_w},
                                   at, at, trains));
      const int64_t after = convolution_side(at, v.kh, v.stride, v.pad_h);
      c.push_back(batch_norm_cost(p + ".bn", v.out, after, trains));
      const double elements = static_cast<double>(v.out * after * after);
      c.push_back(elementwise_cost(p + ".relu", elements, elements));
      return after;
    };
    for (size_t b = 0; b < blocks_.size(); ++b) {
      const std::string block = "features." + std::to_string(b) + ".";
      int64_t out = 0, out_side = side;
      for (size_t r = 0; r < blocks_[b].size(); ++r) {
        const InceptionBranch& branch = blocks_[b][r];
        const std::string name = block + "branch" + std::to_string(r);
        int64_t channels = in, at = side;
        if (branch.pool != Pool::None) {
          const int64_t pooled = branch.pool == Pool::Max ? convolution_side(side, 3, 2, 0) : side;
          c.push_back(elementwise_cost(name + ".pool", static_cast<double>(in * side * side),
                                       static_cast<double>(in * pooled * pooled)));
          at = pooled;
        }
        for (size_t j = 0; j < branch.chain.size(); ++j) {
          at = unit(name + "." + std::to_string(j), channels, branch.chain[j], at);
          channels = branch.chain[j].out;
        }
        if (!branch.fork.empty()) {
          unit(name + ".fork0", channels, branch.fork[0], at);
          unit(name + ".fork1", channels, branch.fork[1], at);
          channels = branch.fork[0].out + branch.fork[1].out;
          const double forked = static_cast<double>(channels * at * at);
          c.push_back(elementwise_cost(name + ".cat", forked, forked, 1, false));
        }
        out += channels;
        out_side = at;
      }
      if (blocks_[b].size() > 1) {
        const double joined = static_cast<double>(out * out_side * out_side);
        c.push_back(elementwise_cost(block + "cat", joined, joined, 1, false));
      }
      in = out;
      side = out_side;
    }
    const double wide = static_cast<double>(in * side * side);
    c.push_back(elementwise_cost("global_pool", wide, static_cast<double>(in)));
    c.push_back(linear_cost("last_linear", static_cast<double>(in), classes_, 1, true, trains));
    c.push_back(loss_cost(classes_));
    return c;
  }

 private:
  std::vector<InceptionBlock> blocks_;
  int classes_;
  std::vector<std::vector<std::vector<InceptionUnit>>> chains_, forks_;  // [block][branch][unit]
  nn::Linear last_linear_{nullptr};
};

}  // namespace

std::shared_ptr<Model> make_inception_v4(int classes) { return std::make_shared<InceptionV4>(classes); }

}  // namespace testbed
