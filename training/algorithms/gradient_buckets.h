// Gradient buckets as PyTorch DDP forms them (c10d's compute_bucket_assignment_by_size, after
// the reducer's first-iteration rebuild): what one all-reduce carries while backward goes on.
#pragma once

#include <cstdint>
#include <vector>

namespace testbed {

// Consecutive trainable tensors, so a slice of the replica's flat vector. PyTorch lays a
// bucket out in gradient-ready order; here it keeps registration order, which changes only
// which ring chunk an element falls in (and with one bucket gives the flat vector itself).
struct GradientBucket {
  int first_tensor = 0, tensors = 0;  // [first_tensor, first_tensor + tensors), registration order
  int64_t offset = 0, elements = 0;   // their slice of the flat vector
};

// PyTorch's default cap of the first bucket (dist._DEFAULT_FIRST_BUCKET_BYTES): small, so the
// first all-reduce starts early in backward.
constexpr double kFirstBucketBytes = 1024.0 * 1024.0;

// Buckets in the order they fill. tensor_sizes: the trainable tensors' elements in registration
// order. Tensors join the open bucket in gradient-ready order (the reverse: backward runs from
// the last layer); a bucket closes as soon as it holds at least its cap, so it may exceed it by
// its last tensor. The first bucket's cap is first_bucket_bytes, every later one's bucket_bytes.
// A bucket can leave once the gradient of its first_tensor exists.
std::vector<GradientBucket> gradient_buckets(const std::vector<int64_t>& tensor_sizes, double bucket_bytes,
                                             double first_bucket_bytes = kFirstBucketBytes,
                                             double element_bytes = 4);

}  // namespace testbed
