// Evaluation and replica statistics, computed in double precision where it matters.
#include "training/metrics.h"

#include <torch/torch.h>

namespace testbed {

EvalResult evaluate(Model& model, const torch::Tensor& inputs, const torch::Tensor& targets,
                    torch::Device device, int batch_size) {
  torch::NoGradGuard no_grad;
  model.eval();
  double loss_sum = 0;
  int64_t correct = 0, count = 0;
  for (int64_t start = 0; start < inputs.size(0); start += batch_size) {
    int64_t end = std::min<int64_t>(start + batch_size, inputs.size(0));
    auto x = inputs.slice(0, start, end).to(device);
    auto y = targets.slice(0, start, end).to(device).flatten();
    auto logits = model.forward(x).flatten(0, -2);
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    correct += logits.argmax(-1).eq(y).sum().item<int64_t>();
    count += y.numel();
  }
  return {loss_sum / count, static_cast<double>(correct) / count};
}

ReplicaAgreement replica_agreement(const std::vector<torch::Tensor>& flat_parameters) {
  ReplicaAgreement out;
  if (flat_parameters.empty()) return out;
  auto stacked = torch::stack(flat_parameters).to(torch::kFloat64);  // N x d
  auto mean = stacked.mean(0);
  out.mean_distance = (stacked - mean).norm(2, {1}).mean().item<double>();
  int64_t n = stacked.size(0);
  if (n < 2) return out;
  auto centered = stacked - stacked.mean(1, true);
  auto unit = centered / centered.norm(2, {1}, true).clamp_min(1e-300);
  auto corr = unit.matmul(unit.t());
  auto off_diagonal = corr.masked_select(~torch::eye(n, torch::kBool));
  out.mean_correlation = off_diagonal.mean().item<double>();
  out.min_correlation = off_diagonal.min().item<double>();
  return out;
}

}  // namespace testbed
