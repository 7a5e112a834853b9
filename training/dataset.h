// A supervised data set held in memory as tensors: inputs and integer targets.
#pragma once

#include <torch/types.h>

namespace testbed {

struct Dataset {
  torch::Tensor train_inputs, train_targets;  // [N, ...], int64 [N]
  torch::Tensor test_inputs, test_targets;
  int num_classes = 0;
  int64_t train_size() const { return train_inputs.size(0); }
  int64_t test_size() const { return test_inputs.size(0); }
};

}  // namespace testbed
