// MG-WFBP's merge rule over one backward pass.
#include "training/algorithms/merged_gradient_buckets.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace testbed {

std::vector<GradientBucket> merged_gradient_buckets(const std::vector<int64_t>& tensor_sizes,
                                                    const std::vector<int>& tensor_layers, const MergeTimes& times,
                                                    double element_bytes, int64_t merge_below) {
  const int n = static_cast<int>(tensor_sizes.size());
  if (static_cast<int>(times.ready_s.size()) != n ||
      (!tensor_layers.empty() && static_cast<int>(tensor_layers.size()) != n))
    throw std::logic_error("merged_gradient_buckets: ready times and layers for every one of " + std::to_string(n) +
                           " tensors");
  if (n == 0) return {};
  auto layer = [&](int t) { return tensor_layers.empty() ? t : tensor_layers[t]; };
  std::vector<int> order(n);  // gradient-ready order, as gradient_buckets has it
  std::iota(order.rbegin(), order.rend(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return layer(a) > layer(b); });

  std::vector<double> ready(n), comm(n);
  std::vector<int64_t> elements(n);
  auto cost = [&](int64_t e) {
    return e == 0 ? 0.0 : times.alpha_s + times.beta_s_per_byte * static_cast<double>(e) * element_bytes;
  };
  for (int q = 0; q < n; ++q) {
    ready[q] = times.ready_s[order[q]];
    elements[q] = tensor_sizes[order[q]];
    comm[q] = cost(elements[q]);
  }
  // When each all-reduce starts: once its gradient exists and the previous one has ended.
  std::vector<double> start(n);
  auto starts = [&] {
    start[0] = ready[0];
    for (int q = 1; q < n; ++q) start[q] = std::max(start[q - 1] + comm[q - 1], ready[q]);
  };
  starts();
  std::vector<GradientBucket> buckets;
  GradientBucket open;
  auto close = [&] {
    std::sort(open.tensors.begin(), open.tensors.end());
    buckets.push_back(std::move(open));
    open = GradientBucket{};
  };
  for (int q = 0; q < n; ++q) {
    open.tensors.push_back(order[q]);
    open.elements += tensor_sizes[order[q]];
    open.last_ready = order[q];
    if (q == n - 1) break;
    const double next_ready = ready[q + 1];
    const bool worth = next_ready < start[q] + comm[q] && next_ready - start[q] < times.alpha_s;
    if (worth || elements[q] < merge_below) {
      elements[q + 1] += elements[q];
      elements[q] = 0;
      comm[q] = 0;
      comm[q + 1] = cost(elements[q + 1]);
      starts();
      continue;
    }
    close();
  }
  close();
  return buckets;
}

}  // namespace testbed
