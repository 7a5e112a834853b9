// Replica groups in a projection (docs/replica_groups.md): the bytes each parallelism sends inside
// its groups and the wrapped algorithm across them, worked out by hand from the ring collectives'
// totals (a ring all-reduce of n elements over p ranks sends 2 (p - 1) n elements in all, a
// reduce-scatter or an all-gather (p - 1) n); who talks to whom; the sharded update's time.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/engine/engine.h"
#include "tests/support/engine_run.h"

namespace testbed {
namespace replica_groups_test {
namespace {

const Dataset& dataset(const Scenario& s) {
  static std::map<std::string, std::unique_ptr<Dataset>> cache;
  auto& slot = cache[s.workload.dataset];
  if (!slot) slot = std::make_unique<Dataset>(load_dataset(s));
  return *slot;
}

struct Outcome {
  MemoryRecorder record;
  RunSummary summary;
};

Outcome project(const std::string& yaml, const std::string& backend = "analytical") {
  const Scenario s = parse_scenario("name: groups\nthreads: 1\nnetwork: {backend: " + backend + "}\n" +
                                        "collective: {library: none}\n" + yaml,  // times worked by hand at line rate
                                    "groups.yaml");
  Outcome o;
  Engine engine(s, dataset(s));
  o.summary = engine.run(o.record);
  EXPECT_EQ(o.summary.status, testbed::RunStatus::Completed) << o.summary.error;
  return o;
}

uint64_t step_bytes(const Outcome& o, size_t step) {
  uint64_t total = 0;
  for (uint64_t b : o.record.train_rows.at(step).bytes) total += b;
  return total;
}

// 12 GPUs, 2 a host, in 3 ddp groups of 4, the MLP in fp32 for 4 steps under `algorithm` across
// the groups; and the bytes of its three parts, worked out with the first test below: the
// groups' all-reduces of a step, one outer sync (4 rings of 3 carrying slices that add up to P),
// the groups' gathers of it.
Outcome project_ddp_groups_of_4(const std::string& algorithm) {
  return project(
      "nodes: 12\ntopology: {kind: gpu_hosts, gpus_per_host: 2, link: {bandwidth: 10Gbps, latency: 1ms}}\n"
      "workload: {model: mlp, batch_size: 32, steps: 4, train: false}\n"
      "algorithm: " +
      algorithm +
      "\nreplica_group: {gpus: 4, parallelism: ddp}\n"
      "compute: {model: flops, device: a100}\n");
}
constexpr uint64_t kDdpGroupsInside = 3 * 2 * 3 * kMlpParameters * 4, kDdpGroupsAcross = 2 * 2 * kMlpParameters * 4,
                   kDdpGroupsGather = 3 * 3 * 4 * 58787 * 4;

// DDP inside groups of 4 GPUs that span two hosts of 2, DiLoCo (H 2) across the 3 groups, the
// MLP in fp32. Every step each group all-reduces the gradient (2 (4 - 1) P elements); after
// step 1 the outer all-reduce runs as 4 rings of 3 GPUs, member r of each group carrying slice r,
// the slices together P (2 (3 - 1) P elements); then each group all-gathers the slices, every GPU
// needing the whole result ((4 - 1) x 4 slices of 58 787, P / 4 padded). Slips caught: the
// outer op sent whole by every member (4x the bytes), slices that do not add up to P, the
// gather left out, a group's collective over the wrong GPUs, an outer ring mixing members of
// different ranks.
TEST(ReplicaGroups, DdpInsideDilocoAcrossByHand) {
  const Outcome o = project_ddp_groups_of_4("{name: diloco, H: 2}");
  const uint64_t inside = kDdpGroupsInside, across = kDdpGroupsAcross, gather = kDdpGroupsGather;
  ASSERT_EQ(o.record.train_rows.size(), 4u);
  EXPECT_EQ(step_bytes(o, 0), inside);
  EXPECT_EQ(step_bytes(o, 1), inside + across + gather);
  EXPECT_EQ(step_bytes(o, 2), inside);
  EXPECT_EQ(step_bytes(o, 3), inside + across + gather);
  for (uint64_t b : o.record.train_rows.at(1).bytes) EXPECT_GT(b, 0u);
  int inside_messages = 0, across_messages = 0;
  for (const MessageRecord& m : o.record.messages) {
    ASSERT_GE(m.src, 0);
    if (m.kind.rfind("group.", 0) == 0) {
      ++inside_messages;
      EXPECT_EQ(m.src / 4, m.dst / 4) << m.kind;
      EXPECT_EQ(m.kind.substr(m.kind.rfind("/g") + 2), std::to_string(m.src / 4)) << m.kind;
    } else {
      ++across_messages;
      EXPECT_EQ(m.src % 4, m.dst % 4) << m.kind;
      EXPECT_NE(m.src / 4, m.dst / 4) << m.kind;
      EXPECT_EQ(m.kind.substr(m.kind.rfind("/s") + 2), std::to_string(m.src % 4)) << m.kind;
    }
  }
  // Ring all-reduces: 2 (p - 1) p messages each. Inside: 3 groups, a bucket (the MLP's 0.9 MB
  // fill the first bucket) a step, and a ring all-gather ((p - 1) p) after each sync; across: 4
  // rings of 3, twice.
  EXPECT_EQ(inside_messages, 4 * 3 * 2 * 3 * 4 + 2 * 3 * 3 * 4);
  EXPECT_EQ(across_messages, 2 * 4 * 2 * 2 * 3);
}

// The same groups under Streaming DiLoCo with one fragment, fp32, its sync overlapping the next
// step (tau 1): the outer all-reduce leaves after steps 1 and 3, and each group gathers its
// result when it is due, a step later (step 2), or at the last step (3) for the sync issued
// there. Slips caught: the gather taken at the issuing step (step 1 would carry it, step 2
// not), a round's delayed op refused by the engine, the last sync's gather dropped.
TEST(ReplicaGroups, DelayedOpsAcrossAreGatheredWhenDue) {
  const Outcome o = project_ddp_groups_of_4("{name: streaming_diloco, H: 2, fragments: 1, tau: 1, outer_dtype: fp32}");
  const uint64_t inside = kDdpGroupsInside, across = kDdpGroupsAcross, gather = kDdpGroupsGather;
  ASSERT_EQ(o.record.train_rows.size(), 4u);
  EXPECT_EQ(step_bytes(o, 0), inside);
  EXPECT_EQ(step_bytes(o, 1), inside + across);
  EXPECT_EQ(step_bytes(o, 2), inside + gather);
  EXPECT_EQ(step_bytes(o, 3), inside + across + gather);
}

// ZeRO-2 inside groups of 4 in bf16: each bucket reduce-scattered padded to whole slices (235 146
// elements to 235 148), then the updated slices all-gathered, 2 bytes an element; DDP across the
// 2 groups all-reduces its own fp32 buckets, slice by slice. Slips caught: the padding dropped,
// the parameters' dtype ignored (4 bytes), the all-gather left out, the across op's format
// taken from the group's.
TEST(ReplicaGroups, Zero2InsideDdpAcrossByHand) {
  const Outcome o = project(
      "nodes: 8\ntopology: {kind: gpu_hosts, gpus_per_host: 4, link: {bandwidth: 10Gbps, latency: 1ms}}\n"
      "workload: {model: mlp, batch_size: 32, steps: 3, train: false}\n"
      "algorithm: {name: ddp}\nreplica_group: {gpus: 4, parallelism: zero2}\n"
      "compute: {model: flops, device: a100, dtype: bf16}\n");
  const uint64_t padded = 235148;
  ASSERT_EQ(padded % 4, 0u);
  ASSERT_EQ(padded - kMlpParameters, 2u);
  const uint64_t inside = 2 * (3 * padded + 3 * padded) * 2, across = 2 * kMlpParameters * 4;
  for (size_t step = 0; step < 3; ++step) EXPECT_EQ(step_bytes(o, step), inside + across) << step;
}

// Sharded optimizer state: each GPU updates a quarter of the parameters. On the flat roofline
// (compute.mfu, memory passes at compute.memory_bandwidth) AdamW's update moves 32 bytes a
// parameter (reads p g m v, writes p m v, zeroes g), so a ZeRO step is 3/4 of P x 32 bytes
// shorter than a DDP group's. Slip caught: the update charged for the whole replica.
TEST(ReplicaGroups, ShardedUpdateTakesASliceOfTheTime) {
  auto compute_time = [](const std::string& parallelism) {
    const Outcome o = project(
        "nodes: 4\ntopology: {kind: gpu_hosts, gpus_per_host: 4}\n"
        "workload: {model: mlp, batch_size: 32, steps: 1, train: false}\n"
        "algorithm: {name: diloco, H: 10}\nreplica_group: {gpus: 4, parallelism: " +
        parallelism +
        "}\n"
        "compute: {model: flops, device: a100, mfu: 0.5, memory_bandwidth: 1TB/s, launch_latency: 0}\n");
    return o.record.train_rows.at(0).compute_time.at(0);
  };
  const double ddp = compute_time("ddp");
  EXPECT_NEAR(ddp - compute_time("zero1"), 0.75 * kMlpParameters * 32 / 1e12, 1e-12);
  EXPECT_DOUBLE_EQ(compute_time("zero1"), compute_time("zero2"));
}

// FSDP inside groups of 4 in bf16, the MLP's three layers its units ("fc*"), DDP across the 2
// groups. Each unit is all-gathered before its forward and again before its backward, and its
// gradient reduce-scattered: 3 (4 - 1) x its padded elements (fc1 200 960 and fc2 32 896 divide
// by 4; fc3 1 290 pads to 1 292) a group a step, 2 bytes each. The rows are alike: a step's
// forward all-gathers are issued by the step before (the last step's, for a forward that never
// runs, are its own). Slips caught: the backward all-gather left out, the padding taken over the
// whole model instead of each unit (235 146 pads to 235 148 either way, but fc3's 2 elements
// count three times), the parameters' dtype ignored.
TEST(ReplicaGroups, FsdpGathersEachUnitTwiceByHand) {
  const Outcome o = project(
      "nodes: 8\ntopology: {kind: gpu_hosts, gpus_per_host: 4, link: {bandwidth: 10Gbps, latency: 1ms}}\n"
      "workload: {model: mlp, batch_size: 32, steps: 3, train: false}\n"
      "algorithm: {name: ddp}\nreplica_group: {gpus: 4, parallelism: fsdp, unit: 'fc*'}\n"
      "compute: {model: flops, device: a100, dtype: bf16}\n");
  const uint64_t units = 200960 + 32896 + 1292;
  const uint64_t inside = 2 * 3 * 3 * units * 2, across = 2 * kMlpParameters * 4;
  for (size_t step = 0; step < 3; ++step) EXPECT_EQ(step_bytes(o, step), inside + across) << step;
  std::map<std::string, int> kinds;
  for (const MessageRecord& m : o.record.messages) ++kinds[m.kind.substr(0, m.kind.rfind('/'))];
  // Ring collectives of 4: 3 x 4 messages each, 2 groups, 3 steps.
  for (const char* unit : {"0", "1", "2"}) {
    EXPECT_EQ(kinds[std::string("fsdp.all_gather.") + unit], 3 * 4 * 2 * 3) << unit;
    EXPECT_EQ(kinds[std::string("fsdp.all_gather_bwd.") + unit], 3 * 4 * 2 * 3) << unit;
    EXPECT_EQ(kinds[std::string("fsdp.reduce_scatter.") + unit], 3 * 4 * 2 * 3) << unit;
  }
}

// The root (what no unit holds: here fc2 and fc3, with "fc1*" the only unit) keeps its
// parameters from forward to backward, as PyTorch FSDP keeps the root's: one all-gather and one
// reduce-scatter a step, against the unit's two and one. Slip caught: the root gathered again
// for backward (3 x 34 188 x 2 more bytes a group).
TEST(ReplicaGroups, FsdpRootIsGatheredOnce) {
  const Outcome o = project(
      "nodes: 4\ntopology: {kind: gpu_hosts, gpus_per_host: 4, link: {bandwidth: 10Gbps, latency: 1ms}}\n"
      "workload: {model: mlp, batch_size: 32, steps: 2, train: false}\n"
      "algorithm: {name: diloco, H: 10}\nreplica_group: {gpus: 4, parallelism: fsdp, unit: 'fc1*'}\n"
      "compute: {model: flops, device: a100, dtype: bf16}\n");
  const uint64_t fc1 = 200960, root = 32896 + 1290 + 2;
  for (size_t step = 0; step < 2; ++step) EXPECT_EQ(step_bytes(o, step), (3 * 3 * fc1 + 2 * 3 * root) * 2) << step;
}

// One FSDP step's timeline, on GPU links of 1 Gb/s so slow that communication sets the step.
// The order GPU 0 sends in during step 1, as FSDP's hooks issue the collectives (worked out by
// hand from FULL_SHARD with BACKWARD_PRE): the forward's all-gathers unit by unit, then, as
// backward starts, the last unit's all-gather and the prefetch of the one before it; the last
// unit's reduce-scatter as its backward ends, then the prefetch of unit 0, then the
// reduce-scatters of units 1 and 0. And the step lasts at least the GPU's bytes at the link's
// rate (1 058 166 bytes: (4 - 1) / 4 x 3 x 235 148 x 2), and at most that with the flow backend's
// costs of its 27 messages (52 header bytes a packet of 8 948, one 9 000-byte packet forwarded
// by the host's switch and two 1 us links each) and the step's compute: one stream, never idle.
// Slips caught: a prefetch issued after the reduce-scatter before it, the forward's all-gathers
// issued all at once (they would interleave), a collective twice.
TEST(ReplicaGroups, FsdpStepTimelineByHand) {
  const Outcome o = project(
      "nodes: 8\ntopology: {kind: gpu_hosts, gpus_per_host: 4, interconnect: custom, gpu_link: {bandwidth: 1Gbps},\n"
      "  link: {bandwidth: 10Gbps, latency: 1ms}}\n"
      "workload: {model: mlp, batch_size: 32, steps: 3, train: false}\n"
      "algorithm: {name: diloco, H: 100}\nreplica_group: {gpus: 4, parallelism: fsdp, unit: 'fc*'}\n"
      "compute: {model: flops, device: a100, dtype: bf16}\n",
      "flow");
  const double start = o.record.train_rows.at(0).time.at(0), end = o.record.train_rows.at(1).time.at(0);
  std::vector<std::string> order;
  for (const MessageRecord& m : o.record.messages) {
    if (m.src != 0 || m.t_send < start || m.t_send >= end) continue;
    const std::string kind = m.kind.substr(0, m.kind.rfind('/'));
    if (order.empty() || order.back() != kind) order.push_back(kind);
  }
  const std::vector<std::string> expected = {
      "fsdp.all_gather.0",     "fsdp.all_gather.1",     "fsdp.all_gather.2",  // the forward
      "fsdp.all_gather_bwd.2", "fsdp.all_gather_bwd.1", "fsdp.reduce_scatter.2",
      "fsdp.all_gather_bwd.0", "fsdp.reduce_scatter.1", "fsdp.reduce_scatter.0"};
  EXPECT_EQ(order, expected);
  const double bytes = 3.0 / 4 * 3 * 235148 * 2, at_link_rate = bytes * 8 / 1e9;
  const double compute = o.record.train_rows.at(1).compute_time.at(0);
  const double per_message = 9000.0 * 8 / 1e9 + 2e-6;
  EXPECT_GE(end - start, at_link_rate);
  EXPECT_LE(end - start, at_link_rate * 9000 / 8948 + 27 * per_message + compute);
}

}  // namespace
}  // namespace replica_groups_test
}  // namespace testbed
