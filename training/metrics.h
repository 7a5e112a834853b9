// Measurements on models and replicas: held-out loss and accuracy, replica agreement.
#pragma once

#include <vector>

#include <torch/types.h>

#include "training/models.h"

namespace testbed {

struct EvalResult {
  double loss = 0;
  double accuracy = 0;  // fraction of correct argmax predictions
};

// Mean cross-entropy and accuracy over `inputs` in batches, without gradients.
EvalResult evaluate(Model& model, const torch::Tensor& inputs, const torch::Tensor& targets,
                    torch::Device device, int batch_size = 1000);

struct ReplicaAgreement {
  double mean_correlation = 1;  // mean pairwise Pearson correlation of flattened parameters
  double min_correlation = 1;
  double mean_distance = 0;     // mean L2 distance of each replica to the replicas' mean
};

ReplicaAgreement replica_agreement(const std::vector<torch::Tensor>& flat_parameters);

}  // namespace testbed
