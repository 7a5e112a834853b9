// ReLU and non-overlapping max pooling fused: one pass forward, one scatter backward.
#include "training/models/relu_pool.h"

#include <immintrin.h>

#include <limits>

#include <ATen/Parallel.h>

namespace testbed {
namespace {

// ATen's relu (clamp_min at 0) keeps NaN and -0; its max pool takes an element when it is
// larger than the best so far or NaN. The comparisons below are those, in window order.
inline float relu_value(float v) { return v < 0.f ? 0.f : v; }
inline bool takes(float v, float best) { return v > best || v != v; }

// One plane, any k: the window in row order, as ATen's loop visits it.
void pool_plane(const float* in, float* out, int32_t* index, int64_t W, int64_t oh, int64_t ow, int64_t k,
                int64_t from_column) {
  for (int64_t y = 0; y < oh; ++y) {
    for (int64_t x = from_column; x < ow; ++x) {
      float best = -std::numeric_limits<float>::infinity();
      int32_t at = 0;
      for (int64_t i = 0; i < k; ++i) {
        for (int64_t j = 0; j < k; ++j) {
          const int64_t pos = (y * k + i) * W + x * k + j;
          const float v = relu_value(in[pos]);
          if (takes(v, best)) best = v, at = static_cast<int32_t>(pos);
        }
      }
      out[y * ow + x] = best;
      index[y * ow + x] = at;
    }
  }
}

__attribute__((target("avx2"))) inline __m256 relu8(__m256 v) {
  const __m256 zero = _mm256_setzero_ps();
  return _mm256_blendv_ps(v, zero, _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
}

__attribute__((target("avx2"))) inline void take4(__m128 v, __m128& best, __m128i& at, __m128i candidate) {
  const __m128 t = _mm_or_ps(_mm_cmpgt_ps(v, best), _mm_cmpunord_ps(v, v));
  best = _mm_blendv_ps(best, v, t);
  at = _mm_castps_si128(_mm_blendv_ps(_mm_castsi128_ps(at), _mm_castsi128_ps(candidate), t));
}

// 2 x 2 windows, four at a time: the same comparisons in the same order, lane by lane.
__attribute__((target("avx2"))) int64_t pool_plane_2x2_avx2(const float* in, float* out, int32_t* index, int64_t W,
                                                            int64_t oh, int64_t ow) {
  const int64_t whole = ow / 4 * 4;
  const __m256i evens_then_odds = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  for (int64_t y = 0; y < oh; ++y) {
    const float* top = in + 2 * y * W;
    const float* bottom = top + W;
    for (int64_t x = 0; x < whole; x += 4) {
      const __m256 t = _mm256_permutevar8x32_ps(relu8(_mm256_loadu_ps(top + 2 * x)), evens_then_odds);
      const __m256 b = _mm256_permutevar8x32_ps(relu8(_mm256_loadu_ps(bottom + 2 * x)), evens_then_odds);
      const int32_t first = static_cast<int32_t>(2 * y * W + 2 * x);
      const __m128i i0 = _mm_setr_epi32(first, first + 2, first + 4, first + 6);
      __m128 best = _mm256_castps256_ps128(t);
      __m128i at = i0;
      take4(_mm256_extractf128_ps(t, 1), best, at, _mm_add_epi32(i0, _mm_set1_epi32(1)));
      take4(_mm256_castps256_ps128(b), best, at, _mm_add_epi32(i0, _mm_set1_epi32(static_cast<int32_t>(W))));
      take4(_mm256_extractf128_ps(b, 1), best, at, _mm_add_epi32(i0, _mm_set1_epi32(static_cast<int32_t>(W + 1))));
      _mm_storeu_ps(out + y * ow + x, best);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(index + y * ow + x), at);
    }
  }
  return whole;
}

bool fused(const torch::Tensor& x, int64_t k) {
  return x.device().is_cpu() && x.scalar_type() == torch::kFloat32 && x.dim() == 4 && x.is_contiguous() && k >= 1 &&
         x.size(2) >= k && x.size(3) >= k && x.size(2) * x.size(3) <= std::numeric_limits<int32_t>::max();
}

class ReluMaxPool : public torch::autograd::Function<ReluMaxPool> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, int64_t k) {
    const int64_t planes = x.size(0) * x.size(1), H = x.size(2), W = x.size(3), oh = H / k, ow = W / k;
    auto out = torch::empty({x.size(0), x.size(1), oh, ow}, x.options());
    auto index = torch::empty({x.size(0), x.size(1), oh, ow}, x.options().dtype(torch::kInt32));
    const float* in = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    int32_t* id = index.data_ptr<int32_t>();
    static const bool avx2 = __builtin_cpu_supports("avx2");
    at::parallel_for(0, planes, 16, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const int64_t done =
            k == 2 && avx2 ? pool_plane_2x2_avx2(in + p * H * W, o + p * oh * ow, id + p * oh * ow, W, oh, ow) : 0;
        if (done < ow) pool_plane(in + p * H * W, o + p * oh * ow, id + p * oh * ow, W, oh, ow, k, done);
      }
    });
    ctx->save_for_backward({out, index});
    ctx->saved_data["height"] = H;
    ctx->saved_data["width"] = W;
    return out;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& out = saved[0];
    const torch::Tensor& index = saved[1];
    const torch::Tensor g = grads[0].contiguous();
    const int64_t H = ctx->saved_data["height"].toInt(), W = ctx->saved_data["width"].toInt();
    auto grad_input = torch::zeros({out.size(0), out.size(1), H, W}, g.options());
    const int64_t planes = out.size(0) * out.size(1), L = out.size(2) * out.size(3);
    const float* gp = g.data_ptr<float>();
    const float* op = out.data_ptr<float>();
    const int32_t* ip = index.data_ptr<int32_t>();
    float* gi = grad_input.data_ptr<float>();
    at::parallel_for(0, planes, 16, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        for (int64_t l = 0; l < L; ++l) {
          // Max pool's backward adds into zeros; relu's then zeroes where its output is <= 0.
          const float v = op[p * L + l];
          gi[p * H * W + ip[p * L + l]] = v <= 0.f ? 0.f : 0.f + gp[p * L + l];
        }
      }
    });
    return {grad_input, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor relu_max_pool2d(const torch::Tensor& x, int64_t k) {
  if (!fused(x, k)) return torch::max_pool2d(torch::relu(x), k);
  return ReluMaxPool::apply(x, k);
}

}  // namespace testbed
