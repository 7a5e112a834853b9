// The bucket rule of PyTorch DDP's reducer.
#include "training/algorithms/gradient_buckets.h"

namespace testbed {

std::vector<GradientBucket> gradient_buckets(const std::vector<int64_t>& tensor_sizes, double bucket_bytes,
                                             double first_bucket_bytes, double element_bytes) {
  int64_t end = 0;  // one past the last element of the tensors not yet in a bucket
  for (int64_t n : tensor_sizes) end += n;
  std::vector<GradientBucket> buckets;
  GradientBucket open;
  double cap = first_bucket_bytes;
  for (int t = static_cast<int>(tensor_sizes.size()) - 1; t >= 0; --t) {
    open.first_tensor = t;
    ++open.tensors;
    open.elements += tensor_sizes[t];
    open.offset = end - open.elements;
    if (static_cast<double>(open.elements) * element_bytes >= cap) {
      end = open.offset;
      buckets.push_back(open);
      open = GradientBucket{};
      cap = bucket_bytes;
    }
  }
  if (open.tensors > 0) buckets.push_back(open);
  return buckets;
}

}  // namespace testbed
