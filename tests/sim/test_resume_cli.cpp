// Checkpoint and resume through the command line: runs killed with SIGKILL (at random moments and
// halfway through a checkpoint write) resume to the same HDF5 data; a checkpoint of another
// scenario, or a damaged one, is refused and nothing is changed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/cli_child.h"
#include "tests/support/resume_cases.h"

namespace testbed {
namespace resume_tests {
namespace fs = std::filesystem;

class ResumeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("testbed_resume_cli_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "s.yaml") << kBase;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `testbed run s.yaml -o OUT ARGS...` for 200 steps, started now; `env` as "KEY=value".
  pid_t start(const std::string& out, const std::vector<std::string>& args, const std::string& env = "") {
    std::vector<std::string> all = {"run",   (dir_ / "s.yaml").string(), "-q", "-o", out, "--set", "workload.steps=200",
                                    "--set", "workload.eval_every=20"};
    all.insert(all.end(), args.begin(), args.end());
    const std::string log = (dir_ / "log.txt").string();
    cli_child::Options options{"", log, log, {}};
    if (!env.empty()) options.env.push_back(env);
    return cli_child::start(all, options);
  }
  int run(const std::string& out, const std::vector<std::string>& args, const std::string& env = "") {
    return cli_child::finish(start(out, args, env));
  }
  std::string log() {
    std::ifstream in(dir_ / "log.txt");
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  // h5diff's exit status over the groups the issue names: 0 when all are equal.
  int h5diff(const fs::path& a, const fs::path& b) {
    int worst = 0;
    for (const char* group : {"/train", "/comm", "/eval", "/replicas"}) {
      const std::string command = "h5diff -q " + a.string() + " " + b.string() + " " + group + " > /dev/null 2>&1";
      worst = std::max(worst, WEXITSTATUS(std::system(command.c_str())));
    }
    return worst;
  }
  fs::path dir_;
};

// SIGKILL halfway through the second checkpoint's write, then SIGKILL at seeded random moments
// of the resumed runs, until one completes: the file equals the uninterrupted run's.
TEST_F(ResumeCli, SigkilledRunsResumeToTheSameData) {
  for (const auto& algorithm :
       {std::vector<std::string>{"--set", "algorithm={name: ddp}"},
        std::vector<std::string>{"--set", "algorithm={name: gossip}", "--set", "network.transport=udp", "--set",
                                 "topology.link.loss=0.02"}}) {
    SCOPED_TRACE(algorithm[1]);
    const std::string whole = (dir_ / "whole.h5").string(), cut = (dir_ / "cut.h5").string();
    ASSERT_EQ(run(whole, algorithm), 0) << log();
    auto args = algorithm;
    args.insert(args.end(), {"--set", "output.resume_every=15"});
    EXPECT_EQ(run(cut, args, "TESTBED_KILL_IN_CHECKPOINT=2"), 128 + SIGKILL) << log();
    ASSERT_TRUE(fs::exists(cut + ".resume/step-00000015.ckpt"));
    ASSERT_TRUE(fs::exists(cut + ".resume/step-00000030.ckpt.tmp"));  // the torn write, ignored

    args.push_back("--resume");
    std::mt19937 rng(7);
    int code = -1, attempts = 0;
    for (; code != 0 && attempts < 12; ++attempts) {
      const pid_t pid = start(cut, args);
      // The first attempts are cut early, the later ones run long enough to finish.
      std::this_thread::sleep_for(std::chrono::milliseconds(100 + 500 * attempts + rng() % 700));
      kill(pid, SIGKILL);
      code = cli_child::finish(pid);
      ASSERT_TRUE(code == 0 || code == 128 + SIGKILL) << log();
    }
    ASSERT_EQ(code, 0) << "never completed in " << attempts << " attempts\n" << log();
    EXPECT_GE(attempts, 2) << "no attempt was killed: the test proved nothing";
    EXPECT_EQ(h5diff(whole, cut), 0) << "the resumed file's data differ from the uninterrupted run's";
    EXPECT_FALSE(fs::exists(cut + ".resume")) << "a completed run keeps no checkpoints";
    // --resume on the completed run changes nothing.
    const auto written = fs::last_write_time(cut);
    EXPECT_EQ(run(cut, args), 0);
    EXPECT_NE(log().find("completed earlier: nothing to resume"), std::string::npos);
    EXPECT_EQ(fs::last_write_time(cut), written);
  }
}

// The other algorithms of the issue, each SIGKILLed halfway through writing its second
// checkpoint (the torn write left beside the intact first one), then resumed: the file equals
// the uninterrupted run's. Each cut falls where something is half done (kCases' comment).
TEST_F(ResumeCli, EveryAlgorithmKilledInACheckpointWriteResumesToTheSameData) {
  for (const Case& c : kCases) {
    const std::string name = c.name;
    if (name == "ddp" || name == "gossip_udp_loss" || name == "gpt_dropout") continue;  // above, and in process
    SCOPED_TRACE(name);
    std::vector<std::string> args = {"--set", "workload.steps=40", "--set", "workload.eval_every=10"};
    for (const auto& set : c.sets) args.insert(args.end(), {"--set", set});
    const std::string whole = (dir_ / (name + "_whole.h5")).string(), cut = (dir_ / (name + "_cut.h5")).string();
    ASSERT_EQ(run(whole, args), 0) << log();
    args.insert(args.end(), {"--set", "output.resume_every=" + std::to_string(c.every)});
    EXPECT_EQ(run(cut, args, "TESTBED_KILL_IN_CHECKPOINT=2"), 128 + SIGKILL) << log();
    const std::string first = cut + ".resume/step-" + std::string(8 - std::to_string(c.every).size(), '0') +
                              std::to_string(c.every) + ".ckpt";
    ASSERT_TRUE(fs::exists(first)) << first;
    args.push_back("--resume");
    ASSERT_EQ(run(cut, args), 0) << log();
    EXPECT_NE(log().find("resuming from step " + std::to_string(c.every)), std::string::npos) << log();
    EXPECT_EQ(h5diff(whole, cut), 0) << "the resumed file's data differ from the uninterrupted run's";
  }
}

// Another scenario's checkpoint, a damaged one, or a missing output file: exit 2 and the file
// and checkpoint are left exactly as they were; the intact checkpoint then resumes.
TEST_F(ResumeCli, RefusesAnotherScenarioOrADamagedCheckpoint) {
  const std::string out = (dir_ / "r.h5").string();
  const std::vector<std::string> every = {"--set", "output.resume_every=20"};
  EXPECT_EQ(run(out, every, "TESTBED_KILL_IN_CHECKPOINT=3"), 128 + SIGKILL);
  const fs::path checkpoint = out + ".resume/step-00000040.ckpt";
  ASSERT_TRUE(fs::exists(checkpoint)) << log();
  auto read = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const std::string h5 = read(out), good = read(checkpoint);

  auto refused = [&](const std::vector<std::string>& extra, const std::string& expected) {
    auto args = every;
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("--resume");
    fs::remove(dir_ / "log.txt");
    EXPECT_EQ(run(out, args), 2) << log();
    EXPECT_NE(log().find(expected), std::string::npos) << log();
    EXPECT_EQ(log().find("terminate"), std::string::npos) << log();
    EXPECT_EQ(read(out), h5) << "the output file changed";
  };
  refused({"--set", "optimizer.lr=0.002"}, "the checkpoint was made by another scenario");
  std::string damaged = good;
  damaged[damaged.size() / 2] ^= 1;
  std::ofstream(checkpoint, std::ios::binary | std::ios::trunc) << damaged;
  refused({}, "corrupt checkpoint (checksum mismatch)");
  std::ofstream(checkpoint, std::ios::binary | std::ios::trunc) << good.substr(0, good.size() / 3);
  refused({}, "truncated checkpoint");
  EXPECT_EQ(read(checkpoint), good.substr(0, good.size() / 3)) << "the checkpoint changed";

  std::ofstream(checkpoint, std::ios::binary | std::ios::trunc) << good;
  auto args = every;
  args.push_back("--resume");
  EXPECT_EQ(run(out, args), 0) << log();
  EXPECT_NE(log().find("resuming from step 40"), std::string::npos) << log();
}

}  // namespace resume_tests
}  // namespace testbed
