// VHL (Tang et al. 2022): the supervised contrastive loss and VHL's local loss against hand
// computations, the virtual data set's properties, and a FedAvg + VHL round against a plain
// re-implementation of the reference's local step.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include <cmath>
#include <vector>

#include <torch/torch.h>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/federated/federated_run.h"
#include "training/data/fashion_mnist.h"
#include "training/data/partition.h"
#include "training/seed_streams.h"
#include "training/vhl.h"

namespace testbed {
namespace {

using Rows = std::vector<std::vector<double>>;

// SupCon by its definition, in doubles: rows normalised here; for each anchor a with
// positives P(a) (same label, not a): -1/|P(a)| sum_p log(exp(z_a.z_p/T) / sum_{k != a} exp(z_a.z_k/T));
// an anchor without positives adds 0; the mean over all anchors.
double supcon_by_hand(Rows z, const std::vector<int>& label, double T) {
  for (auto& row : z) {
    double norm = 0;
    for (double x : row) norm += x * x;
    for (double& x : row) x /= std::sqrt(norm);
  }
  auto dot = [&](size_t a, size_t b) {
    double s = 0;
    for (size_t i = 0; i < z[a].size(); ++i) s += z[a][i] * z[b][i];
    return s;
  };
  double total = 0;
  for (size_t a = 0; a < z.size(); ++a) {
    double denominator = 0;
    for (size_t k = 0; k < z.size(); ++k)
      if (k != a) denominator += std::exp(dot(a, k) / T);
    double sum = 0;
    int positives = 0;
    for (size_t p = 0; p < z.size(); ++p) {
      if (p == a || label[p] != label[a]) continue;
      sum += dot(a, p) / T - std::log(denominator);
      ++positives;
    }
    if (positives > 0) total += -sum / positives;
  }
  return total / static_cast<double>(z.size());
}

double cross_entropy_by_hand(const Rows& logits, const std::vector<int>& label) {
  double total = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    double sum = 0;
    for (double l : logits[i]) sum += std::exp(l);
    total += std::log(sum) - logits[i][label[i]];
  }
  return total / static_cast<double>(logits.size());
}

torch::Tensor tensor(const Rows& rows) {
  std::vector<float> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return torch::tensor(flat).view({static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())});
}
torch::Tensor labels(const std::vector<int>& l) { return torch::tensor(std::vector<int64_t>(l.begin(), l.end())); }

TEST(Vhl, SupConEqualsItsDefinition) {
  const Rows z = {{1, 0.2, -0.3}, {0.8, 0.1, 0.1}, {-0.5, 1, 0.2}, {-0.4, 0.9, -0.1}, {0.1, -0.2, 1}};
  // Two pairs and an anchor with no positive (label 2), at the reference's T and at T = 1.
  const std::vector<int> y = {0, 0, 1, 1, 2};
  const auto normalised =
      torch::nn::functional::normalize(tensor(z), torch::nn::functional::NormalizeFuncOptions().dim(1));
  for (double T : {0.07, 1.0}) {
    EXPECT_NEAR(supcon_loss(normalised, labels(y), T).item<double>(), supcon_by_hand(z, y, T), 2e-5 / T) << T;
  }
  // All of one label: every other row is a positive.
  const std::vector<int> same = {3, 3, 3, 3, 3};
  EXPECT_NEAR(supcon_loss(normalised, labels(same), 0.5).item<double>(), supcon_by_hand(z, same, 0.5), 1e-5);
}

// Two real samples and two virtual ones, K = 2 classes (a 4-way head), by hand.
TEST(Vhl, LossOnATinyBatchEqualsHand) {
  const Rows real_f = {{1, 0.5, 0}, {0, 1, -0.5}}, virt_f = {{0.9, 0.3, 0.2}, {-0.2, 1, 0.4}};
  const Rows real_l = {{2, 0.5, -1, 0.3}, {0.1, 1.5, 0.2, -0.4}},
             virt_l = {{0.3, -0.2, 1.2, 0.4}, {0.5, 0.1, -0.3, 0.9}};
  const std::vector<int> y = {0, 1}, v = {0, 1};
  const double weight = 0.7, T = 0.07;
  Rows all_f = real_f;
  all_f.insert(all_f.end(), virt_f.begin(), virt_f.end());
  const double expected = cross_entropy_by_hand(real_l, y) + cross_entropy_by_hand(virt_l, {v[0] + 2, v[1] + 2}) +
                          weight * supcon_by_hand(all_f, {0, 1, 0, 1}, T) + 0.1 * supcon_by_hand(virt_f, v, T);
  const auto loss =
      vhl_loss(tensor(real_f), tensor(real_l), labels(y), tensor(virt_f), tensor(virt_l), labels(v), 2, weight);
  EXPECT_NEAR(loss.item<double>(), expected, 1e-4);
}

TEST(Vhl, CalibrationMovesOnlyTheRealFeatures) {
  // The virtual features enter the calibration detached: their gradient is the same whatever
  // its weight, while the real features' changes.
  torch::manual_seed(1);
  const auto rf0 = torch::randn({6, 5}), vf0 = torch::randn({6, 5}), rl = torch::randn({6, 8}),
             vl = torch::randn({6, 8});
  const auto y = labels({0, 1, 2, 3, 0, 1}), v = labels({1, 0, 3, 2, 2, 0});
  auto gradients = [&](double weight) {
    auto rf = rf0.clone().requires_grad_(true), vf = vf0.clone().requires_grad_(true);
    vhl_loss(rf, rl, y, vf, vl, v, 4, weight).backward();
    return std::make_pair(rf.grad(), vf.grad());
  };
  const auto [real0, virt0] = gradients(0);
  const auto [real5, virt5] = gradients(5);
  EXPECT_LT((virt5 - virt0).abs().max().item<double>(), 1e-6);
  EXPECT_GT((real5 - real0).abs().max().item<double>(), 1e-3);
}

TEST(Vhl, VirtualDataIsSeededAndItsClassesApart) {
  const auto a = make_virtual_data(10, 200, {1, 28, 28}, kFashionMnistMean, kFashionMnistStd, 42);
  const auto b = make_virtual_data(10, 200, {1, 28, 28}, kFashionMnistMean, kFashionMnistStd, 42);
  const auto c = make_virtual_data(10, 20, {1, 28, 28}, kFashionMnistMean, kFashionMnistStd, 43);
  ASSERT_EQ(a.inputs.sizes(), (std::vector<int64_t>{2000, 1, 28, 28}));
  EXPECT_TRUE(torch::equal(a.inputs, b.inputs));
  EXPECT_FALSE(torch::equal(a.inputs.narrow(0, 0, 20), c.inputs.narrow(0, 0, 20)));
  // Class by class, 200 each.
  for (int k = 0; k < 10; ++k) EXPECT_TRUE(a.targets.narrow(0, 200 * k, 200).eq(k).all().item<bool>()) << k;
  // Pixels in [0, 1] before the real images' normalisation, and not all at one end.
  const auto pixels = a.inputs * kFashionMnistStd + kFashionMnistMean;
  EXPECT_GE(pixels.min().item<double>(), -1e-6);
  EXPECT_LE(pixels.max().item<double>(), 1 + 1e-6);
  EXPECT_GT(pixels.std().item<double>(), 0.1);
  // The classes are anchors only if they differ: the nearest class mean (from the first half of
  // each class) names the class of the second half's images.
  const auto flat = a.inputs.view({10, 200, -1});
  const auto means = flat.narrow(1, 0, 100).mean(1);               // 10 x 784
  const auto held = flat.narrow(1, 100, 100).reshape({1000, -1});  // 1000 x 784
  const auto nearest = torch::cdist(held, means).argmin(1);
  const auto truth = torch::arange(10).repeat_interleave(100);
  EXPECT_GT(nearest.eq(truth).to(torch::kFloat).mean().item<double>(), 0.9);
}

// A FedAvg + VHL round of two of four clients against the reference's local step written out
// here: the real batch and the virtual rows in one forward pass of the 20-way CNN, the losses
// by the definitions above (SupCon as a loop over anchors), SGD; the server's weighted mean.
// normalisation: reference takes the generator's [0, 1] images to (x - 0.5) / 0.25, as
// wizard1203/VHL's loader does; the default normalises them as Fashion-MNIST's real images.
TEST(Vhl, VirtualImagesAreNormalisedAsAsked) {
  const std::string base = R"(name: vhl
nodes: 4
workload: {model: cnn, dataset: fashion_mnist}
algorithm: {name: fedavg, H: 10, vhl: {virtual_samples: 5)";
  const Scenario dataset = parse_scenario(base + "}}\n", "vhl");
  const Scenario reference = parse_scenario(base + ", normalisation: reference}}\n", "vhl");
  const Dataset data = load_dataset(dataset);
  const auto a = make_vhl_data(dataset, data).inputs, b = make_vhl_data(reference, data).inputs;
  const auto pixels = a * kFashionMnistStd + kFashionMnistMean;  // the generator's clamped [0, 1] output
  EXPECT_LT((b - (pixels - 0.5) / 0.25).abs().max().item<double>(), 1e-5);
  EXPECT_NEAR(b.min().item<double>(), -2.0, 1e-5);  // a pixel clamped to 0
  EXPECT_NEAR(a.min().item<double>(), -kFashionMnistMean / kFashionMnistStd, 1e-5);
}

// augment: crop_flip draws, per virtual image, a top and a left offset in 0..8 and a coin from
// mt19937_64 seeded with the step's seed for "vhl_augment"; the window of the image padded
// with 4 black pixels (0 before normalisation) on each side, mirrored on heads.
void one_round_follows_the_reference(bool augment) {
  const Scenario s = parse_scenario(std::string(R"(name: vhl
seed: 3
nodes: 4
threads: 1
topology: {kind: star, link: {bandwidth: 1Gbps, latency: 1ms}}
network: {backend: analytical}
workload: {model: cnn, dataset: fashion_mnist, batch_size: 8, steps: 3, eval_every: 3, eval_samples: 64,
           partition: {dirichlet: 0.5}}
optimizer: {name: sgd, lr: 0.05, momentum: 0.9}
algorithm: {name: fedavg, H: 3, clients_per_round: 2, vhl: {virtual_samples: 20, weight: 0.5, augment: )") +
                                        (augment ? "crop_flip" : "none") + R"(}}
compute: {model: fixed, step_time: 10ms}
)",
                                    "vhl");
  const Dataset data = load_dataset(s);
  const VirtualData virt = make_vhl_data(s, data);
  ASSERT_EQ(virt.inputs.size(0), 200);
  auto samplers = make_samplers(s, data);
  const auto global = flatten_parameters(*make_model(s)).clone();
  // Supervised contrastive loss as a loop over anchors (autograd through it).
  auto supcon = [](const torch::Tensor& f, const torch::Tensor& y, double T) {
    const auto z = torch::nn::functional::normalize(f, torch::nn::functional::NormalizeFuncOptions().dim(1));
    torch::Tensor total = torch::zeros({});
    for (int64_t a = 0; a < z.size(0); ++a) {
      const auto sim = z.matmul(z[a]) / T;
      const auto others = torch::cat({sim.narrow(0, 0, a), sim.narrow(0, a + 1, z.size(0) - a - 1)});
      const auto log_denominator = torch::logsumexp(others, 0);
      torch::Tensor sum = torch::zeros({});
      int positives = 0;
      for (int64_t p = 0; p < z.size(0); ++p) {
        if (p == a || y[p].item<int64_t>() != y[a].item<int64_t>()) continue;
        sum = sum + (sim[p] - log_denominator);
        ++positives;
      }
      if (positives > 0) total = total - sum / positives;
    }
    return total / static_cast<double>(z.size(0));
  };
  auto order = seeded_permutation(4, stream_seed(3, "fedavg_clients", 0));
  std::vector<int> chosen(order.begin(), order.begin() + 2);
  std::sort(chosen.begin(), chosen.end());
  auto sum = torch::zeros_like(global, torch::kFloat64);
  double weights = 0;
  for (int c : chosen) {
    Replica rep(make_model(s), optimizer_config(s), samplers[c], torch::kCPU, data.task);
    load_flat_parameters(rep.model(), global);
    for (int h = 0; h < 3; ++h) {
      const Batch real = rep.next_batch(data, 8);
      const uint64_t step_seed = stream_seed(3, "vhl_batches", (static_cast<uint64_t>(c) << 32) | h);
      const auto rows = seeded_subset(200, 8, step_seed);
      const auto index = torch::tensor(rows, torch::kInt64);
      auto vx = virt.inputs.index_select(0, index);
      const auto vy = virt.targets.index_select(0, index);
      if (augment) {
        std::mt19937_64 rng(stream_seed(step_seed, "vhl_augment"));
        const double black = -kFashionMnistMean / kFashionMnistStd;
        for (int64_t i = 0; i < vx.size(0); ++i) {
          const int64_t top = static_cast<int64_t>(rng() % 9), left = static_cast<int64_t>(rng() % 9);
          const bool heads = rng() % 2 == 1;
          auto padded = torch::full({1, 36, 36}, black);
          padded.slice(1, 4, 32).slice(2, 4, 32).copy_(vx[i]);
          auto window = padded.slice(1, top, top + 28).slice(2, left, left + 28);
          if (heads) window = window.index_select(2, torch::arange(27, -1, -1));
          vx[i].copy_(window);
        }
      }
      const auto f = rep.model().features(torch::cat({real.inputs, vx}));
      const auto logits = rep.model().classify(f);
      const auto rf = f.narrow(0, 0, 8), vf = f.narrow(0, 8, 8);
      namespace F = torch::nn::functional;
      const auto loss = F::cross_entropy(logits.narrow(0, 0, 8), real.targets) +
                        F::cross_entropy(logits.narrow(0, 8, 8), vy + 10) +
                        0.5 * supcon(torch::cat({rf, vf.detach()}), torch::cat({real.targets, vy}), 0.07) +
                        0.1 * supcon(vf, vy, 0.07);
      rep.gradients().zero_();
      loss.backward();
      rep.optimizer_step();
    }
    const double n = static_cast<double>(samplers[c].shard_size());
    sum += flatten_parameters(rep.model()).to(torch::kFloat64) * n;
    weights += n;
  }
  const auto expected = (sum / weights).to(torch::kFloat32);
  FederatedRun run(s, data);
  MemoryRecorder record;
  ASSERT_EQ(run.run(record).status, testbed::RunStatus::Completed);
  EXPECT_GT((run.global() - global).abs().max().item<double>(), 1e-3);
  EXPECT_LT((run.global() - expected).abs().max().item<double>(), 1e-5);
  // The 20-way head: ten real classes, ten virtual ones.
  EXPECT_EQ(make_model(s)->forward(data.test_inputs.narrow(0, 0, 2)).size(1), 20);
}

TEST(Vhl, OneRoundFollowsTheReference) { one_round_follows_the_reference(false); }
TEST(Vhl, OneRoundWithTheReferencesCropAndFlipFollowsIt) { one_round_follows_the_reference(true); }

// Every offset 0..8 on both axes and both sides of the coin occur, and each output is a window
// of the padded image: a crop that never reaches the far edge (offsets 0..7) or never flips fails.
TEST(Vhl, CropFlipCoversEveryOffsetAndBothOrientations) {
  const int64_t n = 400;
  const auto images = torch::arange(n * 2 * 5 * 6, torch::kFloat32).view({n, 2, 5, 6});
  const auto out = crop_flip(images, -1.0, 11);
  std::set<int64_t> tops, lefts;
  int flipped = 0;
  for (int64_t i = 0; i < n; ++i) {
    auto padded = torch::full({2, 13, 14}, -1.0);
    padded.slice(1, 4, 9).slice(2, 4, 10).copy_(images[i]);
    bool found = false;
    for (int64_t top = 0; top <= 8 && !found; ++top)
      for (int64_t left = 0; left <= 8 && !found; ++left)
        for (int f = 0; f < 2 && !found; ++f) {
          auto w = padded.slice(1, top, top + 5).slice(2, left, left + 6);
          if (f == 1) w = w.index_select(2, torch::arange(5, -1, -1));
          if (torch::equal(w, out[i])) {
            found = true;
            tops.insert(top);
            lefts.insert(left);
            flipped += f;
          }
        }
    ASSERT_TRUE(found) << "image " << i << " is no window of its padded self";
  }
  EXPECT_EQ(tops.size(), 9u);
  EXPECT_EQ(lefts.size(), 9u);
  EXPECT_GT(flipped, n / 2 - 60);
  EXPECT_LT(flipped, n / 2 + 60);
}

}  // namespace
}  // namespace testbed
