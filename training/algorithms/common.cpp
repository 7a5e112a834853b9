// Shared algorithm pieces: local SGD, wire formats, seeded index draws.
#include "training/algorithms/common.h"

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <unordered_set>

#include <torch/torch.h>

#include "training/data/partition.h"

namespace testbed {

double local_sgd_step(Replica& replica, const Dataset& data, int batch_size) {
  const double loss = replica.forward_backward(replica.next_batch(data, batch_size));
  replica.optimizer_step();
  return loss;
}

double wire_bytes(WireFormat format) {
  switch (format) {
    case WireFormat::Fp32:
      return 4;
    case WireFormat::Bf16:
    case WireFormat::Fp16:
      return 2;
    case WireFormat::Fp4:
      return 0.5;
    case WireFormat::Int8:
      return 1;
  }
  throw std::invalid_argument("unknown wire format");
}

torch::Tensor to_wire(const torch::Tensor& x, WireFormat format) {
  if (format == WireFormat::Fp32) return x;
  if (format == WireFormat::Bf16) return x.to(torch::kBFloat16).to(torch::kFloat32);
  if (format == WireFormat::Fp16) return x.to(torch::kFloat16).to(torch::kFloat32);
  if (format == WireFormat::Fp4) {
    const double max = x.abs().max().item<double>();
    if (max == 0) return torch::zeros_like(x);
    const double scale = max / 6.0;
    // Nearest e2m1 magnitude: the grid's midpoints split the line.
    auto m = (x.abs() / scale);
    auto grid = torch::tensor({0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0}, x.options());
    auto mid = (grid.slice(0, 1) + grid.slice(0, 0, -1)) / 2;
    auto index = torch::bucketize(m, mid);
    return grid.index_select(0, index.reshape(-1)).view_as(x) * x.sign() * scale;
  }
  if (format == WireFormat::Int8) {
    // INTELLECT-1's quantiser (PrimeIntellect-ai/prime, its C++ ring all-reduce): a scale of
    // 6 sigma / 256, sigma = ||x|| / sqrt(n - 1); codes round(x / scale) + 128 (half away from
    // zero) clamped to 0..255; the receiver decodes a code as the mean of the values that
    // took it, which travel as a table of 256 floats beside the codes.
    const auto flat = x.reshape(-1);
    const int64_t n = flat.numel();
    if (n < 2) return x;
    const float sigma = static_cast<float>(flat.norm().item<double>() / std::sqrt(static_cast<double>(n - 1)));
    const float scale = 6.0f * sigma / 256.0f;
    if (!(scale > 0)) return torch::zeros_like(x);
    const auto v = flat / scale;
    const auto rounded = v.sign() * torch::floor(v.abs() + 0.5f);  // half away from zero, as std::round
    const auto codes = (rounded + 128).clamp(0, 255).to(torch::kInt64);
    const auto sums = torch::bincount(codes, flat.to(torch::kFloat64), 256);
    const auto counts = torch::bincount(codes, {}, 256).to(torch::kFloat64);
    const auto table =
        torch::where(counts > 0, sums / counts.clamp_min(1), torch::zeros_like(sums)).to(torch::kFloat32);
    return table.index_select(0, codes).view_as(x);
  }
  throw std::invalid_argument("unknown wire format");
}

torch::Tensor seeded_indices(int64_t n, int64_t count, uint64_t seed) {
  if (count >= n) return torch::arange(n, torch::kInt64);
  std::vector<int64_t> chosen;
  if (count * 4 > n) {
    chosen = seeded_permutation(n, seed);
    chosen.resize(static_cast<size_t>(count));
  } else {
    // Rejection draws: O(count) rather than a permutation of all n.
    std::mt19937_64 rng(seed);
    std::unordered_set<int64_t> seen;
    while (static_cast<int64_t>(chosen.size()) < count) {
      const int64_t i = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
      if (seen.insert(i).second) chosen.push_back(i);
    }
  }
  std::sort(chosen.begin(), chosen.end());
  return torch::tensor(chosen, torch::kInt64);
}

void put_tensors(AlgorithmState& state, std::initializer_list<std::pair<const char*, const torch::Tensor*>> named) {
  for (const auto& [name, t] : named)
    if (t->defined()) state.tensors[name] = *t;
}

void take_tensors(const AlgorithmState& state, std::initializer_list<std::pair<const char*, torch::Tensor*>> named) {
  for (const auto& [name, t] : named) {
    auto it = state.tensors.find(name);
    *t = it == state.tensors.end() ? torch::Tensor() : it->second.clone();
  }
}

CommOp make_op(CommKind kind, std::string tag, torch::Tensor buffer, int delay) {
  CommOp op;
  op.kind = kind;
  op.tag = std::move(tag);
  op.buffer = std::move(buffer);
  op.delay = delay;
  return op;
}

torch::Tensor shape_only(int64_t elements) { return torch::zeros({1}).expand({elements}); }

double no_loss() { return std::numeric_limits<double>::quiet_NaN(); }

}  // namespace testbed
