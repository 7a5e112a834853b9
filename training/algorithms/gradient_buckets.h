// Gradient buckets as PyTorch DDP forms them (c10d's compute_bucket_assignment_by_size, after
// the reducer's first-iteration rebuild): what one all-reduce carries while backward goes on.
#pragma once

#include <cstdint>
#include <vector>

namespace testbed {

// Some trainable tensors, all-reduced together. PyTorch lays a bucket out in gradient-ready
// order; here its buffer keeps registration order, which changes only which ring chunk an
// element falls in (and with one bucket gives the flat vector itself).
struct GradientBucket {
  std::vector<int> tensors;  // registration indices, ascending: the buffer's layout
  int64_t elements = 0;      // theirs
  int last_ready = 0;        // the tensor whose gradient completes the bucket: it leaves then
};

// PyTorch's default cap of the first bucket (dist._DEFAULT_FIRST_BUCKET_BYTES): small, so the
// first all-reduce starts early in backward.
constexpr double kFirstBucketBytes = 1024.0 * 1024.0;

// Buckets in the order they fill. tensor_sizes: the trainable tensors' elements in registration
// order; tensor_layers: each one's layer in forward order (empty: a tensor a layer, in
// registration order). Tensors join the open bucket in gradient-ready order: layers from the
// last to the first, as backward meets them (after the rebuild PyTorch buckets by the order
// gradients arrived in the first iteration; the GPT registers its head before its blocks, so
// reverse registration order would not be it), within a layer in reverse registration order.
// A bucket closes as soon as it holds at least its cap, so it may exceed it by its last tensor.
// The first bucket's cap is first_bucket_bytes, every later one's bucket_bytes.
std::vector<GradientBucket> gradient_buckets(const std::vector<int64_t>& tensor_sizes,
                                             const std::vector<int>& tensor_layers, double bucket_bytes,
                                             double first_bucket_bytes = kFirstBucketBytes, double element_bytes = 4);

}  // namespace testbed
