// Evaluation and replica statistics, computed in double precision where it matters.
#include "training/metrics.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <stdexcept>

#include <torch/torch.h>

namespace testbed {

EvalResult evaluate(Model& model, Task task, const torch::Tensor& inputs, const torch::Tensor& targets,
                    torch::Device device, int batch_size) {
  torch::NoGradGuard no_grad;
  model.eval();
  double loss_sum = 0;
  int64_t correct = 0, predictions = 0;
  for (int64_t start = 0; start < inputs.size(0); start += batch_size) {
    int64_t end = std::min<int64_t>(start + batch_size, inputs.size(0));
    auto x = inputs.slice(0, start, end).to(device);
    auto y = targets.slice(0, start, end).to(device);
    auto out = model.forward(x);
    // Batch means weighted by their size give the mean over the whole split.
    int64_t count = task == Task::Regression ? y.size(0) : y.numel();
    loss_sum += task_loss(task, out, y).item<double>() * count;
    predictions += count;
    if (task != Task::Regression) correct += out.argmax(-1).eq(y).sum().item<int64_t>();
  }
  double accuracy = task == Task::Regression ? std::nan("") : static_cast<double>(correct) / predictions;
  return {loss_sum / predictions, accuracy};
}

namespace {

// Columns per block in the Gram pass: a block of all N replicas stays near 8 MB of
// doubles, so the working set is O(N + d) beyond the inputs however large N x d is.
constexpr int64_t kBlockElements = int64_t{1} << 20;

// The upper-triangle pairs whose correlation is reported: all, or `max_pairs` distinct
// ones drawn with `seed` (the same draw as before the Gram formulation, so sampled runs
// keep their pairs).
std::vector<std::pair<int64_t, int64_t>> chosen_pairs(int64_t n, int64_t max_pairs, uint64_t seed) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  const int64_t all_pairs = n * (n - 1) / 2;
  if (max_pairs <= 0 || max_pairs >= all_pairs) {
    pairs.reserve(all_pairs);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = i + 1; j < n; ++j) pairs.emplace_back(i, j);
    }
    return pairs;
  }
  // Distinct pairs by index into the upper triangle, drawn without replacement.
  std::mt19937_64 rng(seed);
  std::set<int64_t> chosen;
  while (static_cast<int64_t>(chosen.size()) < max_pairs) chosen.insert(static_cast<int64_t>(rng() % all_pairs));
  for (int64_t k : chosen) {
    int64_t i = 0, row_length = n - 1;
    while (k >= row_length) k -= row_length--, ++i;
    pairs.emplace_back(i, i + 1 + k);
  }
  return pairs;
}

}  // namespace

int64_t agreement_block_columns(int64_t n) { return std::max<int64_t>(1, kBlockElements / std::max<int64_t>(n, 1)); }

AgreementSums start_agreement(int64_t n) {
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  return {torch::zeros({n, n}, f64), torch::zeros({n}, f64)};
}

// Over column blocks of the N x d matrix X, accumulates
//   gram = (X - row means)(X - row means)^T   (N x N: every pair's centred dot product)
//   squared distance of each replica to the replicas' mean, per block of elements.
// Only a N x B block exists at a time, never the N x d matrix in double, nor per pair.
void add_agreement_columns(AgreementSums& sums, const std::vector<torch::Tensor>& columns,
                           const torch::Tensor& row_mean, int64_t block_width) {
  torch::NoGradGuard no_grad;
  const int64_t n = static_cast<int64_t>(columns.size());
  if (n == 0) return;
  const int64_t d = columns.front().numel();
  const int64_t block = agreement_block_columns(n);
  auto x = torch::empty({n, block_width}, torch::TensorOptions().dtype(torch::kFloat64));
  for (int64_t begin = 0; begin < d; begin += block) {
    const int64_t width = std::min(block, d - begin);
    auto xb = x.narrow(1, 0, width);
    for (int64_t i = 0; i < n; ++i) xb[i].copy_(columns[i].reshape(-1).narrow(0, begin, width));
    sums.squared_distance += (xb - xb.mean(0, true)).square().sum(1);
    xb.sub_(row_mean);
    sums.gram.addmm_(xb, xb.t());
  }
}

ReplicaAgreement finish_agreement(const AgreementSums& sums, int64_t max_pairs, uint64_t seed) {
  ReplicaAgreement out;
  const int64_t n = sums.gram.size(0);
  out.mean_distance = sums.squared_distance.sqrt().mean().item<double>();

  out.matrix.assign(n * n, std::nan(""));
  for (int64_t i = 0; i < n; ++i) out.matrix[i * n + i] = 1.0;
  if (n < 2) return out;
  const auto gram = sums.gram.contiguous();
  const double* g = gram.data_ptr<double>();
  std::vector<double> norm(n);
  // A constant replica has no direction; its norm is floored as the old normalisation did.
  for (int64_t i = 0; i < n; ++i) norm[i] = std::max(std::sqrt(std::max(g[i * n + i], 0.0)), 1e-300);

  auto pairs = chosen_pairs(n, max_pairs, seed);
  double sum = 0, minimum = 1e300;
  for (auto [i, j] : pairs) {
    const double r = g[i * n + j] / norm[i] / norm[j];
    out.matrix[i * n + j] = out.matrix[j * n + i] = r;
    sum += r;
    minimum = std::min(minimum, r);
  }
  out.mean_correlation = sum / pairs.size();
  out.min_correlation = minimum;
  return out;
}

double replica_mean(const torch::Tensor& flat_parameters) {
  return flat_parameters.reshape(-1).sum(torch::kFloat64).item<double>() / flat_parameters.numel();
}

ReplicaAgreement replica_agreement(const std::vector<torch::Tensor>& flat_parameters, int64_t max_pairs,
                                   uint64_t seed) {
  if (flat_parameters.empty()) return {};
  const int64_t n = static_cast<int64_t>(flat_parameters.size());
  const int64_t d = flat_parameters.front().numel();
  std::vector<double> means(n);
  for (int64_t i = 0; i < n; ++i) {
    if (flat_parameters[i].numel() != d) throw std::invalid_argument("replica_agreement: replicas differ in size");
    // Each replica's mean over its elements, which Pearson's correlation removes.
    means[i] = replica_mean(flat_parameters[i]);
  }
  AgreementSums sums = start_agreement(n);
  add_agreement_columns(sums, flat_parameters, torch::tensor(means, torch::kFloat64).reshape({n, 1}),
                        std::min(agreement_block_columns(n), std::max<int64_t>(d, 1)));
  return finish_agreement(sums, max_pairs, seed);
}

}  // namespace testbed
