// Measurements on models and replicas: held-out loss and accuracy, replica agreement.
#pragma once

#include <vector>

#include <torch/types.h>

#include "training/data/dataset.h"
#include "training/models/models.h"

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
  double mean_distance = 0;    // mean L2 distance of each replica to the replicas' mean
  std::vector<double> matrix;  // N x N, row-major; NaN for pairs that were not sampled
};

// Over all pairs, or over `max_pairs` distinct pairs drawn with `seed` when that is fewer.
// Every correlation is read from the N x N Gram matrix of the mean-centred replicas, built
// one block of columns at a time: memory is O(N + d) beyond the inputs (plus N^2 for the
// matrix), time one N x N x d matrix product. Double precision throughout.
ReplicaAgreement replica_agreement(const std::vector<torch::Tensor>& flat_parameters, int64_t max_pairs = 0,
                                   uint64_t seed = 0);

// replica_agreement in parts, for replicas whose columns are spread over processes (one
// process adds its columns, passes the sums on to the next): the same sums, bit for bit, when
// every part starts on a multiple of agreement_block_columns(N) and uses one block width,
// min(block columns, d).
struct AgreementSums {
  torch::Tensor gram;              // N x N, double
  torch::Tensor squared_distance;  // N, double
};
int64_t agreement_block_columns(int64_t n);
double replica_mean(const torch::Tensor& flat_parameters);  // in double
AgreementSums start_agreement(int64_t n);
// `columns[i]`: replica i's columns to add (each the same length); `row_mean`: N x 1, double.
void add_agreement_columns(AgreementSums& sums, const std::vector<torch::Tensor>& columns,
                           const torch::Tensor& row_mean, int64_t block_width);
ReplicaAgreement finish_agreement(const AgreementSums& sums, int64_t max_pairs, uint64_t seed);

}  // namespace testbed
