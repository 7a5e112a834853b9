// The bucket rule of PyTorch DDP's reducer.
#include "training/algorithms/gradient_buckets.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace testbed {

std::vector<GradientBucket> gradient_buckets(const std::vector<int64_t>& tensor_sizes,
                                             const std::vector<int>& tensor_layers, double bucket_bytes,
                                             double first_bucket_bytes, double element_bytes) {
  if (!tensor_layers.empty() && tensor_layers.size() != tensor_sizes.size())
    throw std::logic_error("gradient_buckets: " + std::to_string(tensor_layers.size()) + " layers for " +
                           std::to_string(tensor_sizes.size()) + " tensors");
  const int n = static_cast<int>(tensor_sizes.size());
  auto layer = [&](int t) { return tensor_layers.empty() ? t : tensor_layers[t]; };
  std::vector<int> ready(n);  // gradient-ready order
  std::iota(ready.rbegin(), ready.rend(), 0);
  std::stable_sort(ready.begin(), ready.end(), [&](int a, int b) { return layer(a) > layer(b); });

  std::vector<GradientBucket> buckets;
  GradientBucket open;
  double cap = first_bucket_bytes;
  auto close = [&] {
    std::sort(open.tensors.begin(), open.tensors.end());
    buckets.push_back(std::move(open));
    open = GradientBucket{};
  };
  for (int t : ready) {
    open.tensors.push_back(t);
    open.elements += tensor_sizes[t];
    open.last_ready = t;
    if (static_cast<double>(open.elements) * element_bytes >= cap) {
      close();
      cap = bucket_bytes;
    }
  }
  if (!open.tensors.empty()) close();
  return buckets;
}

}  // namespace testbed
