// Checkpoint and resume in process: a run cut after a checkpoint and resumed gives the same bits
// as one that ran through, for every algorithm family the issue names; checkpoint files read
// back exactly and damaged ones are refused. Killed processes: test_resume_cli.cpp.
#include <gtest/gtest.h>
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
#include "sim/core/engine/engine.h"
#include "sim/core/engine/op_schedule.h"
#include "sim/output/resume_file.h"
#include "tests/support/memo_compare.h"
#include "tests/support/resume_cases.h"

namespace testbed {
namespace resume_tests {
namespace fs = std::filesystem;

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
  ASSERT_EQ(whole.summary.status, testbed::RunStatus::Completed) << whole.summary.error;

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
    ASSERT_EQ(first.status, testbed::RunStatus::Failed);
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
    for (const auto& replica : engine.replicas())
      resumed.parameters.push_back(replica->parameters().contiguous().clone());
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
  s[0].push_back({0.1 + 0.2,
                  0.1 / 3,
                  {{0, "gradient", 1234, 4, 0, {}},
                   {2, "sparse", 7, 0.5, 1, {0, 3}, 5},
                   {0, "eva.a.1", 9, 4, 0, {}, -1, -1, 3},
                   {4, "kfac.direction.0", 12, 4, 0, {1, 0}, -1, -1, -1, true}}});
  s[0].push_back({1.0 / 3.0, 0, {}});
  s[1].push_back({2.5e-7, 0, {{1, "pseudo_gradient/2", 99, 2, 1000000, {1}}}, {{1.0 / 7, {{0, "q", 12, 4, 0, {}}}}}});
  const OpSchedule back = decode_schedule(encode_schedule(s));
  ASSERT_EQ(back.size(), 2u);
  ASSERT_EQ(back[0].size(), 2u);
  EXPECT_TRUE(same(back[0][0].compute_time, 0.1 + 0.2));  // not 0.3: every bit is kept
  EXPECT_TRUE(same(back[0][1].compute_time, 1.0 / 3.0));
  EXPECT_TRUE(same(back[0][0].extra_time, 0.1 / 3));
  ASSERT_EQ(back[0][0].ops.size(), 4u);
  EXPECT_TRUE(back[0][0].ops[3].pipelined);  // K-FAC's NCCL broadcasts
  EXPECT_FALSE(back[0][0].ops[2].pipelined);
  EXPECT_EQ(back[0][0].ops[2].after_forward, 3);  // Eva's forward issue point
  EXPECT_EQ(back[0][0].ops[1].after_forward, -1);
  EXPECT_EQ(back[0][0].ops[1].tag, "sparse");
  EXPECT_EQ(back[0][0].ops[1].elements, 7);
  EXPECT_EQ(back[0][0].ops[1].bytes_per_element, 0.5);
  EXPECT_EQ(back[0][0].ops[1].delay, 1);
  EXPECT_EQ(back[0][0].ops[1].nodes, (std::vector<int>{0, 3}));
  EXPECT_EQ(back[0][0].ops[1].after_gradient, 5);
  EXPECT_EQ(back[0][0].ops[0].after_gradient, -1);
  EXPECT_EQ(back[1][0].ops[0].tag, "pseudo_gradient/2");
  EXPECT_EQ(back[1][0].ops[0].delay, 1000000);
  EXPECT_TRUE(same(back[1][0].compute_time, 2.5e-7));
  ASSERT_EQ(back[1][0].rounds.size(), 1u);
  EXPECT_TRUE(same(back[1][0].rounds[0].extra_time, 1.0 / 7));
  EXPECT_EQ(back[1][0].rounds[0].ops[0].tag, "q");
  EXPECT_EQ(back[0][0].rounds.size(), 0u);
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

}  // namespace resume_tests
}  // namespace testbed
