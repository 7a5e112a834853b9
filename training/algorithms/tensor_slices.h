// Where each trainable tensor lies in a flat vector (the replica's gradients, or a buffer laid
// out tensor by tensor), and the copies that gather a set of tensors into one message buffer
// and scatter it back: what lets a bucket or fusion group hold tensors that are not neighbours
// in the flat vector.
#pragma once

#include <cstdint>
#include <numeric>
#include <vector>

#include <torch/torch.h>

namespace testbed {

class TensorSlices {
 public:
  TensorSlices() = default;
  explicit TensorSlices(std::vector<int64_t> sizes) : sizes_(std::move(sizes)), offsets_(sizes_.size() + 1, 0) {
    std::partial_sum(sizes_.begin(), sizes_.end(), offsets_.begin() + 1);
  }
  int64_t offset(int t) const { return offsets_.at(t); }
  int64_t size(int t) const { return sizes_.at(t); }
  int64_t total() const { return offsets_.back(); }

  // The tensors' slices of `flat` one after another, in the order given, in a new buffer of
  // `length` elements (zeros after them; -1: exactly their elements).
  torch::Tensor gather(const torch::Tensor& flat, const std::vector<int>& tensors, int64_t length = -1) const {
    int64_t elements = 0;
    for (int t : tensors) elements += size(t);
    auto buffer = torch::zeros({length < 0 ? elements : length}, flat.options());
    int64_t at = 0;
    for (int t : tensors) {
      buffer.narrow(0, at, size(t)).copy_(flat.narrow(0, offset(t), size(t)));
      at += size(t);
    }
    return buffer;
  }

  // The inverse of gather: `buffer`'s consecutive slices copied into the tensors' places in `flat`.
  void scatter(const torch::Tensor& buffer, const std::vector<int>& tensors, const torch::Tensor& flat) const {
    int64_t at = 0;
    for (int t : tensors) {
      flat.narrow(0, offset(t), size(t)).copy_(buffer.narrow(0, at, size(t)));
      at += size(t);
    }
  }

 private:
  std::vector<int64_t> sizes_, offsets_;
};

}  // namespace testbed
