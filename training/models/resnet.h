// ResNets (He et al. 2016) with torchvision's layout (v1.5: a bottleneck's stride is in its 3 x 3
// convolution), trainable in LibTorch, with each layer's roofline cost.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "training/models/layer_cost.h"
#include "training/models/models.h"

namespace testbed {

struct ResNetShape {
  int depth = 18;  // 18 or 34 (basic blocks), 50, 101 or 152 (bottlenecks)
  int classes = 1000;
  int channels = 3;  // of the input images
  int side = 224;    // their height and width
  // The ImageNet stem (7 x 7 stride-2 convolution, 3 x 3 stride-2 max pool), or the CIFAR one
  // (a 3 x 3 stride-1 convolution, no pool) that small images (32 x 32, 28 x 28) use.
  bool imagenet_stem = true;
};

std::shared_ptr<Model> make_resnet(const ResNetShape& shape);

}  // namespace testbed
