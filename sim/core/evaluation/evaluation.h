// Evaluation and replica agreement at an eval step, from the replicas' parameter snapshots.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "sim/config/scenario.h"
#include "sim/dist/placement.h"
#include "sim/output/recorder.h"
#include "training/data/dataset.h"
#include "training/metrics.h"
#include "training/models/models.h"

namespace testbed {

class ProcessGroup;

class Evaluator {
 public:
  // `model` is the evaluation model: each snapshot is loaded into it in turn.
  Evaluator(const Scenario& scenario, const Dataset& data, std::shared_ptr<Model> model);

  // The row for `steps_done` from each node's flat parameters. Leaves the average in the model
  // (the final checkpoint is that model). `model`, when given, is evaluated instead of the
  // average (a federated server's model, which is not the mean of the clients').
  EvalRow evaluate_step(int steps_done, const std::vector<torch::Tensor>& snapshots, const torch::Tensor& model = {});

  // The same row when the replicas are spread over processes: `snapshots` holds this
  // process's replicas (the others are empty). Every process calls it at the same moment;
  // rank 0 gets the row (the others an empty one). `tags`: the run's eval tag sequence.
  EvalRow evaluate_spread(int steps_done, const std::vector<torch::Tensor>& snapshots, ProcessGroup& group,
                          const ReplicaPlacement& placement, uint64_t& tags);

  // The run's final figures as of `row`, the latest evaluation.
  void summarise(const EvalRow& row, RunSummary& summary) const;

  int64_t sample_size() const { return eval_inputs_.size(0); }    // a replica's evaluation
  int64_t averaged_samples() const { return averaged_samples_; }  // the average's, last time

 private:
  // The agreement's sampled pairs at an eval step, and its figures into the row.
  uint64_t pairs_seed(int steps_done) const;
  static void record_agreement(EvalRow& row, ReplicaAgreement agreement);
  // What the agreement compares of a snapshot: all of it, or its trainable ranges (adapters).
  torch::Tensor trainable_part(const torch::Tensor& snapshot) const;
  // The averaged model's evaluation (and each shifted test set's) into `row`; with
  // `all_same`, also every replica's.
  void evaluate_average(EvalRow& row, int steps_done, const torch::Tensor& average, bool all_same, size_t n);
  // Nodes with models of their own (split fine-tuning's edges): each evaluated, on the whole
  // test split at the last step, and the row their mean.
  void evaluate_each(EvalRow& row, int steps_done, const std::vector<torch::Tensor>& snapshots);

  const Scenario& scenario_;
  const Dataset& data_;
  std::shared_ptr<Model> model_;
  torch::Tensor eval_inputs_, eval_targets_;  // the seeded evaluation sample of the test split
  std::vector<torch::Tensor> eval_variants_;  // the same samples of each shifted test set
  int64_t averaged_samples_ = 0;
  bool separate_models_ = false;  // the algorithm never averages its nodes' models (AlgorithmEntry::cloud)
};

}  // namespace testbed
