// The ImageNet classifiers of the papers besides the ResNets (resnet.h): DenseNet-201 and
// ViT-B/16 as torchvision builds them, Inception-v4 as timm does (torchvision has none),
// trainable in LibTorch, with each layer's roofline cost.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "training/models/models.h"

namespace testbed {

// Huang et al. 2017, torchvision's densenet201: growth 32, blocks of 6, 12, 48 and 32 layers,
// 4 x growth bottlenecks, transitions halving the channels; 20 013 928 parameters at 1000
// classes. 3 x 224 x 224 inputs.
std::shared_ptr<Model> make_densenet201(int classes);

// Szegedy et al. 2017 (Inception-v4, figures 3 to 9), as timm's inception_v4: 42 679 816
// parameters at 1000 classes; convolutions without bias, each with batch norm (eps 1e-3) and
// ReLU. 3 x 299 x 299 inputs.
std::shared_ptr<Model> make_inception_v4(int classes);

// Dosovitskiy et al. 2021, torchvision's vit_b_16: 16 x 16 patches, a class token and learned
// positions (197 tokens), 12 pre-norm blocks of width 768, 12 heads and a 3072 GELU MLP, the
// head on the class token; 86 567 656 parameters at 1000 classes. 3 x 224 x 224 inputs.
std::shared_ptr<Model> make_vit_b_16(int classes);

// The side of the square images an ImageNet model takes: 299 for inception_v4, else 224.
int64_t imagenet_side(const std::string& model);

}  // namespace testbed
