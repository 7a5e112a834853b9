// The fused ReLU and max pool: a window worked by hand, and LibTorch's pair bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include <torch/torch.h>

#include "training/models/relu_pool.h"

namespace testbed {
namespace {

uint32_t bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

bool same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && torch::equal(a.contiguous().view(torch::kInt32), b.contiguous().view(torch::kInt32));
}

// Four 2 x 2 windows that carry the rules: all non-positive with -0 first (the ReLU keeps -0 and
// nothing after it is larger), a tie (the first wins), a tie in the bottom row, NaN (a NaN wins,
// the last NaN over the first).
TEST(ReluPool, WindowsByHand) {
  const float nan = std::nanf("");
  auto x = torch::tensor({-0.0f, -1.0f, 2.0f, 3.0f,  //
                          -0.5f, 0.0f, 3.0f, 1.0f,   //
                          1.5f, 1.5f, nan, 4.0f,     //
                          1.5f, 0.5f, 5.0f, nan})
               .view({1, 1, 4, 4})
               .requires_grad_(true);
  auto y = relu_max_pool2d(x, 2);
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(bits(y[0][0][0][0].item<float>()), bits(-0.0f));
  EXPECT_EQ(y[0][0][0][1].item<float>(), 3.0f);
  EXPECT_EQ(y[0][0][1][0].item<float>(), 1.5f);
  EXPECT_TRUE(std::isnan(y[0][0][1][1].item<float>()));

  // A -0 gradient arrives as 0 + (-0) = +0, as max pool's backward adds into zeros.
  y.backward(torch::tensor({0.25f, -0.0f, 2.0f, 3.0f}).view({1, 1, 2, 2}));
  auto g = x.grad();
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      float expected = 0.0f;                  // the window whose output is -0: nothing passes the ReLU
      if (i == 0 && j == 3) expected = 0.0f;  // the first 3, its gradient -0 made +0
      if (i == 2 && j == 0) expected = 2.0f;  // the first of three 1.5
      if (i == 3 && j == 3) expected = 3.0f;  // the last NaN
      EXPECT_EQ(bits(g[0][0][i][j].item<float>()), bits(expected)) << "at " << i << "," << j;
    }
  }
}

// Against relu then max_pool2d over maps whose windows tie often, at 1 and 2 threads, shapes that
// take the four-window path, its scalar tail, an odd height and width (the last row and column
// dropped) and k = 3.
TEST(ReluPool, LibTorchPairBitForBit) {
  const int threads = at::get_num_threads();
  for (int t : {1, 2}) {
    at::set_num_threads(t);
    torch::manual_seed(7);
    for (auto [shape, k] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
             {{8, 16, 24, 24}, 2}, {{4, 32, 8, 8}, 2}, {{2, 3, 18, 19}, 2}, {{3, 5, 7, 9}, 2}, {{2, 4, 11, 10}, 3}}) {
      auto x = torch::randn(shape).mul_(3).round_().div_(2);  // half-integers: ties and zeros
      x.view(-1).index_put_({torch::arange(0, x.numel(), 97)}, -0.0f);
      x.view(-1).index_put_({torch::arange(5, x.numel(), 389)}, std::nanf(""));
      auto a = x.clone().requires_grad_(true), b = x.clone().requires_grad_(true);
      auto ya = torch::max_pool2d(torch::relu(a), k);
      auto yb = relu_max_pool2d(b, k);
      EXPECT_TRUE(same_bits(ya, yb)) << "forward, shape " << x.sizes() << " k " << k << " threads " << t;
      auto g = torch::randn_like(ya);
      ya.backward(g);
      yb.backward(g);
      EXPECT_TRUE(same_bits(a.grad(), b.grad())) << "backward, shape " << x.sizes() << " k " << k << " threads " << t;
    }
  }
  at::set_num_threads(threads);
}

}  // namespace
}  // namespace testbed
