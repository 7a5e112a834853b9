// Evaluation and replica statistics, computed in double precision where it matters.
#include "training/metrics.h"

#include <cmath>
#include <random>
#include <set>

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

ReplicaAgreement replica_agreement(const std::vector<torch::Tensor>& flat_parameters, int64_t max_pairs,
                                   uint64_t seed) {
  ReplicaAgreement out;
  if (flat_parameters.empty()) return out;
  auto stacked = torch::stack(flat_parameters).to(torch::kFloat64);  // N x d
  auto mean = stacked.mean(0);
  out.mean_distance = (stacked - mean).norm(2, {1}).mean().item<double>();
  const int64_t n = stacked.size(0);
  out.matrix.assign(n * n, std::nan(""));
  for (int64_t i = 0; i < n; ++i) out.matrix[i * n + i] = 1.0;
  if (n < 2) return out;
  auto centered = stacked - stacked.mean(1, true);
  auto unit = centered / centered.norm(2, {1}, true).clamp_min(1e-300);

  std::vector<std::pair<int64_t, int64_t>> pairs;
  const int64_t all_pairs = n * (n - 1) / 2;
  if (max_pairs <= 0 || max_pairs >= all_pairs) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = i + 1; j < n; ++j) pairs.emplace_back(i, j);
    }
  } else {
    // Distinct pairs by index into the upper triangle, drawn without replacement.
    std::mt19937_64 rng(seed);
    std::set<int64_t> chosen;
    while (static_cast<int64_t>(chosen.size()) < max_pairs) chosen.insert(static_cast<int64_t>(rng() % all_pairs));
    for (int64_t k : chosen) {
      int64_t i = 0, row_length = n - 1;
      while (k >= row_length) k -= row_length--, ++i;
      pairs.emplace_back(i, i + 1 + k);
    }
  }
  std::vector<int64_t> left_index, right_index;
  for (auto [i, j] : pairs) left_index.push_back(i), right_index.push_back(j);
  auto left = torch::tensor(left_index, torch::kInt64);
  auto right = torch::tensor(right_index, torch::kInt64);
  auto correlations = (unit.index_select(0, left) * unit.index_select(0, right)).sum(1).contiguous();
  const double* values = correlations.data_ptr<double>();
  double sum = 0, minimum = 1e300;
  for (size_t p = 0; p < pairs.size(); ++p) {
    auto [i, j] = pairs[p];
    out.matrix[i * n + j] = out.matrix[j * n + i] = values[p];
    sum += values[p];
    minimum = std::min(minimum, values[p]);
  }
  out.mean_correlation = sum / pairs.size();
  out.min_correlation = minimum;
  return out;
}

}  // namespace testbed
