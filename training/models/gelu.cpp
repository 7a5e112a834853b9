// GELU forward and backward over 8 floats at a time, with a scalar twin that rounds identically.
#include "training/models/gelu.h"

#include <immintrin.h>

#include <cmath>

#include <ATen/Parallel.h>

#include "training/numerics.h"

namespace testbed {
namespace {

// erf(z), z in [0, 4): intervals of 0.5 (scripts/fit_gelu.py).
const float kErf[9][8] = {
    {0.276326388f, 0.711155653f, 0.92290014f, 0.986671686f, 0.998537302f, 0.999899387f, 0.999995708f, 0.999999881f},
    {1.06001413f, 0.642931044f, 0.236521125f, 0.0527749956f, 0.00714231934f, 0.000586277281f, 2.91890119e-05f,
     8.81428832e-07f},
    {-0.265003532f, -0.482198298f, -0.295651406f, -0.0923562422f, -0.0160702169f, -0.00161226257f, -9.48643283e-05f,
     -3.30536682e-06f},
    {-0.309170485f, 0.0267883502f, 0.167535886f, 0.0901573896f, 0.0217245128f, 0.00276038027f, 0.000195812623f,
     7.97032772e-06f},
    {0.126980513f, 0.150687009f, -0.00615925435f, -0.0481022932f, -0.0190833863f, -0.00325810327f, -0.000286569732f,
     -1.38417381e-05f},
    {0.0800362676f, -0.0532170907f, -0.0471865535f, 0.00661847321f, 0.0106600598f, 0.00275629107f, 0.000313628843f,
     1.83300599e-05f},
    {-0.0405171588f, -0.026873976f, 0.0212945547f, 0.0089667486f, -0.00290423282f, -0.00165779609f, -0.000263510883f,
     -1.92503921e-05f},
    {-0.0158033706f, 0.017885495f, 0.00374511071f, -0.00593309943f, -0.000721526914f, 0.000635815493f, 0.000173596549f,
     1.71447264e-05f},
    {0.00941090938f, 0.00232917536f, -0.00557454536f, 0.000661972095f, 0.000997341587f, -8.04360825e-05f,
     -8.1980339e-05f, -1.15362363e-05f},
};
// exp(-z^2), z in [0, 5): intervals of 0.625 (scripts/fit_gelu.py).
const float kGauss[11][8] = {
    {0.906960607f, 0.415236831f, 0.087038368f, 0.0083528189f, 0.000366997236f, 7.3824408e-06f, 6.79899301e-08f,
     2.86679486e-10f},
    {-0.566850364f, -0.778569043f, -0.271994889f, -0.0365435816f, -0.00206435937f, -5.07542791e-05f, -5.52418271e-07f,
     -2.68762679e-09f},
    {-0.729819894f, 0.314671665f, 0.337953657f, 0.0715862662f, 0.00543901371f, 0.000167085396f, 2.17620891e-06f,
     1.23115509e-08f},
    {0.529946029f, 0.322376281f, -0.170705155f, -0.0800342485f, -0.00882191118f, -0.000349067996f, -5.52559868e-06f,
     -3.66804755e-08f},
    {0.282105863f, -0.308449686f, -0.0356134512f, 0.0517443307f, 0.00968630426f, 0.000516417844f, 1.01358037e-05f,
     7.98159832e-08f},
    {-0.2472381f, -0.0132842232f, 0.0905414522f, -0.0132628139f, -0.00736832293f, -0.00057043822f, -1.42616827e-05f,
     -1.35061327e-07f},
    {-0.0682809204f, 0.106967054f, -0.0352852158f, -0.00757756364f, 0.00367907644f, 0.000481490977f, 1.59327828e-05f,
     1.84362392e-07f},
    {0.0766533837f, -0.0248016044f, -0.0101397363f, 0.00853058696f, -0.000851290883f, -0.000310123258f,
     -1.43895932e-05f, -2.06487883e-07f},
    {0.0110746287f, -0.0209141355f, 0.0127705764f, -0.00276607927f, -0.000322020001f, 0.000146100327f, 1.06534726e-05f,
     1.96917625e-07f},
    {-0.0169579778f, 0.0093078455f, -0.00194478245f, -0.000604627421f, 0.000391720474f, -4.05114806e-05f,
     -6.71730868e-06f, -1.78036714e-07f},
    {-0.00109669776f, 0.00231500948f, -0.00184935075f, 0.000777628447f, -0.000148610401f, -1.17664274e-06f,
     3.15140051e-06f, 1.2008114e-07f},
};
// Each interval's centre, where its polynomial's t is 0 (exact in float).
const float kErfCentre[8] = {0.25f, 0.75f, 1.25f, 1.75f, 2.25f, 2.75f, 3.25f, 3.75f};
const float kGaussCentre[8] = {0.3125f, 0.9375f, 1.5625f, 2.1875f, 2.8125f, 3.4375f, 4.0625f, 4.6875f};
constexpr float kErfEnd = 4.f;      // erf(z) rounds to 1 beyond (1 - erf(4) = 1.5e-8)
constexpr float kErfPerUnit = 2.f;  // intervals per unit of z
constexpr float kGaussEnd = 5.f;    // exp(-25) = 1.4e-11: x * pdf is below 1e-10 beyond
constexpr float kGaussPerUnit = 1.6f;
constexpr float kSqrtHalf = 0.707106781186547524f;  // z = x / sqrt(2)
constexpr float kPdf = 0.398942280401432678f;       // 1 / sqrt(2 pi)

// The scalar twin: every operation the vector code does, in the same order (fmaf is one
// rounding, as the vector FMA is), so a lane and a scalar give the same bits.
inline float poly(const float (*table)[8], int terms, int interval, float t) {
  float r = table[terms - 1][interval];
  for (int k = terms - 2; k >= 0; --k) r = std::fma(r, t, table[k][interval]);
  return r;
}

inline int interval(float a, float per_unit, float end) {
  const float at = a < end ? a * per_unit : 0.f;  // NaN and a >= end: any interval, overridden
  return static_cast<int>(at);
}

inline float erf_abs(float a) {  // erf(|z|) for a = |z|
  const int i = interval(a, kErfPerUnit, kErfEnd);
  const float r = poly(kErf, 9, i, a - kErfCentre[i]);
  return a >= kErfEnd ? 1.f : r;
}

inline float gauss_abs(float a) {  // exp(-z^2) for a = |z|
  const int i = interval(a, kGaussPerUnit, kGaussEnd);
  const float r = poly(kGauss, 11, i, a - kGaussCentre[i]);
  return a >= kGaussEnd ? 0.f : r;
}

inline float cdf(float x) {  // 0.5 * (1 + erf(x / sqrt 2))
  const float z = x * kSqrtHalf;
  const float e = std::copysign(erf_abs(std::fabs(z)), z);  // near 0 the fit may be -1e-9: its sign goes
  return 0.5f * (1.f + e);
}

inline float gelu_one(float x) { return x * cdf(x); }

inline float gelu_grad_one(float x, float g) {
  const float pdf = kPdf * gauss_abs(std::fabs(x * kSqrtHalf));
  return g * std::fma(x, pdf, cdf(x));
}

// The same with 8 lanes: a row of a table is looked up by each lane's interval.
__attribute__((target("avx2,fma"))) inline __m256 abs8(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.f), v); }

__attribute__((target("avx2,fma"))) inline __m256 poly8(const float (*table)[8], int terms, __m256i interval,
                                                        __m256 t) {
  __m256 r = _mm256_permutevar8x32_ps(_mm256_loadu_ps(table[terms - 1]), interval);
  for (int k = terms - 2; k >= 0; --k)
    r = _mm256_fmadd_ps(r, t, _mm256_permutevar8x32_ps(_mm256_loadu_ps(table[k]), interval));
  return r;
}

__attribute__((target("avx2,fma"))) inline __m256 piecewise8(const float (*table)[8], int terms, const float* centres,
                                                             __m256 a, float per_unit, float end, float beyond) {
  const __m256 inside = _mm256_cmp_ps(a, _mm256_set1_ps(end), _CMP_LT_OQ);
  const __m256 at = _mm256_and_ps(_mm256_mul_ps(a, _mm256_set1_ps(per_unit)), inside);
  const __m256i i = _mm256_cvttps_epi32(at);
  const __m256 centre = _mm256_permutevar8x32_ps(_mm256_loadu_ps(centres), i);
  const __m256 r = poly8(table, terms, i, _mm256_sub_ps(a, centre));
  const __m256 past = _mm256_cmp_ps(a, _mm256_set1_ps(end), _CMP_GE_OQ);
  return _mm256_blendv_ps(r, _mm256_set1_ps(beyond), past);
}

__attribute__((target("avx2,fma"))) inline __m256 cdf8(__m256 x) {
  const __m256 z = _mm256_mul_ps(x, _mm256_set1_ps(kSqrtHalf));
  const __m256 sign = _mm256_and_ps(z, _mm256_set1_ps(-0.f));
  const __m256 e = _mm256_or_ps(abs8(piecewise8(kErf, 9, kErfCentre, abs8(z), kErfPerUnit, kErfEnd, 1.f)), sign);
  return _mm256_mul_ps(_mm256_set1_ps(0.5f), _mm256_add_ps(_mm256_set1_ps(1.f), e));
}

__attribute__((target("avx2,fma"))) void gelu_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(v, cdf8(v)));
  }
  for (; i < n; ++i) y[i] = gelu_one(x[i]);
}

__attribute__((target("avx2,fma"))) void gelu_grad_avx2(const float* x, const float* g, float* dx, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 a = abs8(_mm256_mul_ps(v, _mm256_set1_ps(kSqrtHalf)));
    const __m256 pdf =
        _mm256_mul_ps(_mm256_set1_ps(kPdf), piecewise8(kGauss, 11, kGaussCentre, a, kGaussPerUnit, kGaussEnd, 0.f));
    _mm256_storeu_ps(dx + i, _mm256_mul_ps(_mm256_loadu_ps(g + i), _mm256_fmadd_ps(v, pdf, cdf8(v))));
  }
  for (; i < n; ++i) dx[i] = gelu_grad_one(x[i], g[i]);
}

void gelu_scalar(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = gelu_one(x[i]);
}

void gelu_grad_scalar(const float* x, const float* g, float* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] = gelu_grad_one(x[i], g[i]);
}

constexpr int64_t kGrain = 1 << 14;

class Gelu : public torch::autograd::Function<Gelu> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    const torch::Tensor in = x.contiguous();
    auto out = torch::empty_like(in);
    const float* xp = in.data_ptr<float>();
    float* yp = out.data_ptr<float>();
    at::parallel_for(0, in.numel(), kGrain, [&](int64_t begin, int64_t end) {
      if (cpu_has_avx2_fma())
        gelu_avx2(xp + begin, yp + begin, end - begin);
      else
        gelu_scalar(xp + begin, yp + begin, end - begin);
    });
    ctx->save_for_backward({in});
    return out;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const torch::Tensor x = ctx->get_saved_variables()[0];
    const torch::Tensor g = grads[0].contiguous();
    auto dx = torch::empty_like(x);
    const float* xp = x.data_ptr<float>();
    const float* gp = g.data_ptr<float>();
    float* dp = dx.data_ptr<float>();
    at::parallel_for(0, x.numel(), kGrain, [&](int64_t begin, int64_t end) {
      if (cpu_has_avx2_fma())
        gelu_grad_avx2(xp + begin, gp + begin, dp + begin, end - begin);
      else
        gelu_grad_scalar(xp + begin, gp + begin, dp + begin, end - begin);
    });
    return {dx};
  }
};

}  // namespace

torch::Tensor exact_gelu(const torch::Tensor& x) {
  if (!x.device().is_cpu() || x.scalar_type() != torch::kFloat32) return torch::gelu(x);
  return Gelu::apply(x);
}

}  // namespace testbed
