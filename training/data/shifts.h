// Deterministic distribution shifts of an image test split, for "does it hold up under shift?".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "training/data/shift_names.h"  // the shift names a scenario may ask for

namespace testbed {

// `images` float [N, 1, H, W] (normalised). noise: + N(0, 0.5^2) per pixel from `seed`;
// rotation: each image rotated by 30 degrees (bilinear, zero fill); invert: pixel
// contrast inverted around the data set's mean (max + min - x).
torch::Tensor shift_images(const torch::Tensor& images, const std::string& shift, uint64_t seed);

}  // namespace testbed
