// Whole runs through the CLI: same seed gives the same HDF5 data; killed or diverged runs say so.
#include <gtest/gtest.h>

#include <H5Cpp.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/cli_child.h"

namespace {

using testbed::cli_child::Options;

namespace fs = std::filesystem;

class RunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("testbed_run_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream(dir_ / "s.yaml") << R"(name: det
seed: 7
nodes: 3
threads: 1
topology: {kind: ring, link: {bandwidth: 100Mbps, latency: 5ms}}
workload: {model: mlp, batch_size: 32, steps: 6, eval_every: 3, eval_samples: 1000}
compute: {model: flops, device: rtx4090}
)";
  }
  void TearDown() override { fs::remove_all(dir_); }

  int run(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"run", (dir_ / "s.yaml").string(), "-q"};
    all.insert(all.end(), args.begin(), args.end());
    const std::string log = (dir_ / "stdout").string();
    return testbed::cli_child::run(all, Options{"", log, log});
  }

  // Starts a long run (100000 steps, an eval every `eval_every`) writing `out`, and returns
  // once `out` exists (the run renames it into place after writing its header).
  pid_t start_long_run(const fs::path& out, int eval_every) {
    const pid_t pid = testbed::cli_child::start({"run", (dir_ / "s.yaml").string(), "-q", "-o", out.string(), "--set",
                                                 "workload.steps=100000", "--set",
                                                 "workload.eval_every=" + std::to_string(eval_every)});
    for (int i = 0; pid > 0 && i < 1500 && !fs::exists(out); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return pid;
  }
  static int h5diff(const fs::path& a, const fs::path& b, const std::string& object) {
    std::string cmd = "h5diff -q " + a.string() + " " + b.string() + " " + object + " " + object;
    int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  static std::string attribute(const fs::path& file, const std::string& name) {
    H5::H5File f(file.string(), H5F_ACC_RDONLY);
    auto attr = f.openAttribute(name);
    std::string value;
    attr.read(attr.getStrType(), value);
    return value;
  }

  fs::path dir_;
};

TEST_F(RunTest, SameSeedSameData) {
  ASSERT_EQ(run({"-o", (dir_ / "a.h5").string()}), 0);
  ASSERT_EQ(run({"-o", (dir_ / "b.h5").string()}), 0);
  for (const char* group : {"/train", "/comm", "/eval", "/replicas"}) {
    EXPECT_EQ(h5diff(dir_ / "a.h5", dir_ / "b.h5", group), 0) << group;
  }
  // The check can fail: another seed changes the data.
  ASSERT_EQ(run({"-o", (dir_ / "c.h5").string(), "--set", "seed=8"}), 0);
  EXPECT_EQ(h5diff(dir_ / "a.h5", dir_ / "c.h5", "/train"), 1);
  EXPECT_EQ(attribute(dir_ / "a.h5", "status"), "completed");
}

TEST_F(RunTest, DivergedRunExitsThreeAndSaysSo) {
  auto out = dir_ / "d.h5";
  EXPECT_EQ(run({"-o", out.string(), "--set", "optimizer.name=sgd", "--set", "optimizer.lr=1000", "--set",
                 "workload.steps=40"}),
            3);
  EXPECT_EQ(attribute(out, "status"), "diverged");
  {
    // The run's own summary says so too, in the report's words.
    std::ifstream log(dir_ / "stdout");
    std::string said((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_NE(said.find("final accuracy    n/a (diverged)\n"), std::string::npos) << said;
  }
  // The report says there is no accuracy rather than printing the file's placeholder.
  fs::remove(dir_ / "report");
  ASSERT_EQ(testbed::cli_child::run({"report", out.string()}, Options{"", (dir_ / "report").string(), ""}), 0);
  std::ifstream in(dir_ / "report");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("final accuracy    n/a (diverged)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("final eval loss   n/a (diverged)\n"), std::string::npos) << text;
}

// A run that fails before its first evaluation has no accuracy to report, and its bytes are
// what it issued, not what arrived: a 400 bit/s ring never delivers the first step's gradient
// (above the 131 bit/s below which validate refuses it: that bound is only what is certain).
// Slips caught: the summary printing its 0 defaults as an accuracy (the issue's "final accuracy
// 0.0000"), or total bytes without saying they were in flight.
TEST_F(RunTest, ARunThatNeverEvaluatedReportsNoAccuracy) {
  auto out = dir_ / "slow.h5";
  EXPECT_EQ(run({"-o", out.string(), "--set", "topology.link.bandwidth=400bps"}), 1);
  std::ifstream log(dir_ / "stdout");
  const std::string said((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(said.find("steps completed   0\n"), std::string::npos) << said;
  EXPECT_NE(said.find("final accuracy    n/a (no evaluation ran)\n"), std::string::npos) << said;
  EXPECT_EQ(said.find("final perplexity"), std::string::npos) << said;
  EXPECT_NE(said.find("(issued, some still in flight when it stopped)"), std::string::npos) << said;
  fs::remove(dir_ / "report");
  ASSERT_EQ(testbed::cli_child::run({"report", out.string()}, Options{"", (dir_ / "report").string(), ""}), 0);
  std::ifstream in(dir_ / "report");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("final accuracy    n/a (no evaluation ran)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("final eval loss   n/a (no evaluation ran)\n"), std::string::npos) << text;
}

TEST_F(RunTest, KilledRunLeavesReadableFile) {
  auto out = dir_ / "k.h5";
  pid_t pid = start_long_run(out, 5);
  ASSERT_GT(pid, 0);
  // Wait until training has started and an eval has been flushed.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_EQ(attribute(out, "status"), "failed");
  H5::H5File f(out.string(), H5F_ACC_RDONLY);
  hsize_t rows = 0;
  f.openDataSet("/train/loss").getSpace().getSimpleExtentDims(&rows);
  EXPECT_GT(rows, 0u);
}

// SIGKILL cannot be caught: at any moment, the file must still open (HDF5 read-only, no lock),
// say `running` (no final status), and hold whole rows; `testbed report` says where it was cut.
// Kill times spread from just after the file appears (before any flush) to mid-run.
TEST_F(RunTest, SigkilledRunLeavesReadableFile) {
  for (int delay_ms : {0, 400, 2500}) {
    SCOPED_TRACE("SIGKILL " + std::to_string(delay_ms) + " ms after the file appeared");
    auto out = dir_ / ("kill" + std::to_string(delay_ms) + ".h5");
    pid_t pid = start_long_run(out, 2);
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));
    H5::FileAccPropList access;
    H5Pset_file_locking(access.getId(), false, true);
    H5::H5File f(out.string(), H5F_ACC_RDONLY, H5::FileCreatPropList::DEFAULT, access);
    auto attr = f.openAttribute("status");
    std::string value;
    attr.read(attr.getStrType(), value);
    EXPECT_EQ(value, "running");
    hsize_t steps = 0, losses[2] = {0, 0};
    f.openDataSet("/train/step").getSpace().getSimpleExtentDims(&steps);
    f.openDataSet("/train/loss").getSpace().getSimpleExtentDims(losses);
    EXPECT_EQ(steps, losses[0]);  // whole rows: every column as long as the others
    std::vector<int64_t> step(steps);
    if (steps > 0) f.openDataSet("/train/step").read(step.data(), H5::PredType::NATIVE_INT64);
    for (hsize_t i = 0; i < steps; ++i) EXPECT_EQ(step[i], static_cast<int64_t>(i));
    f.close();
    fs::remove(dir_ / "report");
    ASSERT_EQ(testbed::cli_child::run({"report", out.string()}, Options{"", (dir_ / "report").string(), ""}), 0);
    std::ifstream in(dir_ / "report");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string expected = steps > 0 ? "cut at step " + std::to_string(step.back()) + " (no final status)"
                                           : "cut at step n/a (no final status)";
    EXPECT_NE(text.find(expected), std::string::npos) << text;
  }
}

// SIGTERM inside ns-3's event loop: a projection of GPT-2 124M with DDP over 16 nodes on a
// ring of 100 Mb/s sends 2 x 15/16 x 498 MB a node a step, about 1.7 M packets, minutes of host
// time before the first step ends. The signal comes 1.5 s after the file appears; the run must
// end within a few seconds, as failed, interrupted by a signal, with no step done. Slip caught:
// the signal only polled between steps (the run would go on for minutes).
TEST_F(RunTest, SignalEndsAStepOfNs3Promptly) {
  std::ofstream(dir_ / "long.yaml") << R"(name: long_ns3_step
nodes: 16
threads: 1
topology: {kind: ring, link: {bandwidth: 100Mbps, latency: 1ms}}
workload: {model: gpt, gpt: {preset: gpt2_124m}, dataset: brown, batch_size: 8, steps: 2, train: false}
algorithm: {name: ddp}
compute: {model: flops, device: a100, dtype: bf16}
)";
  const fs::path out = dir_ / "long.h5", err = dir_ / "long.err";
  const pid_t pid = testbed::cli_child::start({"run", (dir_ / "long.yaml").string(), "-q", "-o", out.string()},
                                              Options{"", "", err.string()});
  ASSERT_GT(pid, 0);
  for (int i = 0; i < 3000 && !fs::exists(out); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(out));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const auto sent = std::chrono::steady_clock::now();
  kill(pid, SIGTERM);
  int status = 0;
  double took = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    took = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
    if (took > 30) {  // the step goes on: no need to wait minutes for it
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL() << "still running 30 s after SIGTERM";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_LT(took, 10.0);
  std::printf("ended %.2f s after SIGTERM\n", took);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_EQ(attribute(out, "status"), "failed");
  EXPECT_EQ(attribute(out, "error"), "interrupted by a signal");
  H5::H5File f(out.string(), H5F_ACC_RDONLY);
  int64_t steps = -1;
  f.openGroup("/summary").openAttribute("steps_completed").read(H5::PredType::NATIVE_INT64, &steps);
  EXPECT_EQ(steps, 0) << "the first step finished: the test no longer shows a signal inside a step";

  // And it was said before the step ran: a ring all-reduce of 124 439 808 fp32 gradients over
  // 16 ranks sends 2 x 15 x 124 439 808 x 4 bytes in all, in packets of 8 948 bytes of payload:
  // 1.67e6 packets, about 2 minutes at 80 us.
  std::ifstream in(err);
  const std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const double packets = std::ceil(2.0 * 15 * 124439808 * 4 / 8948);
  char expected[64];
  std::snprintf(expected, sizeof expected, "step 0 sends about %.2f million packets of 9000 bytes on ns-3",
                packets / 1e6);
  EXPECT_NE(said.find(expected), std::string::npos) << expected << "\n" << said;
  EXPECT_NE(said.find("network.backend: flow"), std::string::npos) << said;
}

}  // namespace
