// Replica agreement and evaluation metrics on known inputs, and the agreement's memory bound.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include <H5Cpp.h>
#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/engine/engine.h"
#include "sim/output/hdf5_recorder.h"
#include "training/metrics.h"

namespace testbed {
namespace {

// Pearson correlation and L2 distance written out with plain loops, independent of the
// library's Gram formulation.
double pearson(const torch::Tensor& a, const torch::Tensor& b) {
  auto x = a.to(torch::kFloat64).contiguous(), y = b.to(torch::kFloat64).contiguous();
  const double *p = x.data_ptr<double>(), *q = y.data_ptr<double>();
  const int64_t d = x.numel();
  long double mx = 0, my = 0;
  for (int64_t k = 0; k < d; ++k) mx += p[k], my += q[k];
  mx /= d, my /= d;
  long double sxy = 0, sxx = 0, syy = 0;
  for (int64_t k = 0; k < d; ++k) {
    sxy += (p[k] - mx) * (q[k] - my);
    sxx += (p[k] - mx) * (p[k] - mx);
    syy += (q[k] - my) * (q[k] - my);
  }
  return static_cast<double>(sxy / std::sqrt(sxx * syy));
}

double mean_distance_to_mean(const std::vector<torch::Tensor>& replicas) {
  const int64_t n = replicas.size(), d = replicas[0].numel();
  std::vector<torch::Tensor> rows;
  for (const auto& r : replicas) rows.push_back(r.to(torch::kFloat64).contiguous());
  std::vector<long double> mean(d, 0);
  for (const auto& r : rows) {
    for (int64_t k = 0; k < d; ++k) mean[k] += r.data_ptr<double>()[k];
  }
  for (auto& m : mean) m /= n;
  long double total = 0;
  for (const auto& r : rows) {
    long double s = 0;
    for (int64_t k = 0; k < d; ++k) s += (r.data_ptr<double>()[k] - mean[k]) * (r.data_ptr<double>()[k] - mean[k]);
    total += std::sqrt(s);
  }
  return static_cast<double>(total / n);
}

// Replicas that share a common direction to different degrees, with different offsets.
std::vector<torch::Tensor> mixed_replicas(int n, int64_t d, uint64_t seed) {
  torch::manual_seed(seed);
  auto base = torch::randn({d});
  std::vector<torch::Tensor> replicas;
  for (int i = 0; i < n; ++i) replicas.push_back(base * (0.2 * i - 0.5) + torch::randn({d}) + 0.3 * i);
  return replicas;
}

TEST(ReplicaAgreement, IdenticalReplicasCorrelatePerfectly) {
  torch::manual_seed(0);
  auto w = torch::randn({1000});
  auto a = replica_agreement({w, w.clone(), w.clone()});
  EXPECT_NEAR(a.mean_correlation, 1.0, 1e-12);
  EXPECT_NEAR(a.min_correlation, 1.0, 1e-12);
  EXPECT_NEAR(a.mean_distance, 0.0, 1e-12);
}

TEST(ReplicaAgreement, IndependentReplicasAreNearlyUncorrelated) {
  torch::manual_seed(1);
  std::vector<torch::Tensor> replicas;
  for (int i = 0; i < 4; ++i) replicas.push_back(torch::randn({100000}));
  auto a = replica_agreement(replicas);
  EXPECT_NEAR(a.mean_correlation, 0.0, 0.02);
  // Each is ~sqrt(d * (1 - 1/N)) from the mean of N independent unit-variance vectors.
  EXPECT_NEAR(a.mean_distance, std::sqrt(100000 * 0.75), 5.0);
}

TEST(ReplicaAgreement, AnticorrelatedPairHasMinusOne) {
  auto w = torch::arange(10, torch::kFloat32);
  auto a = replica_agreement({w, -w});
  EXPECT_NEAR(a.mean_correlation, -1.0, 1e-12);
}

TEST(ReplicaAgreement, AllPairsMatchThePearsonFormula) {
  const int n = 7;
  auto replicas = mixed_replicas(n, 501, 2);
  auto a = replica_agreement(replicas);
  ASSERT_EQ(a.matrix.size(), size_t(n * n));
  double sum = 0, minimum = 2;
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(a.matrix[i * n + i], 1.0);
    for (int j = i + 1; j < n; ++j) {
      double r = pearson(replicas[i], replicas[j]);
      EXPECT_NEAR(a.matrix[i * n + j], r, 1e-13) << i << "," << j;
      EXPECT_EQ(a.matrix[i * n + j], a.matrix[j * n + i]);
      sum += r, minimum = std::min(minimum, r);
    }
  }
  EXPECT_NEAR(a.mean_correlation, sum / (n * (n - 1) / 2), 1e-13);
  EXPECT_NEAR(a.min_correlation, minimum, 1e-13);
  EXPECT_LT(a.min_correlation, -0.1);  // the inputs really span a range of agreement
  EXPECT_NEAR(a.mean_distance, mean_distance_to_mean(replicas), 1e-9 * a.mean_distance);
}

TEST(ReplicaAgreement, SampledPairsAreDistinctExactAndSeeded) {
  const int n = 12;
  auto replicas = mixed_replicas(n, 300, 3);
  auto a = replica_agreement(replicas, 10, 42);
  int sampled = 0;
  double sum = 0, minimum = 2;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      double v = a.matrix[i * n + j];
      EXPECT_TRUE(std::isnan(v) == std::isnan(a.matrix[j * n + i]));
      if (std::isnan(v)) continue;
      ++sampled;
      double r = pearson(replicas[i], replicas[j]);
      EXPECT_NEAR(v, r, 1e-13);
      sum += r, minimum = std::min(minimum, r);
    }
  }
  EXPECT_EQ(sampled, 10);
  EXPECT_NEAR(a.mean_correlation, sum / 10, 1e-13);
  EXPECT_NEAR(a.min_correlation, minimum, 1e-13);
  EXPECT_NEAR(a.mean_distance, mean_distance_to_mean(replicas), 1e-9 * a.mean_distance);

  // Same seed, same pairs and values bit for bit; another seed picks other pairs.
  auto again = replica_agreement(replicas, 10, 42);
  auto other = replica_agreement(replicas, 10, 43);
  bool same_pattern = true;
  for (size_t k = 0; k < a.matrix.size(); ++k) {
    EXPECT_TRUE(std::isnan(a.matrix[k]) ? std::isnan(again.matrix[k]) : a.matrix[k] == again.matrix[k]);
    same_pattern = same_pattern && std::isnan(a.matrix[k]) == std::isnan(other.matrix[k]);
  }
  EXPECT_EQ(a.mean_correlation, again.mean_correlation);
  EXPECT_FALSE(same_pattern);
  // Asking for at least every pair gives every pair.
  auto all = replica_agreement(replicas, n * (n - 1) / 2, 42);
  for (double v : all.matrix) EXPECT_FALSE(std::isnan(v));
}

TEST(ReplicaAgreement, NearlyIdenticalReplicasKeepTheirSmallDifferences) {
  // Replicas that nearly agree: 1 - r is ~1e-6, and must keep most of its digits.
  torch::manual_seed(4);
  auto w = torch::randn({20000});
  std::vector<torch::Tensor> replicas{w, w + 1e-3 * torch::randn({20000}), w + 1e-3 * torch::randn({20000})};
  auto a = replica_agreement(replicas);
  for (int i = 0; i < 3; ++i) {
    for (int j = i + 1; j < 3; ++j) {
      double r = pearson(replicas[i], replicas[j]);
      EXPECT_LT(r, 1 - 1e-7);
      EXPECT_NEAR(1 - a.matrix[i * 3 + j], 1 - r, 1e-6 * (1 - r));
    }
  }
}

TEST(ReplicaAgreement, SingleReplicaAndMismatchedSizes) {
  auto a = replica_agreement({torch::ones({5})});
  EXPECT_EQ(a.matrix, std::vector<double>{1.0});
  EXPECT_EQ(a.mean_distance, 0.0);
  EXPECT_THROW(replica_agreement({torch::ones({5}), torch::ones({6})}), std::invalid_argument);
}

// Counts the bytes LibTorch holds on the CPU while installed and refuses an allocation
// that would take the total past a cap, so an O(N^2 d) implementation fails the test
// instead of taking the machine's memory.
class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(size_t cap) : inner_(c10::GetCPUAllocator()), cap_(cap) {}
  c10::DataPtr allocate(size_t n) const override {
    size_t now = live_.fetch_add(n) + n;
    if (now > cap_) {
      live_.fetch_sub(n);
      throw std::runtime_error("allocation of " + std::to_string(n) + " bytes would exceed the cap");
    }
    size_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    auto inner = inner_->allocate(n);
    void* data = inner.get();
    auto* context = new Held{std::move(inner), n};
    return {data, context, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  size_t peak() const { return peak_.load(); }
  at::Allocator* inner() const { return inner_; }

 private:
  struct Held {
    c10::DataPtr data;
    size_t bytes;
  };
  static void release(void* context) {
    auto* held = static_cast<Held*>(context);
    live_.fetch_sub(held->bytes);
    delete held;
  }
  at::Allocator* inner_;
  size_t cap_;
  static inline std::atomic<size_t> live_{0};
  mutable std::atomic<size_t> peak_{0};
};

TEST(ReplicaAgreement, MemoryStaysLinearInReplicasTimesParameters) {
  const int n = 64;
  const int64_t d = 1 << 20;
  torch::manual_seed(5);
  auto base = torch::randn({d});
  auto all = base + 0.5 * torch::randn({n, d});  // 256 MB of float inputs
  std::vector<torch::Tensor> replicas;
  for (int i = 0; i < n; ++i) replicas.push_back(all[i]);
  // One double copy of the inputs (512 MB) is the budget; all pairs of d-vectors would
  // be 2016 x 8 MB.
  const size_t cap = size_t(n) * d * sizeof(double);
  CountingAllocator counter(cap);
  c10::SetCPUAllocator(&counter, /*priority=*/100);
  ReplicaAgreement a;
  try {
    a = replica_agreement(replicas);
  } catch (const std::exception& e) {
    c10::SetCPUAllocator(counter.inner(), 100);
    FAIL() << e.what();
  }
  c10::SetCPUAllocator(counter.inner(), 100);
  std::printf("peak LibTorch allocation during the call: %.1f MB (inputs %.1f MB)\n", counter.peak() / 1e6,
              n * d * 4 / 1e6);
  EXPECT_LE(counter.peak(), cap);
  // The blocked computation still gives the plain formula's values (0.8 expected).
  for (auto [i, j] : {std::pair{0, 1}, std::pair{5, 63}, std::pair{31, 32}}) {
    EXPECT_NEAR(a.matrix[i * n + j], pearson(replicas[i], replicas[j]), 1e-12);
  }
  EXPECT_NEAR(a.mean_correlation, 0.8, 0.01);
}

// DDP keeps every replica equal, so the averaged model is replica 0 itself: the final
// reported loss must be that model's loss on the whole test split (the last eval uses all
// of it; earlier ones a sample of eval_samples), computed here in one plain forward pass.
TEST(Evaluation, DdpReportsTheSharedModelOnTheConfiguredSamples) {
  Scenario s = parse_scenario(R"(
name: eval_test
seed: 5
nodes: 3
threads: 1
topology: {kind: ring, link: {bandwidth: 1Gbps, latency: 1ms}}
workload: {model: mlp, batch_size: 16, steps: 4, eval_every: 2, eval_samples: 300}
compute: {model: fixed, step_time: 10ms}
)",
                              "eval_test");
  Dataset data = load_dataset(s);
  auto path = std::filesystem::temp_directory_path() / ("eval_test_" + std::to_string(::getpid()) + ".h5");
  Engine engine(s, data);
  RunSummary summary;
  {
    Hdf5Recorder recorder(path.string(), engine.run_info());
    summary = engine.run(recorder);
  }
  ASSERT_EQ(summary.status, testbed::RunStatus::Completed);
  EXPECT_EQ(summary.eval_samples, 300);

  auto& model = engine.replicas()[0]->model();
  model.eval();
  torch::NoGradGuard no_grad;
  auto logits = model.forward(data.test_inputs);
  auto targets = data.test_targets;
  double loss = torch::nn::functional::cross_entropy(logits, targets).item<double>();
  double accuracy = logits.argmax(1).eq(targets).sum().item<double>() / targets.size(0);
  EXPECT_EQ(summary.final_eval_samples, targets.size(0));
  EXPECT_NEAR(summary.final_eval_loss, loss, 1e-6);
  EXPECT_DOUBLE_EQ(summary.final_accuracy, accuracy);

  H5::H5File file(path.string(), H5F_ACC_RDONLY);
  int64_t samples = 0;
  file.openGroup("/summary").openAttribute("eval_samples").read(H5::PredType::NATIVE_INT64, &samples);
  EXPECT_EQ(samples, 300);
  // Every replica's loss is the shared model's, at both evals.
  auto replica_loss = file.openDataSet("/eval/replica_loss");
  auto eval_loss = file.openDataSet("/eval/loss");
  std::vector<double> per_replica(2 * 3), averaged(2);
  replica_loss.read(per_replica.data(), H5::PredType::NATIVE_DOUBLE);
  eval_loss.read(averaged.data(), H5::PredType::NATIVE_DOUBLE);
  for (int e = 0; e < 2; ++e) {
    for (int n = 0; n < 3; ++n) EXPECT_EQ(per_replica[e * 3 + n], averaged[e]);
  }
  EXPECT_NE(averaged[0], averaged[1]);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace testbed
