// Checkpoint and resume: a run cut after a checkpoint and resumed gives the same bits as one
// that ran through, for every algorithm family the issue names; killed processes (SIGKILL at
// random moments and halfway through a checkpoint write) resume to the same HDF5 data; a
// checkpoint of another scenario, or a damaged one, is refused and nothing is changed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "sim/config/input_error.h"
#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/engine.h"
#include "sim/core/op_schedule.h"
#include "sim/output/resume_file.h"
#include "tests/memo_compare.h"

namespace testbed {
namespace resume_tests {
namespace fs = std::filesystem;

// 4 nodes of a small MLP on a 1 ms ring, 40 steps, at unequal speeds: where an algorithm lets
// nodes drift apart (gossip, delayed or overlapped ops, FedAvg's unpicked nodes), fast nodes
// are steps ahead at a checkpoint, with ops to issue, ops in flight, rows and eval snapshots
// half filled.
const char* kBase = R"(name: resume
seed: 3
nodes: 4
threads: 1
topology: {kind: ring, link: {bandwidth: 100Mbps, latency: 1ms}}
workload: {model: mlp, dataset: synthetic, synthetic: {inputs: 32, hidden: 32, outputs: 4, train_samples: 2048, test_samples: 256},
           batch_size: 16, steps: 40, eval_every: 10}
optimizer: {name: adamw, lr: 1.0e-3, weight_decay: 0.01}
compute: {model: fixed, step_time: 0.01, speeds: [1, 0.5, 1, 0.8]}
)";

struct Case {
  const char* name;
  std::vector<std::string> sets;
  int every;  // output.resume_every
  int cut;    // the checkpoint the run is cut after
};

// Each cut falls where something is half done: DiLoCo mid-period, Streaming DiLoCo with a
// fragment in flight (tau 1), SPARTA with the previous step's exchange in flight (delay 1),
// FedAvg mid-round with half the nodes picked, gossip over UDP that loses packets.
const std::vector<Case> kCases = {
    {"ddp", {"algorithm={name: ddp}"}, 7, 14},
    {"diloco", {"algorithm={name: diloco, H: 4}"}, 6, 18},
    {"streaming_diloco", {"algorithm={name: streaming_diloco, H: 6, fragments: 3, tau: 1}"}, 5, 25},
    {"sparta_delay1", {"algorithm={name: sparta, p: 0.1, delay: 1}"}, 7, 21},
    {"demo", {"algorithm={name: demo}"}, 9, 9},
    {"gossip_udp_loss", {"algorithm={name: gossip}", "network.transport=udp", "topology.link.loss=0.02"}, 8, 16},
    {"fedavg_fraction", {"algorithm={name: fedavg, H: 3, fraction: 0.5}"}, 7, 28},
    // Dropout draws from LibTorch's global generator, which the checkpoint must carry too.
    {"gpt_dropout",
     {"algorithm={name: diloco, H: 4}", "workload.model=gpt", "workload.dataset=brown", "workload.steps=12",
      "workload.eval_every=6", "workload.eval_samples=32", "workload.batch_size=4",
      "workload.gpt={preset: tiny, layers: 1, width: 32, heads: 2, context: 32, dropout: 0.2}"},
     5, 5},
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class ResumeInProcess : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("testbed_resume_" + std::to_string(getpid()) + "_" + GetParam().name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_P(ResumeInProcess, CutAfterACheckpointAndResumedEqualsTheWholeRun) {
  const Case& c = GetParam();
  auto sets = c.sets;
  const Scenario plain = parse_scenario(kBase, "resume", sets);
  sets.push_back("output.resume_every=" + std::to_string(c.every));
  const Scenario checkpointed = parse_scenario(kBase, "resume", sets);
  const Dataset data = load_dataset(plain);

  const Outcome whole = run_outcome(plain, data);
  ASSERT_EQ(whole.summary.status, "completed") << whole.summary.error;

  // First part: stopped (as by a signal) at the first step start after checkpoint `cut`.
  const std::string checkpoints = (dir_ / "out.h5.resume").string();
  Outcome resumed;
  std::atomic<bool> stop{false};
  {
    EngineHooks hooks;
    hooks.checkpoint_dir = checkpoints;
    hooks.interrupted = &stop;
    hooks.progress = [&](const Progress& p) {
      if (p.step == c.cut) stop = true;
    };
    Engine engine(checkpointed, data, hooks);
    const RunSummary first = engine.run(resumed.record);
    ASSERT_EQ(first.status, "failed");
    ASSERT_LT(first.steps_completed, checkpointed.workload.steps);
  }
  const auto checkpoint = latest_checkpoint(checkpoints);
  ASSERT_TRUE(checkpoint.has_value());
  ASSERT_EQ(checkpoint->step, c.cut);
  // As a resumed file is cut back to the checkpoint's rows.
  resumed.record.truncate(checkpoint->mark);

  // Second part: a new engine (as a new process would build it) continues from the checkpoint.
  {
    EngineHooks hooks;
    hooks.checkpoint_dir = checkpoints;
    hooks.resume = &*checkpoint;
    Engine engine(checkpointed, data, hooks);
    resumed.summary = engine.run(resumed.record);
    for (const auto& replica : engine.replicas()) resumed.parameters.push_back(replica->parameters().contiguous().clone());
  }
  const std::string diff = differences(resumed, whole);
  EXPECT_TRUE(diff.empty()) << c.name << ": cut after step " << c.cut << " and resumed differs from the whole run:\n"
                            << diff;
  EXPECT_EQ(resumed.summary.final_eval_loss, whole.summary.final_eval_loss);
  // The resumed run kept checkpointing.
  const auto last = latest_checkpoint(checkpoints);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->step, (checkpointed.workload.steps - 1) / c.every * c.every);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ResumeInProcess, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(OpSchedule, ReadsBackToTheSameBits) {
  OpSchedule s(2);
  s[0].push_back({0.1 + 0.2, {{0, "gradient", 1234, 4, 0, {}}, {2, "sparse", 7, 0.5, 1, {0, 3}}}});
  s[0].push_back({1.0 / 3.0, {}});
  s[1].push_back({2.5e-7, {{1, "pseudo_gradient/2", 99, 2, 1000000, {1}}}});
  const OpSchedule back = decode_schedule(encode_schedule(s));
  ASSERT_EQ(back.size(), 2u);
  ASSERT_EQ(back[0].size(), 2u);
  EXPECT_TRUE(same(back[0][0].compute_time, 0.1 + 0.2));  // not 0.3: every bit is kept
  EXPECT_TRUE(same(back[0][1].compute_time, 1.0 / 3.0));
  ASSERT_EQ(back[0][0].ops.size(), 2u);
  EXPECT_EQ(back[0][0].ops[1].tag, "sparse");
  EXPECT_EQ(back[0][0].ops[1].elements, 7);
  EXPECT_EQ(back[0][0].ops[1].bytes_per_element, 0.5);
  EXPECT_EQ(back[0][0].ops[1].delay, 1);
  EXPECT_EQ(back[0][0].ops[1].nodes, (std::vector<int>{0, 3}));
  EXPECT_EQ(back[1][0].ops[0].tag, "pseudo_gradient/2");
  EXPECT_EQ(back[1][0].ops[0].delay, 1000000);
  EXPECT_TRUE(same(back[1][0].compute_time, 2.5e-7));
}

// Checkpoint files: what is written reads back; one flipped byte, a cut, or another file type
// is refused naming the file, never read as a checkpoint.
TEST(ResumeFile, DamagedCheckpointsAreRefused) {
  const fs::path dir = fs::temp_directory_path() / ("testbed_resume_file_" + std::to_string(getpid()));
  fs::remove_all(dir);
  Checkpoint c;
  c.step = 12;
  c.fingerprint = "0123456789abcdef";
  c.mark = {12, 2, 345, 678};
  for (int i = 0; i < 5000; ++i) c.payload += static_cast<char>(i * 7);
  write_checkpoint(dir.string(), c);
  const fs::path file = dir / "step-00000012.ckpt";
  ASSERT_TRUE(fs::exists(file));
  auto back = latest_checkpoint(dir.string());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->step, 12);
  EXPECT_EQ(back->fingerprint, c.fingerprint);
  EXPECT_EQ(back->mark.messages, 345);
  EXPECT_EQ(back->mark.lost_bytes, 678u);
  EXPECT_EQ(back->payload, c.payload);

  // A newer checkpoint replaces the older one.
  c.step = 24;
  write_checkpoint(dir.string(), c);
  EXPECT_FALSE(fs::exists(file));
  const fs::path newer = dir / "step-00000024.ckpt";
  ASSERT_TRUE(fs::exists(newer));

  std::string bytes;
  {
    std::ifstream in(newer, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto refused_with = [&](const std::string& content) -> std::string {
    std::ofstream(newer, std::ios::binary | std::ios::trunc) << content;
    try {
      latest_checkpoint(dir.string());
    } catch (const InputError& e) {
      return e.what();
    }
    return "accepted";
  };
  std::string flipped = bytes;
  flipped[bytes.size() - 100] ^= 0x20;
  EXPECT_NE(refused_with(flipped).find("corrupt checkpoint (checksum mismatch)"), std::string::npos);
  const std::string cut = refused_with(bytes.substr(0, bytes.size() - 1000));
  EXPECT_NE(cut.find("truncated checkpoint (4000 of 5000 payload bytes)"), std::string::npos) << cut;
  EXPECT_NE(cut.find(newer.string()), std::string::npos) << cut;
  EXPECT_NE(refused_with("PK\x03\x04 not a checkpoint").find("not a testbed checkpoint"), std::string::npos);
  std::string other_step = bytes;
  other_step.replace(other_step.find("step 24"), 7, "step 25");  // the header is under the checksum too
  EXPECT_NE(refused_with(other_step).find("checksum mismatch"), std::string::npos);
  fs::remove_all(dir);
}

// ---- The command line: real processes, killed with SIGKILL. ----

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
    pid_t pid = fork();
    if (pid == 0) {
      if (!env.empty()) putenv(const_cast<char*>(env.c_str()));
      const std::string log = (dir_ / "log.txt").string();
      freopen(log.c_str(), "a", stdout);
      freopen(log.c_str(), "a", stderr);
      std::vector<std::string> all = {TESTBED_BINARY, "run", (dir_ / "s.yaml").string(), "-q", "-o", out, "--set",
                                      "workload.steps=200", "--set", "workload.eval_every=20"};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(TESTBED_BINARY, argv.data());
      _exit(127);
    }
    return pid;
  }
  int finish(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  }
  int run(const std::string& out, const std::vector<std::string>& args, const std::string& env = "") {
    return finish(start(out, args, env));
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
  for (const auto& algorithm : {std::vector<std::string>{"--set", "algorithm={name: ddp}"},
                                std::vector<std::string>{"--set", "algorithm={name: gossip}", "--set",
                                                         "network.transport=udp", "--set", "topology.link.loss=0.02"}}) {
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
      std::this_thread::sleep_for(std::chrono::milliseconds(1200 + 500 * attempts + rng() % 700));
      kill(pid, SIGKILL);
      code = finish(pid);
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
