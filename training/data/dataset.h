// A supervised data set held in memory as tensors: inputs, targets and group labels.
#pragma once

#include <string>
#include <vector>

#include <torch/types.h>

namespace testbed {

enum class Task {
  Classification,  // targets int64 [N]; cross-entropy; accuracy
  Regression,      // targets float [N, outputs]; mean squared error
  Language,        // inputs and targets int64 [N, T] (targets shifted by one); cross-entropy; perplexity
};

// A variant of the test split (same targets), e.g. images under a distribution shift.
struct TestVariant {
  std::string name;
  torch::Tensor inputs;
};

struct Dataset {
  Task task = Task::Classification;
  torch::Tensor train_inputs, train_targets;  // first dimension: samples (or token windows)
  torch::Tensor test_inputs, test_targets;
  // Per training sample, the group non-IID partitions split by: the label, or for text
  // the genre of the document the window came from. int64 [N], values 0..num_groups-1.
  torch::Tensor train_groups;
  int num_groups = 0;
  int outputs = 0;  // classes, vocabulary size, or regression outputs
  std::vector<TestVariant> test_variants;
  int64_t train_size() const { return train_inputs.size(0); }
  int64_t test_size() const { return test_inputs.size(0); }
};

// The training loss for a task: mean cross-entropy over every prediction, or mean squared error.
torch::Tensor task_loss(Task task, const torch::Tensor& outputs, const torch::Tensor& targets);

}  // namespace testbed
