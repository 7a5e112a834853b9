// Compute models: fixed / flops / measured base times, heterogeneous fleets, straggler noise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/core/compute/compute_model.h"
#include "training/seed_streams.h"

namespace testbed {
namespace {

ComputeSection fixed_section(double seconds) {
  ComputeSection c;
  c.model = ComputeKind::Fixed;
  c.step_time = Duration{seconds};
  return c;
}

// --- base times -------------------------------------------------------------------------

TEST(ComputeModel, FixedBaseIsExact) {
  ComputeModel m(fixed_section(0.25), 1e9, 4, 7);
  for (int n = 0; n < 4; ++n)
    for (int s : {0, 1, 99}) EXPECT_EQ(m.step_seconds(n, s, 123.0), 0.25) << "node " << n << " step " << s;
  EXPECT_EQ(m.flops_per_step(), 1e9);
}

// A step of pure arithmetic (no bytes, no launches) runs at the preset's peak for the dtype.
TEST(ComputeModel, FlopsUsesDevicePreset) {
  ComputeSection c;
  c.model = ComputeKind::Flops;
  c.device = "a100";
  c.mfu = 0.5;
  const double flops = 3.2e12;
  ComputeModel m(c, flops, 2, 1);
  EXPECT_DOUBLE_EQ(m.step_seconds(0, 0, 0.0), flops / (19.5e12 * 0.5));  // fp32 by default
  EXPECT_DOUBLE_EQ(m.step_seconds(1, 5, 9.0), flops / (19.5e12 * 0.5));
  EXPECT_EQ(m.flops_per_step(), flops);
  c.dtype = Precision::Bf16;
  EXPECT_DOUBLE_EQ(ComputeModel(c, flops, 2, 1).step_seconds(0, 0, 0.0), flops / (312e12 * 0.5));
}

TEST(ComputeModel, FlopsExplicitPeakOverridesPreset) {
  ComputeSection c;
  c.model = ComputeKind::Flops;
  c.device = "a100";
  c.peak_flops = FlopRate{1e15};
  c.mfu = 0.25;
  ComputeModel m(c, 5e12, 1, 1);
  EXPECT_DOUBLE_EQ(m.step_seconds(0, 0, 0.0), 5e12 / (1e15 * 0.25));
  // explicit figures for everything the roofline needs make the device name irrelevant
  c.device = "no-such-device";
  EXPECT_THROW(ComputeModel(c, 5e12, 1, 1), std::invalid_argument);  // bandwidth, latency missing
  c.memory_bandwidth = ByteRate{1e12};
  c.launch_latency = Duration{4e-6};
  EXPECT_NO_THROW(ComputeModel(c, 5e12, 1, 1));
}

// An algorithm's extra work (compressing) is a pass on the same roof: max(FLOPs / peak,
// bytes / bandwidth) + kernels x launch, at the node's speed; none under fixed; the host
// seconds it took under measured.
TEST(ComputeModel, ExtraWorkIsAPassOnTheRoof) {
  ComputeSection c;
  c.model = ComputeKind::Flops;
  c.peak_flops = FlopRate{1e12};
  c.mfu = 0.5;
  c.memory_bandwidth = ByteRate{2e11};
  c.launch_latency = Duration{4e-6};
  c.speeds = {1.0, 0.5};
  ComputeModel m(c, 1e9, 2, 1);
  ExtraWork compute_bound{3e9, 1e9, 10};  // 3e9 / 5e11 = 6 ms against 1e9 / 2e11 = 5 ms
  EXPECT_DOUBLE_EQ(m.extra_seconds(0, 3, compute_bound), 6e-3 + 10 * 4e-6);
  EXPECT_DOUBLE_EQ(m.extra_seconds(1, 3, compute_bound), (6e-3 + 10 * 4e-6) / 0.5);
  ExtraWork memory_bound{1e9, 4e9, 0};  // 2 ms against 20 ms
  EXPECT_DOUBLE_EQ(m.extra_seconds(0, 0, memory_bound), 20e-3);
  c.model = ComputeKind::Fixed;
  EXPECT_EQ(ComputeModel(c, 1e9, 2, 1).extra_seconds(0, 0, compute_bound, 0.7), 0.0);
  c.model = ComputeKind::Measured;
  c.measured_scale = 2;
  EXPECT_DOUBLE_EQ(ComputeModel(c, 1e9, 2, 1).extra_seconds(1, 0, compute_bound, 0.1), 0.1 * 2 / 0.5);
}

TEST(ComputeModel, MeasuredScalesHostSeconds) {
  ComputeSection c;
  c.model = ComputeKind::Measured;
  c.measured_scale = 2.5;
  ComputeModel m(c, 1e9, 3, 1);
  EXPECT_DOUBLE_EQ(m.step_seconds(0, 0, 0.1), 0.25);
  EXPECT_DOUBLE_EQ(m.step_seconds(2, 7, 0.4), 1.0);
}

TEST(ComputeModel, DeterministicFalseOnlyForMeasured) {
  ComputeSection c;
  c.model = ComputeKind::Fixed;
  EXPECT_TRUE(ComputeModel(c, 1, 1, 0).deterministic());
  c.model = ComputeKind::Flops;
  EXPECT_TRUE(ComputeModel(c, 1, 1, 0).deterministic());
  c.model = ComputeKind::Measured;
  EXPECT_FALSE(ComputeModel(c, 1, 1, 0).deterministic());
}

// --- heterogeneous fleets ---------------------------------------------------------------

TEST(ComputeModel, SpeedsListIsCycledAndApplied) {
  ComputeSection c = fixed_section(0.3);
  c.speeds = {1.0, 2.0, 0.5};
  ComputeModel m(c, 0, 7, 11);
  for (int n = 0; n < 7; ++n) EXPECT_EQ(m.speed(n), c.speeds[n % 3]) << "node " << n;
  EXPECT_DOUBLE_EQ(m.step_seconds(0, 0, 0), 0.3);
  EXPECT_DOUBLE_EQ(m.step_seconds(1, 0, 0), 0.15);  // speed 2: half as long
  EXPECT_DOUBLE_EQ(m.step_seconds(2, 0, 0), 0.6);   // speed 0.5: twice as long
  EXPECT_DOUBLE_EQ(m.step_seconds(4, 3, 0), 0.15);  // node 4 -> speeds[1]
}

TEST(ComputeModel, SpeedsApplyToMeasuredAndFlopsToo) {
  ComputeSection c;
  c.model = ComputeKind::Measured;
  c.speeds = {2.0};
  EXPECT_DOUBLE_EQ(ComputeModel(c, 0, 1, 0).step_seconds(0, 0, 0.5), 0.25);
  c.model = ComputeKind::Flops;
  c.peak_flops = FlopRate{1e12};
  c.mfu = 1.0;
  EXPECT_DOUBLE_EQ(ComputeModel(c, 4e12, 1, 0).step_seconds(0, 0, 0), 2.0);
}

TEST(ComputeModel, EqualMinMaxGivesThatSpeed) {
  ComputeSection c = fixed_section(1.0);
  c.speed_min = c.speed_max = 4.0;
  ComputeModel m(c, 0, 5, 3);
  for (int n = 0; n < 5; ++n) {
    EXPECT_EQ(m.speed(n), 4.0);
    EXPECT_DOUBLE_EQ(m.step_seconds(n, 0, 0), 0.25);
  }
}

TEST(ComputeModel, DefaultSpeedIsOne) {
  ComputeModel m(fixed_section(1.0), 0, 3, 3);
  for (int n = 0; n < 3; ++n) EXPECT_EQ(m.speed(n), 1.0);
}

TEST(ComputeModel, UniformSpeedsInRangeAndReproducible) {
  ComputeSection c = fixed_section(1.0);
  c.speed_min = 0.5;
  c.speed_max = 2.0;
  const int nodes = 64;
  ComputeModel a(c, 0, nodes, 42), b(c, 0, nodes, 42), other(c, 0, nodes, 43);
  std::set<double> distinct;
  double lo = 1e9, hi = -1e9;
  int differ = 0;
  for (int n = 0; n < nodes; ++n) {
    double s = a.speed(n);
    EXPECT_GE(s, 0.5);
    EXPECT_LE(s, 2.0);
    EXPECT_EQ(s, b.speed(n)) << "same seed must give the same speed, node " << n;
    if (other.speed(n) != s) ++differ;
    EXPECT_DOUBLE_EQ(a.step_seconds(n, 0, 0), 1.0 / s);
    distinct.insert(s);
    lo = std::min(lo, s);
    hi = std::max(hi, s);
  }
  EXPECT_EQ(distinct.size(), static_cast<size_t>(nodes));
  EXPECT_GT(differ, nodes / 2) << "another seed should give other speeds";
  EXPECT_LT(lo, 0.8);  // spread over the interval, not clustered
  EXPECT_GT(hi, 1.7);
}

TEST(ComputeModel, UniformSpeedsFollowDocumentedStream) {
  // Pins the platform-independent mapping: mt19937_64(stream_seed(seed, "speeds")),
  // node order, min + (max - min) * (x >> 11) * 2^-53.
  ComputeSection c = fixed_section(1.0);
  c.speed_min = 1.0;
  c.speed_max = 3.0;
  const uint64_t seed = 2024;
  ComputeModel m(c, 0, 5, seed);
  std::mt19937_64 rng(stream_seed(seed, "speeds"));
  for (int n = 0; n < 5; ++n) {
    double u = static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
    EXPECT_EQ(m.speed(n), 1.0 + 2.0 * u) << "node " << n;
  }
}

TEST(ComputeModel, UniformSpeedsOfANodeDoNotDependOnFleetSize) {
  ComputeSection c = fixed_section(1.0);
  c.speed_min = 0.5;
  c.speed_max = 1.5;
  ComputeModel small(c, 0, 3, 9), large(c, 0, 10, 9);
  for (int n = 0; n < 3; ++n) EXPECT_EQ(small.speed(n), large.speed(n));
}

// --- straggler noise --------------------------------------------------------------------

TEST(ComputeModel, SigmaZeroGivesExactlyTheBase) {
  ComputeSection c = fixed_section(0.125);
  c.straggler_sigma = 0;
  ComputeModel m(c, 0, 4, 5);
  for (int n = 0; n < 4; ++n)
    for (int s = 0; s < 200; ++s) ASSERT_EQ(m.step_seconds(n, s, 0), 0.125);
}

TEST(ComputeModel, NoiseIsIndependentOfCallOrder) {
  ComputeSection c = fixed_section(1.0);
  c.straggler_sigma = 0.5;
  const int nodes = 4, steps = 50;
  ComputeModel forward(c, 0, nodes, 77), backward(c, 0, nodes, 77);
  std::vector<double> f(nodes * steps), b(nodes * steps);
  for (int n = 0; n < nodes; ++n)
    for (int s = 0; s < steps; ++s) f[n * steps + s] = forward.step_seconds(n, s, 0);
  for (int s = steps - 1; s >= 0; --s)
    for (int n = nodes - 1; n >= 0; --n) b[n * steps + s] = backward.step_seconds(n, s, 0);
  for (size_t i = 0; i < f.size(); ++i) ASSERT_EQ(f[i], b[i]) << "index " << i;
  // repeated calls on one model give the same value
  EXPECT_EQ(forward.step_seconds(2, 17, 0), forward.step_seconds(2, 17, 0));
  EXPECT_EQ(forward.step_seconds(2, 17, 0), f[2 * steps + 17]);
}

TEST(ComputeModel, NoiseDiffersAcrossStepsNodesAndSeeds) {
  ComputeSection c = fixed_section(1.0);
  c.straggler_sigma = 0.3;
  ComputeModel m(c, 0, 3, 8), other(c, 0, 3, 9);
  std::set<double> node0;
  for (int s = 0; s < 200; ++s) {
    double t = m.step_seconds(0, s, 0);
    EXPECT_NE(t, 1.0);
    node0.insert(t);
  }
  EXPECT_EQ(node0.size(), 200u) << "every step should have its own noise";
  int same_nodes = 0, same_seed = 0;
  for (int s = 0; s < 200; ++s) {
    if (m.step_seconds(0, s, 0) == m.step_seconds(1, s, 0)) ++same_nodes;
    if (m.step_seconds(1, s, 0) == m.step_seconds(2, s, 0)) ++same_nodes;
    if (m.step_seconds(0, s, 0) == other.step_seconds(0, s, 0)) ++same_seed;
  }
  EXPECT_EQ(same_nodes, 0);
  EXPECT_EQ(same_seed, 0);
}

TEST(ComputeModel, NoiseMultipliesTheSpeedScaledBase) {
  ComputeSection c = fixed_section(0.2);
  c.straggler_sigma = 0.4;
  ComputeSection fast = c;
  fast.speeds = {2.0};
  ComputeModel m(c, 0, 3, 5), f(fast, 0, 3, 5);
  for (int n = 0; n < 3; ++n)
    for (int s = 0; s < 20; ++s) EXPECT_DOUBLE_EQ(f.step_seconds(n, s, 0), 0.5 * m.step_seconds(n, s, 0));
}

TEST(ComputeModel, NoiseIsLognormalWithGivenSigma) {
  const double sigma = 0.3, base = 0.05;
  ComputeSection c = fixed_section(base);
  c.straggler_sigma = sigma;
  const int nodes = 4, steps = 5000;  // 20000 samples
  ComputeModel m(c, 0, nodes, 12345);
  std::vector<double> z;
  z.reserve(nodes * steps);
  for (int n = 0; n < nodes; ++n)
    for (int s = 0; s < steps; ++s) z.push_back(std::log(m.step_seconds(n, s, 0) / base) / sigma);
  const double count = static_cast<double>(z.size());
  double mean = 0;
  for (double v : z) mean += v;
  mean /= count;
  double var = 0, tail = 0, lag1 = 0;
  for (size_t i = 0; i < z.size(); ++i) {
    var += (z[i] - mean) * (z[i] - mean);
    if (std::abs(z[i]) > 1.959964) ++tail;
    if (i % steps != 0) lag1 += (z[i] - mean) * (z[i - 1] - mean);
  }
  var /= count - 1;
  const double sd = std::sqrt(var);
  tail /= count;
  lag1 /= (count - nodes) * var;
  // standard errors: mean 0.007, sd 0.005, tail 0.0015, lag-1 correlation 0.007
  EXPECT_NEAR(mean, 0.0, 0.03);
  EXPECT_NEAR(sd, 1.0, 0.03);
  EXPECT_NEAR(tail, 0.05, 0.008);
  EXPECT_NEAR(lag1, 0.0, 0.03);
}

// --- validation -------------------------------------------------------------------------

template <class F>
std::string thrown_message(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ComputeModel, RejectsNonPositiveSpeedInList) {
  ComputeSection c = fixed_section(1.0);
  c.speeds = {1.0, 0.0};
  std::string msg = thrown_message([&] { ComputeModel(c, 0, 2, 0); });
  EXPECT_NE(msg.find("speeds[1]"), std::string::npos) << msg;
  c.speeds = {-2.0};
  EXPECT_THROW(ComputeModel(c, 0, 2, 0), std::invalid_argument);
}

TEST(ComputeModel, RejectsSpeedMinAboveMax) {
  ComputeSection c = fixed_section(1.0);
  c.speed_min = 2.0;
  c.speed_max = 1.0;
  std::string msg = thrown_message([&] { ComputeModel(c, 0, 2, 0); });
  EXPECT_NE(msg.find("speed_min"), std::string::npos) << msg;
}

TEST(ComputeModel, RejectsUnknownDevicePreset) {
  ComputeSection c;
  c.model = ComputeKind::Flops;
  c.device = "tpu-v9000";
  c.peak_flops = FlopRate{0};
  std::string msg = thrown_message([&] { ComputeModel(c, 1e9, 1, 0); });
  EXPECT_NE(msg.find("tpu-v9000"), std::string::npos) << msg;
}

TEST(ComputeModel, RejectsAnEmptyFleet) {
  EXPECT_THROW(ComputeModel(fixed_section(1.0), 1, 0, 0), std::invalid_argument);
}

}  // namespace
}  // namespace testbed
