// The transformers' real shapes: GPT-2's four, LLaMA's and BERT's presets against their published
// parameter counts (worked out here from the architecture), forward FLOPs against 2 N a token
// plus attention, the shapes-only description of LLaMA against the built module, and the modules
// training for real a few steps.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include <torch/torch.h>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/compute/compute_model.h"
#include "training/models/bert.h"
#include "training/models/gpt.h"
#include "training/models/llama.h"
#include "training/models/model_shapes.h"

namespace testbed {
namespace {

double forward_flops(const std::vector<LayerCost>& layers) {
  double f = 0;
  for (const auto& l : layers) f += l.flops;
  return f;
}

// GPT-2 by hand: per block 12 C^2 + 13 C (qkv 3C^2 + 3C, proj C^2 + C, fc 4C^2 + 4C, fc_proj
// 4C^2 + C, two norms 4C), embeddings V C + 1024 C, the final norm 2C; the head is the
// embedding. Radford et al.'s 117M / 345M / 762M / 1542M were counted otherwise; these are the
// Hugging Face checkpoints' counts (124 439 808 for the smallest) and configurations (layers,
// heads, width; 50 257 tokens, 1024 positions, tied head). Every preset's configuration is the
// published one; the built module's count is checked at 124M and 355M (two depths and widths of
// the same construction), since 774M and 1558M take 3 and 6 GB to build. Slips caught: a
// preset's width or depth mistyped, a bias or norm left out of the module.
TEST(Gpt2, ParametersAreTheCheckpoints) {
  struct Case {
    const char* preset;
    int layers, heads, width;
    int64_t parameters;
  };
  for (const Case& c : std::vector<Case>{{"gpt2_124m", 12, 12, 768, 124439808},
                                         {"gpt2_355m", 24, 16, 1024, 354823168},
                                         {"gpt2_774m", 36, 20, 1280, 774030080},
                                         {"gpt2_1558m", 48, 25, 1600, 1557611200}}) {
    SCOPED_TRACE(c.preset);
    const int64_t C = c.width, by_hand = c.layers * (12 * C * C + 13 * C) + 50257 * C + 1024 * C + 2 * C;
    EXPECT_EQ(by_hand, c.parameters);
    const GptConfig preset = gpt_preset(c.preset);
    EXPECT_EQ(preset.layers, c.layers);
    EXPECT_EQ(preset.heads, c.heads);
    EXPECT_EQ(preset.width, c.width);
    EXPECT_EQ(preset.vocab, 50257);
    EXPECT_EQ(preset.context, 1024);
    EXPECT_TRUE(preset.tie_embeddings);
    if (c.layers > 24) continue;
    const ModelShapes m = shapes_of(*make_gpt(preset));
    EXPECT_EQ(m.parameters, c.parameters);
    EXPECT_EQ(m.trainable(), c.parameters);
  }
}

// A projection of a GPT or BERT builds one block and repeats it (model_shapes): the names,
// shapes, parameters and every layer cost of the full build, with an adapter freezing part of
// each block too. Slips caught: a block index not rewritten, the blocks' frozen weights left out
// of the parameters, block 0 inserted at the wrong place.
TEST(ModelShapes, RepeatedBlocksAreTheBuiltModels) {
  const std::string common = "compute: {memory_check: off}\n";
  for (const std::string workload :
       {"{model: gpt, dataset: brown, gpt: {preset: tiny, layers: 3}",
        "{model: gpt, dataset: brown, gpt: {preset: tiny, layers: 4}, adapter: {kind: lora, rank: 4}",
        "{model: bert, dataset: brown_genres, bert: {preset: tiny, layers: 3}"}) {
    SCOPED_TRACE(workload);
    const ModelShapes built = model_shapes(parse_scenario("workload: " + workload + "}\n" + common, "b.yaml"));
    const ModelShapes repeated =
        model_shapes(parse_scenario("workload: " + workload + ", train: false}\n" + common, "r.yaml"));
    EXPECT_EQ(repeated.names, built.names);
    EXPECT_EQ(repeated.shapes, built.shapes);
    EXPECT_EQ(repeated.parameters, built.parameters);
    ASSERT_EQ(repeated.layers.size(), built.layers.size());
    for (size_t i = 0; i < built.layers.size(); ++i) {
      const LayerCost &a = repeated.layers[i], &b = built.layers[i];
      EXPECT_TRUE(a.name == b.name && a.flops == b.flops && a.weights == b.weights && a.trains == b.trains &&
                  a.inputs == b.inputs && a.outputs == b.outputs && a.kernels == b.kernels)
          << "layer " << i << ": " << a.name << " against " << b.name;
    }
  }
  // The presets too large to build here, against the count by hand above: 774M and 1558M.
  for (const auto& [preset, parameters] :
       std::vector<std::pair<std::string, int64_t>>{{"gpt2_774m", 774030080}, {"gpt2_1558m", 1557611200}}) {
    const GptConfig c = gpt_preset(preset);
    const int64_t C = c.width, by_hand = c.layers * (12 * C * C + 13 * C) + 50257 * C + 1024 * C + 2 * C;
    EXPECT_EQ(by_hand, parameters);
    const ModelShapes m = model_shapes(parse_scenario(
        "workload: {model: gpt, dataset: brown, train: false, gpt: {preset: " + preset + "}}\n" + common, "p.yaml"));
    EXPECT_EQ(m.parameters, by_hand) << preset;
    EXPECT_EQ(m.trainable(), by_hand) << preset;
    // Built to read them: the embeddings, one block and the last norm (what host memory holds).
    EXPECT_EQ(m.built_parameters, (12 * C * C + 13 * C) + 50257 * C + 1024 * C + 2 * C) << preset;
  }
}

// Forward FLOPs a token: 2 N for the weights that multiply (embedding lookups do not, the tied
// head does) plus the attention's 2 x 2 T C a layer (q k^T and att v over T positions, causal
// masking not skipped): Kaplan et al.'s C_forward = 2 N + 2 n_layer n_ctx d_model, with the
// head counted.
TEST(Gpt2, ForwardFlopsAreTwoNPlusAttention) {
  const GptConfig c = gpt_preset("gpt2_124m");
  const ModelShapes m = shapes_of(*make_gpt(c));
  const double C = c.width, T = c.context, V = c.vocab;
  const double matmul_weights = c.layers * 12 * C * C + V * C;  // blocks' matrices and the head
  EXPECT_DOUBLE_EQ(forward_flops(m.layers) / T, 2 * matmul_weights + c.layers * 4 * T * C);
}

// A tied head reads and differentiates the embedding's weights but is updated with them, once:
// the optimizer's pass covers exactly the model's parameters (on a roof of 1 byte/s and no launch
// latency its seconds are its bytes).
TEST(Gpt2, TiedHeadIsUpdatedOnce) {
  GptConfig c = gpt_preset("tiny");
  c.vocab = 300;
  c.tie_embeddings = true;
  const ModelShapes m = shapes_of(*make_gpt(c));
  const int64_t C = c.width, by_hand = c.layers * (12 * C * C + 13 * C) + 300 * C + c.context * C + 2 * C;
  ASSERT_EQ(m.parameters, by_hand);
  const StepCost cost = roofline(TrainingWork{m.layers, 1, OptimizerKind::AdamW, false}, Roof{1e15, 1, 0, 4});
  EXPECT_DOUBLE_EQ(cost.update,
                   static_cast<double>(by_hand) * optimizer_bytes_per_parameter(OptimizerKind::AdamW, false));
}

// Llama 2 7B: 6 738 415 616 parameters (the checkpoint's), by hand: per layer 4 C^2 attention, 3 C F
// SwiGLU, 2 C norms; embedding and head 2 V C, the final norm C. Llama 3.2 1B with grouped-query
// attention (8 KV heads of 64) and a tied head: 1 235 814 400. INTELLECT-1: 10 211 381 248.
TEST(Llama, PresetParametersByHand) {
  {
    const int64_t C = 4096, F = 11008, V = 32000, L = 32;
    const int64_t by_hand = L * (4 * C * C + 3 * C * F + 2 * C) + 2 * V * C + C;
    EXPECT_EQ(by_hand, 6738415616);
    EXPECT_EQ(llama_shapes(llama_preset("7b")).parameters, by_hand);
  }
  {
    const int64_t C = 2048, F = 8192, V = 128256, L = 16, kv = 8 * 64;
    const int64_t by_hand = L * (2 * C * C + 2 * C * kv + 3 * C * F + 2 * C) + V * C + C;
    EXPECT_EQ(by_hand, 1235814400);
    EXPECT_EQ(llama_shapes(llama_preset("1b")).parameters, by_hand);
  }
  {  // INTELLECT-1 (its config.json): 8 KV heads of 128, an untied head
    const int64_t C = 4096, F = 14336, V = 128256, L = 42, kv = 8 * 128;
    const int64_t by_hand = L * (2 * C * C + 2 * C * kv + 3 * C * F + 2 * C) + 2 * V * C + C;
    EXPECT_EQ(by_hand, 10211381248);
    EXPECT_EQ(llama_shapes(llama_preset("intellect1_10b")).parameters, by_hand);
  }
}

// The 7B's forward a token: 2 N less the embedding lookup (the head multiplies), plus attention.
TEST(Llama, SevenBForwardFlops) {
  const LlamaConfig c = llama_preset("7b");
  const ModelShapes m = llama_shapes(c);
  const double T = c.context, C = c.width;
  const double multiplying =
      static_cast<double>(m.parameters) - 32000.0 * C - (2.0 * c.layers + 1) * C;  // no lookups, no norms
  EXPECT_DOUBLE_EQ(forward_flops(m.layers) / T, 2 * multiplying + c.layers * 4 * T * C);
}

// The shapes-only description is the built module's: names, shapes and every layer cost, for
// small configurations of each variant (grouped-query, tied head, untied).
TEST(Llama, ShapesWithoutTheModuleAreTheModules) {
  LlamaConfig gqa = llama_preset("tiny");
  LlamaConfig tied = gqa;
  tied.tie_embeddings = true;
  tied.kv_heads = 1;
  LlamaConfig full = gqa;
  full.kv_heads = full.heads;
  full.layers = 3;
  for (const LlamaConfig& c : {gqa, tied, full}) {
    const ModelShapes built = shapes_of(*make_llama(c)), described = llama_shapes(c);
    EXPECT_EQ(described.names, built.names);
    EXPECT_EQ(described.shapes, built.shapes);
    EXPECT_EQ(described.parameters, built.parameters);
    ASSERT_EQ(described.layers.size(), built.layers.size());
    for (size_t i = 0; i < built.layers.size(); ++i) {
      EXPECT_EQ(described.layers[i].name, built.layers[i].name);
      EXPECT_EQ(described.layers[i].flops, built.layers[i].flops);
      EXPECT_EQ(described.layers[i].weights, built.layers[i].weights);
    }
  }
}

// Causal and position-aware (rotary): swapping two tokens leaves the logits before them alone
// and changes the last position's; and the module trains (memorises two sequences).
TEST(Llama, TrainsAndSeesOrder) {
  torch::manual_seed(1);
  auto m = make_llama(llama_preset("tiny"));
  auto tokens = torch::randint(0, 256, {2, 16}, torch::kInt64);
  auto swapped = tokens.clone();
  swapped.select(1, 3).copy_(tokens.select(1, 4));
  swapped.select(1, 4).copy_(tokens.select(1, 3));
  {
    torch::NoGradGuard no_grad;
    const auto a = m->forward(tokens), b = m->forward(swapped);
    EXPECT_EQ(a.sizes(), (std::vector<int64_t>{2, 16, 256}));
    // Causal: positions before the swap see the same prefix; the last sees another order.
    EXPECT_TRUE(torch::allclose(a.slice(1, 0, 3), b.slice(1, 0, 3)));
    EXPECT_FALSE(torch::allclose(a.select(1, 15), b.select(1, 15)));
  }
  torch::optim::AdamW opt(m->parameters(), torch::optim::AdamWOptions(3e-3));
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    auto logits = m->forward(tokens.slice(1, 0, 15));
    auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, 256}), tokens.slice(1, 1, 16).reshape(-1));
    loss.backward();
    opt.step();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  EXPECT_LT(last, first * 0.5);  // it memorises two sequences
}

// BERT by hand: embeddings V C + 512 C + 2 C and their norm 2 C; per layer 12 C^2 + 13 C (q, k,
// v, the attention's output, 4C and back, two norms); the pooler C^2 + C; Hugging Face's BertModel
// counts (109 482 240 base, 335 141 888 large), then the classifier C K + K for the 15 genres.
TEST(Bert, ParametersAreHuggingFaces) {
  auto count = [](int64_t L, int64_t C) {
    return 30522 * C + 512 * C + 2 * C + 2 * C + L * (12 * C * C + 13 * C) + C * C + C;
  };
  EXPECT_EQ(count(12, 768), 109482240);
  EXPECT_EQ(count(24, 1024), 335141888);
  // Each preset built: its configuration and its module's count (large: 1.3 GB, a few seconds).
  for (const auto& [name, layers, heads, width] :
       {std::tuple{"base", 12, 12, 768}, std::tuple{"large", 24, 16, 1024}}) {
    SCOPED_TRACE(name);
    BertConfig c = bert_preset(name);
    EXPECT_EQ(c.layers, layers);
    EXPECT_EQ(c.heads, heads);
    EXPECT_EQ(c.width, width);
    EXPECT_EQ(c.vocab, 30522);
    EXPECT_EQ(c.positions, 512);
    c.classes = 15;
    EXPECT_EQ(shapes_of(*make_bert(c)).parameters, count(layers, width) + width * 15 + 15);
  }
}

// Forward FLOPs a sample: the layers' matrices over T tokens, the pooler and classifier on one,
// and the bidirectional attention's 4 T^2 C a layer.
TEST(Bert, ForwardFlops) {
  BertConfig c = bert_preset("base");
  c.classes = 15;
  const double T = c.sequence, C = c.width, L = c.layers;
  const double expected = 2 * T * L * 12 * C * C + 2 * (C * C + C * 15) + L * 4 * T * T * C;
  EXPECT_DOUBLE_EQ(forward_flops(shapes_of(*make_bert(c)).layers), expected);
}

// Bidirectional (the first position's logits see a later token) and trainable.
TEST(Bert, SeesTheWholeWindowAndTrains) {
  torch::manual_seed(2);
  BertConfig c = bert_preset("tiny");
  c.sequence = 16;
  auto m = make_bert(c);
  auto tokens = torch::randint(0, 256, {4, 16}, torch::kInt64);
  auto changed = tokens.clone();
  changed.select(1, 15).fill_(7);
  {
    torch::NoGradGuard no_grad;
    EXPECT_EQ(m->forward(tokens).sizes(), (std::vector<int64_t>{4, 2}));
    EXPECT_FALSE(torch::allclose(m->forward(tokens), m->forward(changed)));
  }
  const auto labels = torch::tensor({0, 1, 1, 0}, torch::kInt64);
  torch::optim::AdamW opt(m->parameters(), torch::optim::AdamWOptions(1e-3));
  double first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(m->forward(tokens), labels);
    loss.backward();
    opt.step();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  EXPECT_LT(last, first * 0.2);  // four windows, memorised
}

// BERT with the pre-training heads, by hand: the encoder and pooler above, then the masked-LM
// transform C^2 + C, its LayerNorm 2 C, the decoder's own bias V (its weights are the word
// embeddings'), the next-sentence classifier 2 C + 2: Hugging Face's BertForPreTraining counts,
// 110 106 428 (base) and 336 226 108 (large). Forward FLOPs a sample at sequences 64, 128 and 512
// through the projection's path (one block built and repeated): the blocks' 24 T C^2 and
// attention's 4 T^2 C a layer, the transform's 2 T C^2 and the decoder's 2 T C V at every
// position, the pooler's 2 C^2 and next-sentence 4 C on the first (large at 128 only). Slips caught: the decoder's
// weights counted twice (untied), its bias left out, the head scoring one position, the
// next-sentence head missing, the classifier kept beside the pre-training heads.
TEST(Bert, PretrainingHeadsByHand) {
  const double V = 30522;
  for (const auto& [preset, L, C, published] :
       {std::tuple{"base", 12, 768, int64_t{110106428}}, std::tuple{"large", 24, 1024, int64_t{336226108}}}) {
    const int64_t c = C;
    const int64_t encoder = 30522 * c + 512 * c + 2 * c + 2 * c + L * (12 * c * c + 13 * c) + c * c + c;
    EXPECT_EQ(encoder + c * c + c + 2 * c + 30522 + 2 * c + 2, published) << preset;
    for (int T : L == 12 ? std::vector<int>{64, 128, 512} : std::vector<int>{128}) {  // large: 6 s a build
      SCOPED_TRACE(std::string(preset) + " at " + std::to_string(T));
      const ModelShapes m = model_shapes(parse_scenario(
          "workload: {model: bert, dataset: brown_genres, train: false, bert: {preset: " + std::string(preset) +
              ", head: pretraining, sequence: " + std::to_string(T) + "}}\ncompute: {memory_check: off}\n",
          "p.yaml"));
      EXPECT_EQ(m.parameters, published);
      EXPECT_EQ(m.trainable(), published);
      const double t = T, w = C;
      const double expected =
          2 * t * L * 12 * w * w + L * 4 * t * t * w + 2 * t * w * w + 2 * t * w * V + 2 * w * w + 2 * 2 * w;
      EXPECT_DOUBLE_EQ(forward_flops(m.layers), expected);
    }
  }
}

// The heads run and train the tied table: masked-LM logits at every position, next-sentence
// logits on the first; the masked-LM loss alone gives the word embeddings a gradient through the
// decoder too. The pre-training heads are refused for training (there is no pre-training data).
TEST(Bert, PretrainingHeadsRun) {
  torch::manual_seed(4);
  BertConfig c = bert_preset("tiny");
  c.sequence = 8;
  c.pretraining = true;
  auto m = make_bert(c);
  const auto tokens = torch::randint(0, 256, {3, 8}, torch::kInt64);
  const auto [masked, next] = bert_pretraining_logits(*m, tokens);
  EXPECT_EQ(masked.sizes(), (std::vector<int64_t>{3, 8, 256}));
  EXPECT_EQ(next.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_TRUE(torch::equal(m->forward(tokens), masked));
  // Only position 5 of sample 0 is masked; its loss reaches the table at a token no input has.
  auto one = tokens.clone();
  one.fill_(1);
  const auto logits = m->forward(one);
  torch::nn::functional::cross_entropy(logits[0][5].unsqueeze(0), torch::tensor({200}, torch::kInt64)).backward();
  for (const auto& p : m->named_parameters()) {
    if (p.key() == "embeddings.word.weight") {
      EXPECT_GT(p.value().grad()[200].abs().sum().item<double>(), 0);  // through the decoder alone
    }
  }
  BertConfig plain = bert_preset("tiny");
  EXPECT_THROW(bert_pretraining_logits(*make_bert(plain), tokens), std::invalid_argument);
}

}  // namespace
}  // namespace testbed
