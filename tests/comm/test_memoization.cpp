// Memoized network phases: runs with network.memoize on and off are bit-identical (in memory,
// and once through the binary with h5diff), replays happen where phases repeat exactly, and
// never where a condition differs.
#include <gtest/gtest.h>

#include <H5Cpp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "comm/memo_policy.h"
#include "comm/plans/collectives.h"
#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "tests/support/memo_compare.h"

namespace testbed {
namespace {

namespace fs = std::filesystem;

// Four nodes, a 50 ms step: the network goes quiet between all-reduces. The synthetic MLP
// with hidden 6 has 2*6*32 + 12 + 2*36 + 6 + 60 + 10 = 544 parameters, 136 per rank: equal
// ring chunks, so every rank finishes each all-reduce at the same tick and phases repeat.
constexpr const char* kLockstep = R"(name: memo
seed: 3
nodes: 4
threads: 1
topology: {kind: ring, link: {bandwidth: 100Mbps, latency: 5ms}}
workload: {model: mlp, dataset: synthetic, synthetic: {hidden: 6, train_samples: 2000, test_samples: 200},
           batch_size: 16, steps: 20, eval_every: 10}
compute: {model: fixed, step_time: 50ms}
)";

// Buckets that leave during backward: the MLP 784-800-400-8 (951 608 parameters) splits into
// three buckets at bucket_mb 0.0005 (PyTorch's first bucket of 1 MiB closes on the 320 000
// weights of the second layer, then one tensor a bucket), each a multiple of 4 elements, so
// ring chunks are equal. On 1 Gbps links the round trip stays far below min_rto.
constexpr const char* kBuckets = R"(name: memo_buckets
seed: 3
nodes: 4
threads: 1
topology: {kind: ring, link: {bandwidth: 1Gbps, latency: 5ms}}
workload: {model: mlp, dataset: synthetic, synthetic: {inputs: 784, hidden: 400, outputs: 8, train_samples: 2000,
           test_samples: 200}, batch_size: 16, steps: 20, eval_every: 10}
compute: {model: fixed, step_time: 50ms}
algorithm: {bucket_mb: 0.0005}
)";

// Runs the scenario with memoization on and off, in this process; both must complete and agree
// bit for bit (tests/support/memo_compare.h). Returns how many steps' phases the memoized run replayed.
// `sets` are --set arguments, "key=value" each.
int64_t compare(const std::vector<std::string>& sets = {}, const char* yaml = kLockstep) {
  std::vector<std::string> on = sets, off = sets;
  // DDP all-reduces once after compute unless a test says otherwise: the step is then one
  // collective, the simplest phase.
  const bool other =
      std::any_of(sets.begin(), sets.end(), [](const std::string& s) { return s.rfind("algorithm.", 0) == 0; });
  if (!other) on.push_back("algorithm.overlap=false"), off.push_back("algorithm.overlap=false");
  on.push_back("network.memoize=true");
  off.push_back("network.memoize=false");
  const Scenario memo_on = parse_scenario(yaml, "memo", on);
  const Scenario memo_off = parse_scenario(yaml, "memo", off);
  const Dataset data = load_dataset(memo_on);
  const Outcome a = run_outcome(memo_on, data);
  const Outcome b = run_outcome(memo_off, data);
  std::string label;
  for (const auto& set : sets) label += " --set " + set;
  EXPECT_EQ(a.summary.status, testbed::RunStatus::Completed) << label << ": " << a.summary.error;
  EXPECT_EQ(b.summary.status, testbed::RunStatus::Completed) << label << ": " << b.summary.error;
  EXPECT_EQ(differences(a, b), "") << "memoize on and off differ with" << label;
  EXPECT_EQ(b.summary.phases_replayed, 0);
  return a.summary.phases_replayed;
}

// Through the binary once: the files themselves, h5diff'ed.
class MemoizationFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("testbed_memo_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "s.yaml") << kLockstep << "algorithm: {name: ddp, overlap: false}\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  static int64_t summary(const fs::path& file, const std::string& name) {
    H5::H5File f(file.string(), H5F_ACC_RDONLY);
    auto attr = f.openGroup("/summary").openAttribute(name);
    int64_t value = 0;
    attr.read(H5::PredType::NATIVE_INT64, &value);
    return value;
  }

  fs::path dir_;
};

TEST_F(MemoizationFiles, OnAndOffWriteTheSameResults) {
  for (const char* memo : {"true", "false"}) {
    std::string cmd = std::string(TESTBED_BINARY) + " run " + (dir_ / "s.yaml").string() + " -q -o " +
                      (dir_ / (std::string(memo) + ".h5")).string() + " --set network.memoize=" + memo + " > " +
                      (dir_ / "stdout").string() + " 2>&1";
    const int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  }
  for (const char* object : {"/train", "/comm", "/eval", "/replicas"}) {
    const std::string cmd = std::string("h5diff -q ") + (dir_ / "true.h5").string() + " " +
                            (dir_ / "false.h5").string() + " " + object + " " + object;
    const int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << object << " differs";
  }
  EXPECT_EQ(summary(dir_ / "false.h5", "phases_replayed"), 0);
  EXPECT_GE(summary(dir_ / "true.h5", "phases_replayed"), 15);
}

TEST(Memoization, LockstepDdpReplaysAlmostEveryAllReduceAndChangesNothing) {
  // The first all-reduce opens the connections and grows cwnd; from the second or third on
  // the state repeats (cwnd stops growing once it no longer limits: ns3_tcp.h).
  EXPECT_GE(compare(), 15);
}

// A 2 ms step: each all-reduce starts while the previous one's last ACKs are still 5 ms from
// their senders. The held network lists them in its state, and a replay leaves them where they
// are, standing for the same ACKs one step later (comm/phase_memo.h): steps replay all the
// same. Slip caught: a replay that leaves the held network where it was instead of shifting it
// to the replayed phase's end (it then no longer stands for the next step's start: 13 replays).
TEST(Memoization, AnAckTailIntoTheNextStepStillReplays) { EXPECT_GE(compare({"compute.step_time=2ms"}), 15); }

TEST(Memoization, SharedLinksOfAStarStayIdentical) { EXPECT_GT(compare({"topology.kind=star"}), 0); }

TEST(Memoization, IdleLongerThanTheRtoRestartsSlowStartInBothRuns) {
  // 0.5 s of compute > MinRto: every all-reduce starts from the initial window again.
  EXPECT_GT(compare({"compute.step_time=500ms"}), 0);
}

TEST(Memoization, RanksOutOfStepNeverReplayAndStayIdentical) {
  // Hidden 8: 2*8*32 + 16 + 2*64 + 8 + 80 + 10 = 754 parameters, chunks of 188 and 189:
  // ranks drift apart by nanoseconds every step, so no phase repeats exactly.
  EXPECT_EQ(compare({"workload.synthetic.hidden=8"}), 0);
}

// The rule memoization is decided by before step 0 (comm/memo_policy.h): a ring whose ranks send
// different sizes never repeats. By hand: 136 elements on 4 ranks are 4 chunks of 34; 10 are
// 3, 3, 2, 2; 3 on 2 ranks are 2 and 1; sliced chunks of 8 stay equal; an all-gather's blocks are
// equal by construction; halving-doubling sends to a new partner each step (no ring). Slips
// caught: counting each rank's messages instead of comparing their sizes (every ring's ranks
// send as many), a sliced ring read as uneven, a non-ring plan ruled out.
TEST(Memoization, TheRuleBeforeStepZeroSaysWhichRingsCannotRepeat) {
  EXPECT_TRUE(plan_can_repeat(ring_all_reduce(4, 136, 4)));
  EXPECT_FALSE(plan_can_repeat(ring_all_reduce(4, 10, 4)));
  EXPECT_FALSE(plan_can_repeat(ring_all_reduce(2, 3, 4)));
  EXPECT_TRUE(plan_can_repeat(ring_all_reduce(4, 32, 4, 2)));
  EXPECT_TRUE(plan_can_repeat(ring_all_gather(4, 5, 4)));
  EXPECT_TRUE(plan_can_repeat(halving_doubling_all_reduce(4, 10, 4)));
}

// Where the rule rules memoization out, the run keeps no phases and counts none: an uneven ring
// (hidden 8 below), a lossy network (its future is not a function of its held state). Where it
// does not, the run counts every step's phase, replayed or simulated.
TEST(Memoization, RuledOutBeforeStepZeroARunKeepsNoPhases) {
  auto counted = [](const std::vector<std::string>& sets) {
    std::vector<std::string> all = sets;
    all.push_back("algorithm.overlap=false");
    const Scenario s = parse_scenario(kLockstep, "memo", all);
    const RunSummary r = run_outcome(s, load_dataset(s)).summary;
    return r.phases_replayed + r.phases_simulated;
  };
  EXPECT_EQ(counted({"workload.synthetic.hidden=8"}), 0);
  EXPECT_EQ(counted({"topology.link.loss=0.001"}), 0);
  EXPECT_EQ(counted({}), 20);
}

TEST(Memoization, NeverOnALossyNetwork) { EXPECT_EQ(compare({"topology.link.loss=0.001"}), 0); }

TEST(Memoization, NeverWithStragglers) { EXPECT_EQ(compare({"compute.straggler_sigma=0.2"}), 0); }

TEST(Memoization, NeverWithDelayedAcksOrAnotherTcp) {
  EXPECT_EQ(compare({"network.delayed_ack=true"}), 0);
  EXPECT_EQ(compare({"network.tcp=cubic"}), 0);
}

// A step whose buckets leave during backward is one phase: its collectives, issued at their
// layers' ticks and queued one after another on the node's stream, repeat as one blocking
// all-reduce does.
TEST(Memoization, OverlappedBucketsReplayAsOneStep) {
  EXPECT_GE(compare({"algorithm.name=ddp", "algorithm.overlap=true"}), 15);  // one bucket
  EXPECT_GE(compare({"algorithm.name=ddp"}, kBuckets), 14);
  EXPECT_GE(compare({"algorithm.name=acpsgd", "algorithm.rank=2"}, kBuckets), 14);  // P and Q buckets
}

// The step's collectives share one recording: were a later bucket simulated apart (its own
// phase, or none), the replay would miss its messages or fail.
TEST(Memoization, EveryBucketOfAReplayedStepIsInItsPhase) {
  const Scenario s = parse_scenario(kBuckets, "memo", {"algorithm.name=ddp", "network.memoize=true"});
  const Dataset data = load_dataset(s);
  const Outcome o = run_outcome(s, data);
  ASSERT_EQ(o.summary.status, testbed::RunStatus::Completed) << o.summary.error;
  std::map<std::string, int> messages;
  for (const auto& m : o.record.messages) ++messages[m.kind];
  // Three buckets, each a ring all-reduce: 2 (4 - 1) messages a rank, 4 ranks, 20 steps.
  EXPECT_EQ(messages, (std::map<std::string, int>{{"gradient.0", 480}, {"gradient.1", 480}, {"gradient.2", 480}}));
  EXPECT_GE(o.summary.phases_replayed, 14);
  EXPECT_EQ(o.summary.phases_replayed + o.summary.phases_simulated, 20);  // a phase a step
}

TEST(Memoization, OtherAlgorithmsStayIdentical) {
  // DeAR's all-gathers are a round, decided once the reduce-scatters are applied: never a phase.
  EXPECT_EQ(compare({"algorithm.name=dear"}, kBuckets), 0);
  EXPECT_EQ(compare({"algorithm.name=powersgd"}), 0);  // rounds too
  compare({"algorithm.name=diloco", "algorithm.H=4"});
  compare({"algorithm.name=sparta", "algorithm.p=0.1", "algorithm.delay=1"});
  compare({"algorithm.name=local_sgd", "algorithm.H=3", "algorithm.fraction=0.5"});
  compare({"algorithm.name=demo", "algorithm.chunk=8", "algorithm.k=2"});
  // Other collective plans: more messages per phase, other dependencies (halving-doubling's
  // partners two hops apart share ring links, so its ranks need not stay in lockstep).
  compare({"collective.algorithm=halving_doubling"});
  EXPECT_GT(compare({"collective.slices=4"}), 0);
  // Neighbour exchanges as datagrams: never replayed (only a TCP network holds its clock).
  compare({"network.transport=udp", "algorithm.name=sparta", "algorithm.p=0.1", "algorithm.exchange=ring"});
}

}  // namespace
}  // namespace testbed
