// VHL's virtual data, its contrastive calibration and its local step.
#include "training/vhl.h"

#include <cmath>
#include <random>
#include <stdexcept>

#include <torch/torch.h>

#include "training/data/partition.h"
#include "training/seed_streams.h"

namespace testbed {
namespace {

namespace F = torch::nn::functional;

// Weights N(0, 1) / sqrt(fan_in) and leaky ReLU with gain sqrt(2) (StyleGAN's equalised
// layers), so activations keep about unit variance through an untrained network.
torch::Tensor weight(std::initializer_list<int64_t> shape, int64_t fan_in, at::Generator& g) {
  return at::normal(0.0, 1.0, shape, g).div_(std::sqrt(static_cast<double>(fan_in)));
}
torch::Tensor activate(const torch::Tensor& x) {
  return F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2)) * std::sqrt(2.0);
}

}  // namespace

VirtualData make_virtual_data(int classes, int per_class, const std::vector<int64_t>& image, double mean, double std,
                              uint64_t seed) {
  if (image.size() != 3 || image[1] % 4 != 0 || image[2] % 4 != 0)
    throw std::invalid_argument("VHL's generator makes images {C, H, W} with H and W multiples of 4");
  torch::NoGradGuard no_grad;
  auto g = at::detail::createCPUGenerator(seed);
  const int64_t C = image[0], h = image[1] / 4, w = image[2] / 4, n = static_cast<int64_t>(classes) * per_class;
  // Latents, class by class.
  const auto means = at::normal(0.0, kVhlClassMeanStd, {classes, kVhlLatent}, g);
  const auto z = means.repeat_interleave(per_class, 0) + at::normal(0.0, kVhlSampleStd, {n, kVhlLatent}, g);
  // The untrained generator: latent -> 64 x h x w, twice (nearest x2, 3 x 3 conv), 1 x 1 to C.
  const auto w0 = weight({64 * h * w, kVhlLatent}, kVhlLatent, g);
  const auto w1 = weight({32, 64, 3, 3}, 64 * 9, g);
  const auto w2 = weight({16, 32, 3, 3}, 32 * 9, g);
  const auto w3 = weight({C, 16, 1, 1}, 16, g);
  auto up = [](const torch::Tensor& x) {
    return F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2, 2}).mode(torch::kNearest));
  };
  auto x = activate(z.matmul(w0.t())).view({n, 64, h, w});
  x = activate(F::conv2d(up(x), w1, F::Conv2dFuncOptions().padding(1)));
  x = activate(F::conv2d(up(x), w2, F::Conv2dFuncOptions().padding(1)));
  x = F::conv2d(x, w3);
  VirtualData d;
  d.inputs = x.clamp_(0, 1).sub_(mean).div_(std);
  d.black = -mean / std;
  d.targets = torch::arange(classes, torch::kInt64).repeat_interleave(per_class);
  return d;
}

torch::Tensor supcon_loss(const torch::Tensor& features, const torch::Tensor& labels, double temperature) {
  const int64_t n = features.size(0);
  const auto self = torch::eye(n, torch::TensorOptions().dtype(torch::kBool).device(features.device()));
  const auto positive =
      labels.unsqueeze(0).eq(labels.unsqueeze(1)).logical_and(self.logical_not()).to(features.dtype());
  auto logits = features.matmul(features.t()) / temperature;
  logits = logits - std::get<0>(logits.max(1, true)).detach();  // for exp's range; cancels below
  const auto others = logits.exp().masked_fill(self, 0).sum(1, true);
  const auto log_prob = logits - others.log();
  const auto mean_positive = (log_prob * positive).sum(1) / positive.sum(1).clamp_min(1);
  return -mean_positive.mean();
}

torch::Tensor vhl_loss(const torch::Tensor& real_features, const torch::Tensor& real_logits,
                       const torch::Tensor& labels, const torch::Tensor& virtual_features,
                       const torch::Tensor& virtual_logits, const torch::Tensor& virtual_labels, int classes,
                       double weight) {
  const auto real = F::normalize(real_features, F::NormalizeFuncOptions().dim(1));
  const auto virt = F::normalize(virtual_features, F::NormalizeFuncOptions().dim(1));
  const auto calibration =
      supcon_loss(torch::cat({real, virt.detach()}), torch::cat({labels, virtual_labels}), kVhlTemperature);
  return F::cross_entropy(real_logits, labels) + F::cross_entropy(virtual_logits, virtual_labels + classes) +
         weight * calibration + kVhlVirtualSupConWeight * supcon_loss(virt, virtual_labels, kVhlTemperature);
}

torch::Tensor crop_flip(const torch::Tensor& images, double fill, uint64_t seed) {
  constexpr int64_t kPad = 4;
  if (images.dim() != 4) throw std::invalid_argument("crop_flip takes images [n, C, H, W]");
  const int64_t H = images.size(2), W = images.size(3);
  const auto padded = torch::constant_pad_nd(images, {kPad, kPad, kPad, kPad}, fill);
  auto out = torch::empty_like(images);
  // The raw engine's bits, reduced modulo: the same draws from every standard library.
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < images.size(0); ++i) {
    const int64_t top = static_cast<int64_t>(rng() % (2 * kPad + 1));
    const int64_t left = static_cast<int64_t>(rng() % (2 * kPad + 1));
    const bool flip = rng() % 2 == 1;
    auto window = padded[i].narrow(1, top, H).narrow(2, left, W);
    out[i].copy_(flip ? window.flip({2}) : window);
  }
  return out;
}

double vhl_local_step(Replica& replica, const Dataset& data, int batch_size, const VirtualData& virtual_data,
                      int virtual_batch, uint64_t seed, double weight, bool augment) {
  const Batch real = replica.next_batch(data, batch_size);
  const auto chosen = seeded_subset(virtual_data.inputs.size(0), virtual_batch, seed);
  const auto index = torch::tensor(chosen, torch::kInt64);
  const auto device = replica.device();
  auto drawn = virtual_data.inputs.index_select(0, index);
  if (augment) drawn = crop_flip(drawn, virtual_data.black, stream_seed(seed, "vhl_augment"));
  const auto virtual_inputs = drawn.to(device);
  const auto virtual_labels = virtual_data.targets.index_select(0, index).to(device);
  Model& model = replica.model();
  model.train();
  const int64_t b = real.inputs.size(0);
  const auto features = model.features(torch::cat({real.inputs, virtual_inputs}));
  const auto logits = model.classify(features);
  const auto real_logits = logits.narrow(0, 0, b);
  const auto loss =
      vhl_loss(features.narrow(0, 0, b), real_logits, real.targets, features.narrow(0, b, features.size(0) - b),
               logits.narrow(0, b, logits.size(0) - b), virtual_labels, data.outputs, weight);
  replica.backward(loss);
  replica.optimizer_step();
  return F::cross_entropy(real_logits.detach(), real.targets).item<double>();
}

}  // namespace testbed
