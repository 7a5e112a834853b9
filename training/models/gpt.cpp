// A nanoGPT-style byte-level decoder. This LibTorch (1.13) has no
// scaled_dot_product_attention, so attention is written out as nanoGPT's fallback:
// softmax(q k^T / sqrt(d) masked causally) v.
#include "training/models/gpt.h"
#include "training/models/gelu.h"
#include "training/models/layer_norm.h"
#include "training/models/softmax.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <torch/torch.h>

namespace testbed {
namespace {

namespace F = torch::nn::functional;

// LayerNorm over `width` for `rows` rows: memory bound; its gradient rereads the input.
LayerCost layer_norm_cost(const std::string& name, const LayerNorm& ln, double rows, double width) {
  LayerCost c = elementwise_cost(name, rows * width, rows * width);
  c.weights = 2 * width;
  c.tensors = 2;
  c.trains = ln->weight.requires_grad();
  return c;
}

// A dropout after an op writing `elements` per sample (only when dropout is on).
void append_dropout(std::vector<LayerCost>& c, const std::string& name, double p, double elements) {
  if (p > 0) c.push_back(elementwise_cost(name, elements, elements, 1, true));
}

class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  CausalSelfAttentionImpl(const GptConfig& c)
      : heads_(c.heads),
        width_(c.width),
        dropout_(c.dropout),
        qkv_(register_module("qkv", Dense(c.width, 3 * c.width, c.adapter))),
        proj_(register_module("proj", Dense(c.width, c.width, c.adapter))),
        // True above the diagonal: position t may not attend to t' > t. Not a registered
        // buffer, so it is neither exchanged nor checkpointed.
        mask_(torch::ones({c.context, c.context}, torch::kBool).triu(1)) {}

  torch::Tensor forward(const torch::Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1), C = width_, hd = C / heads_;
    auto qkv = qkv_(x).split(C, /*dim=*/2);
    auto q = qkv[0].view({B, T, heads_, hd}).transpose(1, 2);  // [B, h, T, hd]
    auto k = qkv[1].view({B, T, heads_, hd}).transpose(1, 2);
    auto v = qkv[2].view({B, T, heads_, hd}).transpose(1, 2);
    auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hd)));
    att = att.masked_fill(mask_.slice(0, 0, T).slice(1, 0, T), -std::numeric_limits<double>::infinity());
    att = softmax_last_dim(att);
    if (dropout_ > 0) att = F::dropout(att, F::DropoutFuncOptions().p(dropout_).training(is_training()));
    auto y = torch::matmul(att, v).transpose(1, 2).contiguous().view({B, T, C});
    y = proj_(y);
    if (dropout_ > 0) y = F::dropout(y, F::DropoutFuncOptions().p(dropout_).training(is_training()));
    return y;
  }

  // q k^T and att v are products of two activations (two gradient operands each); the
  // scale, causal mask and softmax are memory-bound passes over the h x T x T scores.
  void append_costs(std::vector<LayerCost>& c, const std::string& name, double T) const {
    const double C = width_, scores = heads_ * T * T;
    qkv_->append_costs(c, name + ".qkv", T);
    LayerCost qk = elementwise_cost(name + ".qk", 2 * T * C, scores);
    qk.flops = 2 * T * T * C;  // heads x T x T x (C / heads) multiply-adds
    qk.grad_operands = 2;
    qk.gemm_k = C / heads_;  // as append_attention_costs
    qk.gemm_k_backward = T;
    c.push_back(qk);
    c.push_back(elementwise_cost(name + ".scale", scores, scores, 1, false));
    c.push_back(elementwise_cost(name + ".mask", scores, scores, 1, false));
    c.push_back(elementwise_cost(name + ".softmax", scores, scores));
    append_dropout(c, name + ".att_dropout", dropout_, scores);
    LayerCost av = elementwise_cost(name + ".av", scores + T * C, T * C);
    av.flops = 2 * T * T * C;
    av.grad_operands = 2;
    av.gemm_k = T;
    av.gemm_k_backward = C / heads_;
    c.push_back(av);
    c.push_back(elementwise_cost(name + ".merge_heads", T * C, T * C, 1, false));  // transpose().contiguous()
    proj_->append_costs(c, name + ".proj", T);
    append_dropout(c, name + ".proj_dropout", dropout_, T * C);
  }

 private:
  int64_t heads_, width_;
  double dropout_;
  Dense qkv_, proj_;
  torch::Tensor mask_;
};
TORCH_MODULE(CausalSelfAttention);

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const GptConfig& c)
      : dropout_(c.dropout),
        ln1_(register_module("ln1", LayerNorm(c.width))),
        attn_(register_module("attn", CausalSelfAttention(c))),
        ln2_(register_module("ln2", LayerNorm(c.width))),
        fc_(register_module("fc", Dense(c.width, 4 * c.width, c.adapter))),
        fc_proj_(register_module("fc_proj", Dense(4 * c.width, c.width, c.adapter))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = x + attn_(ln1_(x));
    torch::Tensor h;
    if (!cut_) {
      h = exact_gelu(fc_(ln2_(x)));
    } else if (!svd_) {  // a plain cut: the residual stream crosses, the whole feed-forward is behind
      x = cut_->cross(x);
      h = exact_gelu(fc_(ln2_(x)));
    } else {
      const int64_t C = x.size(2);
      auto z = svd_->front(ln2_(x));
      // With the residual link its input crosses too, as one tensor: one message, one gradient.
      auto crossing = cut_->cross(split_.residual ? torch::cat({x, z}, -1) : z);
      if (split_.residual) {
        x = crossing.narrow(-1, 0, C);
        z = crossing.narrow(-1, C, svd_->rank());
      } else {
        z = crossing;
      }
      h = exact_gelu(svd_->back(z));
    }
    h = fc_proj_(h);
    if (dropout_ > 0) h = F::dropout(h, F::DropoutFuncOptions().p(dropout_).training(is_training()));
    // The reference drops the split feed-forward's residual link: only its r values cross.
    return cut_ && svd_ && !split_.residual ? h : x + h;
  }

  // Cuts this block (split_cut.h): W1 = fc's weight, factored as it stands now.
  void split(const SplitConfig& config, CutValues* cut) {
    split_ = config;
    cut_ = cut;
    if (config.rank == 0) return;
    svd_ = replace_module("fc", SvdDense(fc_->weight, fc_->bias, config.rank));
    fc_ = Dense(nullptr);
  }
  // The first layer the back half runs (the cut's record names it).
  std::string back_first(const std::string& name) const { return name + (svd_ ? ".fc.u" : ".ln2"); }

  void append_costs(std::vector<LayerCost>& c, const std::string& name, double T, double C) const {
    c.push_back(layer_norm_cost(name + ".ln1", ln1_, T, C));
    attn_->append_costs(c, name + ".attn", T);
    c.push_back(elementwise_cost(name + ".residual1", 2 * T * C, T * C, 1, false));
    c.push_back(layer_norm_cost(name + ".ln2", ln2_, T, C));
    if (svd_) {
      const double r = static_cast<double>(svd_->rank());
      svd_->append_front_costs(c, name + ".fc", T);
      if (split_.residual) {  // cat before the cut, narrow after: copies of what crosses
        c.push_back(elementwise_cost(name + ".cut_cat", T * (C + r), T * (C + r), 1, false));
        c.push_back(elementwise_cost(name + ".cut_narrow", T * (C + r), T * (C + r), 2, false));
      }
      svd_->append_back_costs(c, name + ".fc", T);
    } else {
      fc_->append_costs(c, name + ".fc", T);
    }
    c.push_back(elementwise_cost(name + ".gelu", 4 * T * C, 4 * T * C));
    fc_proj_->append_costs(c, name + ".fc_proj", T);
    append_dropout(c, name + ".mlp_dropout", dropout_, T * C);
    if (!svd_ || split_.residual) c.push_back(elementwise_cost(name + ".residual2", 2 * T * C, T * C, 1, false));
  }

 private:
  double dropout_;
  LayerNorm ln1_;
  CausalSelfAttention attn_;
  LayerNorm ln2_;
  Dense fc_, fc_proj_;
  SvdDense svd_{nullptr};  // fc, once the block is cut with a rank
  SplitConfig split_;
  CutValues* cut_ = nullptr;  // the model's, once the cut falls in this block
};
TORCH_MODULE(Block);

class Gpt : public Model {
 public:
  explicit Gpt(const GptConfig& c)
      : config_(c),
        wte_(register_module("wte", torch::nn::Embedding(c.vocab, c.width))),
        wpe_(register_module("wpe", torch::nn::Embedding(c.context, c.width))),
        ln_f_(register_module("ln_f", LayerNorm(c.width))),
        head_(c.tie_embeddings ? Dense(nullptr) : register_module("head", Dense(c.width, c.vocab, c.adapter))) {
    blocks_ = register_module("blocks", torch::nn::ModuleList());
    for (int l = 0; l < c.layers; ++l) {
      Block block(c);
      blocks_->push_back(block);
      block_list_.push_back(block);
    }
    // nanoGPT's embedding initialisation; Dense layers keep nn.Linear's default.
    torch::NoGradGuard no_grad;
    wte_->weight.normal_(0.0, 0.02);
    wpe_->weight.normal_(0.0, 0.02);
  }

  torch::Tensor forward(const torch::Tensor& tokens) override {
    if (tokens.dim() != 2) throw std::invalid_argument("GPT expects int64 tokens [B, T]");
    const int64_t T = tokens.size(1);
    if (T > config_.context) {
      throw std::invalid_argument("GPT sequence of " + std::to_string(T) + " tokens exceeds its context of " +
                                  std::to_string(config_.context));
    }
    auto positions = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(tokens.device()));
    auto x = wte_(tokens) + wpe_(positions);
    if (config_.dropout > 0) x = F::dropout(x, F::DropoutFuncOptions().p(config_.dropout).training(is_training()));
    for (auto& block : block_list_) x = block->forward(x);
    x = ln_f_(x);
    return config_.tie_embeddings ? torch::matmul(x, wte_->weight.t()) : head_(x);
  }

  void split(const SplitConfig& config) override {
    if (config.layer < 1 || config.layer > config_.layers)
      throw std::invalid_argument("split layer " + std::to_string(config.layer) + " is not a block of this GPT (1.." +
                                  std::to_string(config_.layers) + ")");
    if (config_.adapter.kind != AdapterKind::None)
      throw std::invalid_argument("split fine-tuning trains the SVD factors, not adapters");
    if (cut_.back_first.size()) throw std::logic_error("GPT: already split");
    auto& block = block_list_[config.layer - 1];
    block->split(config, &cut_);
    cut_.back_first = block->back_first("blocks." + std::to_string(config.layer - 1));
    cut_.values_per_sample = static_cast<int64_t>(config_.context) * config.crossing(config_.width);
  }
  CutValues* cut() override { return cut_.back_first.empty() ? nullptr : &cut_; }

  // One sample is a full window of `context` tokens.
  std::vector<LayerCost> layer_costs() const override {
    const double T = config_.context, C = config_.width, V = config_.vocab;
    std::vector<LayerCost> c;
    // Lookups have no input gradient (token ids); their weight gradient is a dense table.
    LayerCost wte = elementwise_cost("wte", T + T * C, T * C, 1, false);  // ids + gathered rows
    wte.weights = V * C;
    wte.tensors = 1;
    wte.trains = wte_->weight.requires_grad();
    wte.grad_operands = 0;
    c.push_back(wte);
    LayerCost wpe = elementwise_cost("wpe", 0, 0, 2, false);  // arange + lookup, once per batch
    wpe.weights = config_.context * C;
    wpe.tensors = 1;
    wpe.trains = wpe_->weight.requires_grad();
    wpe.grad_operands = 0;
    c.push_back(wpe);
    c.push_back(elementwise_cost("embed_add", 2 * T * C, T * C, 1, false));
    append_dropout(c, "embed_dropout", config_.dropout, T * C);
    for (size_t l = 0; l < block_list_.size(); ++l) {
      block_list_[l]->append_costs(c, "blocks." + std::to_string(l), T, C);
    }
    c.push_back(layer_norm_cost("ln_f", ln_f_, T, C));
    if (config_.tie_embeddings) {
      // The embedding's weights again, as a product with no bias; updated with wte.
      LayerCost head = linear_cost("head", C, V, T, false, wte_->weight.requires_grad());
      head.shared_weights = true;
      c.push_back(head);
    } else {
      head_->append_costs(c, "head", T);
    }
    c.push_back(loss_cost(T * V));
    return c;
  }

 private:
  GptConfig config_;
  torch::nn::Embedding wte_, wpe_;
  LayerNorm ln_f_;
  Dense head_;
  torch::nn::ModuleList blocks_;
  std::vector<Block> block_list_;
  CutValues cut_;
};

}  // namespace

namespace {
struct GptShape {
  const char* name;
  int vocab, layers, heads, width, context;
  bool tied;
};
const GptShape kGptShapes[] = {
    {"tiny", 256, 2, 4, 128, 64, false},
    {"small", 256, 4, 4, 256, 128, false},
    {"gpt2_124m", 50257, 12, 12, 768, 1024, true},
    {"gpt2_355m", 50257, 24, 16, 1024, 1024, true},
    {"gpt2_774m", 50257, 36, 20, 1280, 1024, true},
    {"gpt2_1558m", 50257, 48, 25, 1600, 1024, true},
};
}  // namespace

GptConfig gpt_preset(const std::string& name) {
  for (const auto& shape : kGptShapes) {
    if (name != shape.name) continue;
    GptConfig c;
    c.vocab = shape.vocab;
    c.layers = shape.layers;
    c.heads = shape.heads;
    c.width = shape.width;
    c.context = shape.context;
    c.tie_embeddings = shape.tied;
    return c;
  }
  std::string names;
  for (const auto& shape : kGptShapes) names += (names.empty() ? "" : ", ") + std::string(shape.name);
  throw std::invalid_argument("unknown GPT preset '" + name + "' (expected " + names + ")");
}

std::shared_ptr<Model> make_gpt(const GptConfig& config) {
  if (config.vocab < 1 || config.layers < 0 || config.heads < 1 || config.width < 1 || config.context < 1) {
    throw std::invalid_argument("GPT shape must be positive (vocab, heads, width, context >= 1; layers >= 0)");
  }
  if (config.width % config.heads != 0) {
    throw std::invalid_argument("GPT width " + std::to_string(config.width) + " is not divisible by its " +
                                std::to_string(config.heads) + " heads");
  }
  if (config.dropout < 0 || config.dropout >= 1) throw std::invalid_argument("GPT dropout must be in [0, 1)");
  auto model = std::make_shared<Gpt>(config);
  if (config.adapter.kind != AdapterKind::None) freeze_all_but_adapters(*model);
  return model;
}

}  // namespace testbed
