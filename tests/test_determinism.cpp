// Whole runs through the CLI: same seed gives the same HDF5 data; killed or diverged runs say so.
#include <gtest/gtest.h>

#include <H5Cpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace {

namespace fs = std::filesystem;

class RunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("testbed_run_" + std::to_string(::getpid()) + "_" +
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

  int run(const std::string& args) {
    std::string cmd = std::string(TESTBED_BINARY) + " run " + (dir_ / "s.yaml").string() + " -q " + args +
                      " > " + (dir_ / "stdout").string() + " 2>&1";
    int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
  ASSERT_EQ(run("-o " + (dir_ / "a.h5").string()), 0);
  ASSERT_EQ(run("-o " + (dir_ / "b.h5").string()), 0);
  for (const char* group : {"/train", "/comm", "/eval", "/replicas"}) {
    EXPECT_EQ(h5diff(dir_ / "a.h5", dir_ / "b.h5", group), 0) << group;
  }
  // The check can fail: another seed changes the data.
  ASSERT_EQ(run("-o " + (dir_ / "c.h5").string() + " --set seed=8"), 0);
  EXPECT_EQ(h5diff(dir_ / "a.h5", dir_ / "c.h5", "/train"), 1);
  EXPECT_EQ(attribute(dir_ / "a.h5", "status"), "completed");
}

TEST_F(RunTest, DivergedRunExitsThreeAndSaysSo) {
  auto out = dir_ / "d.h5";
  EXPECT_EQ(run("-o " + out.string() + " --set optimizer.name=sgd --set optimizer.lr=1000 --set workload.steps=40"), 3);
  EXPECT_EQ(attribute(out, "status"), "diverged");
}

TEST_F(RunTest, KilledRunLeavesReadableFile) {
  auto out = dir_ / "k.h5";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::string scenario = (dir_ / "s.yaml").string();
    execl(TESTBED_BINARY, TESTBED_BINARY, "run", scenario.c_str(), "-q", "-o", out.c_str(), "--set",
          "workload.steps=100000", "--set", "workload.eval_every=5", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until training has started and an eval has been flushed.
  for (int i = 0; i < 600 && !fs::exists(out); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
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

}  // namespace
