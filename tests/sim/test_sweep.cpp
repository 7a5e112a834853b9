// Tests sweeps: grid/zip/repeats expansion, run names, strict errors, and real tiny sweeps
// through the testbed binary (manifest, resume, a diverged run, shards, bad values).
#include <H5Cpp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "sim/config/scenario_loader.h"
#include "sim/output/report.h"
#include "sim/tools/sweep.h"
#include "sim/tools/sweep_runner.h"
#include "tests/support/cli_child.h"

namespace fs = std::filesystem;
using namespace testbed;

namespace {

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The sweep tests' base scenario (tests/tiny_sweep_base.yaml, shared with tests/slurm_sweep.sh).
const std::string kTinyBase = slurp(fs::path(TESTBED_SOURCE_DIR) / "tests" / "tiny_sweep_base.yaml");

class Sweeps : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("testbed_sweep_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write("base.yaml", kTinyBase);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  Sweep parse(const std::string& text) { return parse_sweep(text, "sweep.yaml", dir_.string()); }

  struct Result {
    int code = -1;
    std::string out, err;
  };
  // `testbed ARGS` (split as the shell would) in this test's folder, run by the command line's
  // function in a forked child (tests/support/cli_child.h); the tests that signal or kill a sweep start
  // the binary itself.
  Result cli(const std::string& args) {
    const int code = cli_child::run(cli_child::shell_words(args),
                                    {dir_.string(), (dir_ / "stdout.txt").string(), (dir_ / "stderr.txt").string()});
    Result r{code, slurp(dir_ / "stdout.txt"), slurp(dir_ / "stderr.txt")};
    fs::remove(dir_ / "stdout.txt");
    fs::remove(dir_ / "stderr.txt");
    return r;
  }

  // The manifest as rows of column name -> value, keyed by run name.
  std::map<std::string, std::map<std::string, std::string>> manifest(const fs::path& out) {
    auto rows = parse_csv(slurp(out / "sweep.csv"));
    std::map<std::string, std::map<std::string, std::string>> table;
    for (size_t i = 1; i < rows.size(); ++i) {
      for (size_t c = 0; c < rows[0].size() && c < rows[i].size(); ++c) table[rows[i][0]][rows[0][c]] = rows[i][c];
    }
    return table;
  }

  fs::path dir_;
};

std::string value_of(const SweepRun& run, const std::string& key) {
  for (const auto& v : run.values) {
    if (v.key == key) return v.text;
  }
  return "<none>";
}

TEST_F(Sweeps, GridIsACartesianProductTimesZipTimesRepeats) {
  Sweep s = parse(R"(base: base.yaml
out: out
grid:
  topology.link.bandwidth: [10Mbps, 100Mbps, 1Gbps]
  nodes: [2, 4]
zip:
  optimizer.lr: [0.1, 0.01]
  workload.batch_size: [8, 16]
repeats: 2
)");
  ASSERT_EQ(s.runs.size(), 3u * 2 * 2 * 2);
  EXPECT_EQ(s.keys, (std::vector<std::string>{"topology.link.bandwidth", "nodes", "optimizer.lr", "workload.batch_size",
                                              "seed"}));
  // Expected order: nested loops in file order, repeats innermost.
  size_t i = 0;
  for (std::string bw : {"10Mbps", "100Mbps", "1Gbps"}) {
    for (std::string n : {"2", "4"}) {
      for (auto [lr, batch] : {std::pair{"0.1", "8"}, std::pair{"0.01", "16"}}) {
        for (std::string seed : {"0", "1"}) {
          const SweepRun& r = s.runs[i];
          EXPECT_EQ(r.index, static_cast<int>(i));
          EXPECT_EQ(value_of(r, "topology.link.bandwidth"), bw);
          EXPECT_EQ(value_of(r, "nodes"), n);
          EXPECT_EQ(value_of(r, "optimizer.lr"), lr);
          EXPECT_EQ(value_of(r, "workload.batch_size"), batch);
          EXPECT_EQ(value_of(r, "seed"), seed);
          ++i;
        }
      }
    }
  }
  EXPECT_EQ(s.base, (dir_ / "base.yaml").string());
  EXPECT_EQ(s.out, (dir_ / "out").string());
}

TEST_F(Sweeps, ZipVariesTogetherAndRepeatsStartAtTheBaseSeed) {
  write("seeded.yaml", kTinyBase + "seed: 7\n");
  Sweep s =
      parse("base: seeded.yaml\nout: o\nzip: {nodes: [2, 3, 4], topology.kind: [line, ring, star]}\nrepeats: 3\n");
  ASSERT_EQ(s.runs.size(), 9u);
  std::set<std::string> seen;
  for (const auto& r : s.runs) seen.insert(value_of(r, "nodes") + value_of(r, "topology.kind") + value_of(r, "seed"));
  std::set<std::string> expected;
  for (std::string pair : {"2line", "3ring", "4star"}) {
    for (std::string seed : {"7", "8", "9"}) expected.insert(pair + seed);
  }
  EXPECT_EQ(seen, expected);
}

TEST_F(Sweeps, NoGridIsOneRunAndASweptSeedReplacesTheRepeatSeed) {
  EXPECT_EQ(parse("base: base.yaml\nout: o\n").runs.size(), 1u);
  Sweep s = parse("base: base.yaml\nout: o\ngrid: {seed: [3, 5]}\n");
  ASSERT_EQ(s.runs.size(), 2u);
  EXPECT_EQ(s.runs[1].name, "seed=5");
  EXPECT_EQ(s.keys, std::vector<std::string>{"seed"});
}

TEST_F(Sweeps, NamesUseTheLastSegmentUnlessItIsAmbiguous) {
  Sweep s = parse(
      "base: base.yaml\nout: o\ngrid:\n  topology.link.bandwidth: [10Mbps]\n"
      "  topology.link.latency: [1ms]\n");
  EXPECT_EQ(s.runs[0].name, "bandwidth=10Mbps,latency=1ms,seed=0");
  std::vector<std::string> keys = {"topology.link.bandwidth", "a.b.bandwidth", "workload.shifts"};
  std::vector<SweptValue> values = {{"topology.link.bandwidth", "1Gbps", "", ""},
                                    {"a.b.bandwidth", "x/y z", "", ""},
                                    {"workload.shifts", "[noise, invert]", "", ""}};
  EXPECT_EQ(run_name(keys, values), "link.bandwidth=1Gbps,b.bandwidth=x_y_z,shifts=noise+invert");
}

// A map or list value reads as its contents, not as its YAML punctuation: {name: ddp} is
// ddp (it was _name__ddp_), other entries follow as key-value. Slip caught: the flow YAML
// text sanitised as before.
TEST_F(Sweeps, MapValuesReadAsTheirEntries) {
  std::vector<std::string> keys = {"algorithm", "compute.speeds"};
  EXPECT_EQ(run_name(keys, {{"algorithm", "{name: ddp}", "", ""}}), "algorithm=ddp");
  EXPECT_EQ(run_name(keys, {{"algorithm", "{H: 100, name: diloco, outer_lr: 0.7}", "", ""},
                            {"compute.speeds", "[1, 0.5]", "", ""}}),
            "algorithm=diloco+H-100+outer_lr-0.7,speeds=1+0.5");
}

TEST_F(Sweeps, ListValuesTravelAsFlowYaml) {
  Sweep s = parse("base: base.yaml\nout: o\ngrid:\n  compute.speeds: [[1, 0.5], [2, 1]]\n");
  ASSERT_EQ(s.runs.size(), 2u);
  EXPECT_EQ(value_of(s.runs[0], "compute.speeds"), "[1, 0.5]");
  EXPECT_NO_THROW(validate_sweep(s));
}

void expect_error(const std::function<void()>& f, const std::string& where, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "no error; expected " << where << ": ..." << message;
  } catch (const ScenarioError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.rfind(where + ": ", 0), 0u) << what;
    EXPECT_NE(what.find(message), std::string::npos) << what;
  }
}

TEST_F(Sweeps, StrictAboutTheSweepFile) {
  expect_error([&] { parse("base: base.yaml\nout: o\ngird: {nodes: [2]}\n"); }, "sweep.yaml:3:1",
               "unknown key 'gird' in a sweep file (did you mean 'grid'?)");
  expect_error([&] { parse("base: base.yaml\nout: o\nzip:\n  nodes: [2, 3]\n  seed: [1, 2, 3]\n"); }, "sweep.yaml:5:3",
               "zip lists must have equal lengths");
  expect_error([&] { parse("base: base.yaml\nout: o\nrepeats: two\n"); }, "sweep.yaml:3:10", "'repeats' is a whole");
  expect_error([&] { parse("base: base.yaml\nout: o\nrepeats: 0\n"); }, "sweep.yaml:3:10", "'repeats' is a whole");
  expect_error([&] { parse("base: base.yaml\nout: o\ngrid: {nodes: 4}\n"); }, "sweep.yaml:3:15", "must be a list");
  expect_error([&] { parse("base: base.yaml\nout: o\ngrid: {nodes: []}\n"); }, "sweep.yaml:3:15", "has no values");
  expect_error([&] { parse("base: base.yaml\nout: o\ngrid: {nodes: [2]}\nzip: {nodes: [3]}\n"); }, "sweep.yaml:4:7",
               "swept twice");
  expect_error([&] { parse("base: nowhere.yaml\nout: o\n"); }, "sweep.yaml:1:7", "not found");
  expect_error([&] { parse("out: o\n"); }, "sweep.yaml:1:1", "needs 'base'");
  expect_error([&] { parse("base: base.yaml\nout: o\ngrid: {seed: [1, 2]}\nrepeats: 2\n"); }, "sweep.yaml:4:10",
               "already sets");
}

TEST_F(Sweeps, ValidationBlamesTheSweptValueOrKey) {
  Sweep bad_value = parse("base: base.yaml\nout: o\ngrid:\n  topology.link.bandwidth: [10Mbps, fast]\n");
  expect_error([&] { validate_sweep(bad_value); }, "sweep.yaml:4:37", "cannot read 'fast' as a bandwidth");
  Sweep bad_key = parse("base: base.yaml\nout: o\ngrid:\n  topology.link.bandwith: [10Mbps]\n");
  expect_error([&] { validate_sweep(bad_key); }, "sweep.yaml:4:3", "unknown key 'bandwith'");
  Sweep out_of_range = parse("base: base.yaml\nout: o\nzip:\n  nodes: [2, 0]\n  seed: [1, 2]\n");
  expect_error([&] { validate_sweep(out_of_range); }, "sweep.yaml:4:14", "out of range");
}

TEST_F(Sweeps, ThreadsShareTheCoresUnlessSwept) {
  std::string shared = kTinyBase;
  shared.erase(shared.find("threads: 1\n"), 11);
  write("shared.yaml", shared);
  Sweep s = parse("base: shared.yaml\nout: o\n");
  SweepOptions o;
  o.cores = 8, o.jobs = 3;
  EXPECT_EQ(child_threads(s, o), 2);
  o.jobs = 16;
  EXPECT_EQ(child_threads(s, o), 1);
  EXPECT_EQ(run_overrides(s, s.runs[0], 2), (std::vector<std::string>{"seed=0", "threads=2"}));
  Sweep t = parse("base: shared.yaml\nout: o\ngrid: {threads: [1, 2]}\n");
  EXPECT_EQ(child_threads(t, o), 0);
  EXPECT_EQ(run_overrides(t, t.runs[1], 4), (std::vector<std::string>{"threads=2", "seed=0"}));
  // A base that says its threads (threads: 1) keeps them: the runner's share was forced on it
  // before.
  Sweep own = parse("base: base.yaml\nout: o\n");
  EXPECT_EQ(child_threads(own, o), 0);
  EXPECT_EQ(run_overrides(own, own.runs[0], 2), (std::vector<std::string>{"seed=0"}));
}

TEST_F(Sweeps, ShardsAreDisjointAndCover) {
  write("s.yaml", "base: base.yaml\nout: out\ngrid: {nodes: [2, 3, 4, 5, 6, 7, 8]}\n");
  auto names = [](const std::string& out) {
    std::set<std::string> found;
    std::stringstream lines(out);
    std::string line;
    std::getline(lines, line);  // the heading
    while (std::getline(lines, line)) found.insert(line.substr(0, line.find(' ')));
    return found;
  };
  Result all = cli("sweep s.yaml --dry-run");
  ASSERT_EQ(all.code, 0) << all.err;
  std::set<std::string> every = names(all.out);
  EXPECT_EQ(every.size(), 7u);
  std::set<std::string> covered;
  size_t sum = 0;
  for (int i = 0; i < 3; ++i) {
    Result r = cli("sweep s.yaml --dry-run --shard " + std::to_string(i) + "/3");
    ASSERT_EQ(r.code, 0) << r.err;
    auto part = names(r.out);
    sum += part.size();
    covered.insert(part.begin(), part.end());
  }
  EXPECT_EQ(sum, 7u);  // disjoint: no run in two shards
  EXPECT_EQ(covered, every);
  EXPECT_EQ(cli("sweep s.yaml --dry-run --shard 3/3").code, 2);
  EXPECT_EQ(cli("sweep s.yaml --dry-run --shard 1").code, 2);
  EXPECT_EQ(cli("sweep s.yaml --dry-run -j 0").code, 2);
  EXPECT_EQ(cli("sweep").code, 2);
  EXPECT_FALSE(fs::exists(dir_ / "out"));  // a dry run writes nothing
}

TEST_F(Sweeps, BadSweptValueExitsTwoBeforeCreatingAnything) {
  write("s.yaml", "base: base.yaml\nout: out\ngrid:\n  nodes: [2, 3]\n  topology.kind: [ring, wormhole]\n");
  Result r = cli("sweep s.yaml -j 2");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("s.yaml:5:25: error: 'wormhole' is not one of"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  write("k.yaml", "base: base.yaml\nout: out\ngrid:\n  workload.stepz: [2, 3]\n");
  r = cli("sweep k.yaml");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("k.yaml:4:3: error: unknown key 'stepz'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

// Bytes DDP sends in the tiny runs, from the ring all-reduce formula: each of p nodes sends
// 2(p-1)/p of the MLP's fp32 parameters per step: inputs -> 2 hidden -> hidden -> outputs
// with biases, 32 -> 128 -> 64 -> 10.
double ddp_bytes(int nodes, int steps) {
  double params = 32.0 * 128 + 128 + 128.0 * 64 + 64 + 64.0 * 10 + 10;
  return nodes * steps * 2.0 * (nodes - 1) / nodes * params * 4;
}

TEST_F(Sweeps, TinySweepWritesTheManifestAndResumes) {
  write("s.yaml",
        "base: base.yaml\nout: out\ngrid:\n  topology.link.bandwidth: [10Mbps, 1Gbps]\n"
        "zip: {nodes: [2, 3]}\n");
  Result r = cli("sweep s.yaml -j 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("[4/4]"), std::string::npos) << r.err;
  std::string header = slurp(dir_ / "out" / "sweep.csv").substr(0, slurp(dir_ / "out" / "sweep.csv").find('\n'));
  EXPECT_EQ(header,
            "run,topology.link.bandwidth,nodes,seed,status,exit_code,projected_time_s,total_bytes,"
            "final_eval_loss,final_accuracy,host_time_s,steps_completed");
  auto table = manifest(dir_ / "out");
  ASSERT_EQ(table.size(), 4u);
  for (std::string bw : {"10Mbps", "1Gbps"}) {
    for (int nodes : {2, 3}) {
      std::string name = "bandwidth=" + bw + ",nodes=" + std::to_string(nodes) + ",seed=0";
      ASSERT_TRUE(table.count(name)) << name;
      auto& row = table[name];
      EXPECT_EQ(row["status"], "completed");
      EXPECT_EQ(row["exit_code"], "0");
      EXPECT_EQ(row["topology.link.bandwidth"], bw);
      EXPECT_EQ(row["steps_completed"], "3");
      EXPECT_NEAR(std::stod(row["total_bytes"]), ddp_bytes(nodes, 3), 8.0 * nodes * 3) << name;
      EXPECT_GE(std::stod(row["final_accuracy"]), 0.0);
      EXPECT_TRUE(fs::exists(dir_ / "out" / (name + ".h5")));
    }
  }
  // 10 Mbps moves the same bytes slower than 1 Gbps.
  EXPECT_GT(std::stod(table["bandwidth=10Mbps,nodes=2,seed=0"]["projected_time_s"]),
            std::stod(table["bandwidth=1Gbps,nodes=2,seed=0"]["projected_time_s"]));

  // The same numbers as a run made by hand with the same overrides.
  Result direct = cli("run base.yaml --set topology.link.bandwidth=10Mbps --set nodes=3 -o direct.h5 -q");
  ASSERT_EQ(direct.code, 0) << direct.err;
  std::string bytes = table["bandwidth=10Mbps,nodes=3,seed=0"]["total_bytes"];
  EXPECT_NE(direct.out.find(" (" + bytes + " bytes)\n"), std::string::npos) << direct.out << bytes;

  auto stamp = fs::last_write_time(dir_ / "out" / "bandwidth=1Gbps,nodes=3,seed=0.h5");
  Result again = cli("sweep s.yaml -j 2");
  ASSERT_EQ(again.code, 0) << again.err;
  size_t skipped = 0;
  for (size_t at = again.err.find("skipped: completed earlier"); at != std::string::npos;
       at = again.err.find("skipped: completed earlier", at + 1)) {
    ++skipped;
  }
  EXPECT_EQ(skipped, 4u) << again.err;
  EXPECT_EQ(fs::last_write_time(dir_ / "out" / "bandwidth=1Gbps,nodes=3,seed=0.h5"), stamp);
  EXPECT_EQ(manifest(dir_ / "out").size(), 4u);

  Result report = cli("report out");
  ASSERT_EQ(report.code, 0) << report.err;
  // Aligned: the name column is as wide as the longest name, plus two spaces.
  EXPECT_NE(report.out.find("bandwidth=1Gbps,nodes=3,seed=0   1Gbps"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("4 of 4 runs completed"), std::string::npos) << report.out;
  Result one = cli("report 'out/bandwidth=10Mbps,nodes=2,seed=0.h5'");
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("status            completed"), std::string::npos) << one.out;
  // Fixed compute: 3 steps x 10 ms each on the mean node.
  EXPECT_NE(one.out.find("compute           0.030 s"), std::string::npos) << one.out;
  // Bytes in decimal units (here kB: 10^3 bytes, two decimals) and exact, as `testbed run` prints them.
  const double sent = std::stod(manifest(dir_ / "out")["bandwidth=10Mbps,nodes=2,seed=0"]["total_bytes"]);
  ASSERT_TRUE(sent >= 1e3 && sent < 1e6) << sent;
  char expected[96];
  std::snprintf(expected, sizeof expected, "total bytes       %.2f kB (%.0f bytes)\n", sent / 1e3, sent);
  EXPECT_NE(one.out.find(expected), std::string::npos) << one.out;
  EXPECT_EQ(cli("report nothing.h5").code, 2);
}

TEST_F(Sweeps, ADivergedRunIsRecordedAndTheOthersComplete) {
  // SGD at lr 1000 reaches a non-finite loss at step 3 of 5 (measured); 0.01 and 0.02 train.
  write("s.yaml", "base: base.yaml\nout: out\ngrid:\n  optimizer.lr: [0.01, 1000, 0.02]\n  workload.steps: [5]\n");
  Result r = cli("sweep s.yaml -j 2");
  EXPECT_EQ(r.code, 1) << r.err;
  auto table = manifest(dir_ / "out");
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table["lr=1000,steps=5,seed=0"]["status"], "diverged");
  EXPECT_EQ(table["lr=1000,steps=5,seed=0"]["exit_code"], "3");
  EXPECT_EQ(table["lr=0.01,steps=5,seed=0"]["status"], "completed");
  EXPECT_EQ(table["lr=0.02,steps=5,seed=0"]["status"], "completed");
}

// Overwrites a run file's root status, as a run killed mid-way ("running") or failed leaves it.
void set_status(const fs::path& h5, const std::string& status) {
  H5::H5File file(h5.string(), H5F_ACC_RDWR);
  file.removeAttr("status");
  H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
  file.createAttribute("status", type, H5::DataSpace(H5S_SCALAR)).write(type, status);
}

size_t count(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

TEST_F(Sweeps, ACutOrFailedRunIsRedoneOnRerun) {
  write("s.yaml", "base: base.yaml\nout: out\ngrid: {seed: [0, 1, 2]}\n");
  ASSERT_EQ(cli("sweep s.yaml -j 2").code, 0);
  set_status(dir_ / "out" / "seed=0.h5", "running");
  set_status(dir_ / "out" / "seed=2.h5", "failed");
  fs::remove(dir_ / "out" / "seed=1.log");
  EXPECT_EQ(manifest(dir_ / "out").size(), 3u);
  Result r = cli("sweep s.yaml");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(count(r.err, "skipped: completed earlier"), 1u) << r.err;
  EXPECT_NE(r.err.find("seed=1 skipped"), std::string::npos) << r.err;
  EXPECT_EQ(count(r.err, " completed (exit 0)"), 2u) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "seed=1.log"));  // the skipped run did not start
  for (const auto& [name, row] : manifest(dir_ / "out")) EXPECT_EQ(row.at("status"), "completed") << name;
}

// The child killed halfway through its second checkpoint (the fault injection reaches the
// child through the environment); the sweep started again continues it from its first
// checkpoint, and the result equals a sweep never interrupted.
TEST_F(Sweeps, ACutRunContinuesFromItsCheckpoint) {
  const std::string grid = "grid: {seed: [0]}\nzip: {workload.steps: [30], output.resume_every: [10]}\n";
  write("s.yaml", "base: base.yaml\nout: out\n" + grid);
  write("clean.yaml", "base: base.yaml\nout: clean\n" + grid);
  const std::string cd = "cd '" + dir_.string() + "' && ";
  std::system((cd + "TESTBED_KILL_IN_CHECKPOINT=2 '" + TESTBED_BINARY + "' sweep s.yaml > /dev/null 2>&1").c_str());
  for (const auto& [name, row] : manifest(dir_ / "out"))
    EXPECT_EQ(row.at("status"), "failed") << name;  // killed by SIGKILL
  const std::string run = "seed=0,steps=30,resume_every=10";
  ASSERT_TRUE(fs::exists(dir_ / "out" / (run + ".h5.resume") / "step-00000010.ckpt"));

  Result r = cli("sweep s.yaml");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(slurp(dir_ / "out" / (run + ".log")).find("resuming from step 10"), std::string::npos);
  ASSERT_EQ(cli("sweep clean.yaml").code, 0);
  for (const auto& [name, row] : manifest(dir_ / "out")) {
    EXPECT_EQ(row.at("status"), "completed") << name;
    for (const char* group : {"/train", "/comm", "/eval", "/replicas"}) {
      const std::string diff = "h5diff -q '" + (dir_ / "out" / (name + ".h5")).string() + "' '" +
                               (dir_ / "clean" / (name + ".h5")).string() + "' " + group + " > /dev/null 2>&1";
      EXPECT_EQ(std::system(diff.c_str()), 0) << name << " " << group << " differs from the uninterrupted sweep's";
    }
  }
}

TEST_F(Sweeps, ATerminatedSweepStopsItsChildAndLeavesTheRestPending) {
  // Long enough that the TERM arrives mid-run: once the child's file exists (it handles
  // signals from then on; a fixed sleep raced with a slow start on a loaded machine). The
  // TERM goes to the sweep alone, which must pass it on to its child.
  write("s.yaml", "base: base.yaml\nout: out\ngrid: {seed: [0, 1, 2]}\nzip: {workload.steps: [100000]}\n");
  std::string command =
      "cd '" + dir_.string() + "' && { '" + TESTBED_BINARY +
      "' sweep s.yaml 2>stderr.txt & for i in $(seq 600); do [ -e 'out/seed=0,steps=100000.h5' ] && break;"
      " sleep 0.1; done; sleep 1; kill -TERM $!; wait $!; }";
  int status = std::system(command.c_str());
  std::string err = slurp(dir_ / "stderr.txt");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status << err;
  EXPECT_NE(err.find("stopped; 2 runs not started"), std::string::npos) << err;
  auto table = manifest(dir_ / "out");
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table["seed=0,steps=100000"]["status"], "interrupted");
  EXPECT_EQ(table["seed=0,steps=100000"]["exit_code"], "1");
  EXPECT_EQ(table["seed=1,steps=100000"]["status"], "pending");
  EXPECT_EQ(table["seed=2,steps=100000"]["status"], "pending");
}

TEST_F(Sweeps, AShardRunsOnlyItsRuns) {
  write("s.yaml", "base: base.yaml\nout: out\ngrid: {seed: [0, 1, 2]}\n");
  Result r = cli("sweep s.yaml --shard 1/2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "seed=0.h5"));
  EXPECT_TRUE(fs::exists(dir_ / "out" / "seed=1.h5"));
  EXPECT_FALSE(fs::exists(dir_ / "out" / "seed=2.h5"));
  auto table = manifest(dir_ / "out");
  EXPECT_EQ(table["seed=0"]["status"], "pending");
  EXPECT_EQ(table["seed=1"]["status"], "completed");
}

// A Slurm array job: the script is written, nothing runs; then each task is run as Slurm would
// run it (bash with SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT set; #SBATCH lines are
// comments to bash). After the first task its shard is done and the other pending; after both,
// the manifest is a local sweep's.
TEST_F(Sweeps, ASlurmArrayRunsEveryShardAndTheManifestMerges) {
  write("s.yaml", "base: base.yaml\nout: out\ngrid: {seed: [0, 1, 2, 3]}\n");
  const std::string testbed = std::string("'") + TESTBED_BINARY + "'";
  const std::string cd = "cd '" + dir_.string() + "' && ";
  ASSERT_EQ(std::system((cd + testbed +
                         " sweep s.yaml --slurm --tasks 2 --partition debug --time 00:10:00 --cpus 2 "
                         "> slurm.txt 2>&1")
                            .c_str()),
            0)
      << slurp(dir_ / "slurm.txt");
  EXPECT_NE(slurp(dir_ / "slurm.txt").find("an array of 2 tasks over 4 runs"), std::string::npos);
  const std::string script = slurp(dir_ / "out" / "sweep.sbatch");
  for (const std::string& line : std::vector<std::string>{
           "#SBATCH --array=0-1\n", "#SBATCH --partition=debug\n", "#SBATCH --time=00:10:00\n",
           "#SBATCH --cpus-per-task=2\n", "#SBATCH --output=" + (dir_ / "out").string() + "/slurm/%A_%a.log\n",
           std::string(" sweep '") + (dir_ / "s.yaml").string() +
               "' --shard \"$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT\" -j 1\n"})
    EXPECT_NE(script.find(line), std::string::npos) << line << " not in\n" << script;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "seed=0.h5"));
  auto task = [&](int id) {
    return std::system((cd + "SLURM_ARRAY_TASK_ID=" + std::to_string(id) +
                        " SLURM_ARRAY_TASK_COUNT=2 bash out/sweep.sbatch " + "> task.txt 2>&1")
                           .c_str());
  };
  ASSERT_EQ(task(0), 0) << slurp(dir_ / "task.txt");
  Result r = cli("report out");
  EXPECT_NE(r.out.find("shard 0/2: 0 pending, 0 running, 2 done"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("shard 1/2: 2 pending, 0 running, 0 done"), std::string::npos) << r.out;
  ASSERT_EQ(task(1), 0) << slurp(dir_ / "task.txt");
  r = cli("report out");
  EXPECT_NE(r.out.find("shard 1/2: 0 pending, 0 running, 2 done"), std::string::npos) << r.out;
  // The same manifest as a local sweep, but for the host's times and the exit codes (the last
  // task's manifest knows its own runs' codes; the other shard's it reads from their files).
  write("local.yaml", "base: base.yaml\nout: local\ngrid: {seed: [0, 1, 2, 3]}\n");
  ASSERT_EQ(cli("sweep local.yaml -j 1").code, 0);  // as the tasks: the same threads a run
  auto slurm = manifest(dir_ / "out"), local = manifest(dir_ / "local");
  ASSERT_EQ(slurm.size(), 4u);
  for (const auto& [run, columns] : local) {
    for (const auto& [column, value] : columns) {
      if (column.find("host") != std::string::npos || column == "exit_code") continue;
      EXPECT_EQ(slurm[run][column], value) << run << " " << column;
    }
  }
}

}  // namespace
