// Tests the testbed CLI on bad input: exit code 2, "file:line:col: " on stderr, no output file; validate and --help.
#include <gtest/gtest.h>

#include <H5Cpp.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/config/scenario_loader.h"
#include "sim/core/memory_estimate.h"
#include "sim/output/run_file.h"
#include "sim/tools/fatal_errors.h"
#include "sim/tools/progress.h"
#include "tests/support/cli_child.h"

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Result {
  int code = -1;
  std::string out, err;
};

// Runs the testbed binary with `args` inside a fresh temporary directory.
class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("testbed_cli_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path;
  }

  // `testbed ARGS` in this test's folder, with `args` split as the shell would (quote paths
  // yourself), `env` set ("KEY=value"), and at most `address_space_kib` of address space
  // (ulimit -v) when not 0.
  Result run(const std::string& args, const std::string& env = "", long address_space_kib = 0) {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    testbed::cli_child::Options options{dir_.string(), out.string(), err.string(), {}, address_space_kib};
    if (!env.empty()) options.env.push_back(env);
    Result r;
    r.code = testbed::cli_child::run(testbed::cli_child::shell_words(args), options);
    r.out = read_file(out);
    r.err = read_file(err);
    fs::remove(out);
    fs::remove(err);
    return r;
  }

  // `testbed run bad.yaml -o out.h5` fails with exit 2 at `line_col`, writing nothing.
  void expect_rejected(const std::string& yaml, const std::string& line_col, const std::string& message) {
    fs::path bad = write("bad.yaml", yaml);
    fs::path out = dir_ / "out.h5";
    Result r = run("run '" + bad.string() + "' -o '" + out.string() + "'");
    SCOPED_TRACE("yaml: " + yaml);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err.rfind(bad.string() + ":" + line_col + ": ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
    EXPECT_FALSE(fs::exists(dir_ / "results"));
  }

  fs::path dir_;
};

TEST_F(Cli, UnknownKey) { expect_rejected("nodes: 4\nnodez: 4\n", "2:1", "did you mean 'nodes'"); }

TEST_F(Cli, WrongType) { expect_rejected("nodes: four\n", "1:8", "expected an integer"); }

TEST_F(Cli, OutOfRange) { expect_rejected("topology:\n  link: {loss: 1.5}\n", "2:16", "out of range"); }

TEST_F(Cli, UnitThatDoesNotParse) {
  expect_rejected("topology:\n  link:\n    bandwidth: 100Mbs\n", "3:16", "cannot read '100Mbs'");
}

TEST_F(Cli, UnknownEnumValue) { expect_rejected("topology: {kind: rign}\n", "1:18", "did you mean 'ring'"); }

TEST_F(Cli, InvalidYaml) { expect_rejected("nodes: 4\nseed: [1, 2\n", "3:1", "invalid YAML"); }

TEST_F(Cli, LinkOverrideForMissingLink) {
  expect_rejected("topology:\n  links:\n    - {between: [0, 2]}\n", "3:7", "no link between 0 and 2");
}

TEST_F(Cli, MissingDataDir) {
  expect_rejected("workload:\n  data_dir: /nonexistent\n", "2:13", "scripts/install-deps.sh");
}

// A bandwidth trace that cannot be used is reported at its own file and line (the scenario's
// for a missing file), with exit 2 and no output.
TEST_F(Cli, BadBandwidthTraces) {
  struct Case {
    std::string csv;
    std::string line_col;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"time_s,bandwidth\n0,100Mbps\n1,fast\n", "3:3", "cannot read bandwidth 'fast'"},
      {"0,100Mbps\nsoon,50Mbps\n", "2:1", "cannot read time 'soon'"},
      {"0,100Mbps\n2,50Mbps\n2,20Mbps\n", "3:1", "is not after the previous row's 2 s"},
      {"0,100Mbps\n3,50Mbps\n1,20Mbps\n", "3:1", "is not after the previous row's 3 s"},
      {"", "1:1", "holds no rows"},
      {"time_s,bandwidth\n", "1:1", "holds no rows"},
      {"0,100Mbps,7\n", "1:1", "two fields"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE("csv: " + c.csv);
    const fs::path csv = write("trace.csv", c.csv);
    const fs::path scenario = write("s.yaml", "topology:\n  link: {trace: trace.csv}\n");
    Result r = run("run '" + scenario.string() + "' -o '" + (dir_ / "out.h5").string() + "'");
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err.rfind(csv.string() + ":" + c.line_col + ": ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "out.h5"));
  }
  expect_rejected("topology:\n  link: {trace: nowhere.csv}\n", "2:17", "not found");
  write("trace.csv", "0,100Mbps\n");
  expect_rejected(
      "topology:\n  links:\n    - {between: [0, 1], trace: trace.csv}\n"
      "network: {backend: flow}\n",
      "3:32", "the flow backend keeps bandwidth fixed");
}

TEST_F(Cli, BadBackgroundFlows) {
  expect_rejected("network:\n  background: [{from: 0, to: 7, stop: 5s}]\n", "2:30", "vertex 7 is not in the topology");
  expect_rejected("network:\n  background: [{from: 0, to: 1, start: 9s, stop: 5s}]\n", "2:50", "is not after start");
  expect_rejected("network:\n  backend: flow\n  background: [{from: 0, to: 1, stop: 5s}]\n", "3:15",
                  "no background traffic");
}

TEST_F(Cli, BadSetValueExits2WithoutOutput) {
  fs::path good = write("good.yaml", "nodes: 2\nworkload: {steps: 5}\n");
  Result r = run("run '" + good.string() + "' --set workload.steps=0 -o '" + (dir_ / "out.h5").string() + "'");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("--set workload.steps=0:1:16: ", 0), 0u) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out.h5"));
  EXPECT_FALSE(fs::exists(dir_ / "results"));
}

TEST_F(Cli, MissingScenarioFileExits2) {
  Result r = run("run missing.yaml -q");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("missing.yaml:1:1: ", 0), 0u) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "results"));
}

TEST_F(Cli, DirectoryAsScenarioExits2) {
  fs::create_directories(dir_ / "scen");
  Result r = run("run scen -q");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "results"));
}

TEST_F(Cli, ValidatePrintsYamlThatValidates) {
  fs::path good = write("good.yaml", "name: good\nnodes: 3\ntopology: {kind: line, link: {latency: 2ms}}\n");
  Result first = run("validate '" + good.string() + "' --set workload.steps=9");
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_NE(first.out.find("steps: 9"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("kind: line"), std::string::npos) << first.out;
  fs::path resolved = write("resolved.yaml", first.out);
  Result second = run("validate '" + resolved.string() + "'");
  EXPECT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(second.out, first.out);
  EXPECT_FALSE(fs::exists(dir_ / "results"));  // validate writes nothing
}

// In the units a scenario is written in, and what a sentinel stands for beside it.
TEST_F(Cli, ValidatePrintsHumanUnitsAndWhatDefaultsResolveTo) {
  fs::path good = write("good.yaml",
                        "topology: {link: {bandwidth: 100Gbps, latency: 5us}}\ncompute: {device: a100}\n"
                        "algorithm: {name: fedavg, deadline: 2s}\n");
  Result r = run("validate '" + good.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* line : {"    bandwidth: 100Gbps\n", "    latency: 5us\n", "  deadline: 2s\n", "  min_rto: 200ms\n",
                           "  server: -1  # -1: the host after the clients' (host 4)\n",
                           "  peak_flops: 0FLOPS  # 0: the preset's fp32 peak, 19.5TFLOPS\n",
                           "  memory_bandwidth: 0B/s  # 0: the preset's, 2.039TB/s\n",
                           "  eval_every: 10\n",  // a federated run evaluates every round unless told
                           "# vhl: none (VHL's virtual data: {virtual_samples: 200, weight: 1})\n",
                           "# launch_latency: unset: the preset's, 5us\n"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << r.out;
  EXPECT_EQ(r.out.find("e+"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("e-0"), std::string::npos) << r.out;
}

// validate prints the chosen library's figures beside the keys that leave them to the preset.
// Slip caught: the local transport's figures printed for the network's keys.
TEST_F(Cli, ValidatePrintsTheCollectiveLibrarysFigures) {
  fs::path good = write("nccl.yaml",
                        "nodes: 8\ntopology: {kind: gpu_hosts, gpus_per_host: 4, interconnect: pcie3}\n"
                        "compute: {device: rtx2080ti}\ncollective: {library: nccl, message_latency: 25us}\n");
  Result r = run("validate '" + good.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* line :
       {"  library: nccl\n", "# transport: unset: socket (links under 100 Gb/s: TCP)\n", "  message_latency: 25us\n",
        "# launch_latency: unset: nccl's, 3us\n", "# bandwidth_share: unset: nccl over socket's, 1\n",
        "# max_rate: unset: nccl over socket's, 14.2Gbps\n", "# local_transport: unset: shm (no peer-to-peer)\n",
        "# local_message_latency: unset: nccl over shm's, 2.34us\n",
        "# local_bandwidth_share: unset: nccl over shm's, 0.49\n"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << r.out;
  // Unset, the library is the device's, and the overlap slowdown the library's.
  Result unset = run("validate '" + write("unset.yaml", "nodes: 4\n").string() + "'");
  ASSERT_EQ(unset.code, 0) << unset.err;
  for (const char* line :
       {"# library: unset: nccl (PyTorch's backend for GPUs)\n", "# overlap_slowdown: unset: nccl's, 0.269\n",
        "# message_latency: unset: nccl over socket's, 20.41us\n"})
    EXPECT_NE(unset.out.find(line), std::string::npos) << line << unset.out;
}

// A quantity carries its unit: a bare number other than 0 is exit 2 at the key, with the two
// readings it most likely meant, in files and in --set; 0 stays bare. Slip caught: bare
// numbers read in the base unit again (`latency: 50` fifty seconds without a word).
TEST_F(Cli, BareQuantitiesAreRefused) {
  fs::path bare = write("bare.yaml", "topology:\n  link:\n    latency: 50\n");
  Result r = run("validate '" + bare.string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind(bare.string() + ":3:14: error: '50' has no unit: write 50ms or 50s", 0), 0u) << r.err;
  Result set = run("validate '" + write("ok.yaml", "nodes: 2\n").string() + "' --set topology.link.bandwidth=100");
  EXPECT_EQ(set.code, 2);
  EXPECT_NE(set.err.find("'100' has no unit: write 100Mbps or 100Gbps"), std::string::npos) << set.err;
  Result flops = run("validate '" + write("flops.yaml", "compute: {peak_flops: 312e12}\n").string() + "'");
  EXPECT_EQ(flops.code, 2);
  EXPECT_NE(flops.err.find("write 312e12GFLOPS or 312e12TFLOPS"), std::string::npos) << flops.err;
  Result queue = run("validate '" + write("queue.yaml", "network: {queue: 256000}\n").string() + "'");
  EXPECT_EQ(queue.code, 2);
  EXPECT_NE(queue.err.find("'256000' has no unit"), std::string::npos) << queue.err;
  EXPECT_EQ(run("validate '" + write("zero.yaml", "topology: {link: {latency: 0}}\n").string() + "'").code, 0);
}

// A value no network or device has is a warning at its key, with what it implies, and the run
// goes on.
TEST_F(Cli, ImplausibleValuesWarnWithTheirUnit) {
  fs::path odd = write("odd.yaml", "topology:\n  link:\n    latency: 50s\n    bandwidth: 500bps\n");
  Result r = run("validate '" + odd.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find(odd.string() + ":3:14: warning: a latency of 50s is longer than any network's"),
            std::string::npos)
      << r.err;
  // 9002 wire bytes of a 9000-byte packet at 500 bit/s: 144 s.
  EXPECT_NE(r.err.find(odd.string() + ":4:16: warning: a link of 500bps is slower than any network's: one 9000-byte "
                                      "packet takes 144s to cross it"),
            std::string::npos)
      << r.err;
  Result plain = run("validate '" + write("plain.yaml", "topology: {link: {latency: 50ms}}\n").string() + "'");
  EXPECT_EQ(plain.err.find("warning"), std::string::npos) << plain.err;
  // Clusters whose inside is slower than the WAN between them, by default only.
  fs::path clusters = write("clusters.yaml", "topology:\n  kind: hierarchical\n");
  Result slow = run("validate '" + clusters.string() + "'");
  ASSERT_EQ(slow.code, 0) << slow.err;
  EXPECT_NE(
      slow.err.find(clusters.string() + ":2:9: warning: the links inside each cluster take "
                                        "topology.link.bandwidth, 100Mbps by default, slower than the WAN (1Gbps)"),
      std::string::npos)
      << slow.err;
  Result given = run("validate '" + clusters.string() + "' --set topology.link.bandwidth=100Mbps");
  EXPECT_EQ(given.err.find("warning"), std::string::npos) << given.err;
}

// A link on which one packet of the MTU takes longer to leave than ns-3's TCP can wait for its
// ACK is refused on ns-3 over TCP, with the arithmetic. By hand: the handshake's RTT sample is
// at most the longest handshake ns-3 waits for, SYNs after 1, 2, 4, 8, 16 and 32 s: 63 s; the
// first timeout is at most 3 x 63 s + 1 ms = 189.001 s, then 60 s (capped) six times: 549.001 s
// before the connection is dropped. (9000 + 2) x 8 = 72 016 bits take 549.07 s at 131.16 bit/s
// (refused) and 545.58 s at 132 bit/s (a warning only). Slips caught: no 60 s cap (132 accepted
// as before, 131.16 too), one retransmission fewer (489 s: 132 refused), a resent SYN taken to
// void the RTT sample (a first timeout of 1 s, 123 s: 132 refused), the 2 bytes of the link's
// header left out (548.95 s: 131.16 accepted), the rule applied under UDP, the flow backend, with
// faults (15 resends: the bound is hours) or with a 1500-byte MTU (120 s at 100 bit/s).
TEST_F(Cli, ALinkTooSlowForTcpsRetransmissionLimitIsRefused) {
  const std::string base = write("slow.yaml", "nodes: 2\ntopology:\n  link: {bandwidth: 100bps}\n").string();
  Result slow = run("validate '" + base + "'");
  EXPECT_EQ(slow.code, 2);
  EXPECT_EQ(
      slow.err.rfind(base + ":3:21: error: at 100bps one 9000-byte packet takes 720s to cross the link ((9000 + 2) x 8 "
                            "bits), and ns-3's TCP drops a connection whose segment is unacknowledged after at most "
                            "549s (a first timeout of at most 189s, three times the longest handshake it waits for, "
                            "then doubling up to 60s, 6 retransmissions)",
                     0),
      0u)
      << slow.err;
  EXPECT_NE(slow.err.find("a smaller network.mtu, or the flow backend"), std::string::npos) << slow.err;
  EXPECT_EQ(run("validate '" + base + "' --set topology.link.bandwidth=131.16bps").code, 2);
  EXPECT_EQ(run("validate '" + base + "' --set topology.link.bandwidth=132bps").code, 0);
  EXPECT_EQ(run("validate '" + base + "' --set network.backend=flow").code, 0);
  EXPECT_EQ(run("validate '" + base + "' --set network.transport=udp --set algorithm.name=gossip").code, 0);
  EXPECT_EQ(run("validate '" + base + "' --set network.mtu=1500").code, 0);
  const std::string faults = write("faults.yaml",
                                   "nodes: 2\ntopology:\n  link: {bandwidth: 100bps}\n"
                                   "network:\n  faults: [{link: [0, 1], down: [30s, 45s]}]\n")
                                 .string();
  EXPECT_EQ(run("validate '" + faults + "'").code, 0) << run("validate '" + faults + "'").err;
  const std::string link =
      write("link.yaml", "nodes: 2\ntopology:\n  links: [{between: [0, 1], bandwidth: 50bps}]\n").string();
  Result one = run("validate '" + link + "'");
  EXPECT_EQ(one.code, 2);
  EXPECT_NE(one.err.find("at 50bps one 9000-byte packet takes 1440s"), std::string::npos) << one.err;
}

// validate checks a sweep's every run, and points at sweep --dry-run for the list.
TEST_F(Cli, ValidateChecksSweepFiles) {
  write("base.yaml", "workload: {steps: 10}\n");
  fs::path sweep = write("s.yaml", "base: base.yaml\nout: out\ngrid:\n  nodes: [2, 3]\n");
  Result r = run("validate '" + sweep.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("a sweep of 2 runs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sweep --dry-run"), std::string::npos) << r.out;
  fs::path bad = write("bad.yaml", "base: base.yaml\nout: out\ngrid:\n  nodes: [2, 0]\n");
  Result refused = run("validate '" + bad.string() + "'");
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_EQ(refused.err.rfind(bad.string() + ":4:14: ", 0), 0u) << refused.err;
}

TEST_F(Cli, ValidateRejectsLikeRun) {
  fs::path bad = write("bad.yaml", "nodes: 0\n");
  Result r = run("validate '" + bad.string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind(bad.string() + ":1:8: ", 0), 0u) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(Cli, UsageErrorsExit2) {
  for (const char* args : {"run", "run a.yaml --no-such-option", "frobnicate", "", "run a.yaml --set", "validate"}) {
    Result r = run(args);
    EXPECT_EQ(r.code, 2) << "testbed " << args << "\n" << r.err;
    EXPECT_FALSE(r.err.empty()) << "testbed " << args;
  }
}

TEST_F(Cli, FileWithoutScenarioExits2) {
  expect_rejected("# only a comment\n", "1:1", "the file holds no scenario");
  expect_rejected("", "1:1", "the file holds no scenario");
  expect_rejected("- a\n- b\n", "1:1", "a scenario is a map of keys");
}

TEST_F(Cli, NullValueExits2) { expect_rejected("nodes: ~\n", "1:1", "'nodes' has no value"); }

// Ten labels, two of them kept: under the category partition nodes 2 and 3 find no label of
// their own, which only the data can tell. run and validate both refuse before any output.
TEST_F(Cli, PartitionThatStarvesANodeExits2) {
  const std::string yaml = "nodes: 4\nworkload:\n  model: mlp\n  classes: [0, 1]\n  partition: category\n  steps: 2\n";
  expect_rejected(yaml, "5:14", "left node");
  fs::path bad = write("starve.yaml", yaml);
  Result r = run("validate '" + bad.string() + "'");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err.rfind(bad.string() + ":5:14: ", 0), 0u) << r.err;
  EXPECT_TRUE(r.out.empty());
}

// A run that cannot fit is refused before it starts: exit 2, the estimate and what the machine
// has, no output file. 20000 MLP replicas under AdamW need 87.6 GiB (+ 0.21 GiB of data, 5 x 4
// bytes x 235146 parameters each); under `ulimit -v` 4 GiB, 1500 (6.78 GiB) cannot fit either.
TEST_F(Cli, RunThatCannotFitExits2) {
  if (testbed::machine_memory().available_bytes > 260.0 * (1 << 30)) GTEST_SKIP() << "this machine could hold 269 GiB";
  fs::path scenario = write("big.yaml", "nodes: 20000\nworkload: {model: mlp, batch_size: 2, steps: 1}\n");
  fs::path out = dir_ / "out.h5";
  Result r = run("run '" + scenario.string() + "' -o '" + out.string() + "'");
  EXPECT_EQ(r.code, 2) << r.err;
  // 20000 x (6 x 4 x 235146 + 100e3) B = 106.98 GiB of replicas; 0.21 GiB of Fashion-MNIST;
  // a ring all-reduce of 2 x 19999 x 20000 messages at 205 B and (2 x 19999 - 1) x 20000
  // dependencies at 8 B = 158.69 GiB; ns-3: 20000 x (19 + 14 + 160) KB = 3.59 GiB.
  EXPECT_EQ(r.err.rfind(scenario.string() + ":1:8: error: the run needs about 269.47 GiB", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("20000 replicas x 6 vectors of 235146 parameters"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("collective plans of 799960000 messages: 158.69 GiB; network 3.59 GiB"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("available (/proc/meminfo MemAvailable)"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));

  Result limited = run("run '" + scenario.string() + "' --set nodes=1500 -o '" + out.string() + "'", "",
                       4194304);  // ulimit -v: 4 GiB of address space
  EXPECT_EQ(limited.code, 2) << limited.err;
  EXPECT_NE(limited.err.find("the run needs about 9.39 GiB"), std::string::npos) << limited.err;
  EXPECT_NE(limited.err.find("limited to 4.00 GiB (ulimit -v)"), std::string::npos) << limited.err;
  EXPECT_FALSE(fs::exists(out));
}

// ns-3 ends the process on a fatal error (it prints, then calls std::terminate): the user reads
// one sentence, the file says failed with that sentence and keeps its flushed rows, and no
// "terminate called" or backtrace appears. The error is ns-3's own NS_FATAL_ERROR, scheduled
// at 0.25 s of simulated time by the tests' fault injection.
TEST_F(Cli, Ns3FatalErrorEndsTheRunWithOneSentence) {
  write("s.yaml",
        "nodes: 2\nthreads: 1\nworkload: {model: mlp, dataset: synthetic, synthetic: {train_samples: 512, "
        "test_samples: 64}, batch_size: 8, steps: 200, eval_every: 100}\ncompute: {model: fixed, step_time: 10ms}\n");
  Result r = run("run s.yaml -q -o out.h5", "TESTBED_NS3_FATAL_AT=0.25");
  EXPECT_EQ(r.code, 1) << r.err;
  const std::string sentence = "ns-3 stopped the run: fault injected by TESTBED_NS3_FATAL_AT (ns3_network.cpp:";
  EXPECT_NE(r.err.find("testbed: error: " + sentence), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("terminate called"), std::string::npos) << r.err;
  const auto file = testbed::read_run_file((dir_ / "out.h5").string());
  ASSERT_TRUE(file.has_value()) << "the file does not open";
  EXPECT_EQ(file->status, "failed");
  EXPECT_EQ(file->error.rfind(sentence, 0), 0u) << file->error;
  // No eval (the file's own flush) comes before 0.25 s; the rows of the ~16 steps done by then
  // are on disk because the failure flushes them.
  EXPECT_GE(file->last_step, 5) << "the rows recorded before the error were lost";
}

// HDF5 cannot create the file (/proc takes no files, even from root): one sentence naming the
// file, what failed and HDF5's reason; exit 1.
TEST_F(Cli, Hdf5FailureIsOneSentence) {
  write("s.yaml", "nodes: 2\nworkload: {model: mlp, dataset: synthetic, steps: 2}\n");
  Result r = run("run s.yaml -q -o /proc/testbed_out.h5");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("testbed: error: HDF5 output /proc/testbed_out.h5: cannot create the file (", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(FatalErrors, Ns3MessagesBecomeOneSentence) {
  using testbed::ns3_fatal_sentence;
  EXPECT_EQ(ns3_fatal_sentence("step 3\nmsg=\"Could not set default value for ns3::X\", "
                               "file=/build/ns3/src/core/model/config.cc, line=871\n"),
            "ns-3 stopped the run: Could not set default value for ns3::X (config.cc:871)");
  EXPECT_EQ(ns3_fatal_sentence("assert failed. cond=\"m_size > 0\", msg=\"empty queue\", file=src/queue.h, line=12\n"),
            "ns-3 stopped the run: assertion m_size > 0 failed: empty queue (queue.h:12)");
  EXPECT_EQ(ns3_fatal_sentence("assert failed. cond=\"p != 0\", file=a/b.cc, line=7\n"),
            "ns-3 stopped the run: assertion p != 0 failed (b.cc:7)");
  EXPECT_EQ(ns3_fatal_sentence("file=x.cc, line=3\n"), "ns-3 stopped the run: a fatal error (x.cc:3)");
  EXPECT_EQ(ns3_fatal_sentence("nothing useful\n"), "ns-3 stopped the run (it printed no message)");
}

TEST_F(Cli, AlgorithmKeysAreChecked) {
  // A key of another algorithm is blamed at the key, as any unknown key is.
  expect_rejected("algorithm:\n  name: sparta\n  H: 5\n", "3:3", "'H' is not a key of algorithm 'sparta'");
  expect_rejected("algorithm: {name: ddp, p: 0.1}\n", "1:24", "'p' is not a key of algorithm 'ddp'");
  expect_rejected("algorithm: {name: ddp, bucket_mb: 0}\n", "1:35", "out of range");
  expect_rejected("algorithm: {name: ddp, overlap: maybe}\n", "1:33", "expected true or false");
  expect_rejected("algorithm: {name: topk, ratio: 0}\n", "1:32", "out of range (0, 1]");
  expect_rejected("algorithm: {name: topk, ratio: 1.5}\n", "1:32", "out of range (0, 1]");
  expect_rejected("algorithm: {name: signsgd, variant: vote}\n", "1:37", "not one of: majority, signum, ef_sign");
  expect_rejected("algorithm: {name: signsgd, momentum: 1}\n", "1:38", "out of range");
  // A key that the algorithm's other keys leave unread is refused at it, as every scenario key
  // is (ScenarioKeys.EveryKeyIsReadOrRefused); read, it is accepted. Slips caught: each rule
  // missing, or reading its condition the wrong way round.
  expect_rejected("algorithm: {name: signsgd, momentum: 0.5}\n", "1:38",
                  "'momentum' has no effect with variant majority; it is read only with variant signum");
  expect_rejected("algorithm: {name: fedavg, clients_per_round: 2, fraction: 0.5}\n", "1:59",
                  "'fraction' has no effect with clients_per_round 2; it is read only with clients_per_round 0");
  expect_rejected("algorithm: {name: fedavg, schedule: balanced}\n", "1:37", "'schedule' has no effect with devices 0");
  for (const char* read :
       {"algorithm: {name: signsgd, variant: signum, momentum: 0.5}\n", "algorithm: {name: fedavg, fraction: 0.5}\n",
        "algorithm: {name: fedavg, devices: 2, schedule: balanced}\n"})
    EXPECT_EQ(run("validate '" + write("read.yaml", read).string() + "'").code, 0) << read;
  expect_rejected("algorithm: {name: powersgd, rank: 0}\n", "1:35", "out of range");
  expect_rejected("algorithm: {name: acpsgd, bucket_mb: -1}\n", "1:38", "out of range");
  expect_rejected("algorithm: {name: sparta, p: 0}\n", "1:30", "out of range (0, 1]");
  expect_rejected("algorithm: {name: sparta, p: 1.5}\n", "1:30", "out of range (0, 1]");
  expect_rejected("algorithm: {name: diloco, H: 0}\n", "1:30", "out of range");
  expect_rejected("nodes: 1\nalgorithm: {name: sparta, exchange: ring}\n", "2:37", "no topology neighbour");
  expect_rejected("nodes: 1\nalgorithm: {name: gossip}\n", "2:19", "no topology neighbour");
  expect_rejected("algorithm: {name: diloco, outer_dtype: fp4}\n", "1:40", "streaming_diloco");
  expect_rejected("algorithm: {name: demo, chunk: 0}\n", "1:32", "out of range");
  expect_rejected("algorithm: {name: demo, k: 0}\n", "1:28", "out of range");
  // 16-bit in-block indices cover blocks of up to 256 x 256.
  expect_rejected("algorithm: {name: demo, chunk: 257}\n", "1:32", "out of range");
  expect_rejected("algorithm: {name: demo, index: int32}\n", "1:32", "not one of: int64, int16");
  // A fragment's sync must land before its next one: tau below H, blamed on whichever was given.
  expect_rejected("algorithm: {name: streaming_diloco, H: 4, tau: 4}\n", "1:48", "tau (4) must be below H (4)");
  expect_rejected("algorithm: {name: streaming_diloco, H: 1}\n", "1:40", "tau (1) must be below H (1)");
  expect_rejected("algorithm: {name: lofi}\nworkload: {init: random}\n", "2:18", "not one of: shared, independent");
  // A broadcast mask makes the values a second round of the step: they cannot be late.
  expect_rejected("algorithm: {name: sparta, delay: 1, index_transport: broadcast}\n", "1:34", "delay must be 0");
  expect_rejected("algorithm: {name: sparta, index_transport: multicast}\n", "1:44", "not one of: seeded, broadcast");
}

TEST_F(Cli, AnalyticalBackendRefusesLoss) {
  expect_rejected("network: {backend: analytical}\ntopology: {link: {loss: 1%}}\n", "1:20",
                  "the analytical backend models no loss");
  expect_rejected("network: {backend: flow}\ntopology: {links: [{between: [0, 1], loss: 1%}]}\n", "1:20",
                  "the flow backend models no loss");
}

// Jitter is per packet: only ns3 has packets; elsewhere it would silently be ignored.
TEST_F(Cli, JitterNeedsNs3AndIsNotNegative) {
  expect_rejected("network: {backend: flow}\ntopology: {link: {jitter: 1ms}}\n", "2:27",
                  "the flow backend models no per-packet jitter");
  expect_rejected("network: {backend: analytical}\ntopology: {links: [{between: [0, 1], jitter: 1ms}]}\n", "2:46",
                  "the analytical backend models no per-packet jitter");
  expect_rejected("topology: {link: {jitter: -2ms}}\n", "1:27", "out of range");
}

// Datagrams are packets: only ns3 has them; elsewhere udp would silently run as tcp.
TEST_F(Cli, UdpTransportNeedsNs3) {
  expect_rejected("network: {backend: flow, transport: udp}\n", "1:37", "transport udp needs the ns3 backend");
  expect_rejected("network: {transport: udp, backend: analytical}\n", "1:22", "transport udp needs the ns3 backend");
  expect_rejected("network: {transport: sctp}\n", "1:22", "not one of: tcp, udp");
}

// Only the flow backend shares links by a rule; rtt elsewhere would silently change nothing.
TEST_F(Cli, FlowSharingRttNeedsTheFlowBackend) {
  expect_rejected("network: {backend: ns3, flow_sharing: rtt}\n", "1:39", "flow_sharing rtt needs the flow backend");
  expect_rejected("network:\n  backend: analytical\n  flow_sharing: rtt\n", "3:17",
                  "flow_sharing rtt needs the flow backend");
}

TEST_F(Cli, TopologySizesAreChecked) {
  expect_rejected("nodes: 20\ntopology: {kind: fat_tree, k: 4}\n", "1:8", "16 host slots");
  expect_rejected("topology: {kind: fat_tree, k: 3}\n", "1:31", "k must be even");
  expect_rejected("nodes: 6\ntopology: {kind: hierarchical, clusters: 4}\n", "2:42", "not a multiple of clusters");
  expect_rejected("nodes: 6\ntopology: {kind: watts_strogatz, degree: 3}\n", "2:42", "degree must be even");
}

// A two-node GraphML file with one link; `bad` replaces the second node's latitude or the edge.
std::string graphml(const std::string& latitude, const std::string& target) {
  return "<graphml>\n"
         "<key attr.name=\"Latitude\" attr.type=\"double\" for=\"node\" id=\"d1\"/>\n"
         "<key attr.name=\"label\" attr.type=\"string\" for=\"node\" id=\"d2\"/>\n"
         "<graph edgedefault=\"undirected\">\n"
         "<node id=\"0\"><data key=\"d1\">10</data><data key=\"d2\">Here</data></node>\n"
         "<node id=\"1\"><data key=\"d1\">" +
         latitude +
         "</data><data key=\"d2\">There</data></node>\n"
         "<edge source=\"0\" target=\"" +
         target +
         "\"/>\n"
         "</graph>\n</graphml>\n";
}

TEST_F(Cli, BadGraphmlFilesExit2) {
  // The file's path is relative to the scenario; the message names the file and its line.
  write("number.graphml", graphml("1O.5", "1"));
  expect_rejected("nodes: 2\ntopology: {kind: graphml, file: number.graphml}\n", "2:33",
                  "number.graphml:6: malformed number '1O.5' for Latitude of node 1");
  write("edge.graphml", graphml("11", "7"));
  expect_rejected("nodes: 2\ntopology: {kind: graphml, file: edge.graphml}\n", "2:33",
                  "edge.graphml:7: edge target names unknown node '7'");
  expect_rejected("nodes: 2\ntopology: {kind: graphml, file: nothere.graphml}\n", "2:33", "cannot open");
  write("ok.graphml", graphml("11", "1"));
  expect_rejected("nodes: 2\ntopology: {kind: graphml, file: ok.graphml, placement: [Here, Nowhere]}\n", "2:63",
                  "placement names unknown node 'Nowhere'");
  expect_rejected("nodes: 3\ntopology: {kind: graphml, file: ok.graphml}\n", "1:8",
                  "nodes is 3 but the graph has only 2 nodes");
  write("split.graphml", graphml("11", "0"));  // a self-loop only: the two nodes are apart
  expect_rejected("nodes: 2\ntopology: {kind: graphml, file: split.graphml, placement: [Here, There]}\n", "2:59",
                  "puts hosts on disconnected parts");
}

TEST_F(Cli, GraphmlScenarioValidates) {
  write("ok.graphml", graphml("11", "1"));
  fs::path scenario =
      write("ok.yaml", "nodes: 2\ntopology: {kind: graphml, file: ok.graphml, placement: [There, Here]}\n");
  Result r = run("validate '" + scenario.string() + "'");
  EXPECT_EQ(r.code, 0) << r.err;
}

// A tiny training run on two hosts joined by one link, with a background bulk flow that
// would run for 1000 simulated seconds: the run must still end with the training.
const char* kCaptureScenario =
    "nodes: 2\nthreads: 1\ntopology: {kind: line, link: {bandwidth: 100Mbps, latency: 1ms}}\n"
    "network:\n  background: [{from: 0, to: 1, kind: bulk, stop: 1000s}]\n"
    "workload: {model: mlp, dataset: synthetic, synthetic: {hidden: 6, train_samples: 500, test_samples: 100},\n"
    "           batch_size: 16, steps: 3, eval_every: 3}\n"
    "compute: {model: fixed, step_time: 10ms}\n";

TEST_F(Cli, PcapAndFlowmonAreWritten) {
  const fs::path scenario = write("capture.yaml", kCaptureScenario);
  Result r = run("run '" + scenario.string() + "' -q -o out.h5 --pcap pcaps --flowmon stats/flows.xml");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  // One pcap per link device: vertex 0 and vertex 1, device 1 (device 0 is the loopback).
  for (const char* name : {"link-0-1.pcap", "link-1-1.pcap"}) {
    const std::string pcap = read_file(dir_ / "pcaps" / name);
    ASSERT_GT(pcap.size(), 24u) << name << ": a 24-byte global header and at least one packet";
    // libpcap's magic number 0xa1b2c3d4, in either byte order.
    const std::string little("\xd4\xc3\xb2\xa1", 4), big("\xa1\xb2\xc3\xd4", 4);
    EXPECT_TRUE(pcap.compare(0, 4, little) == 0 || pcap.compare(0, 4, big) == 0) << name;
  }
  const std::string xml = read_file(dir_ / "stats" / "flows.xml");
  EXPECT_NE(xml.find("<FlowMonitor>"), std::string::npos) << xml.substr(0, 200);
  EXPECT_NE(xml.find("</FlowMonitor>"), std::string::npos);
  const size_t stats = xml.find("<FlowStats>"), end = xml.find("</FlowStats>");
  ASSERT_NE(stats, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  // Training 0 <-> 1 both ways and the background flow with its ACKs: at least two flows.
  int flows = 0;
  for (size_t at = xml.find("<Flow flowId=", stats); at < end; at = xml.find("<Flow flowId=", at + 1)) ++flows;
  EXPECT_GE(flows, 2) << xml.substr(stats, 400);
  EXPECT_NE(xml.find("txBytes="), std::string::npos);
}

TEST_F(Cli, CapturesNeedTheNs3Backend) {
  for (const char* backend : {"flow", "analytical"}) {
    const fs::path scenario = write("s.yaml", std::string("network: {backend: ") + backend + "}\n");
    for (const std::string option : {"--pcap pcaps", "--flowmon flows.xml"}) {
      Result r = run("run '" + scenario.string() + "' -o out.h5 " + option);
      EXPECT_EQ(r.code, 2) << r.err;
      EXPECT_EQ(r.err.rfind(option + ":1:1: error: the " + backend + " backend has no packets to capture", 0), 0u)
          << r.err;
      EXPECT_FALSE(fs::exists(dir_ / "out.h5"));
      EXPECT_FALSE(fs::exists(dir_ / "pcaps"));
    }
  }
}

TEST_F(Cli, HelpMentionsSubcommands) {
  Result r = run("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("validate"), std::string::npos) << r.out;
  // launch passes the scenario and run's options through: its help says so.
  Result launch = run("launch --help");
  EXPECT_EQ(launch.code, 0);
  EXPECT_NE(launch.out.find("Then: SCENARIO [testbed run's options"), std::string::npos) << launch.out;
}

// --resume where no checkpoint was written starts over, and says so rather than silently.
TEST_F(Cli, ResumeWithoutACheckpointSaysItStartsOver) {
  fs::path s = write("tiny.yaml",
                     "nodes: 2\nthreads: 1\nnetwork: {backend: analytical}\n"
                     "workload: {model: mlp, dataset: synthetic, synthetic: {hidden: 4, train_samples: 64, "
                     "test_samples: 16}, batch_size: 8, steps: 2}\ncompute: {model: fixed, step_time: 1ms}\n");
  Result r = run("run '" + s.string() + "' -o out.h5 -q --resume");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("--resume: no checkpoint in "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("starting from step 0"), std::string::npos) << r.err;
  // Once: every run of a sweep resumes, and its log said it twice.
  EXPECT_EQ(r.err.find("starting from step 0"), r.err.rfind("starting from step 0")) << r.err;
}

// A run over several processes checks what it cannot do before it meets its peers: exit 2 at
// the key, and no file.
TEST_F(Cli, SpreadRunsRefuseWhatTheyCannotDo) {
  const std::string base =
      "nodes: 2\nworkload: {model: mlp, dataset: synthetic, synthetic: {inputs: 8, hidden: 8, outputs: 2, "
      "train_samples: 64, test_samples: 16}, batch_size: 8, steps: 2}\n";
  struct Case {
    std::string yaml, args, env, starts, message;
  };
  const std::vector<Case> cases = {
      {base, "--world-size 3 --rank 0", "", "bad.yaml:1:8: ", "2 nodes cannot spread over 3 processes"},
      {base + "algorithm: {name: fedavg, clients_per_round: 2, H: 1}\n", "--world-size 2 --rank 1", "",
       "bad.yaml:", "a federated run (fedavg) runs in one process"},
      {base + "output: {resume_every: 1}\n", "--world-size 2 --rank 0", "", "bad.yaml:", "checkpoints are not written"},
      {base, "--world-size 2 --rank 2", "", "--rank 2:1:1: ", "expected a rank below the world size 2"},
      {base, "", "RANK=one", "RANK one:1:1: ", "expected a whole number"},
      {base, "--world-size 2 --master 127.0.0.1", "", "--master 127.0.0.1:1:1: ", "expected ADDR:PORT"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args + " " + c.env + "\n" + c.yaml);
    fs::path bad = write("bad.yaml", c.yaml);
    Result r = run("run bad.yaml -o out.h5 " + c.args, c.env);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err.rfind(c.starts, 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "out.h5"));
  }
}

}  // namespace

namespace {

// netbench: the analytical backend is the bound itself; the packet level never beats it.
TEST_F(Cli, NetbenchComparesWithAlphaBeta) {
  fs::path s = write("net.yaml", "nodes: 4\ntopology: {kind: ring, link: {bandwidth: 100Mbps, latency: 10ms}}\n");
  auto ratio_of = [](const std::string& out) {
    const auto at = out.find("ratio");
    return at == std::string::npos ? -1.0 : std::stod(out.substr(out.find_first_of("0123456789", at)));
  };
  Result bound = run("netbench '" + s.string() + "' --size 4MB --set network.backend=analytical");
  ASSERT_EQ(bound.code, 0) << bound.err;
  // 2(p-1) alpha + 2(p-1)/p n beta = 6 x 10 ms + 1.5 x 4e6 x 8 / 1e8 s.
  EXPECT_NE(bound.out.find("alpha-beta bound  0.540000 s"), std::string::npos) << bound.out;
  EXPECT_DOUBLE_EQ(ratio_of(bound.out), 1.0);
  Result packets = run("netbench '" + s.string() + "' --size 4MB");
  ASSERT_EQ(packets.code, 0) << packets.err;
  EXPECT_GE(ratio_of(packets.out), 1.0);
  EXPECT_LE(ratio_of(packets.out), 1.15);
  EXPECT_EQ(run("netbench '" + s.string() + "' --size lots").code, 2);
  EXPECT_EQ(run("netbench '" + s.string() + "' --collective broadcast").code, 2);

  // --vary: every combination in one process, first key outermost, each block what its own
  // process prints (the ns3 one above, the analytical bound above).
  Result grid = run("netbench '" + s.string() +
                    "' --size 4MB --vary network.backend=ns3 --vary network.backend=analytical"
                    " --vary nodes=4 --vary nodes=2");
  ASSERT_EQ(grid.code, 0) << grid.err;
  std::vector<std::string> blocks;
  for (size_t at = 0; at < grid.out.size();) {
    size_t end = grid.out.find("\n\n", at);
    if (end == std::string::npos) end = grid.out.size();
    blocks.push_back(grid.out.substr(at, end - at + 1));
    at = end + 2;
  }
  ASSERT_EQ(blocks.size(), 4u) << grid.out;
  EXPECT_EQ(blocks[0].rfind("vary              network.backend=ns3 nodes=4\n", 0), 0u) << blocks[0];
  EXPECT_EQ(blocks[3].rfind("vary              network.backend=analytical nodes=2\n", 0), 0u) << blocks[3];
  auto simulated = [](const std::string& out) { return out.substr(out.find("simulated"), 30); };
  EXPECT_EQ(simulated(blocks[0]), simulated(packets.out));
  EXPECT_EQ(simulated(blocks[2]), simulated(bound.out));
  // 2 nodes: 2 x 10 ms + 4e6 x 8 / 1e8 s.
  EXPECT_NE(blocks[3].find("alpha-beta bound  0.340000 s"), std::string::npos) << blocks[3];
  EXPECT_EQ(run("netbench '" + s.string() + "' --vary =ns3").code, 2);
}

}  // namespace

namespace {

// `testbed topology`: each host pair's path, with latency summed and the slowest link's rate.
TEST_F(Cli, TopologyPrintsPathsAndDot) {
  fs::path s = write("line.yaml",
                     "nodes: 3\ntopology:\n  kind: line\n  link: {bandwidth: 1Gbps, latency: 2ms}\n"
                     "  links: [{between: [1, 2], bandwidth: 10Mbps, latency: 5ms}]\n");
  Result r = run("topology '" + s.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("3 hosts, 0 switches, 2 links"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("h0 - h2  2 hops, 7 ms, 10 Mbps"), std::string::npos) << r.out;  // 2 + 5 ms, min rate
  EXPECT_NE(r.out.find("h0 - h1  1 hops, 2 ms, 1000 Mbps"), std::string::npos) << r.out;
  Result dot = run("topology '" + s.string() + "' --dot");
  ASSERT_EQ(dot.code, 0) << dot.err;
  EXPECT_EQ(dot.out.rfind("graph \"line\" {", 0), 0u) << dot.out;
  EXPECT_NE(dot.out.find("h1 -- h2 [label=\"10 Mbps, 5 ms\"]"), std::string::npos) << dot.out;
  EXPECT_EQ(run("topology '" + s.string() + "' --set topology.kind=rign").code, 2);
}

}  // namespace

namespace {

// A federated run's report: its rounds, how many were evaluated, accuracy by round and the best,
// numbered from 0 as /rounds and /participation number them.
TEST_F(Cli, ReportShowsAFederatedRunRoundByRound) {
  fs::path s = write(
      "fed.yaml",
      "nodes: 4\nthreads: 1\nnetwork: {backend: flow}\n"
      "workload: {model: mlp, dataset: synthetic, synthetic: {hidden: 8, train_samples: 400, test_samples: 100},\n"
      "           batch_size: 8, steps: 12}\n"
      "algorithm: {name: fedavg, H: 2, clients_per_round: 2}\ncompute: {model: fixed, step_time: 10ms}\n");
  ASSERT_EQ(run("run '" + s.string() + "' -o fed.h5 -q").code, 0);
  Result r = run("report fed.h5");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("rounds            6 (6 evaluated)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("accuracy by round 0: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", 5: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best accuracy     "), std::string::npos) << r.out;
  Result sparse = run("run '" + s.string() + "' -o sparse.h5 -q --set workload.eval_every=6");
  ASSERT_EQ(sparse.code, 0) << sparse.err;
  EXPECT_NE(run("report sparse.h5").out.find("rounds            6 (2 evaluated)\n"), std::string::npos);
}

// A projection (workload.train false) refuses what needs values, each at its key.
TEST_F(Cli, ProjectionRefusesWhatNeedsValues) {
  const std::string head = "nodes: 2\nworkload: {model: mlp, steps: 2, train: false}\n";
  expect_rejected(head + "compute: {model: measured}\n", "3:18", "runs no step to measure");
  expect_rejected(head + "algorithm: {name: fedavg, H: 1}\n", "3:19", "fedavg runs as a server and sampled clients");
  expect_rejected(head + "output: {resume_every: 1}\n", "3:24", "keeps no state to resume");
  expect_rejected(head + "output: {checkpoint: m.pt}\n", "3:22", "trains no model to save");
  expect_rejected("nodes: 2\nworkload: {model: mlp, steps: 2, train: false, init_from: m.pt}\n", "2:59",
                  "loads no weights");
}

// A projection's file says it is one and holds no loss and no evaluation; `report` says so too,
// and a training scenario's evaluation keys only warn.
TEST_F(Cli, ProjectionFileSaysSo) {
  fs::path s =
      write("p.yaml", "nodes: 2\nthreads: 1\nworkload: {model: mlp, steps: 3, eval_samples: 100, train: false}\n");
  fs::path out = dir_ / "out.h5";
  Result r = run("run '" + s.string() + "' -q -o '" + out.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find(s.string() + ":3:48: warning: 'workload.eval_samples' has no effect in a projection"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("projection        from shapes"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("final accuracy"), std::string::npos) << r.out;
  const auto file = testbed::read_run_file(out.string());
  ASSERT_TRUE(file);
  EXPECT_TRUE(file->projection);
  EXPECT_EQ(file->status, "completed");
  EXPECT_TRUE(std::isnan(file->final_accuracy));  // not written
  EXPECT_EQ(file->steps_completed, 3);
  {
    H5::H5File h5(out.string(), H5F_ACC_RDONLY);
    EXPECT_FALSE(h5.nameExists("/train/loss"));
    EXPECT_TRUE(h5.nameExists("/train/time"));
    EXPECT_FALSE(h5.nameExists("/eval/accuracy"));
  }
  Result report = run("report '" + out.string() + "'");
  EXPECT_EQ(report.code, 0) << report.err;
  EXPECT_NE(report.out.find("projection        from shapes"), std::string::npos) << report.out;
}

// Training the 7B decoder on 64 nodes needs terabytes: refused at `nodes` from its shapes, before
// anything is allocated (under a 4 GiB address space, a build of the model would fail first).
// The device check, which would refuse it first (no GPU holds it), is off here.
TEST_F(Cli, SevenBTrainingIsRefusedFromShapes) {
  fs::path s = write("big.yaml",
                     "nodes: 64\nworkload: {model: llama, llama: {preset: 7b}, dataset: brown, batch_size: 1}\n"
                     "compute: {memory_check: off}\n");
  fs::path out = dir_ / "out.h5";
  Result r = run("run '" + s.string() + "' -o '" + out.string() + "'", "", 4L << 20);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(s.string() + ":1:8: error: the run needs about"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("6738415616 parameters"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

// Hosts of several GPUs: the fleet must fill whole hosts, and the GPU link is read only when
// the interconnect is custom.
TEST_F(Cli, GpuHostsRefusesPartHostsAndIgnoredLinks) {
  expect_rejected("nodes: 6\ntopology: {kind: gpu_hosts, gpus_per_host: 4}\n", "2:44",
                  "nodes (6) is not a multiple of gpus_per_host (4)");
  expect_rejected("nodes: 8\ntopology: {kind: gpu_hosts, gpu_link: {bandwidth: 1Gbps}}\n", "2:39",
                  "'topology.gpu_link' has no effect with topology.kind gpu_hosts, topology.interconnect nvlink3");
  expect_rejected("nodes: 8\nworkload: {model: cnn, dataset: imagenet_synthetic}\n", "2:19",
                  "the ImageNet stand-in trains the resnets");
}

// Replica groups (docs/replica_groups.md): whole groups of a gpu_hosts fleet, a host or whole
// hosts each, under an algorithm that can send slice by slice (and, training, one whose values a
// GPU's slice holds). Slips caught: a group allowed on a topology without hosts, or one
// straddling two hosts; SPARTA's subsets or an int8 scale trained from a slice.
TEST_F(Cli, ReplicaGroupsRefuseWhatCannotBeGrouped) {
  const std::string projection = "workload: {model: mlp, train: false}\ncompute: {model: flops, device: a100}\n";
  const std::string hosts = "nodes: 16\ntopology: {kind: gpu_hosts, gpus_per_host: 4}\n";
  expect_rejected("nodes: 8\nreplica_group: {gpus: 4}\n" + projection, "2:23",
                  "needs a topology of hosts and their GPUs (topology.kind: gpu_hosts), not ring");
  expect_rejected(hosts + "replica_group: {gpus: 32}\n" + projection, "3:23",
                  "a replica group of 32 GPUs is larger than the topology's 16 GPUs");
  expect_rejected(hosts + "replica_group: {gpus: 3}\n" + projection, "3:23", "do not split into groups of 3");
  expect_rejected("nodes: 24\ntopology: {kind: gpu_hosts, gpus_per_host: 4}\nreplica_group: {gpus: 6}\n" + projection,
                  "3:23", "a group of 6 GPUs would straddle hosts of 4");
  // Training: only algorithms whose ops all-reduce the flat parameters or their gradient, with an
  // outer gradient rounded element by element.
  expect_rejected(hosts + "replica_group: {gpus: 4}\nworkload: {model: mlp}\nalgorithm: {name: sparta}\n", "5:19",
                  "sparta runs across replica groups in a projection only (workload.train: false); replica groups "
                  "train ddp, diloco and local_sgd");
  expect_rejected(
      hosts + "replica_group: {gpus: 4}\nworkload: {model: mlp}\nalgorithm: {name: diloco, outer_dtype: int8}\n",
      "5:40", "training across groups takes outer_dtype fp32, bf16 or fp16");
  expect_rejected(hosts + "replica_group: {gpus: 4}\nalgorithm: {name: dear}\n" + projection, "4:19",
                  "dear cannot run across replica groups");
  expect_rejected(hosts + "replica_group: {gpus: 4}\nalgorithm: {name: ddp, bucket_mb: 10}\n" + projection, "4:35",
                  "algorithm.bucket_mb has no effect across replica groups");
  expect_rejected(hosts + "replica_group: {gpus: 4}\nalgorithm: {name: gossip}\n" + projection, "4:19",
                  "gossip cannot run across replica groups slice by slice");
  expect_rejected(hosts + "replica_group: {gpus: 4}\noptimizer: {name: eva}\n" + projection, "4:19",
                  "eva preconditions whole layers");
  expect_rejected(hosts + "replica_group: {parallelism: zero2}\n" + projection, "3:30",
                  "'replica_group.parallelism' has no effect with replica_group.gpus 1");
  // FSDP's units must be modules of the model, and the algorithm one that works on a shard.
  expect_rejected(hosts + "replica_group: {gpus: 4, parallelism: fsdp, unit: 'conv*'}\n" + projection, "3:51",
                  "unit 'conv*' names no module of model 'mlp' (its parameters: fc1.weight");
  expect_rejected(hosts + "replica_group: {gpus: 4, parallelism: fsdp}\n" + projection, "3:39",
                  "model 'mlp' has no blocks or stages it knows of: give replica_group.unit");
  expect_rejected(
      hosts + "replica_group: {gpus: 4, parallelism: fsdp, unit: 'fc*'}\nalgorithm: {name: powersgd}\n" + projection,
      "4:19", "powersgd cannot run across fsdp groups");
  expect_rejected(hosts + "replica_group: {gpus: 4, parallelism: zero1, unit: 'fc*'}\n" + projection, "3:52",
                  "'replica_group.unit' has no effect with replica_group.parallelism zero1");
}

// Activation checkpointing needs blocks to checkpoint and the roofline to time their forward
// again. Slip caught: a model without blocks silently checkpointing nothing.
TEST_F(Cli, ActivationCheckpointingNeedsBlocks) {
  expect_rejected("workload: {model: mlp}\ncompute: {activation_checkpointing: true}\n", "2:37",
                  "model 'mlp' has no blocks or stages to checkpoint");
  expect_rejected("workload: {model: resnet18}\ncompute: {model: fixed, activation_checkpointing: true}\n", "2:51",
                  "'compute.activation_checkpointing' has no effect with compute.model fixed");
}

// The ImageNet-only models want ImageNet-shaped images; BERT's pre-training heads have no data
// to train on here, so they are for projections.
TEST_F(Cli, ImageNetModelsAndPretrainingHeadsWhereTheyCanRun) {
  expect_rejected("workload: {model: vit_b_16}\n", "1:19", "vit_b_16 takes ImageNet-shaped images");
  expect_rejected("workload: {model: bert, dataset: brown_genres, bert: {head: pretraining}}\n", "1:61",
                  "BERT's pre-training heads are for projections");
}

// The summary's memoization line: shown where ns-3 memoization was on, also when it replayed
// nothing (with where to read why), and not at all where it was off or on another backend. The
// run is a projection whose ring chunks are uneven (a synthetic MLP of 55 214 values on 4 nodes,
// RingChains in projection_tests), so none of its 3 steps replays. Slips caught: the line kept
// to runs that replayed something (the first run prints none), or printed whatever the backend
// (the last two print one).
// The summary's memoization line follows the rule decided before step 0 (docs/network.md#memoization):
// none where the rule rules replays out (a newcomer's first run reports no feature failing), the
// count where it does not. Hidden 148: 43 x 148 + 10 = 6374 parameters, ring chunks of 1594 and
// 1593; hidden 146: 6288, chunks of 1572 each.
TEST_F(Cli, TheSummaryReportsMemoizationWhereTheRuleLetsItReplay) {
  const fs::path scenario = write("uneven.yaml",
                                  "nodes: 4\nthreads: 1\n"
                                  "topology: {kind: ring, link: {bandwidth: 100Mbps, latency: 10ms}}\n"
                                  "workload: {model: mlp, dataset: synthetic, synthetic: {inputs: 32, hidden: 148, "
                                  "outputs: 10}, batch_size: 8, steps: 6, train: false}\n"
                                  "algorithm: {name: ddp, overlap: false}\n"
                                  "compute: {model: fixed, step_time: 10ms}\n");
  auto summary = [&](const std::string& sets) {
    const Result r = run("run -q '" + scenario.string() + "' -o '" + (dir_ / "out.h5").string() + "'" + sets);
    EXPECT_EQ(r.code, 0) << r.err;
    return r.out;
  };
  for (const std::string sets : {"", " --set network.memoize=false", " --set network.backend=flow"}) {
    const std::string out = summary(sets);
    EXPECT_EQ(out.find("memoized"), std::string::npos) << sets << "\n" << out;
  }
  const std::string even = summary(" --set workload.synthetic.hidden=146");
  EXPECT_NE(even.find("memoized         "), std::string::npos) << even;
  EXPECT_NE(even.find(" of 6 steps' communication replayed\n"), std::string::npos) << even;
}

// The progress line away from a terminal: a whole line at most every 30 s of host time. A run of
// 6 steps whose steps end at host seconds 5, 20, 31, 40, 62 and 70 writes after steps 3 and 5
// (31 - 0 >= 30, then 62 - 31 >= 30), the ETA being host time a step times the steps left:
// 31 / 3 x 3 = 31 s, 62 / 5 x 1 = 12.4 s. On a terminal every step rewrites the line. Slips
// caught: measuring the interval from the run's start instead of the last line (a line at 62
// and 70), a log line without its newline.
TEST(Progress, AwayFromATerminalALineAtMostEveryThirtySeconds) {
  for (const bool terminal : {false, true}) {
    SCOPED_TRACE(terminal ? "terminal" : "log");
    const std::vector<double> ends = {5, 20, 31, 40, 62, 70};
    size_t at = 0;
    std::string text;
    testbed::ProgressSink sink;
    sink.terminal = terminal;
    sink.host_seconds = [&] { return ends[at]; };
    sink.write = [&](const std::string& s) { text += s; };
    auto progress = testbed::progress_printer(sink);
    for (at = 0; at < ends.size(); ++at) progress(testbed::Progress{static_cast<int>(at) + 1, 6, NAN, 1.0 * (at + 1)});
    if (terminal) {
      EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 6) << text;
      EXPECT_NE(text.find("\rstep 6/6  projected 6.00 s  ETA 0 s"), std::string::npos) << text;
    } else {
      EXPECT_EQ(text, "step 3/6  projected 3.00 s  ETA 31 s\nstep 5/6  projected 5.00 s  ETA 12 s\n");
    }
  }
}

}  // namespace
