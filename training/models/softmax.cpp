// Softmax rows, 8 floats at a time, with a scalar twin that rounds and sums identically.
#include "training/models/softmax.h"

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <ATen/Parallel.h>

#include "training/numerics.h"

namespace testbed {
namespace {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;  // ln 2 = kLn2Hi + kLn2Lo; kLn2Hi has 9 bits, so n kLn2Hi is exact
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kExpLowest = -86.5f;  // below, exp(x) < 2.7e-38 is taken as 0: results stay normal
const float kInverseFactorial[8] = {1.f, 1.f, 1.f / 2, 1.f / 6, 1.f / 24, 1.f / 120, 1.f / 720, 1.f / 5040};
constexpr int kLanes = 8;

// exp(x) for x <= 0 (a score minus its row's largest): x = n ln2 + r, |r| <= ln2 / 2, exp(r) by
// its Taylor series to r^7 (truncation below 6e-9), times 2^n built in the exponent bits.
inline float exp_nonpositive(float x) {
  if (std::isnan(x)) return x + 0.f;
  if (x < kExpLowest) return 0.f;
  const float n = std::nearbyint(x * kLog2e);
  const float r = std::fma(n, -kLn2Lo, std::fma(n, -kLn2Hi, x));
  float p = kInverseFactorial[7];
  for (int k = 6; k >= 0; --k) p = std::fma(p, r, kInverseFactorial[k]);
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// The sums of a row: lane l adds the elements at l, l + 8, ... of the whole vectors, the eight
// lanes are added pairwise ((0+4)+(2+6))+((1+5)+(3+7)), then the tail in order.
inline float lanes_total(const float* s) { return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7])); }

void softmax_row_scalar(const float* x, float* y, int64_t n) {
  const int64_t whole = n / kLanes * kLanes;
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  float s[kLanes] = {};
  for (int64_t i = 0; i < whole; ++i) s[i % kLanes] += (y[i] = exp_nonpositive(x[i] - m));
  float total = lanes_total(s);
  for (int64_t i = whole; i < n; ++i) total += (y[i] = exp_nonpositive(x[i] - m));
  for (int64_t i = 0; i < n; ++i) y[i] = y[i] / total;
}

void softmax_grad_row_scalar(const float* y, const float* g, float* dx, int64_t n) {
  const int64_t whole = n / kLanes * kLanes;
  float s[kLanes] = {};
  for (int64_t i = 0; i < whole; ++i) s[i % kLanes] = std::fma(g[i], y[i], s[i % kLanes]);
  float dot = lanes_total(s);
  for (int64_t i = whole; i < n; ++i) dot = std::fma(g[i], y[i], dot);
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] * (g[i] - dot);
}

__attribute__((target("avx2,fma"))) inline __m256 exp8_nonpositive(__m256 x) {
  const __m256 n =
      _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Lo), _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Hi), x));
  __m256 p = _mm256_set1_ps(kInverseFactorial[7]);
  for (int k = 6; k >= 0; --k) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kInverseFactorial[k]));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  // Below kExpLowest: 0 (NaN compares false and keeps the NaN the arithmetic carried).
  return _mm256_blendv_ps(e, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(kExpLowest), _CMP_LT_OQ));
}

__attribute__((target("avx2,fma"))) void softmax_row_avx2(const float* x, float* y, int64_t n) {
  const int64_t whole = n / kLanes * kLanes;
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  const __m256 mv = _mm256_set1_ps(m);
  __m256 sv = _mm256_setzero_ps();
  for (int64_t i = 0; i < whole; i += kLanes) {
    const __m256 e = exp8_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv));
    _mm256_storeu_ps(y + i, e);
    sv = _mm256_add_ps(sv, e);
  }
  float s[kLanes];
  _mm256_storeu_ps(s, sv);
  float total = lanes_total(s);
  for (int64_t i = whole; i < n; ++i) total += (y[i] = exp_nonpositive(x[i] - m));
  const __m256 tv = _mm256_set1_ps(total);
  int64_t i = 0;
  for (; i < whole; i += kLanes) _mm256_storeu_ps(y + i, _mm256_div_ps(_mm256_loadu_ps(y + i), tv));
  for (; i < n; ++i) y[i] = y[i] / total;
}

__attribute__((target("avx2,fma"))) void softmax_grad_row_avx2(const float* y, const float* g, float* dx, int64_t n) {
  const int64_t whole = n / kLanes * kLanes;
  __m256 sv = _mm256_setzero_ps();
  for (int64_t i = 0; i < whole; i += kLanes) sv = _mm256_fmadd_ps(_mm256_loadu_ps(g + i), _mm256_loadu_ps(y + i), sv);
  float s[kLanes];
  _mm256_storeu_ps(s, sv);
  float dot = lanes_total(s);
  for (int64_t i = whole; i < n; ++i) dot = std::fma(g[i], y[i], dot);
  const __m256 dv = _mm256_set1_ps(dot);
  int64_t i = 0;
  for (; i < whole; i += kLanes)
    _mm256_storeu_ps(dx + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), _mm256_sub_ps(_mm256_loadu_ps(g + i), dv)));
  for (; i < n; ++i) dx[i] = y[i] * (g[i] - dot);
}

// Rows a thread takes at once: about 32k elements, as ATen's grain.
int64_t row_grain(int64_t n) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1)); }

class SoftmaxLastDim : public torch::autograd::Function<SoftmaxLastDim> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    const torch::Tensor in = x.contiguous();
    auto out = torch::empty_like(in);
    const int64_t n = in.size(-1), rows = n == 0 ? 0 : in.numel() / n;
    const float* xp = in.data_ptr<float>();
    float* yp = out.data_ptr<float>();
    at::parallel_for(0, rows, row_grain(n), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        if (cpu_has_avx2_fma())
          softmax_row_avx2(xp + r * n, yp + r * n, n);
        else
          softmax_row_scalar(xp + r * n, yp + r * n, n);
      }
    });
    ctx->save_for_backward({out});
    return out;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const torch::Tensor y = ctx->get_saved_variables()[0];
    const torch::Tensor g = grads[0].contiguous();
    auto dx = torch::empty_like(y);
    const int64_t n = y.size(-1), rows = n == 0 ? 0 : y.numel() / n;
    const float* yp = y.data_ptr<float>();
    const float* gp = g.data_ptr<float>();
    float* dp = dx.data_ptr<float>();
    at::parallel_for(0, rows, row_grain(n), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        if (cpu_has_avx2_fma())
          softmax_grad_row_avx2(yp + r * n, gp + r * n, dp + r * n, n);
        else
          softmax_grad_row_scalar(yp + r * n, gp + r * n, dp + r * n, n);
      }
    });
    return {dx};
  }
};

}  // namespace

torch::Tensor softmax_last_dim(const torch::Tensor& x) {
  if (!x.device().is_cpu() || x.scalar_type() != torch::kFloat32 || x.dim() == 0) return torch::softmax(x, -1);
  return SoftmaxLastDim::apply(x);
}

}  // namespace testbed
