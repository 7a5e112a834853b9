// The portable softmax: against double precision, rows worked by hand, and the same bits at any thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "training/models/softmax.h"

namespace testbed {
namespace {

bool same_softmax_bits(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && torch::equal(a.contiguous().view(torch::kInt32), b.contiguous().view(torch::kInt32));
}

// Scores of a causal attention: [rows, n], row r masked (-inf) beyond column r % n.
torch::Tensor causal_scores(int64_t rows, int64_t n, double scale) {
  auto x = torch::randn({rows, n}, torch::kFloat64) * scale;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = r % n + 1; c < n; ++c) x[r][c] = -std::numeric_limits<double>::infinity();
  return x.to(torch::kFloat32);
}

// Each probability within 1e-6 of its double-precision value, relative (exp within 2 ulps; a
// row's sum over up to 257 terms), beyond the rounding of its score minus the row's largest; a masked score exactly 0.
// The gradient y (g - sum g y) within 1e-6 of the double one, relative to the row's largest |g|. Row lengths on both
// sides of the 8-lane vector and with tails. Catches a wrong ln 2 split, a Taylor term off, the 2^n built from the
// wrong exponent, a lane left out of the sum, a dropped term in the gradient.
TEST(SoftmaxLastDim, MatchesDoublePrecision) {
  torch::manual_seed(3);
  for (const int64_t n : {1, 7, 8, 9, 64, 100, 257}) {
    for (const double scale : {1.0, 10.0}) {
      const auto x = causal_scores(40, n, scale).requires_grad_(true);
      const auto g = torch::randn({40, n});
      const auto y = softmax_last_dim(x);
      y.backward(g);
      const auto xd = x.detach().to(torch::kFloat64);
      const auto yd = torch::softmax(xd, -1);  // in double: rounding below 1e-15
      const auto gd = g.to(torch::kFloat64);
      const auto dxd = yd * (gd - (gd * yd).sum(-1, true));
      const auto xa = xd.accessor<double, 2>(), ya = yd.accessor<double, 2>(), ga = dxd.accessor<double, 2>();
      const auto yv = y.detach();
      const auto yf = yv.accessor<float, 2>();
      const auto grad = x.grad();
      const auto gf = grad.accessor<float, 2>();
      for (int64_t r = 0; r < 40; ++r) {
        const double gmax = gd[r].abs().max().item<double>(), xmax = xd[r].max().item<double>();
        for (int64_t c = 0; c < n; ++c) {
          if (std::isinf(xa[r][c])) {
            ASSERT_EQ(yf[r][c], 0.f);
            ASSERT_LE(std::fabs(gf[r][c] - ga[r][c]), 0.0);
            continue;
          }
          // x - max rounds to float first: a relative error of |x - max| 2^-24 that ATen has too.
          const double rel = 1e-6 + std::ldexp(std::fabs(xa[r][c] - xmax), -24);
          ASSERT_LE(std::fabs(yf[r][c] - ya[r][c]), rel * ya[r][c] + 1e-37)
              << "n " << n << " row " << r << " col " << c;
          ASSERT_LE(std::fabs(gf[r][c] - ga[r][c]), 1e-6 * gmax) << "n " << n << " row " << r << " col " << c;
        }
      }
    }
  }
}

TEST(SoftmaxLastDim, RowsByHand) {
  const float inf = std::numeric_limits<float>::infinity();
  const auto y =
      softmax_last_dim(torch::tensor({{0.f, 0.f, -inf, -inf}, {5.f, -inf, -inf, -inf}, {0.f, -200.f, 0.f, 0.f}}));
  EXPECT_EQ(y[0][0].item<float>(), 0.5f);  // exp(0) is 1 exactly: the series' first term, times 2^0
  EXPECT_EQ(y[0][1].item<float>(), 0.5f);
  EXPECT_EQ(y[0][2].item<float>(), 0.f);
  EXPECT_EQ(y[1][0].item<float>(), 1.f);
  EXPECT_EQ(y[2][1].item<float>(), 0.f);  // exp(-200) is below float: 0
  EXPECT_EQ(y[2][0].item<float>(), 1.f / 3);
}

// An element in a row's tail gets the exp of the same element in a vector lane: rows of 9 and
// 17 whose last element repeats one at the start. Catches a tail computed another way (glibc's
// expf, which changes with the glibc version, or no fused multiply-add).
TEST(SoftmaxLastDim, TailEqualsLanes) {
  torch::manual_seed(5);
  for (const int64_t n : {9, 17}) {
    auto x = torch::randn({64, n}) * 4;
    x.select(1, n - 1).copy_(x.select(1, 3));
    auto g = torch::randn({64, n});
    g.select(1, n - 1).copy_(g.select(1, 3));
    const auto leaf = x.clone().requires_grad_(true);
    const auto y = softmax_last_dim(leaf);
    y.backward(g);
    EXPECT_TRUE(same_softmax_bits(y.select(1, n - 1), y.select(1, 3))) << n;
    EXPECT_TRUE(same_softmax_bits(leaf.grad().select(1, n - 1), leaf.grad().select(1, 3))) << n;
  }
}

// The attention scores of a [B, h, T, T] batch give the same bits at 1, 2 and 3 threads.
TEST(SoftmaxLastDim, SameBitsAtAnyThreadCount) {
  torch::manual_seed(7);
  const auto x = causal_scores(8 * 4 * 65, 65, 3.0).view({8, 4, 65, 65});
  const auto g = torch::randn({8, 4, 65, 65});
  const int threads = at::get_num_threads();
  std::vector<std::pair<torch::Tensor, torch::Tensor>> out;
  for (int t : {1, 2, 3}) {
    at::set_num_threads(t);
    const auto leaf = x.clone().requires_grad_(true);
    const auto y = softmax_last_dim(leaf);
    y.backward(g);
    out.emplace_back(y.detach(), leaf.grad());
  }
  at::set_num_threads(threads);
  for (size_t i = 1; i < out.size(); ++i) {
    EXPECT_TRUE(same_softmax_bits(out[i].first, out[0].first)) << i;
    EXPECT_TRUE(same_softmax_bits(out[i].second, out[0].second)) << i;
  }
}

}  // namespace
}  // namespace testbed
