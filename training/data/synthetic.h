// A teacher network labels Gaussian inputs: fast tasks with a learnable ground truth.
#pragma once

#include <cstdint>

#include "training/data/dataset.h"

namespace testbed {

struct SyntheticOptions {
  bool regression = false;
  int inputs = 32, outputs = 10, hidden = 64;
  int train_samples = 20000, test_samples = 2000;
};

// Inputs ~ N(0, I); a fixed random two-layer tanh teacher maps them to `outputs` values:
// regression targets are those values, classification targets their argmax.
Dataset make_teacher_dataset(const SyntheticOptions& options, uint64_t seed);

// ImageNet does not ship, and no Debian or npm package holds it: a stand-in of its shapes, 3 x side
// x side images (224, or Inception's 299) of N(0, 1) pixels (as normalised images are) with 1000 uniformly drawn
// labels. Nothing in it can be learnt: it lets ImageNet-shaped models (ResNet-50's stem and strides) train real steps
// here and be timed, and projections size everything from it; accuracy means nothing.
Dataset make_imagenet_stand_in(int64_t train_samples, int64_t test_samples, int64_t side, uint64_t seed);

}  // namespace testbed
