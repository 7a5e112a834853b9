// A teacher network labels Gaussian inputs: fast tasks with a learnable ground truth.
#pragma once

#include <cstdint>

#include "training/dataset.h"

namespace testbed {

struct SyntheticOptions {
  bool regression = false;
  int inputs = 32, outputs = 10, hidden = 64;
  int train_samples = 20000, test_samples = 2000;
};

// Inputs ~ N(0, I); a fixed random two-layer tanh teacher maps them to `outputs` values:
// regression targets are those values, classification targets their argmax.
Dataset make_teacher_dataset(const SyntheticOptions& options, uint64_t seed);

}  // namespace testbed
