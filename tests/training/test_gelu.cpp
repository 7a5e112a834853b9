// The portable GELU: against GELU and its derivative in double precision, and the same bits wherever an element sits.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "training/models/gelu.h"

namespace testbed {
namespace {

double normal_cdf(double x) { return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))); }
double normal_pdf(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI); }

// Every float step of 2^-10 over [-12, 12] (all 16 intervals of both fits, both signs, the
// ends of the fits' ranges), then a few that stress rounding.
torch::Tensor gelu_grid() {
  auto x = torch::arange(-12.0, 12.0, 1.0 / 1024, torch::kFloat32);
  auto extra = torch::tensor({1e-30f, -1e-30f, 1e-7f, -1e-7f, 5.656854f, 5.656855f, 7.071067f, 7.071068f, 30.f, -30.f});
  return torch::cat({x, extra});
}

// Phi(x) within 6e-8 (a float ulp at 1 is 1.2e-7), so x * Phi(x) within |x| 6e-8 and a rounding.
// Catches a wrong row or centre in a table, a shifted interval index, or the sign of erf lost.
TEST(Gelu, MatchesDoublePrecision) {
  const auto x = gelu_grid();
  const auto y = exact_gelu(x);
  const float* xp = x.data_ptr<float>();
  const float* yp = y.data_ptr<float>();
  double worst = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = xp[i], want = v * normal_cdf(v);
    const double err = std::fabs(yp[i] - want);
    ASSERT_LE(err, std::fabs(v) * 6e-8 + std::fabs(want) * 6e-8 + 1e-38)
        << "x = " << v << ": " << yp[i] << " against " << want;
    worst = std::max(worst, err / std::max(std::fabs(v), 1.0));
  }
  RecordProperty("worst_scaled_error", std::to_string(worst));
}

// d/dx x Phi(x) = Phi(x) + x phi(x), times the incoming gradient (here 1 and 3).
// Catches a dropped x phi term, a pdf constant or an exp(-z^2) table off.
TEST(Gelu, GradientMatchesDoublePrecision) {
  for (const float g : {1.f, 3.f}) {
    const auto x = gelu_grid().requires_grad_(true);
    exact_gelu(x).backward(torch::full_like(x, g));
    const auto dx = x.grad();
    const float* xp = x.data_ptr<float>();
    const float* dp = dx.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = xp[i], want = g * (normal_cdf(v) + v * normal_pdf(v));
      ASSERT_LE(std::fabs(dp[i] - want), g * 2e-7) << "x = " << v << ": " << dp[i] << " against " << want;
    }
  }
}

TEST(Gelu, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const auto y = exact_gelu(torch::tensor({0.f, inf, std::nanf(""), -30.f, 30.f}));
  EXPECT_EQ(y[0].item<float>(), 0.f);
  EXPECT_EQ(y[1].item<float>(), inf);
  EXPECT_TRUE(std::isnan(y[2].item<float>()));
  EXPECT_EQ(y[3].item<float>(), 0.f);
  EXPECT_EQ(y[4].item<float>(), 30.f);
}

bool identical_bits(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && torch::equal(a.contiguous().view(torch::kInt32), b.contiguous().view(torch::kInt32));
}

// An element's value and gradient depend on it alone: the same with the tensor shifted by 1 to 9
// (so each element falls in a vector's every lane and in a tail) and at 1, 2 and 3 threads (other
// chunk boundaries). Catches a tail computed another way (std::erf, or without the fused
// multiply-add), the thread-dependent bits that portable numerics exist to prevent.
TEST(Gelu, SameBitsWhereverAnElementSits) {
  const auto x = torch::randn({100003}, torch::TensorOptions().dtype(torch::kFloat32)) * 3;
  const auto g = torch::randn({100003});
  const int threads = at::get_num_threads();
  auto run = [&](const torch::Tensor& in, const torch::Tensor& grad) {
    const auto leaf = in.clone().requires_grad_(true);
    const auto y = exact_gelu(leaf);
    y.backward(grad);
    return std::make_pair(y.detach(), leaf.grad());
  };
  at::set_num_threads(1);
  const auto [y, dx] = run(x, g);
  for (int shift = 1; shift <= 9; ++shift) {
    const auto [ys, dxs] = run(x.slice(0, shift), g.slice(0, shift));
    EXPECT_TRUE(identical_bits(ys, y.slice(0, shift))) << "shift " << shift;
    EXPECT_TRUE(identical_bits(dxs, dx.slice(0, shift))) << "shift " << shift;
  }
  for (int t : {2, 3}) {
    at::set_num_threads(t);
    const auto [yt, dxt] = run(x, g);
    EXPECT_TRUE(identical_bits(yt, y)) << t << " threads";
    EXPECT_TRUE(identical_bits(dxt, dx)) << t << " threads";
  }
  at::set_num_threads(threads);
}

// A non-contiguous input (a transposed view) gives the values of its contiguous copy.
TEST(Gelu, TakesAnyLayout) {
  const auto x = torch::randn({37, 23});
  EXPECT_TRUE(identical_bits(exact_gelu(x.t()), exact_gelu(x.t().contiguous())));
}

}  // namespace
}  // namespace testbed
