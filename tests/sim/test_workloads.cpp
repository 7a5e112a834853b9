// Workload pieces: shifted test sets, the synthetic teacher, checkpoints and fine-tuning,
// sampled replica correlation, and the scenario errors they can raise.
#include <gtest/gtest.h>

#include <filesystem>

#include <torch/torch.h>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/engine/engine.h"
#include "training/data/shifts.h"
#include "training/data/synthetic.h"
#include "training/metrics.h"
#include "training/models/checkpoint.h"

namespace testbed {
namespace {

namespace fs = std::filesystem;

TEST(Shifts, AreDeterministicAndChangeTheImages) {
  torch::manual_seed(0);
  auto images = torch::randn({8, 1, 28, 28});
  for (const auto& name : image_shift_names()) {
    auto a = shift_images(images, name, 3);
    EXPECT_TRUE(torch::equal(a, shift_images(images, name, 3))) << name;
    EXPECT_EQ(a.sizes(), images.sizes());
    EXPECT_GT((a - images).abs().mean().item<double>(), 0.1) << name;
  }
  EXPECT_FALSE(torch::equal(shift_images(images, "noise", 3), shift_images(images, "noise", 4)));
}

TEST(Shifts, InvertIsAnInvolutionAndNoiseHasItsScale) {
  auto images = torch::rand({16, 1, 28, 28});
  auto twice = shift_images(shift_images(images, "invert", 0), "invert", 0);
  EXPECT_TRUE(torch::allclose(twice, images, 1e-5, 1e-6));
  auto noise = shift_images(images, "noise", 1) - images;
  EXPECT_NEAR(noise.mean().item<double>(), 0.0, 0.02);
  EXPECT_NEAR(noise.std().item<double>(), 0.5, 0.02);
}

TEST(Shifts, RotationMovesMassAroundTheCentre) {
  auto image = torch::zeros({1, 1, 28, 28});
  image.index_put_({0, 0, torch::indexing::Slice(2, 26), 14}, 1.0);  // a vertical bar
  auto rotated = shift_images(image, "rotation", 0);
  EXPECT_LT(rotated.index({0, 0, 3, 14}).item<double>(), 0.2);                 // the bar's top left the column
  EXPECT_GT(rotated.index({0, 0, 14, 14}).item<double>(), 0.5);                // the centre stays
  EXPECT_NEAR(rotated.sum().item<double>(), image.sum().item<double>(), 2.0);  // and so does the ink
}

TEST(Synthetic, TeacherDataIsSeededAndLearnable) {
  SyntheticOptions o;
  o.train_samples = 500;
  o.test_samples = 100;
  auto a = make_teacher_dataset(o, 1), b = make_teacher_dataset(o, 1), c = make_teacher_dataset(o, 2);
  EXPECT_TRUE(torch::equal(a.train_inputs, b.train_inputs));
  EXPECT_TRUE(torch::equal(a.train_targets, b.train_targets));
  EXPECT_FALSE(torch::equal(a.train_targets, c.train_targets));
  EXPECT_EQ(a.task, Task::Classification);
  EXPECT_GE(a.train_targets.min().item<int64_t>(), 0);
  EXPECT_LT(a.train_targets.max().item<int64_t>(), o.outputs);
  // Several labels occur, so the task is not trivial.
  EXPECT_GE(std::get<0>(at::_unique(a.train_targets)).numel(), 5);
  o.regression = true;
  auto r = make_teacher_dataset(o, 1);
  EXPECT_EQ(r.task, Task::Regression);
  EXPECT_EQ(r.train_targets.sizes(), (std::vector<int64_t>{500, 10}));
}

Scenario synthetic_scenario(const std::string& extra = "") {
  return parse_scenario(R"(
nodes: 2
threads: 1
topology: {kind: line, link: {bandwidth: 1Gbps, latency: 1ms}}
optimizer: {name: adamw, lr: 3.0e-3}
compute: {model: fixed, step_time: 1ms}
workload:
  model: mlp
  dataset: synthetic
  synthetic: {inputs: 16, outputs: 4, hidden: 32, train_samples: 4000, test_samples: 500}
  batch_size: 32
  steps: 60
  eval_every: 30
)" + extra,
                        "synthetic");
}

TEST(Synthetic, DdpLearnsTheTeacher) {
  Scenario s = synthetic_scenario();
  Dataset data = load_dataset(s);
  Engine engine(s, data);
  MemoryRecorder rec;
  ASSERT_EQ(engine.run(rec).status, testbed::RunStatus::Completed);
  EXPECT_GT(rec.eval_rows.back().accuracy, 0.6);  // chance is about 0.25
  EXPECT_LT(rec.eval_rows.back().loss, rec.eval_rows.front().loss + 1e-9);
}

TEST(Checkpoint, FineTuningStartsFromTheSavedAverage) {
  auto dir = fs::temp_directory_path() / ("testbed_ckpt_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto checkpoint = (dir / "pretrained.pt").string();

  Scenario pretrain = synthetic_scenario();
  pretrain.output.checkpoint = checkpoint;
  Dataset data = load_dataset(pretrain);
  torch::Tensor averaged;
  {
    Engine engine(pretrain, data);
    MemoryRecorder rec;
    ASSERT_EQ(engine.run(rec).status, testbed::RunStatus::Completed);
    std::vector<torch::Tensor> finals;
    for (const auto& r : engine.replicas()) finals.push_back(flatten_parameters(r->model()));
    averaged = torch::stack(finals).mean(0);
  }
  ASSERT_TRUE(fs::exists(checkpoint));

  Scenario finetune = synthetic_scenario("  init_from: " + checkpoint + "\n");
  EXPECT_TRUE(torch::equal(flatten_parameters(*make_model(finetune)), averaged));
  EXPECT_FALSE(torch::equal(flatten_parameters(*make_model(synthetic_scenario())), averaged));

  // With adapters, the base weights come from the checkpoint and only the adapters are new.
  Scenario adapted = synthetic_scenario("  init_from: " + checkpoint + "\n  adapter: {kind: lora, rank: 2}\n");
  auto model = make_model(adapted);
  auto base = make_model(finetune);
  for (const auto& item : base->named_parameters()) {
    EXPECT_TRUE(torch::equal(item.value(), model->named_parameters()[item.key()])) << item.key();
  }
  fs::remove_all(dir);
}

TEST(Checkpoint, MissingCheckpointIsAScenarioError) {
  EXPECT_THROW(synthetic_scenario("  init_from: /nonexistent/model.pt\n"), ScenarioError);
}

TEST(ReplicaCorrelation, SampledPairsAreAsManyAsAskedAndExact) {
  torch::manual_seed(2);
  std::vector<torch::Tensor> replicas;
  auto shared = torch::randn({2000});
  for (int i = 0; i < 12; ++i) replicas.push_back(shared + 0.5 * torch::randn({2000}));
  auto full = replica_agreement(replicas);
  auto sampled = replica_agreement(replicas, 10, 9);
  int present = 0;
  double sum = 0;
  for (int i = 0; i < 12; ++i) {
    for (int j = i + 1; j < 12; ++j) {
      double v = sampled.matrix[i * 12 + j];
      if (std::isnan(v)) continue;
      ++present;
      sum += v;
      EXPECT_NEAR(v, full.matrix[i * 12 + j], 1e-12);
    }
  }
  EXPECT_EQ(present, 10);
  EXPECT_NEAR(sampled.mean_correlation, sum / 10, 1e-12);
  EXPECT_NEAR(full.mean_correlation, 0.8, 0.05);  // var 1 shared, 0.25 own: 1 / 1.25
}

TEST(WorkloadErrors, MissingBrownDataNamesTheInstallScript) {
  try {
    parse_scenario("workload: {model: gpt, dataset: brown, data_dir: /nonexistent}\n", "lm.yaml");
    FAIL() << "no error";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("scripts/install-deps.sh"), std::string::npos) << e.what();
  }
}

TEST(WorkloadErrors, UnknownGptPresetAndMismatchedModel) {
  EXPECT_THROW(parse_scenario("workload: {model: gpt, dataset: brown, gpt: {preset: huge}}\n", "x"), ScenarioError);
  EXPECT_THROW(parse_scenario("workload: {model: cnn, dataset: brown}\n", "x"), ScenarioError);
  EXPECT_THROW(parse_scenario("workload: {shifts: [blur]}\n", "x"), ScenarioError);
  EXPECT_THROW(parse_scenario("workload: {partition: {dirichlet: 0}}\n", "x"), ScenarioError);
  EXPECT_NO_THROW(parse_scenario("workload: {partition: {dirichlet: 0.5}, shifts: [noise, invert]}\n", "x"));
}

}  // namespace
}  // namespace testbed

namespace testbed {
namespace {

TEST(ClassSubset, KeepsOnlyTheListedLabels) {
  Scenario s = parse_scenario("workload: {model: mlp, classes: [1, 3]}\n", "subset");
  Dataset data = load_dataset(s);
  EXPECT_EQ(data.train_size(), 12000);  // Fashion-MNIST has 6000 training images per class
  EXPECT_EQ(data.test_size(), 2000);
  auto labels = std::get<0>(at::_unique(data.train_targets));
  EXPECT_TRUE(torch::equal(labels, torch::tensor({1, 3}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(data.train_groups, data.train_targets));
  EXPECT_THROW(parse_scenario("workload: {model: mlp, classes: [10]}\n", "subset"), ScenarioError);
}

}  // namespace
}  // namespace testbed
