// DDP's gradient buckets: PyTorch's bucket rule by hand, bucketed training against one
// all-reduce of everything, and the overlap of the all-reduces with backward pinned by hand on
// the alpha-beta network.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sim/core/compute/compute_model.h"
#include "tests/support/overlap_scenario.h"

namespace testbed {
namespace {

TEST(GradientBuckets, FollowPyTorchsRule) {
  // A tensor a layer (no layers given): gradients become ready from the last tensor: 30, then
  // 100000 (100030), 20 (100050), then 200000 (300050 floats), the first to reach 1 MiB (262144
  // floats). The rest, 10 + 100000, stays under the later cap of 0.5 MiB (131072 floats): the
  // last bucket, not closed.
  auto b = gradient_buckets({100000, 10, 200000, 20, 100000, 30}, {}, 0.5 * 1048576);
  ASSERT_EQ(b.size(), 2u);
  expect_bucket(b[0], {2, 3, 4, 5}, 300050, 2);
  expect_bucket(b[1], {0, 1}, 100010, 0);
  // A bucket closes on reaching its cap exactly: 262144 floats are 1 MiB; then caps of 256 KiB.
  b = gradient_buckets({65536, 65536, 262144}, {}, 262144);
  ASSERT_EQ(b.size(), 3u);
  expect_bucket(b[0], {2}, 262144, 2);
  expect_bucket(b[1], {1}, 65536, 1);
  expect_bucket(b[2], {0}, 65536, 0);
  // The Fashion-MNIST CNN (conv 1->16 5x5, conv 16->32 5x5, 512->128, 128->10) is 80202 floats,
  // under 1 MiB: one bucket, the whole flat vector.
  b = gradient_buckets({400, 16, 12800, 32, 65536, 128, 1280, 10}, {0, 0, 1, 1, 2, 2, 3, 3}, 25 * 1048576.0);
  ASSERT_EQ(b.size(), 1u);
  expect_bucket(b[0], {0, 1, 2, 3, 4, 5, 6, 7}, 80202, 0);
}

TEST(GradientBuckets, FollowBackwardNotRegistration) {
  // Registered as the GPT registers them: wte, wpe, ln_f (w, b), head (w, b), then the blocks'
  // fc (w, b) twice. Forward runs wte 0, wpe 1, block 0 2, block 1 3, ln_f 4, head 5, so
  // backward makes ready head.b, head.w, ln_f.b, ln_f.w, block 1 (b, w), block 0 (b, w), wpe, wte.
  // Caps of 4000 floats (first) and 5000: head's 125 + 4000 = 4125 closes bucket 0; then
  // 32 + 32 + 128 + 4096 + 128 = 4416 < 5000 and + 4096 = 8512 closes bucket 1, whose tensors
  // are not neighbours in the flat vector; wpe and wte (4512) are the last, unclosed one.
  const std::vector<int64_t> sizes = {4000, 512, 32, 32, 4000, 125, 4096, 128, 4096, 128};
  const std::vector<int> layers = {0, 1, 4, 4, 5, 5, 2, 2, 3, 3};
  const auto b = gradient_buckets(sizes, layers, 5000 * 4, 4000 * 4);
  ASSERT_EQ(b.size(), 3u);
  expect_bucket(b[0], {4, 5}, 4125, 4);
  expect_bucket(b[1], {2, 3, 6, 7, 8, 9}, 8512, 6);  // completed by block 0's weight
  expect_bucket(b[2], {0, 1}, 4512, 0);
}

// MG-WFBP's rule (merged_gradient_buckets.h), by hand on three tensors of 250 floats (1000
// bytes), a tensor a layer, ready (in backward's order: tensor 2, 1, 0) at 0, w and 10, with
// alpha 1 and beta 0.001 a byte, so a tensor's all-reduce takes 2 alone.
//  - w = 0.5: tensor 1 is ready 0.5 after tensor 2's all-reduce started, under alpha: merged
//    (the pair's all-reduce costs 3 and starts at 0.5); tensor 0 comes at 10, after it ends.
//  - w = 1.5: over alpha, and tensor 2's all-reduce has started: each alone.
//  - alpha 0.01 (a tensor's all-reduce 1.01), ready at 0, 0.5 and 0.6: tensor 1 waits for
//    tensor 2's to end (1.01), and tensor 0 is ready (0.6) before that start: merged for free.
// Slips caught: a merge into the wrong neighbour, the t_wait < alpha branch left out (w = 0.5
// gives three buckets), a merge refused because the next gradient is ready before the
// all-reduce could start (the third case gives three).
TEST(MergedGradientBuckets, FollowMgWfbpsRuleByHand) {
  const std::vector<int64_t> sizes{250, 250, 250};
  auto buckets = [&](std::vector<double> ready, double alpha, int64_t merge_below = 0) {
    return merged_gradient_buckets(sizes, {}, MergeTimes{ready, alpha, 0.001}, 4, merge_below);
  };
  auto b = buckets({10, 0.5, 0}, 1);
  ASSERT_EQ(b.size(), 2u);
  expect_bucket(b[0], {1, 2}, 500, 1);
  expect_bucket(b[1], {0}, 250, 0);
  b = buckets({10, 1.5, 0}, 1);
  ASSERT_EQ(b.size(), 3u);
  expect_bucket(b[0], {2}, 250, 2);
  b = buckets({0.6, 0.5, 0}, 0.01);
  ASSERT_EQ(b.size(), 2u);
  expect_bucket(b[0], {2}, 250, 2);
  expect_bucket(b[1], {0, 1}, 500, 0);
  // DeAR's copy: a bucket under 8192 elements merges on whatever the times say.
  b = buckets({10, 1.5, 0}, 1, 8192);
  ASSERT_EQ(b.size(), 1u);
  expect_bucket(b[0], {0, 1, 2}, 750, 0);
}

// The reference's own loop, ported line by line (HKBU-HPML/MG-WFBP distributed_optimizer.py,
// _generate_groups_with_threshold's MG-WFBP branch): layers in forward order, l = L-1 first,
// taob the backward starts, taoc the communication starts, merging l into l - 1.
std::vector<std::vector<int>> reference_mgwfbp(const std::vector<double>& tb, std::vector<double> p, double alpha,
                                               double beta, int64_t merge_below) {
  const int L = static_cast<int>(tb.size());
  auto predict = [&](double size) { return size == 0 ? 0.0 : alpha + beta * size; };
  std::vector<double> tc(L), taob(L, 0);
  for (int l = 0; l < L; ++l) tc[l] = predict(p[l] * 4);
  for (int l = L - 2; l >= 0; --l) taob[l] = taob[l + 1] + tb[l + 1];
  auto comm_start = [&] {
    std::vector<double> taoc(L);
    taoc[L - 1] = taob[L - 1] + tb[L - 1];
    for (int l = L - 2; l >= 0; --l) taoc[l] = std::max(taoc[l + 1] + tc[l + 1], taob[l] + tb[l]);
    return taoc;
  };
  auto taoc = comm_start();
  auto merge = [&](int l) {
    tc[l] = 0;
    p[l - 1] += p[l];
    p[l] = 0;
    tc[l - 1] = predict(p[l - 1] * 4);
    taoc = comm_start();
  };
  std::vector<std::vector<int>> groups;
  std::vector<int> group;
  for (int l = L - 1; l >= 1; --l) {
    group.push_back(l);
    const double current_taob = taob[l - 1] + tb[l - 1];
    bool merged = false;
    if (current_taob < taoc[l] + tc[l]) {
      if (taoc[l] > current_taob || current_taob - taoc[l] < alpha) {
        merge(l);
        merged = true;
      }
    }
    if (!merged && p[l] < merge_below) {
      merge(l);
      merged = true;
    }
    if (!merged) {
      groups.push_back(group);
      group.clear();
    }
  }
  group.push_back(0);
  groups.push_back(group);
  return groups;
}

// Against the reference's loop on 200 random models of 2-40 tensors a layer each (backward
// times and sizes spread over three decades, alpha and beta of 10 GbE and of a fast fabric):
// the same buckets. The reference takes per-layer backward times; ours takes ready times, the
// sums of those from the output end.
TEST(MergedGradientBuckets, MatchTheReferenceLoop) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> unit(0, 1);
  for (int trial = 0; trial < 200; ++trial) {
    const int L = 2 + static_cast<int>(unit(rng) * 39);
    std::vector<double> tb(L), p(L);
    std::vector<int64_t> sizes(L);
    for (int l = 0; l < L; ++l) {
      tb[l] = 1e-5 * std::pow(1000, unit(rng));
      sizes[l] = static_cast<int64_t>(10 * std::pow(1000, unit(rng)));
      p[l] = static_cast<double>(sizes[l]);
    }
    const bool slow = trial % 2 == 0;
    const double alpha = slow ? 5e-3 : 2e-4, beta = slow ? 8.5e-10 : 2e-11;
    const int64_t below = trial % 3 == 0 ? 8192 : 0;
    std::vector<double> ready(L);
    double t = 0;
    for (int l = L - 1; l >= 0; --l) ready[l] = t += tb[l];
    const auto ours = merged_gradient_buckets(sizes, {}, MergeTimes{ready, alpha, beta}, 4, below);
    const auto theirs = reference_mgwfbp(tb, p, alpha, beta, below);
    ASSERT_EQ(ours.size(), theirs.size()) << "trial " << trial;
    for (size_t g = 0; g < ours.size(); ++g) {
      std::vector<int> tensors = theirs[g];
      std::sort(tensors.begin(), tensors.end());
      EXPECT_EQ(ours[g].tensors, tensors) << "trial " << trial << ", bucket " << g;
    }
  }
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

// Bytes node 0 sent in step 0 for each collective, by its tag: a ring of two sends each rank
// the buffer once, n floats in two halves.
std::map<std::string, uint64_t> bytes_by_tag(const EngineRun& r) {
  std::map<std::string, uint64_t> out;
  for (const MessageRecord& m : r.record.messages)
    if (m.src == 0 && m.t_send < r.record.train_rows.at(0).time.at(0)) out[m.kind] += m.bytes;
  return out;
}

// Wait-free backpropagation (per_tensor): an all-reduce a gradient tensor, in backward's order
// (fc3's bias and weight, fc2's, fc1's; within a layer the bias first, as buckets fill), no
// 1 MiB first bucket. Horovod (collective.library horovod) fuses what each cycle collects: with
// a 1 us cycle a layer's two tensors (ready together) and no more; under a 1 MiB buffer a
// tensor that would overflow it starts a new one. By hand from the MLP's tensors (fc1 524288 +
// 1024, fc2 524288 + 512, fc3 5120 + 10 floats). Slips caught: the first bucket's cap kept
// (fc3 and fc2 in one), tensors of two cycles fused, a buffer let past its threshold.
TEST_F(OverlapMlp, PerTensorAndHorovodFusionFollowTheCycle) {
  const double T = 0.05;
  auto sizes = [](const std::map<std::string, uint64_t>& tags) {
    std::vector<uint64_t> floats;
    for (const auto& [tag, bytes] : tags) floats.push_back(bytes / 4);
    std::sort(floats.begin(), floats.end());
    return floats;
  };
  const EngineRun wfbp = run({"algorithm={name: ddp, per_tensor: true}"});
  const auto tensors = bytes_by_tag(wfbp);
  EXPECT_EQ(sizes(tensors), (std::vector<uint64_t>{10, 512, 1024, 5120, 524288, 524288}));
  EXPECT_EQ(tensors.count("gradient.0"), 1u);
  EXPECT_EQ(tensors.at("gradient.0"), 10u * 4) << "fc3's bias is ready first";

  // NCCL's own latencies set to 0 here, so that a buffer's first message leaves at its tick.
  const EngineRun layers =
      run({"algorithm={name: ddp, per_tensor: true}",
           "collective={library: horovod, cycle_time: 1us, launch_latency: 0us, message_latency: 0us}"});
  EXPECT_EQ(sizes(bytes_by_tag(layers)), (std::vector<uint64_t>{5130, 524800, 525312}));
  // fc3's pair leaves at the first cycle tick after its backward pass: by FLOPs, (forward +
  // fc3's two gradient passes) of the step, rounded up to a microsecond.
  const double f1 = 2.0 * 512 * 1024, f2 = 2.0 * 1024 * 512, f3 = 2.0 * 512 * 10;
  const double total = (f1 + f2 + f3) + (2 * f3 + 2 * f2 + f1);
  const double fc3_ready = T * ((f1 + f2 + f3) + 2 * f3) / total;
  double first_send = 1;
  for (const MessageRecord& m : layers.record.messages)
    if (m.kind == "fused.gradient.0") first_send = std::min(first_send, m.t_send);
  EXPECT_NEAR(first_send, std::ceil(fc3_ready * 1e6 - 1e-6) * 1e-6, 1e-9) << "ready at " << fc3_ready;

  const EngineRun capped =
      run({"algorithm={name: ddp, per_tensor: true}", "collective={library: horovod, cycle_time: 1us, fusion_mb: 1}"});
  EXPECT_EQ(sizes(bytes_by_tag(capped)), (std::vector<uint64_t>{512, 1024, 5130, 524288, 524288}));
}

// Eva's reference code all-reduces its input vectors from a forward pre-hook and its gradient
// vectors from a backward hook, through Horovod's queue beside the gradients: with a cycle
// longer than the step, fc1's input vector, submitted at the step's first tick, goes alone, and
// every other op of the step waits for the next tick and goes in one buffer (two messages a
// node each on a ring of two); training ends bit for bit where unfused ops do (each sum is
// a + b). Slip caught: the forward ops kept out of the queue (each its own all-reduce, and
// the buffers around them split).
TEST_F(OverlapMlp, HorovodFusesEvasForwardVectorsToo) {
  const std::string eva = "optimizer={name: eva, lr: 0.05}";
  const EngineRun plain = run({"algorithm={name: ddp, per_tensor: true}", eva});
  const EngineRun fused =
      run({"algorithm={name: ddp, per_tensor: true}", eva, "collective={library: horovod, cycle_time: 1s}"});
  ASSERT_GT(plain.record.messages.size(), 3u * 2 * 2 * 6) << "Eva's 6 vectors and 6 gradients, each its own";
  std::set<std::string> kinds;
  for (const MessageRecord& m : fused.record.messages) kinds.insert(m.kind);
  EXPECT_EQ(kinds, (std::set<std::string>{"eva.a.0", "fused.eva.a.1"}));
  ASSERT_EQ(fused.record.messages.size(), 3u * 2 * 2 * 2) << "two buffers a step: two messages a node each";
  for (int n = 0; n < 2; ++n) EXPECT_TRUE(torch::equal(fused.parameters[n], plain.parameters[n])) << "node " << n;
}

// MG-WFBP in a run (ddp's mgwfbp) on the overlap MLP: fc1 512x1024, fc2 1024x512, fc3 512x10,
// a step of T = 50 ms shared by FLOPs, so fc3's gradients exist at T (F + 2 f3) / total, fc2's
// 2 f2 / total x T = 19.88 ms later and fc1's f1 / total x T = 9.94 ms after that. On two
// ranks the fleet's all-reduce takes 2 latency + n x 8 / 1 Gb/s alone: alpha is 2 latencies.
//  - latency 100 us (alpha 0.2 ms): only a layer's weight and bias (ready together) merge:
//    three buckets, a layer each.
//  - latency 5 ms (alpha 10 ms): fc1's gradients come 9.94 ms after fc2's all-reduce could
//    start, under alpha: fc2 and fc1 go together (1050112 floats); fc2's came 19.88 ms after
//    fc3's, over it: fc3 alone.
// Slips caught: ready times taken from the forward shares, or alpha taken as one latency.
TEST_F(OverlapMlp, MgWfbpMergesByTheStepsTimes) {
  auto floats = [](const EngineRun& r) {
    std::vector<uint64_t> out;
    for (const auto& [tag, bytes] : bytes_by_tag(r)) out.push_back(bytes / 4);
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(floats(run({"algorithm={name: ddp, mgwfbp: true}"})), (std::vector<uint64_t>{5130, 524800, 525312}));
  EXPECT_EQ(floats(run({"algorithm={name: ddp, mgwfbp: true}", "topology.link.latency=5ms"})),
            (std::vector<uint64_t>{5130, 1050112}));
}

// Fusion moves values, not only bytes: each tensor gets back its own slice of the reduced
// buffer. On two nodes every sum is a + b whatever the buffer, so training with Horovod's one
// buffer a step (a cycle longer than the step) ends bit for bit where per-tensor all-reduces do.
// Slip caught: a part given the wrong slice (an offset not advanced).
TEST_F(OverlapMlp, HorovodFusionTrainsAsItsTensorsWould) {
  const EngineRun plain = run({"algorithm={name: ddp, per_tensor: true}"});
  const EngineRun fused =
      run({"algorithm={name: ddp, per_tensor: true}", "collective={library: horovod, cycle_time: 1s}"});
  ASSERT_EQ(fused.record.messages.size(), 3u * 2 * 2) << "one buffer a step: two messages a node";
  // Horovod's overlap slowdown (0.269) counts the buffers that go: this one leaves when backward
  // ends, so no pass is slowed (worked out from the unfused tensors, every pass from fc3's on).
  EXPECT_DOUBLE_EQ(fused.record.train_rows[0].compute_time[0], 0.05);
  EXPECT_EQ(fused.record.messages[0].kind, "fused.gradient.0");
  const auto initial = flatten_parameters(*make_model(scenario()));
  EXPECT_GT((plain.parameters[0] - initial).abs().max().item<double>(), 1e-3);
  for (int n = 0; n < 2; ++n) EXPECT_TRUE(torch::equal(fused.parameters[n], plain.parameters[n])) << "node " << n;
}

TEST_F(DdpBuckets, GptBucketsFollowBackward) {
  // The GPT registers wte, wpe, ln_f and head before its blocks. Backward reaches head, ln_f,
  // block 1 and then block 0's fc_proj: that passes the first cap of 1 MiB (the rest before it
  // does not), so they are bucket 0, which leaves first, its tensors gathered from both ends of
  // the flat vector; 0.5 MiB buckets follow. (Reverse registration order would have started
  // with block 1's fc_proj.) On two nodes the sums are a + b whatever the layout,
  // so the parameters equal one all-reduce of everything bit for bit.
  const EngineRun one = run_gpt(128, "algorithm={name: ddp, overlap: false}");
  const EngineRun bucketed = run_gpt(128, "algorithm={name: ddp, bucket_mb: 0.5}");
  for (int n = 0; n < 2; ++n) EXPECT_TRUE(torch::equal(bucketed.parameters[n], one.parameters[n]));

  auto elements = [&](const std::string& prefix) {
    int64_t sum = 0;
    for (const auto& p : make_model(scenario(gpt(128)))->named_parameters())
      if (p.key().rfind(prefix, 0) == 0) sum += p.value().numel();
    return sum;
  };
  const int64_t late = elements("head.") + elements("ln_f.") + elements("blocks.1."),
                bucket0 = late + elements("blocks.0.fc_proj.");
  ASSERT_LT(late * 4, 1048576);
  ASSERT_GE(bucket0 * 4, 1048576);
  // A ring all-reduce on two nodes: each node sends its half twice, 8 bytes an element in all.
  uint64_t sent = 0;
  for (const auto& m : bucketed.record.messages) sent += m.kind == "gradient.0" ? m.bytes : 0;
  EXPECT_EQ(sent, 3u * 8 * static_cast<uint64_t>(bucket0));
  EXPECT_EQ(bucketed.record.messages.front().kind, "gradient.0");
  // It leaves when backward has passed the last of its layers, block 0's fc_proj: under the
  // fixed model the 50 ms step is split by FLOPs (the roofline on a FLOP-counting roof, tested
  // on its own). Leaving at its first registered tensor's layer (ln_f) would be far earlier.
  const Scenario s = scenario(gpt(128));
  const TrainingWork work = training_work(s, *make_model(s));
  const StepShares shares = step_shares(roofline(work, flop_count_roof()));
  size_t fc_proj = 0;
  while (work.layers.at(fc_proj).name != "blocks.0.fc_proj") ++fc_proj;
  EXPECT_NEAR(bucketed.record.messages.front().t_send, 0.05 * shares.backward_done(static_cast<int>(fc_proj)), 1e-8);
  EXPECT_GT(std::count_if(bucketed.record.messages.begin(), bucketed.record.messages.end(),
                          [](const MessageRecord& m) { return m.kind == "gradient.2"; }),
            0);
}

}  // namespace
}  // namespace testbed

namespace testbed {
namespace {

// ACP-SGD's fusion as acpsgd.py forms it, written out: tensors in reverse registration order,
// a group taking the next while its factor bytes stay at most the threshold scaled by the
// factors' share of the gradient (the first whatever its size); each group's all-reduce leaves
// when backward has passed the last of its layers (the ops queue on one stream: never before).
// DDP's rule (gradient-ready order, closing at >= the cap, a first cap of 1 MiB) groups this
// GPT otherwise.
TEST_F(OverlapMlp, AcpSgdBucketsFollowTheReference) {
  const int rank = 4;
  const double mb = 0.05;
  const Scenario s = scenario(gpt(128));
  auto model = make_model(s);
  const TrainingWork work = training_work(s, *model);
  const StepShares shares = step_shares(roofline(work, flop_count_roof()));
  std::vector<int64_t> p_size;
  std::vector<int> layer;
  int64_t d = 0, p_total = 0;
  for (const auto& np : model->named_parameters()) {
    const auto& t = np.value();
    d += t.numel();
    const int64_t rows = t.dim() >= 2 ? t.size(0) : t.numel(), cols = t.numel() / rows;
    p_size.push_back(t.dim() >= 2 ? rows * std::min<int64_t>({rows, cols, rank}) : t.numel());
    p_total += p_size.back();
    // The tensor's layer: the longest layer name that starts its name.
    int best = -1;
    for (size_t l = 0; l < work.layers.size(); ++l)
      if (np.key().rfind(work.layers[l].name + ".", 0) == 0 &&
          (best < 0 || work.layers[l].name.size() > work.layers[best].name.size()))
        best = static_cast<int>(l);
    ASSERT_GE(best, 0) << np.key();
    layer.push_back(best);
  }
  const double threshold = mb * 1048576 * static_cast<double>(p_total) / static_cast<double>(d);
  std::vector<std::vector<int>> groups(1);
  double total = 0;
  for (int t = static_cast<int>(p_size.size()) - 1; t >= 0; --t) {
    if (!groups.back().empty() && total + 4.0 * p_size[t] > threshold) groups.emplace_back(), total = 0;
    groups.back().push_back(t);
    total += 4.0 * p_size[t];
  }
  ASSERT_GE(groups.size(), 4u);

  const EngineRun run = run_gpt(128, "algorithm={name: acpsgd, rank: 4, bucket_mb: 0.05}");
  // Steps 0 and 2 send P; on two nodes a ring all-reduce moves 8 bytes an element in all.
  for (size_t b = 0; b < groups.size(); ++b) {
    int64_t elements = 0;
    double ready = 0;
    for (int t : groups[b]) elements += p_size[t], ready = std::max(ready, 0.05 * shares.backward_done(layer[t]));
    uint64_t sent = 0;
    double first_send = 1e9;
    for (const auto& m : run.record.messages) {
      if (m.kind != "p." + std::to_string(b)) continue;
      sent += m.bytes;
      first_send = std::min(first_send, m.t_send);  // step 0's: step 2's leave later
    }
    EXPECT_EQ(sent, 2u * 8 * static_cast<uint64_t>(elements)) << "bucket " << b;
    EXPECT_GE(first_send, ready - 1e-9) << "bucket " << b;
    if (b == 0) EXPECT_NEAR(first_send, ready, 1e-8);  // the last block's tensors: the first ready
  }
  for (const auto& m : run.record.messages)
    EXPECT_TRUE(m.kind.rfind("p.", 0) != 0 || std::stoul(m.kind.substr(2)) < groups.size()) << m.kind;
}

}  // namespace
}  // namespace testbed
