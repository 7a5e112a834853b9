// The byte-level GPT: shapes, causality, FLOPs, learning, presets, adapters.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "training/data/dataset.h"
#include "training/models/dense.h"
#include "training/models/gpt.h"

namespace testbed {
namespace {

torch::Tensor random_tokens(int64_t batch, int64_t length) {
  return torch::randint(0, 256, {batch, length}, torch::kLong);
}

TEST(Gpt, LogitsHaveShapeBatchTimeVocab) {
  torch::manual_seed(0);
  auto model = make_gpt(gpt_preset("tiny"));
  auto tokens = random_tokens(3, 64);
  auto logits = model->forward(tokens);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 64, 256}));
  EXPECT_TRUE(torch::isfinite(logits).all().item<bool>());
  // Shorter sequences than the context work too; longer ones are refused.
  EXPECT_EQ(model->forward(random_tokens(2, 10)).sizes(), (std::vector<int64_t>{2, 10, 256}));
  EXPECT_THROW(model->forward(random_tokens(1, 65)), std::invalid_argument);
}

TEST(Gpt, IsCausal) {
  torch::manual_seed(1);
  GptConfig c = gpt_preset("tiny");
  auto model = make_gpt(c);
  model->eval();
  torch::NoGradGuard no_grad;
  auto tokens = random_tokens(2, c.context);
  auto before = model->forward(tokens);
  for (int64_t t : {0, 17, 62}) {
    auto changed = tokens.clone();
    changed.slice(1, t + 1) =
        (changed.slice(1, t + 1) + 1 + torch::randint(0, 255, {2, c.context - t - 1}, torch::kLong)) % 256;
    auto after = model->forward(changed);
    EXPECT_TRUE(torch::allclose(before.slice(1, 0, t + 1), after.slice(1, 0, t + 1), 1e-5, 1e-6))
        << "logits at positions <= " << t << " depend on later tokens";
    // The test can see a dependence: later positions do change.
    EXPECT_FALSE(torch::allclose(before.slice(1, t + 1), after.slice(1, t + 1), 1e-5, 1e-6));
  }
}

TEST(Gpt, FlopsCountProjectionsHeadAndAttention) {
  GptConfig c = gpt_preset("tiny");
  auto model = make_gpt(c);
  const double T = c.context, C = c.width, L = c.layers;
  // Per token and layer: qkv 3C^2, proj C^2, MLP 8C^2 multiply-adds; head C x vocab.
  double expected = T * (L * 2 * 12 * C * C + 2 * C * c.vocab) + L * 2 * 2 * T * T * C;
  EXPECT_DOUBLE_EQ(model->forward_flops_per_sample(), expected);
}

TEST(Gpt, TinyPresetOverfitsOneBatch) {
  torch::manual_seed(2);
  GptConfig c = gpt_preset("tiny");
  auto model = make_gpt(c);
  model->train();
  // Text-like bytes: a repeated sentence with a different phase per row, so the batch is learnable.
  const std::string text = "the quick brown fox jumps over the lazy dog while the cat sleeps. ";
  const int64_t B = 8, T = c.context;
  auto window = torch::empty({B, T + 1}, torch::kLong);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t <= T; ++t) window[b][t] = static_cast<int64_t>(text[(b * 7 + t) % text.size()]);
  auto inputs = window.slice(1, 0, T), targets = window.slice(1, 1);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(3e-3));
  double first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    optimizer.zero_grad();
    auto loss = task_loss(Task::Language, model->forward(inputs), targets);
    loss.backward();
    optimizer.step();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  EXPECT_GT(first, 4.5);  // about ln 256 = 5.5 at initialisation
  EXPECT_LT(last, 0.5 * first) << "first " << first << " last " << last;
  EXPECT_LT(last, 1.5);
}

TEST(Gpt, PresetsAndBadShapes) {
  auto tiny = gpt_preset("tiny");
  auto small = gpt_preset("small");
  EXPECT_EQ(tiny.vocab, 256);
  EXPECT_EQ(tiny.width % tiny.heads, 0);
  EXPECT_EQ(small.width % small.heads, 0);
  EXPECT_GT(small.width * small.layers, tiny.width * tiny.layers);
  EXPECT_GE(small.context, tiny.context);
  EXPECT_THROW(gpt_preset("huge"), std::invalid_argument);
  EXPECT_THROW(gpt_preset(""), std::invalid_argument);

  GptConfig bad = tiny;
  bad.width = 130;
  bad.heads = 4;
  EXPECT_THROW(make_gpt(bad), std::invalid_argument);
  bad.width = 128;
  bad.heads = 3;
  EXPECT_THROW(make_gpt(bad), std::invalid_argument);
  bad.heads = 8;
  EXPECT_NO_THROW(make_gpt(bad));
}

TEST(Gpt, SmallPresetRuns) {
  torch::manual_seed(3);
  GptConfig c = gpt_preset("small");
  auto model = make_gpt(c);
  torch::NoGradGuard no_grad;
  EXPECT_EQ(model->forward(random_tokens(1, c.context)).sizes(), (std::vector<int64_t>{1, c.context, 256}));
}

TEST(Gpt, LoraFaTrainsOnlyTheBFactors) {
  torch::manual_seed(4);
  GptConfig c = gpt_preset("tiny");
  c.adapter.kind = AdapterKind::LoraFa;
  c.adapter.rank = 4;
  auto model = make_gpt(c);

  int64_t expected = 0;
  int dense_layers = 0;
  for (const auto& module : model->modules(/*include_self=*/false)) {
    if (auto dense = std::dynamic_pointer_cast<DenseImpl>(module)) {
      ASSERT_TRUE(dense->has_adapter());
      expected += dense->out_features() * c.adapter.rank;
      ++dense_layers;
    }
  }
  EXPECT_EQ(dense_layers, 4 * c.layers + 1);  // qkv, proj, fc, fc_proj per block, and the head

  int64_t trainable = 0;
  int trainable_tensors = 0;
  for (const auto& item : model->named_parameters()) {
    if (!item.value().requires_grad()) continue;
    EXPECT_NE(item.key().find("lora_b"), std::string::npos) << item.key() << " trains";
    trainable += item.value().numel();
    ++trainable_tensors;
  }
  EXPECT_EQ(trainable_tensors, dense_layers);
  EXPECT_EQ(trainable, expected);

  // B starts at zero, so the adapted model equals its base; gradients reach only B.
  auto tokens = random_tokens(2, 16);
  auto loss = task_loss(Task::Language, model->forward(tokens), tokens);
  loss.backward();
  for (const auto& item : model->named_parameters()) {
    bool has_grad = item.value().grad().defined() && item.value().grad().abs().sum().item<double>() > 0;
    if (item.key().find("lora_b") != std::string::npos) {
      EXPECT_TRUE(has_grad) << item.key();
    } else {
      EXPECT_FALSE(item.value().grad().defined()) << item.key();
    }
  }
}

}  // namespace
}  // namespace testbed
