// Measurements on models and replicas: held-out loss and accuracy, replica agreement.
#pragma once

#include <vector>

#include <torch/types.h>

#include "training/dataset.h"
#include "training/models.h"

namespace testbed {

struct EvalResult {
  double loss = 0;      // mean per prediction (per token for language models)
  double accuracy = 0;  // fraction of correct argmax predictions; NaN for regression
};

// The task's loss and accuracy over `inputs` in batches, without gradients.
EvalResult evaluate(Model& model, Task task, const torch::Tensor& inputs, const torch::Tensor& targets,
                    torch::Device device, int batch_size = 500);

struct ReplicaAgreement {
  double mean_correlation = 1;  // mean pairwise Pearson correlation of flattened parameters
  double min_correlation = 1;
  double mean_distance = 0;     // mean L2 distance of each replica to the replicas' mean
  std::vector<double> matrix;   // N x N, row-major; NaN for pairs that were not sampled
};

// Over all pairs, or over `max_pairs` distinct pairs drawn with `seed` when that is fewer.
// Every correlation is read from the N x N Gram matrix of the mean-centred replicas, built
// one block of columns at a time: memory is O(N + d) beyond the inputs (plus N^2 for the
// matrix), time one N x N x d matrix product. Double precision throughout.
ReplicaAgreement replica_agreement(const std::vector<torch::Tensor>& flat_parameters, int64_t max_pairs = 0,
                                   uint64_t seed = 0);

}  // namespace testbed
