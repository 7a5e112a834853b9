// Low-rank adapters: LoRA-FA averages exactly and only its B factors train and travel.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/engine/engine.h"
#include "training/models/models.h"

namespace testbed {
namespace {

std::vector<Dense> dense_layers(Model& model) {
  std::vector<Dense> out;
  for (const auto& child : model.modules(false)) {
    if (auto dense = std::dynamic_pointer_cast<DenseImpl>(child)) out.emplace_back(dense);
  }
  return out;
}

TEST(Lora, LoraFaTrainsOnlyBWithDoutTimesRankEach) {
  torch::manual_seed(0);
  auto model = make_mlp(32, 16, 10, {AdapterKind::LoraFa, 4, 0});
  int64_t expected = 0;
  for (auto& d : dense_layers(*model)) expected += d->out_features() * 4;
  auto trainable = trainable_parameters(*model);
  ASSERT_EQ(trainable.size(), 3u);
  for (const auto& p : trainable) EXPECT_EQ(p.size(1), 4);  // each is a B: d_out x r
  EXPECT_EQ(count_parameters(*model, true), expected);
  EXPECT_EQ(expected, (32 + 16 + 10) * 4);
}

TEST(Lora, LoraTrainsAAndB) {
  torch::manual_seed(0);
  auto model = make_mlp(32, 16, 10, {AdapterKind::Lora, 2, 0});
  EXPECT_EQ(trainable_parameters(*model).size(), 6u);
}

TEST(Lora, RankLargerThanTheLayerThrows) {
  EXPECT_THROW(make_mlp(32, 16, 10, {AdapterKind::Lora, 11, 0}), std::invalid_argument);
  EXPECT_NO_THROW(make_mlp(32, 16, 10, {AdapterKind::Lora, 10, 0}));
}

// Sets every trainable factor of a model to fresh random values (as training would).
void perturb(Model& model, uint64_t seed) {
  torch::manual_seed(seed);
  torch::NoGradGuard no_grad;
  for (auto& p : trainable_parameters(model)) p.copy_(torch::randn_like(p));
}

// Two replicas built from the same seed, then trained apart.
std::pair<std::shared_ptr<Model>, std::shared_ptr<Model>> diverged_pair(AdapterKind kind) {
  torch::manual_seed(7);
  auto a = make_mlp(8, 6, 4, {kind, 3, 0});
  torch::manual_seed(7);
  auto b = make_mlp(8, 6, 4, {kind, 3, 0});
  perturb(*a, 1);
  perturb(*b, 2);
  return {a, b};
}

TEST(Lora, LoraFaAveragingIsExact) {
  auto [a, b] = diverged_pair(AdapterKind::LoraFa);
  for (int layer = 0; layer < 3; ++layer) {
    auto da = dense_layers(*a)[layer], db = dense_layers(*b)[layer];
    ASSERT_TRUE(torch::equal(da->lora_a, db->lora_a));  // A is shared through the seed
    auto mean_of_products = (da->lora_b.matmul(da->lora_a) + db->lora_b.matmul(db->lora_a)) / 2;
    auto product_of_mean = ((da->lora_b + db->lora_b) / 2).matmul(da->lora_a);
    EXPECT_TRUE(torch::allclose(mean_of_products, product_of_mean, 1e-5, 1e-6));
  }
}

TEST(Lora, PlainLoraAveragingIsNotExact) {
  auto [a, b] = diverged_pair(AdapterKind::Lora);
  auto da = dense_layers(*a)[0], db = dense_layers(*b)[0];
  auto mean_of_products = (da->lora_b.matmul(da->lora_a) + db->lora_b.matmul(db->lora_a)) / 2;
  auto product_of_means = ((da->lora_b + db->lora_b) / 2).matmul((da->lora_a + db->lora_a) / 2);
  EXPECT_GT((mean_of_products - product_of_means).abs().max().item<double>(), 1e-2);
}

TEST(Lora, DdpWithLoraFaMovesOnlyTheBFactors) {
  Scenario s = parse_scenario(R"(
nodes: 4
threads: 1
topology: {kind: ring, link: {bandwidth: 1Gbps, latency: 1ms}}
workload:
  model: mlp
  dataset: synthetic
  synthetic: {inputs: 32, outputs: 10, hidden: 16, train_samples: 2000, test_samples: 200}
  batch_size: 16
  steps: 3
  eval_every: 3
  adapter: {kind: lora_fa, rank: 4}
compute: {model: fixed, step_time: 1ms}
)",
                              "lora");
  Dataset data = load_dataset(s);
  Engine engine(s, data);
  MemoryRecorder rec;
  ASSERT_EQ(engine.run(rec).status, testbed::RunStatus::Completed);
  // mlp(32, 16, 10) has layers 32->32, 32->16, 16->10: B factors of 32, 16 and 10 rows.
  const uint64_t b_elements = (32 + 16 + 10) * 4;
  for (const auto& row : rec.train_rows) {
    uint64_t total = 0;
    for (auto b : row.bytes) total += b;
    EXPECT_EQ(total, 2 * (4 - 1) * 4 * b_elements);
  }
  // Frozen weights never moved: every replica still matches a fresh model outside the adapters.
  auto fresh = make_model(s);
  for (const auto& r : engine.replicas()) {
    for (const auto& item : r->model().named_parameters()) {
      if (item.key().find("lora_b") != std::string::npos) continue;
      EXPECT_TRUE(torch::equal(item.value(), fresh->named_parameters()[item.key()])) << item.key();
    }
  }
}

TEST(Lora, RankLargerThanALayerIsAScenarioError) {
  try {
    parse_scenario("workload: {model: mlp, adapter: {kind: lora, rank: 11}}\n", "s.yaml");
    FAIL() << "no error";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("s.yaml:1:", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 11"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace testbed
