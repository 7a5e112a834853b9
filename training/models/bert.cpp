// The BERT encoder. Attention is written out (this LibTorch, 1.13, has no
// scaled_dot_product_attention); every sample is a full window, so no padding mask is needed.
#include "training/models/bert.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

#include "training/models/gelu.h"
#include "training/models/layer_norm.h"
#include "training/models/softmax.h"

namespace testbed {
namespace {

namespace F = torch::nn::functional;

// A lookup table: no input gradient (token ids), a dense weight gradient.
LayerCost lookup_cost(const std::string& name, double in, double out, double table) {
  LayerCost c = elementwise_cost(name, in, out, 1, false);
  c.weights = table;
  c.tensors = 1;
  c.trains = true;
  c.grad_operands = 0;
  return c;
}

// One sample is a window of `sequence` tokens; the pooler and classifier see its first position.
std::vector<LayerCost> bert_costs(const BertConfig& cfg, const SplitConfig* split) {
  const double T = cfg.sequence, C = cfg.width, H = 4.0 * cfg.width;
  std::vector<LayerCost> c;
  c.push_back(lookup_cost("embeddings.word", T + T * C, T * C, static_cast<double>(cfg.vocab) * C));
  c.push_back(lookup_cost("embeddings.position", 0, T * C, static_cast<double>(cfg.positions) * C));
  c.push_back(lookup_cost("embeddings.token_type", 0, T * C, 2 * C));
  c.push_back(elementwise_cost("embeddings.add", 3 * T * C, T * C, 2, false));
  c.push_back(norm_cost("embeddings.norm", T, C));
  for (int l = 0; l < cfg.layers; ++l) {
    const std::string p = "layers." + std::to_string(l);
    for (const char* proj : {".query", ".key", ".value"}) c.push_back(linear_cost(p + proj, C, C, T, true, true));
    append_attention_costs(c, p + ".attention", T, C, cfg.heads, /*causal=*/false);
    c.push_back(linear_cost(p + ".attention_output", C, C, T, true, true));
    c.push_back(elementwise_cost(p + ".residual1", 2 * T * C, T * C, 1, false));
    c.push_back(norm_cost(p + ".attention_norm", T, C));
    const bool svd = split && split->layer == l + 1 && split->rank > 0;
    if (svd) {  // split_cut.h: x V_r, then S_r, [the cut], then U_r with W1's bias
      const double r = split->rank;
      c.push_back(linear_cost(p + ".intermediate.v", C, r, T, false, true));
      c.push_back(linear_cost(p + ".intermediate.s", r, r, T, false, true));
      if (split->residual) {
        c.push_back(elementwise_cost(p + ".cut_cat", T * (C + r), T * (C + r), 1, false));
        c.push_back(elementwise_cost(p + ".cut_narrow", T * (C + r), T * (C + r), 2, false));
      }
      c.push_back(linear_cost(p + ".intermediate.u", r, H, T, true, true));
    } else {
      c.push_back(linear_cost(p + ".intermediate", C, H, T, true, true));
    }
    c.push_back(elementwise_cost(p + ".gelu", T * H, T * H));
    c.push_back(linear_cost(p + ".output", H, C, T, true, true));
    if (!svd || split->residual) c.push_back(elementwise_cost(p + ".residual2", 2 * T * C, T * C, 1, false));
    c.push_back(norm_cost(p + ".output_norm", T, C));
  }
  if (cfg.pretraining) {
    const double V = cfg.vocab;
    c.push_back(linear_cost("mlm.transform", C, C, T, true, true));
    c.push_back(elementwise_cost("mlm.gelu", T * C, T * C));
    c.push_back(norm_cost("mlm.norm", T, C));
    LayerCost decoder = linear_cost("mlm.decoder", C, V, T, false, true);
    decoder.shared_weights = true;  // the word embeddings', updated with them
    c.push_back(decoder);
    // Its bias, the head's own: added in the product's kernel, so no pass of its own forward;
    // its gradient is a sum over the logits' gradient (one kernel) and it is updated.
    LayerCost bias = elementwise_cost("mlm.decoder.bias", 0, 0, 0, false);
    bias.weights = V;
    bias.tensors = 1;
    bias.trains = true;
    bias.grad_operands = 0;
    c.push_back(bias);
    c.push_back(loss_cost(T * V));  // Hugging Face scores every position; the labels pick the masked
  }
  c.push_back(linear_cost("pooler", C, C, 1, true, true));
  c.push_back(elementwise_cost("pooler_tanh", C, C));
  if (cfg.pretraining) {
    c.push_back(linear_cost("next_sentence", C, 2, 1, true, true));
    LayerCost loss = loss_cost(2);
    loss.name = "next_sentence_loss";
    c.push_back(loss);
  } else {
    c.push_back(linear_cost("classifier", C, cfg.classes, 1, true, true));
    c.push_back(loss_cost(cfg.classes));
  }
  return c;
}

class EncoderBlockImpl : public torch::nn::Module {
 public:
  explicit EncoderBlockImpl(const BertConfig& c)
      : heads_(c.heads),
        query_(register_module("query", torch::nn::Linear(c.width, c.width))),
        key_(register_module("key", torch::nn::Linear(c.width, c.width))),
        value_(register_module("value", torch::nn::Linear(c.width, c.width))),
        attention_output_(register_module("attention_output", torch::nn::Linear(c.width, c.width))),
        attention_norm_(register_module("attention_norm", LayerNorm(c.width, 1e-12))),
        intermediate_(register_module("intermediate", torch::nn::Linear(c.width, 4 * c.width))),
        output_(register_module("output", torch::nn::Linear(4 * c.width, c.width))),
        output_norm_(register_module("output_norm", LayerNorm(c.width, 1e-12))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2), hd = C / heads_;
    auto split = [&](const torch::Tensor& y) { return y.view({B, T, heads_, hd}).transpose(1, 2); };
    const auto q = split(query_(x)), k = split(key_(x)), v = split(value_(x));
    auto att = softmax_last_dim(torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hd))));
    const auto y = torch::matmul(att, v).transpose(1, 2).contiguous().view({B, T, C});
    auto h = attention_norm_(x + attention_output_(y));
    if (!cut_) return output_norm_(h + output_(exact_gelu(intermediate_(h))));
    if (!svd_) {  // a plain cut: the attention block's output crosses, the feed-forward is behind
      h = cut_->cross(h);
      return output_norm_(h + output_(exact_gelu(intermediate_(h))));
    }
    // The reference's SvdBlock.feed_forward_chunk: dense_v, dense_s, dense_u, the activation,
    // output.dense and output.LayerNorm, without the residual link.
    auto z = svd_->front(h);
    auto crossing = cut_->cross(split_.residual ? torch::cat({h, z}, -1) : z);
    if (split_.residual) {
      h = crossing.narrow(-1, 0, C);
      z = crossing.narrow(-1, C, svd_->rank());
    } else {
      z = crossing;
    }
    const auto f = output_(exact_gelu(svd_->back(z)));
    return output_norm_(split_.residual ? h + f : f);
  }

  // Cuts this block (split_cut.h): W1 = intermediate's weight, factored as it stands now.
  void split(const SplitConfig& config, CutValues* cut) {
    split_ = config;
    cut_ = cut;
    if (config.rank == 0) return;
    svd_ = replace_module("intermediate", SvdDense(intermediate_->weight, intermediate_->bias, config.rank));
    intermediate_ = torch::nn::Linear(nullptr);
  }

 private:
  int64_t heads_;
  torch::nn::Linear query_, key_, value_, attention_output_;
  LayerNorm attention_norm_;
  torch::nn::Linear intermediate_, output_;
  LayerNorm output_norm_;
  SvdDense svd_{nullptr};  // intermediate, once the block is cut with a rank
  SplitConfig split_;
  CutValues* cut_ = nullptr;  // the model's, once the cut falls in this block
};
TORCH_MODULE(EncoderBlock);

class Bert : public Model {
 public:
  explicit Bert(const BertConfig& c)
      : config_(c),
        embeddings_(register_module("embeddings", torch::nn::Sequential())),
        pooler_(register_module("pooler", torch::nn::Linear(c.width, c.width))) {
    word_ = embeddings_->register_module("word", torch::nn::Embedding(c.vocab, c.width));
    position_ = embeddings_->register_module("position", torch::nn::Embedding(c.positions, c.width));
    token_type_ = embeddings_->register_module("token_type", torch::nn::Embedding(2, c.width));
    norm_ = embeddings_->register_module("norm", LayerNorm(c.width, 1e-12));
    layers_ = register_module("layers", torch::nn::ModuleList());
    for (int l = 0; l < c.layers; ++l) {
      EncoderBlock block(c);
      layers_->push_back(block);
      blocks_.push_back(block);
    }
    if (c.pretraining) {
      auto mlm = register_module("mlm", std::make_shared<torch::nn::Module>());
      transform_ = mlm->register_module("transform", torch::nn::Linear(c.width, c.width));
      mlm_norm_ = mlm->register_module("norm", LayerNorm(c.width, 1e-12));
      auto decoder = mlm->register_module("decoder", std::make_shared<torch::nn::Module>());
      decoder_bias_ = decoder->register_parameter("bias", torch::zeros({c.vocab}));
      next_sentence_ = register_module("next_sentence", torch::nn::Linear(c.width, 2));
    } else {
      classifier_ = register_module("classifier", torch::nn::Linear(c.width, c.classes));
    }
    // BERT's initialisation of its tables (normal, std 0.02); the dense layers keep nn.Linear's.
    torch::NoGradGuard no_grad;
    for (auto* table : {&word_, &position_, &token_type_}) (*table)->weight.normal_(0.0, 0.02);
  }

  torch::Tensor forward(const torch::Tensor& tokens) override {
    return config_.pretraining ? masked_lm(encode(tokens)) : classifier_(pooled(encode(tokens)));
  }

  // Masked-LM logits at every position, and the next-sentence logits.
  std::pair<torch::Tensor, torch::Tensor> pretraining_logits(const torch::Tensor& tokens) {
    const auto x = encode(tokens);
    return {masked_lm(x), next_sentence_(pooled(x))};
  }
  bool pretraining() const { return config_.pretraining; }

  // The last block's output [B, T, C].
  torch::Tensor encode(const torch::Tensor& tokens) {
    if (tokens.dim() != 2) throw std::invalid_argument("BERT expects int64 tokens [B, T]");
    const int64_t T = tokens.size(1);
    if (T > config_.positions)
      throw std::invalid_argument("BERT sequence of " + std::to_string(T) + " tokens exceeds its " +
                                  std::to_string(config_.positions) + " positions");
    const auto options = torch::TensorOptions().dtype(torch::kLong).device(tokens.device());
    auto x = word_(tokens) + position_(torch::arange(T, options)) + token_type_(torch::zeros({T}, options));
    x = norm_(x);
    for (auto& block : blocks_) x = block->forward(x);
    return x;
  }
  torch::Tensor pooled(const torch::Tensor& x) { return torch::tanh(pooler_(x.select(1, 0))); }
  torch::Tensor masked_lm(const torch::Tensor& x) {
    return torch::matmul(mlm_norm_(exact_gelu(transform_(x))), word_->weight.t()) + decoder_bias_;
  }

  std::vector<LayerCost> layer_costs() const override {
    return bert_costs(config_, cut_.back_first.empty() ? nullptr : &split_);
  }

  void split(const SplitConfig& config) override {
    if (config.layer < 1 || config.layer > config_.layers)
      throw std::invalid_argument("split layer " + std::to_string(config.layer) + " is not a layer of this BERT (1.." +
                                  std::to_string(config_.layers) + ")");
    if (cut_.back_first.size()) throw std::logic_error("BERT: already split");
    blocks_[config.layer - 1]->split(config, &cut_);
    split_ = config;
    const std::string p = "layers." + std::to_string(config.layer - 1);
    cut_.back_first = p + (config.rank > 0 ? ".intermediate.u" : ".intermediate");
    cut_.values_per_sample = config_.sequence * config.crossing(config_.width);
  }
  CutValues* cut() override { return cut_.back_first.empty() ? nullptr : &cut_; }

 private:
  BertConfig config_;
  torch::nn::Sequential embeddings_;  // holds word, position, token_type and norm under "embeddings"
  torch::nn::Linear pooler_, classifier_{nullptr}, transform_{nullptr}, next_sentence_{nullptr};
  LayerNorm mlm_norm_{nullptr};
  torch::Tensor decoder_bias_;
  torch::nn::Embedding word_{nullptr}, position_{nullptr}, token_type_{nullptr};
  LayerNorm norm_{nullptr};
  torch::nn::ModuleList layers_;
  std::vector<EncoderBlock> blocks_;
  CutValues cut_;
  SplitConfig split_;
};

}  // namespace

BertConfig bert_preset(const std::string& name) {
  BertConfig c;
  if (name == "tiny") return c;
  if (name != "base" && name != "large")
    throw std::invalid_argument("unknown BERT preset '" + name + "' (expected tiny, base or large)");
  c.vocab = 30522;
  c.layers = name == "base" ? 12 : 24;
  c.width = name == "base" ? 768 : 1024;
  c.heads = name == "base" ? 12 : 16;
  c.positions = 512;
  c.sequence = 128;
  return c;
}

std::pair<torch::Tensor, torch::Tensor> bert_pretraining_logits(Model& bert, const torch::Tensor& tokens) {
  auto* b = dynamic_cast<Bert*>(&bert);
  if (!b || !b->pretraining()) throw std::invalid_argument("this model has no BERT pre-training heads");
  return b->pretraining_logits(tokens);
}

std::shared_ptr<Model> make_bert(const BertConfig& config) {
  if (config.vocab < 1 || config.layers < 0 || config.heads < 1 || config.width < 1 || config.sequence < 1 ||
      config.classes < 1)
    throw std::invalid_argument("BERT shape must be positive (vocab, heads, width, sequence, classes >= 1)");
  if (config.width % config.heads != 0)
    throw std::invalid_argument("BERT width " + std::to_string(config.width) + " is not divisible by its " +
                                std::to_string(config.heads) + " heads");
  if (config.sequence > config.positions)
    throw std::invalid_argument("BERT sequence " + std::to_string(config.sequence) + " exceeds its " +
                                std::to_string(config.positions) + " positions");
  return std::make_shared<Bert>(config);
}

}  // namespace testbed
