// The LLaMA-style decoder. Attention is written out (this LibTorch, 1.13, has no
// scaled_dot_product_attention); rotary embeddings rotate the two halves of each head
// (rotate_half, as Hugging Face's Llama does). One cost function serves the module and its
// shapes-only description, so a projection of the 7B model is timed as the trained module is.
#include "training/models/llama.h"
#include "training/models/softmax.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <torch/torch.h>

namespace testbed {
namespace {

void check(const LlamaConfig& c) {
  if (c.vocab < 1 || c.layers < 0 || c.heads < 1 || c.kv_heads < 1 || c.width < 1 || c.hidden < 1 || c.context < 1)
    throw std::invalid_argument("LLaMA shape must be positive (vocab, heads, kv_heads, width, hidden, context >= 1)");
  if (c.width % c.heads != 0)
    throw std::invalid_argument("LLaMA width " + std::to_string(c.width) + " is not divisible by its " +
                                std::to_string(c.heads) + " heads");
  if (c.heads % c.kv_heads != 0)
    throw std::invalid_argument("LLaMA heads " + std::to_string(c.heads) + " are not a multiple of its " +
                                std::to_string(c.kv_heads) + " KV heads");
  if ((c.width / c.heads) % 2 != 0) throw std::invalid_argument("LLaMA head size must be even (rotary pairs)");
}

// RMSNorm over `width` for `rows` rows: square, mean, rsqrt-scale and the weight; memory bound.
LayerCost rms_norm_cost(const std::string& name, double rows, double width) {
  LayerCost c = elementwise_cost(name, rows * width, rows * width, 4);
  c.weights = width;
  c.tensors = 1;
  c.trains = true;
  return c;
}

// One sample is a full window of `context` tokens.
std::vector<LayerCost> llama_costs(const LlamaConfig& cfg) {
  const double T = cfg.context, C = cfg.width, V = cfg.vocab, F = cfg.hidden;
  const double hd = C / cfg.heads, kv = cfg.kv_heads * hd;
  std::vector<LayerCost> c;
  LayerCost embed = elementwise_cost("tok_embeddings", T + T * C, T * C, 1, false);  // ids + gathered rows
  embed.weights = V * C;
  embed.tensors = 1;
  embed.trains = true;
  embed.grad_operands = 0;
  c.push_back(embed);
  for (int l = 0; l < cfg.layers; ++l) {
    const std::string p = "layers." + std::to_string(l);
    c.push_back(rms_norm_cost(p + ".attention_norm", T, C));
    c.push_back(linear_cost(p + ".attention.wq", C, C, T, false, true));
    c.push_back(linear_cost(p + ".attention.wk", C, kv, T, false, true));
    c.push_back(linear_cost(p + ".attention.wv", C, kv, T, false, true));
    // q and k times cos, their rotated halves times sin, the sum: reads both and the tables.
    c.push_back(elementwise_cost(p + ".attention.rotary", 2 * (T * C + T * kv), T * C + T * kv, 6, false));
    if (cfg.kv_heads < cfg.heads)
      c.push_back(elementwise_cost(p + ".attention.repeat_kv", 2 * T * kv, 2 * T * C, 2, false));
    append_attention_costs(c, p + ".attention", T, C, cfg.heads, /*causal=*/true);
    c.push_back(linear_cost(p + ".attention.wo", C, C, T, false, true));
    c.push_back(elementwise_cost(p + ".residual1", 2 * T * C, T * C, 1, false));
    c.push_back(rms_norm_cost(p + ".ffn_norm", T, C));
    c.push_back(linear_cost(p + ".feed_forward.w1", C, F, T, false, true));
    c.push_back(linear_cost(p + ".feed_forward.w3", C, F, T, false, true));
    c.push_back(elementwise_cost(p + ".feed_forward.silu_mul", 2 * T * F, T * F, 2));
    c.push_back(linear_cost(p + ".feed_forward.w2", F, C, T, false, true));
    c.push_back(elementwise_cost(p + ".residual2", 2 * T * C, T * C, 1, false));
  }
  c.push_back(rms_norm_cost("norm", T, C));
  LayerCost head = linear_cost("output", C, V, T, false, true);
  head.shared_weights = cfg.tie_embeddings;  // then the embedding's weights, updated with it
  c.push_back(head);
  c.push_back(loss_cost(T * V));
  return c;
}

class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(int64_t width, double eps) : eps_(eps) { weight = register_parameter("weight", torch::ones({width})); }
  torch::Tensor forward(const torch::Tensor& x) {
    return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps_) * weight;
  }
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RmsNorm);

torch::nn::Linear linear(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

// x [B, h, T, hd] rotated by position: x cos + rotate_half(x) sin.
torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  const auto rotated = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos + rotated * sin;
}

class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const LlamaConfig& c)
      : heads_(c.heads),
        kv_heads_(c.kv_heads),
        head_size_(c.width / c.heads),
        wq_(register_module("wq", linear(c.width, c.width))),
        wk_(register_module("wk", linear(c.width, c.kv_heads * head_size_))),
        wv_(register_module("wv", linear(c.width, c.kv_heads * head_size_))),
        wo_(register_module("wo", linear(c.width, c.width))),
        mask_(torch::ones({c.context, c.context}, torch::kBool).triu(1)) {
    // Angle of position t on pair i: t theta^(-2i / head size); each half of a head takes the table.
    const auto i = torch::arange(0, head_size_, 2, torch::kFloat64) / static_cast<double>(head_size_);
    const auto inv = torch::pow(c.rope_theta, -i);
    const auto angles = torch::outer(torch::arange(c.context, torch::kFloat64), inv);
    const auto table = torch::cat({angles, angles}, -1);
    cos_ = table.cos().to(torch::kFloat32);
    sin_ = table.sin().to(torch::kFloat32);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1), C = heads_ * head_size_;
    auto q = wq_(x).view({B, T, heads_, head_size_}).transpose(1, 2);
    auto k = wk_(x).view({B, T, kv_heads_, head_size_}).transpose(1, 2);
    auto v = wv_(x).view({B, T, kv_heads_, head_size_}).transpose(1, 2);
    const auto cos = cos_.slice(0, 0, T), sin = sin_.slice(0, 0, T);
    q = rotate(q, cos, sin);
    k = rotate(k, cos, sin);
    if (kv_heads_ < heads_) {
      k = k.repeat_interleave(heads_ / kv_heads_, 1);
      v = v.repeat_interleave(heads_ / kv_heads_, 1);
    }
    auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(head_size_)));
    att = att.masked_fill(mask_.slice(0, 0, T).slice(1, 0, T), -std::numeric_limits<double>::infinity());
    att = softmax_last_dim(att);
    auto y = torch::matmul(att, v).transpose(1, 2).contiguous().view({B, T, C});
    return wo_(y);
  }

 private:
  int64_t heads_, kv_heads_, head_size_;
  torch::nn::Linear wq_, wk_, wv_, wo_;
  torch::Tensor mask_, cos_, sin_;  // not registered: neither exchanged nor checkpointed
};
TORCH_MODULE(Attention);

class LlamaBlockImpl : public torch::nn::Module {
 public:
  explicit LlamaBlockImpl(const LlamaConfig& c)
      : attention_norm_(register_module("attention_norm", RmsNorm(c.width, c.norm_eps))),
        attention_(register_module("attention", Attention(c))),
        ffn_norm_(register_module("ffn_norm", RmsNorm(c.width, c.norm_eps))),
        feed_forward_(register_module("feed_forward", torch::nn::Sequential())) {
    w1_ = feed_forward_->register_module("w1", linear(c.width, c.hidden));
    w2_ = feed_forward_->register_module("w2", linear(c.hidden, c.width));
    w3_ = feed_forward_->register_module("w3", linear(c.width, c.hidden));
  }

  torch::Tensor forward(torch::Tensor x) {
    x = x + attention_(attention_norm_(x));
    const auto h = ffn_norm_(x);
    return x + w2_(torch::silu(w1_(h)) * w3_(h));
  }

 private:
  RmsNorm attention_norm_;
  Attention attention_;
  RmsNorm ffn_norm_;
  torch::nn::Sequential feed_forward_;  // holds w1 w2 w3 under "feed_forward", as Meta names them
  torch::nn::Linear w1_{nullptr}, w2_{nullptr}, w3_{nullptr};
};
TORCH_MODULE(LlamaBlock);

class Llama : public Model {
 public:
  explicit Llama(const LlamaConfig& c)
      : config_(c),
        tok_embeddings_(register_module("tok_embeddings", torch::nn::Embedding(c.vocab, c.width))),
        norm_(register_module("norm", RmsNorm(c.width, c.norm_eps))),
        output_(c.tie_embeddings ? torch::nn::Linear(nullptr) : register_module("output", linear(c.width, c.vocab))) {
    layers_ = register_module("layers", torch::nn::ModuleList());
    for (int l = 0; l < c.layers; ++l) {
      LlamaBlock block(c);
      layers_->push_back(block);
      blocks_.push_back(block);
    }
    torch::NoGradGuard no_grad;
    tok_embeddings_->weight.normal_(0.0, 0.02);
  }

  torch::Tensor forward(const torch::Tensor& tokens) override {
    if (tokens.dim() != 2) throw std::invalid_argument("LLaMA expects int64 tokens [B, T]");
    if (tokens.size(1) > config_.context)
      throw std::invalid_argument("LLaMA sequence of " + std::to_string(tokens.size(1)) +
                                  " tokens exceeds its context of " + std::to_string(config_.context));
    auto x = tok_embeddings_(tokens);
    for (auto& block : blocks_) x = block->forward(x);
    x = norm_(x);
    return config_.tie_embeddings ? torch::matmul(x, tok_embeddings_->weight.t()) : output_(x);
  }

  std::vector<LayerCost> layer_costs() const override { return llama_costs(config_); }

 private:
  LlamaConfig config_;
  torch::nn::Embedding tok_embeddings_;
  RmsNorm norm_;
  torch::nn::Linear output_;
  torch::nn::ModuleList layers_;
  std::vector<LlamaBlock> blocks_;
};

struct LlamaShape {
  const char* name;
  int vocab, layers, heads, kv_heads, width, hidden, context;
  bool tied;
};
const LlamaShape kLlamaShapes[] = {
    {"tiny", 256, 2, 4, 2, 128, 352, 64, false},
    {"1b", 128256, 16, 32, 8, 2048, 8192, 2048, true},
    {"7b", 32000, 32, 32, 32, 4096, 11008, 4096, false},
    {"intellect1_10b", 128256, 42, 32, 8, 4096, 14336, 8192, false},
};

}  // namespace

LlamaConfig llama_preset(const std::string& name) {
  for (const auto& s : kLlamaShapes) {
    if (name != s.name) continue;
    LlamaConfig c;
    c.vocab = s.vocab;
    c.layers = s.layers;
    c.heads = s.heads;
    c.kv_heads = s.kv_heads;
    c.width = s.width;
    c.hidden = s.hidden;
    c.context = s.context;
    c.tie_embeddings = s.tied;
    if (name == "1b" || name == "intellect1_10b") c.rope_theta = 500000;  // Llama 3's
    return c;
  }
  throw std::invalid_argument("unknown LLaMA preset '" + name + "' (expected tiny, 1b, 7b or intellect1_10b)");
}

std::shared_ptr<Model> make_llama(const LlamaConfig& config) {
  check(config);
  return std::make_shared<Llama>(config);
}

ModelShapes llama_shapes(const LlamaConfig& config) {
  check(config);
  const int64_t C = config.width, F = config.hidden, kv = static_cast<int64_t>(config.kv_heads) * (C / config.heads);
  ModelShapes m;
  auto add = [&m](std::string name, std::vector<int64_t> shape) {
    m.names.push_back(std::move(name));
    m.shapes.push_back(std::move(shape));
  };
  // Registration order: the embedding, the final norm and head, then the blocks.
  add("tok_embeddings.weight", {config.vocab, C});
  add("norm.weight", {C});
  if (!config.tie_embeddings) add("output.weight", {config.vocab, C});
  for (int l = 0; l < config.layers; ++l) {
    const std::string p = "layers." + std::to_string(l);
    add(p + ".attention_norm.weight", {C});
    add(p + ".attention.wq.weight", {C, C});
    add(p + ".attention.wk.weight", {kv, C});
    add(p + ".attention.wv.weight", {kv, C});
    add(p + ".attention.wo.weight", {C, C});
    add(p + ".ffn_norm.weight", {C});
    add(p + ".feed_forward.w1.weight", {F, C});
    add(p + ".feed_forward.w2.weight", {C, F});
    add(p + ".feed_forward.w3.weight", {F, C});
  }
  m.parameters = m.trainable();
  m.layers = llama_costs(config);
  return m;
}

}  // namespace testbed
