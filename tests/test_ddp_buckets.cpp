// DDP's gradient buckets: PyTorch's bucket rule by hand, bucketed training against one
// all-reduce of everything, and the overlap of the all-reduces with backward pinned by hand on
// the alpha-beta network.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "tests/overlap_scenario.h"

namespace testbed {
namespace {

TEST(GradientBuckets, FollowPyTorchsRule) {
  // Gradients become ready from the last tensor: 30, then 100000 (100030), 20 (100050), then
  // 200000 (300050 floats), the first to reach 1 MiB (262144 floats). The rest, 10 + 100000,
  // stays under the later cap of 0.5 MiB (131072 floats): the last bucket, not closed.
  auto b = gradient_buckets({100000, 10, 200000, 20, 100000, 30}, 0.5 * 1048576);
  ASSERT_EQ(b.size(), 2u);
  expect_bucket(b[0], 2, 4, 100010, 300050);
  expect_bucket(b[1], 0, 2, 0, 100010);
  // A bucket closes on reaching its cap exactly: 262144 floats are 1 MiB; then caps of 256 KiB.
  b = gradient_buckets({65536, 65536, 262144}, 262144);
  ASSERT_EQ(b.size(), 3u);
  expect_bucket(b[0], 2, 1, 131072, 262144);
  expect_bucket(b[1], 1, 1, 65536, 65536);
  expect_bucket(b[2], 0, 1, 0, 65536);
  // The Fashion-MNIST CNN (conv 1->16 5x5, conv 16->32 5x5, 512->128, 128->10) is 80202 floats,
  // under 1 MiB: one bucket, the whole flat vector.
  b = gradient_buckets({400, 16, 12800, 32, 65536, 128, 1280, 10}, 25 * 1048576.0);
  ASSERT_EQ(b.size(), 1u);
  expect_bucket(b[0], 0, 8, 0, 80202);
}

// On the overlap MLP, bucket 0 is fc3 and fc2 (10 + 5120 + 512 + 524288 = 529930 floats >= 1 MiB),
// ready when fc2's backward ends; bucket 1 is fc1 (525312 floats), ready when backward ends.
class DdpBuckets : public OverlapMlp {
 protected:
  static EngineRun run(const std::string& overlap, const std::string& nodes = "2") {
    return OverlapMlp::run({"algorithm.overlap=" + overlap, "nodes=" + nodes});
  }
};

TEST_F(DdpBuckets, OverlapPinnedByHandOnTwoBuckets) {
  const double T = 0.05, alpha = 100e-6, bps = 1e9;
  // A ring all-reduce of n floats on two nodes: two messages of n/2 floats, one after the other.
  auto all_reduce = [&](double n) { return 2 * (alpha + n / 2 * 4 * 8 / bps); };
  // Forward FLOPs per sample of each layer; backward: fc3 and fc2 twice theirs (input and
  // weight gradients), fc1 once (nothing trainable before it needs its input gradient).
  const double f1 = 2.0 * 512 * 1024, f2 = 2.0 * 1024 * 512, f3 = 2.0 * 512 * 10;
  const double total = (f1 + f2 + f3) + (2 * f3 + 2 * f2 + f1);
  const double bucket0_ready = T * ((f1 + f2 + f3) + (2 * f3 + 2 * f2)) / total;
  // Bucket 1 is ready at T but waits for bucket 0 (one communication stream); the update takes
  // no share under the fixed model (it has no FLOPs).
  const double overlapped = std::max(T, bucket0_ready + all_reduce(529930)) + all_reduce(525312);
  const double serial = T + all_reduce(529930 + 525312);
  ASSERT_GT(bucket0_ready + all_reduce(529930), T);  // so the overlap is T - bucket0_ready - 2 alpha
  EXPECT_NEAR(serial - overlapped, (T - bucket0_ready) - 2 * alpha, 1e-12);

  const EngineRun with = run("true"), without = run("false");
  ASSERT_EQ(with.record.train_rows.size(), 3u);
  for (int step = 0; step < 3; ++step) {
    for (int n = 0; n < 2; ++n) {
      EXPECT_NEAR(with.record.train_rows[step].time[n], (step + 1) * overlapped, 1e-8) << "step " << step;
      EXPECT_NEAR(without.record.train_rows[step].time[n], (step + 1) * serial, 1e-8) << "step " << step;
    }
    // The same bytes either way: each node sends half of each bucket.
    EXPECT_EQ(with.record.train_rows[step].bytes, without.record.train_rows[step].bytes);
  }
  // Two all-reduces of two messages each per step, tagged by bucket.
  ASSERT_EQ(with.record.messages.size(), 3u * 2 * 2 * 2);
  EXPECT_EQ(with.record.messages[0].kind, "gradient.0");
}

TEST_F(DdpBuckets, TrainLikeOneAllReduceUpToSummationOrder) {
  // Three nodes: an element's ring chunk, so the order of its three summands, depends on the
  // buckets (with two, a + b = b + a).
  const EngineRun with = run("true", "3"), without = run("false", "3");
  // Replicas stay bitwise identical to each other...
  for (int n = 1; n < 3; ++n) EXPECT_TRUE(torch::equal(with.parameters[0], with.parameters[n]));
  // ...and equal to one all-reduce of everything up to the order in which floats were summed.
  const auto initial = flatten_parameters(*make_model(scenario()));
  EXPECT_GT((with.parameters[0] - initial).abs().max().item<double>(), 1e-3);
  // AdamW divides by sqrt(v), which magnifies rounding on tiny gradients: 1 % of one lr step.
  EXPECT_LT((with.parameters[0] - without.parameters[0]).abs().max().item<double>(), 1e-5);
  EXPECT_FALSE(torch::equal(with.parameters[0], without.parameters[0]));  // two all-reduces really ran
}

}  // namespace
}  // namespace testbed
