// Evaluation at an eval step: every replica on a seeded sample of the test split, their
// average (on the whole split at the last step) and each shifted test set, and how far the
// replicas agree.
#include "sim/core/evaluation/evaluation.h"

#include <cmath>

#include <torch/torch.h>

#include "training/algorithms/registry.h"
#include "training/data/partition.h"
#include "training/metrics.h"
#include "training/replica.h"
#include "training/seed_streams.h"

namespace testbed {

Evaluator::Evaluator(const Scenario& scenario, const Dataset& data, std::shared_ptr<Model> model)
    : scenario_(scenario), data_(data), model_(std::move(model)) {
  // A seeded sample from the whole test split: the first windows of a text split are one or
  // two documents, and even a shuffled image split is better sampled than cut.
  auto eval_index = torch::tensor(
      seeded_subset(data.test_size(), scenario.workload.eval_samples, stream_seed(scenario.seed, "eval_samples")),
      torch::kInt64);
  eval_inputs_ = data.test_inputs.index_select(0, eval_index);
  eval_targets_ = data.test_targets.index_select(0, eval_index);
  for (const auto& variant : data.test_variants) eval_variants_.push_back(variant.inputs.index_select(0, eval_index));
  const AlgorithmEntry* entry = find_algorithm(scenario.algorithm.name);
  separate_models_ = entry && entry->cloud;
}

void Evaluator::summarise(const EvalRow& row, RunSummary& summary) const {
  summary.final_eval_loss = row.loss;
  summary.final_accuracy = row.accuracy;
  summary.final_perplexity = row.perplexity;
  summary.eval_samples = sample_size();
  summary.final_eval_samples = averaged_samples();
}

EvalRow Evaluator::evaluate_step(int steps_done, const std::vector<torch::Tensor>& snapshots,
                                 const torch::Tensor& model) {
  torch::Device device(scenario_.device);
  EvalRow row;
  row.step = steps_done;
  const size_t n = snapshots.size();
  if (separate_models_) {
    evaluate_each(row, steps_done, snapshots);
    std::vector<torch::Tensor> trainable;
    for (const auto& snapshot : snapshots) trainable.push_back(trainable_part(snapshot));
    record_agreement(row, replica_agreement(trainable, scenario_.workload.correlation_pairs, pairs_seed(steps_done)));
    return row;
  }
  // A replica equal to its predecessor shares its evaluation. When all are equal (DDP),
  // the averaged model is that replica, and it is evaluated once for everything.
  std::vector<bool> same_as_previous(n, false);
  bool all_same = !model.defined();
  for (size_t i = 1; i < n; ++i) {
    same_as_previous[i] = torch::equal(snapshots[i], snapshots[i - 1]);
    all_same = all_same && same_as_previous[i];
  }
  if (!all_same) {
    for (size_t i = 0; i < n; ++i) {
      if (same_as_previous[i]) {
        row.replica_loss.push_back(row.replica_loss.back());
        row.replica_accuracy.push_back(row.replica_accuracy.back());
        continue;
      }
      load_flat_parameters(*model_, snapshots[i]);
      auto result = evaluate(*model_, data_.task, eval_inputs_, eval_targets_, device);
      row.replica_loss.push_back(result.loss);
      row.replica_accuracy.push_back(result.accuracy);
    }
  }
  torch::Tensor average = model.defined() ? model : snapshots[0];
  if (!all_same && !model.defined()) {
    // Summed into one double vector: O(d) beside the snapshots, no N x d stack.
    auto sum = snapshots[0].to(torch::kFloat64);
    for (size_t i = 1; i < n; ++i) sum.add_(snapshots[i]);
    average = sum.div_(static_cast<double>(n)).to(snapshots[0].scalar_type());
  }
  evaluate_average(row, steps_done, average, all_same, n);
  std::vector<torch::Tensor> trainable;
  for (const auto& snapshot : snapshots) trainable.push_back(trainable_part(snapshot));
  record_agreement(row, replica_agreement(trainable, scenario_.workload.correlation_pairs, pairs_seed(steps_done)));
  return row;
}

uint64_t Evaluator::pairs_seed(int steps_done) const {
  return stream_seed(scenario_.seed, "correlation_pairs", steps_done);
}

void Evaluator::record_agreement(EvalRow& row, ReplicaAgreement agreement) {
  row.correlation = agreement.mean_correlation;
  row.min_correlation = agreement.min_correlation;
  row.distance = agreement.mean_distance;
  row.correlation_matrix = std::move(agreement.matrix);
}

// The agreement is over what the replicas train: the whole snapshot unless adapters freeze
// part of the model, then the trainable parameters' ranges within it.
torch::Tensor Evaluator::trainable_part(const torch::Tensor& snapshot) const {
  if (count_parameters(*model_, true) == count_parameters(*model_)) return snapshot;  // shares storage
  std::vector<torch::Tensor> parts;
  int64_t offset = 0;
  for (const auto& p : model_->parameters()) {
    if (p.requires_grad()) parts.push_back(snapshot.narrow(0, offset, p.numel()));
    offset += p.numel();
  }
  return torch::cat(parts);
}

void Evaluator::evaluate_each(EvalRow& row, int steps_done, const std::vector<torch::Tensor>& snapshots) {
  torch::Device device(scenario_.device);
  const bool last = steps_done == scenario_.workload.steps;
  const torch::Tensor& inputs = last ? data_.test_inputs : eval_inputs_;
  const torch::Tensor& targets = last ? data_.test_targets : eval_targets_;
  double loss = 0, accuracy = 0;
  for (const auto& snapshot : snapshots) {
    load_flat_parameters(*model_, snapshot);
    const auto result = evaluate(*model_, data_.task, inputs, targets, device);
    row.replica_loss.push_back(result.loss);
    row.replica_accuracy.push_back(result.accuracy);
    loss += result.loss / static_cast<double>(snapshots.size());
    accuracy += result.accuracy / static_cast<double>(snapshots.size());
  }
  row.loss = loss;
  row.accuracy = accuracy;
  row.perplexity = data_.task == Task::Language ? std::exp(loss) : std::nan("");
  averaged_samples_ = inputs.size(0);
}

// The last eval sees the whole test split (the averaged model only: replicas stay on the
// sample), so the final figures are not subject to the sample's error.
void Evaluator::evaluate_average(EvalRow& row, int steps_done, const torch::Tensor& average, bool all_same, size_t n) {
  torch::Device device(scenario_.device);
  const bool last = steps_done == scenario_.workload.steps;
  const torch::Tensor& inputs = last ? data_.test_inputs : eval_inputs_;
  const torch::Tensor& targets = last ? data_.test_targets : eval_targets_;
  load_flat_parameters(*model_, average);  // left there for the final checkpoint
  auto averaged = evaluate(*model_, data_.task, inputs, targets, device);
  if (all_same) {
    row.replica_loss.assign(n, averaged.loss);
    row.replica_accuracy.assign(n, averaged.accuracy);
  }
  row.loss = averaged.loss;
  row.accuracy = averaged.accuracy;
  row.perplexity = data_.task == Task::Language ? std::exp(averaged.loss) : std::nan("");
  for (size_t v = 0; v < data_.test_variants.size(); ++v) {
    const auto& variant = last ? data_.test_variants[v].inputs : eval_variants_[v];
    auto result = evaluate(*model_, data_.task, variant, targets, device);
    row.variants.push_back({data_.test_variants[v].name, result.loss, result.accuracy});
  }
  averaged_samples_ = inputs.size(0);
}

}  // namespace testbed
