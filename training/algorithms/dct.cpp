// DCT-II via one complex FFT of length n (J. Makhoul, "A fast cosine transform in one and
// two dimensions", 1980): reorder even then reversed odd samples, FFT, rotate by
// exp(-i pi k / 2n), keep the real part; the inverse runs the same steps backwards.
#include "training/algorithms/dct.h"

#include <cmath>

#include <torch/torch.h>

namespace testbed {
namespace {

// exp(-i pi k / (2n)) for k = 0..n-1.
torch::Tensor twiddle(int64_t n, const torch::TensorOptions& real) {
  auto k = torch::arange(n, real.dtype(torch::kFloat64));
  auto angle = -M_PI * k / (2.0 * static_cast<double>(n));
  return torch::complex(torch::cos(angle), torch::sin(angle));
}

// Orthonormal scale: sqrt(1/n) for k = 0, sqrt(2/n) otherwise.
torch::Tensor scale(int64_t n, const torch::TensorOptions& real) {
  auto s = torch::full({n}, std::sqrt(2.0 / static_cast<double>(n)), real.dtype(torch::kFloat64));
  s[0] = std::sqrt(1.0 / static_cast<double>(n));
  return s;
}

}  // namespace

torch::Tensor dct(const torch::Tensor& x) {
  const int64_t n = x.size(-1);
  auto xd = x.to(torch::kFloat64);
  auto v = torch::cat({xd.slice(-1, 0, n, 2), xd.slice(-1, 1, n, 2).flip(-1)}, -1);
  auto V = torch::fft::fft(v, c10::nullopt, -1);
  auto X = torch::real(V * twiddle(n, x.options())) * scale(n, x.options());
  return X.to(x.scalar_type());
}

torch::Tensor idct(const torch::Tensor& X) {
  const int64_t n = X.size(-1);
  auto Xu = X.to(torch::kFloat64) / scale(n, X.options());
  // V_k = conj(w_k) (X_k - i X_{n-k}), with X_n = 0.
  auto reversed = torch::cat({torch::zeros_like(Xu.slice(-1, 0, 1)), Xu.slice(-1, 1, n).flip(-1)}, -1);
  auto V = torch::conj(twiddle(n, X.options())) * torch::complex(Xu, -reversed);
  auto v = torch::real(torch::fft::ifft(V, c10::nullopt, -1));
  // Undo the reordering: v = [x0, x2, ..., x5, x3, x1].
  auto x = torch::empty_like(v);
  const int64_t evens = (n + 1) / 2;
  x.slice(-1, 0, n, 2).copy_(v.slice(-1, 0, evens));
  x.slice(-1, 1, n, 2).copy_(v.slice(-1, evens, n).flip(-1));
  return x.to(X.scalar_type());
}

}  // namespace testbed
