// Fashion-MNIST from the IDX files that Debian's dataset-fashion-mnist ships.
#pragma once

#include <string>

#include "training/data/dataset.h"

namespace testbed {

// Mean and standard deviation of the Fashion-MNIST training pixels in [0, 1].
constexpr double kFashionMnistMean = 0.2860, kFashionMnistStd = 0.3530;

// Images become float [N, 1, 28, 28] scaled to zero mean / unit variance with
// the data set's published statistics; labels int64 [N]. Throws
// std::runtime_error naming the missing file and the install command.
Dataset load_fashion_mnist(const std::string& directory);

}  // namespace testbed
