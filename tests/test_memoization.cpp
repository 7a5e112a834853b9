// Memoized network phases: runs with network.memoize on and off are bit-identical (h5diff),
// replays happen where phases repeat exactly, and never where a condition differs.
#include <gtest/gtest.h>

#include <H5Cpp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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

class Memoization : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("testbed_memo_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream(dir_ / "s.yaml") << kLockstep;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the scenario with memoization on and off; both must complete and agree bit for bit.
  // Returns how many collectives the memoized run replayed.
  int64_t compare(const std::string& sets) {
    for (const char* memo : {"true", "false"}) {
      std::string cmd = std::string(TESTBED_BINARY) + " run " + (dir_ / "s.yaml").string() + " -q -o " +
                        (dir_ / (std::string(memo) + ".h5")).string() + " --set network.memoize=" + memo + " " +
                        sets + " > " + (dir_ / "stdout").string() + " 2>&1";
      const int status = std::system(cmd.c_str());
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
    }
    for (const char* object : {"/train", "/comm", "/eval", "/replicas"}) {
      const std::string cmd = std::string("h5diff -q ") + (dir_ / "true.h5").string() + " " +
                              (dir_ / "false.h5").string() + " " + object + " " + object;
      const int status = std::system(cmd.c_str());
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << object << " differs with " << sets;
    }
    EXPECT_EQ(summary(dir_ / "false.h5", "phases_replayed"), 0);
    return summary(dir_ / "true.h5", "phases_replayed");
  }

  static int64_t summary(const fs::path& file, const std::string& name) {
    H5::H5File f(file.string(), H5F_ACC_RDONLY);
    auto attr = f.openGroup("/summary").openAttribute(name);
    int64_t value = 0;
    attr.read(H5::PredType::NATIVE_INT64, &value);
    return value;
  }

  fs::path dir_;
};

TEST_F(Memoization, LockstepDdpReplaysAlmostEveryAllReduceAndChangesNothing) {
  // The first all-reduce opens the connections and grows cwnd; from the second or third on
  // the state repeats (cwnd stops growing once it no longer limits: ns3_tcp.h).
  EXPECT_GE(compare(""), 15);
}

TEST_F(Memoization, SharedLinksOfAStarStayIdentical) {
  EXPECT_GT(compare("--set topology.kind=star"), 0);
}

TEST_F(Memoization, IdleLongerThanTheRtoRestartsSlowStartInBothRuns) {
  // 0.5 s of compute > MinRto: every all-reduce starts from the initial window again.
  EXPECT_GT(compare("--set compute.step_time=0.5"), 0);
}

TEST_F(Memoization, RanksOutOfStepNeverReplayAndStayIdentical) {
  // Hidden 8: 2*8*32 + 16 + 2*64 + 8 + 80 + 10 = 754 parameters, chunks of 188 and 189:
  // ranks drift apart by nanoseconds every step, so no phase repeats exactly.
  EXPECT_EQ(compare("--set workload.synthetic.hidden=8"), 0);
}

TEST_F(Memoization, NeverOnALossyNetwork) {
  EXPECT_EQ(compare("--set topology.link.loss=0.001"), 0);
}

TEST_F(Memoization, NeverWithStragglers) {
  EXPECT_EQ(compare("--set compute.straggler_sigma=0.2"), 0);
}

TEST_F(Memoization, NeverWithDelayedAcksOrAnotherTcp) {
  EXPECT_EQ(compare("--set network.delayed_ack=true"), 0);
  EXPECT_EQ(compare("--set network.tcp=cubic"), 0);
}

TEST_F(Memoization, OtherAlgorithmsStayIdentical) {
  compare("--set algorithm.name=diloco --set algorithm.H=4");
  compare("--set algorithm.name=sparta --set algorithm.p=0.1 --set algorithm.delay=1");
  compare("--set algorithm.name=fedavg --set algorithm.H=3 --set algorithm.fraction=0.5");
  compare("--set algorithm.name=demo --set algorithm.chunk=8 --set algorithm.k=2");
  // Other collective plans: more messages per phase, other dependencies (halving-doubling's
  // partners two hops apart share ring links, so its ranks need not stay in lockstep).
  compare("--set collective.algorithm=halving_doubling");
  EXPECT_GT(compare("--set collective.slices=4"), 0);
  // Neighbour exchanges as datagrams: lossless, so memoization may replay them too.
  compare("--set network.transport=udp --set algorithm.name=sparta --set algorithm.p=0.1 --set algorithm.exchange=ring");
}

}  // namespace
