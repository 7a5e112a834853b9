// Image shifts computed from the test split itself, seeded: the same variant every run.
#include "training/data/shifts.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

namespace testbed {

torch::Tensor shift_images(const torch::Tensor& images, const std::string& shift, uint64_t seed) {
  if (shift == "noise") {
    auto generator = at::detail::createCPUGenerator(seed);
    return images + at::normal(0.0, 0.5, images.sizes(), generator);
  }
  if (shift == "rotation") {
    const double angle = 30.0 * M_PI / 180.0;
    auto theta = torch::tensor({{std::cos(angle), -std::sin(angle), 0.0}, {std::sin(angle), std::cos(angle), 0.0}},
                               torch::kFloat32)
                     .unsqueeze(0)
                     .expand({images.size(0), 2, 3});
    // Rotate around the centre; outside the image is the background (the minimum pixel).
    auto background = images.min();
    auto grid = torch::nn::functional::affine_grid(theta, images.sizes().vec(), false);
    auto rotated = torch::nn::functional::grid_sample(images - background, grid,
                                                      torch::nn::functional::GridSampleFuncOptions()
                                                          .mode(torch::kBilinear)
                                                          .padding_mode(torch::kZeros)
                                                          .align_corners(false));
    return rotated + background;
  }
  if (shift == "invert") return images.max() + images.min() - images;
  throw std::invalid_argument("unknown image shift '" + shift + "'");
}

}  // namespace testbed
