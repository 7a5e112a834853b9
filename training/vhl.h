// VHL, Virtual Homogeneity Learning (Tang et al., ICML 2022; reference code wizard1203/VHL):
// every client mixes the same virtual data set, made from noise by a fixed, untrained
// generator, into its local steps, and calibrates its real features to the virtual ones of
// the same class, so that clients with different label mixes learn one feature space.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "training/models/models.h"
#include "training/replica.h"

namespace testbed {

// The reference's defaults (generate.sh, VHL_alignNoiseContrast.sh).
constexpr int kVhlLatent = 64;                   // the generator's latent (style_dim 64)
constexpr double kVhlClassMeanStd = 0.5;         // each class's latent mean ~ N(0, 0.5^2)
constexpr double kVhlSampleStd = 0.3;            // a sample's latent ~ N(its class mean, 0.3^2)
constexpr double kVhlTemperature = 0.07;         // SupCon's temperature (and base temperature)
constexpr double kVhlVirtualSupConWeight = 0.1;  // the SupCon among virtual features alone

struct VirtualData {
  torch::Tensor inputs;   // float [K x per_class, shape...], normalised as the real inputs
  torch::Tensor targets;  // int64: the virtual class 0..K-1, class by class
  double black = 0;       // a pixel of 0 after that normalisation: what padding adds
};

// torchvision's RandomCrop(H x W, padding=4) then RandomHorizontalFlip() on each image of
// `images` [n, C, H, W]: pad every side with 4 pixels of `fill`, take the H x W window at a
// top and left offset each uniform in 0..8, mirror it left to right with probability 1/2.
// The draws come from `seed` (per image: top, left, flip), the same on every machine.
torch::Tensor crop_flip(const torch::Tensor& images, double fill, uint64_t seed);

// The virtual data set: per class c a latent mean m_c ~ N(0, 0.5^2 I), per sample z ~ N(m_c,
// 0.3^2 I), through an untrained generator whose weights are drawn from `seed` alone (the
// reference's is an untrained StyleGAN2 at 32 x 32 x 3; here a small convolutional one at the
// real images' size, see docs/algorithms.md). Outputs are clamped to [0, 1], as the reference's
// saved images are, then normalised with the real images' mean and std. image: {C, H, W}, H and
// W multiples of 4.
VirtualData make_virtual_data(int classes, int per_class, const std::vector<int64_t>& image, double mean, double std,
                              uint64_t seed);

// Supervised contrastive loss (Khosla et al. 2020, the reference's SupConLoss with contrast
// mode `all`): every row of `features` (L2-normalised) is an anchor; its positives are the
// other rows of its label; loss = -mean over anchors of the mean over positives p of
// log(exp(z_a.z_p / T) / sum over rows k != a of exp(z_a.z_k / T)). An anchor without
// positives contributes 0 and still counts in the mean (the reference code's guard).
torch::Tensor supcon_loss(const torch::Tensor& features, const torch::Tensor& labels, double temperature);

// VHL's local loss on a real batch (features f, logits, labels y in 0..K-1) and a virtual one
// (labels v in 0..K-1, trained as classes K + v of the 2K-way head):
//   CE(real) + CE(virtual, v + K) + weight SupCon([f; f_v.detach()], [y; v]) + 0.1 SupCon(f_v, v)
// with features L2-normalised inside the SupCon terms.
torch::Tensor vhl_loss(const torch::Tensor& real_features, const torch::Tensor& real_logits,
                       const torch::Tensor& labels, const torch::Tensor& virtual_features,
                       const torch::Tensor& virtual_logits, const torch::Tensor& virtual_labels, int classes,
                       double weight);

// One local step of VHL: the replica's next real batch and `virtual_batch` rows of `data`
// (sorted indices drawn without replacement from `seed`; with `augment`, crop_flip'd under a
// seed derived from it), one forward pass of both (the reference concatenates them),
// vhl_loss, the optimizer's step. Returns the real batch's cross-entropy (comparable with a
// step without VHL).
double vhl_local_step(Replica& replica, const Dataset& data, int batch_size, const VirtualData& virtual_data,
                      int virtual_batch, uint64_t seed, double weight, bool augment = false);

}  // namespace testbed
