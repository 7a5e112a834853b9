// Every dataset and attribute README's HDF5 table documents, read back from a real run and
// checked against what the run implies, worked out here: bytes from the ring all-reduce
// formula, times against alpha-beta, compute time from the fixed model and node speeds.
#include <gtest/gtest.h>

#include <H5Cpp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "sim/output/hdf5_messages.h"
#include "tests/support/cli_child.h"

namespace {

namespace fs = std::filesystem;

constexpr int kNodes = 3, kSteps = 6, kEvalEvery = 3;
constexpr double kStepTime = 0.02, kLatency = 0.005, kBandwidth = 100e6;
const double kSpeeds[kNodes] = {1.0, 0.5, 0.25};
// make_mlp(784, 128, 10): 784 -> 256 -> 128 -> 10 with biases.
constexpr int64_t kParameters = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10;

struct Array {
  std::vector<double> values;
  std::vector<hsize_t> dims;
  double at(size_t row, size_t col) const { return values[row * dims[1] + col]; }
};

class Hdf5Contents : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("testbed_h5_" + std::to_string(::getpid())));
    fs::create_directories(*dir_);
    std::ofstream(*dir_ / "s.yaml") << R"(name: contents
seed: 5
nodes: 3
threads: 1
topology: {kind: ring, link: {bandwidth: 100Mbps, latency: 5ms}}
workload: {model: mlp, batch_size: 32, steps: 6, eval_every: 3, eval_samples: 500, shifts: [noise]}
compute: {model: fixed, step_time: 20ms, speeds: [1, 0.5, 0.25]}
)";
    const std::string log = (*dir_ / "log").string();
    ASSERT_EQ(testbed::cli_child::run({"run", (*dir_ / "s.yaml").string(), "-q", "-o", (*dir_ / "r.h5").string()},
                                      {"", log, log}),
              0);
    file_ = new H5::H5File((*dir_ / "r.h5").string(), H5F_ACC_RDONLY);
  }
  static void TearDownTestSuite() {
    delete file_;
    fs::remove_all(*dir_);
    delete dir_;
  }

  static Array read(const std::string& path) {
    H5::DataSet d = file_->openDataSet(path);
    H5::DataSpace space = d.getSpace();
    Array a;
    a.dims.resize(space.getSimpleExtentNdims());
    space.getSimpleExtentDims(a.dims.data());
    a.values.resize(space.getSimpleExtentNpoints());
    d.read(a.values.data(), H5::PredType::NATIVE_DOUBLE);
    return a;
  }
  static std::vector<testbed::MessageRow> messages() {
    const H5::CompType type = testbed::message_type();
    H5::DataSet d = file_->openDataSet("/comm/messages");
    std::vector<testbed::MessageRow> rows(d.getSpace().getSimpleExtentNpoints());
    d.read(rows.data(), type);
    return rows;
  }
  static std::string text_attribute(const H5::H5Object& object, const std::string& name) {
    H5::Attribute a = object.openAttribute(name);
    std::string value;
    a.read(a.getStrType(), value);
    return value;
  }
  static double number_attribute(const H5::H5Object& object, const std::string& name) {
    double value = 0;
    object.openAttribute(name).read(H5::PredType::NATIVE_DOUBLE, &value);
    return value;
  }
  static double summary(const std::string& name) { return number_attribute(file_->openGroup("/summary"), name); }

  static fs::path* dir_;
  static H5::H5File* file_;
};
fs::path* Hdf5Contents::dir_ = nullptr;
H5::H5File* Hdf5Contents::file_ = nullptr;

TEST_F(Hdf5Contents, RootAttributes) {
  EXPECT_EQ(text_attribute(*file_, "status"), "completed");
  EXPECT_FALSE(file_->attrExists("error"));  // only a run that did not complete says why
  EXPECT_FALSE(text_attribute(*file_, "testbed_version").empty());
  EXPECT_EQ(text_attribute(*file_, "device"), "cpu");
  EXPECT_EQ(number_attribute(*file_, "nodes"), kNodes);
  EXPECT_EQ(number_attribute(*file_, "deterministic"), 1);
  // The resolved scenario is itself a scenario that resolves to the same text.
  const std::string scenario = text_attribute(*file_, "scenario");
  EXPECT_NE(scenario.find("step_time: 20ms"), std::string::npos) << scenario;
  std::ofstream(*dir_ / "resolved.yaml") << scenario;
  ASSERT_EQ(testbed::cli_child::run({"validate", (*dir_ / "resolved.yaml").string()},
                                    {"", (*dir_ / "again.yaml").string(), ""}),
            0);
  std::stringstream again;
  again << std::ifstream(*dir_ / "again.yaml").rdbuf();
  EXPECT_EQ(again.str(), scenario);
}

TEST_F(Hdf5Contents, TrainRows) {
  const Array step = read("/train/step"), loss = read("/train/loss"), time = read("/train/time"),
              compute = read("/train/compute_time");
  ASSERT_EQ(step.values.size(), static_cast<size_t>(kSteps));
  for (int s = 0; s < kSteps; ++s) EXPECT_EQ(step.values[s], s);
  ASSERT_EQ(loss.dims, (std::vector<hsize_t>{kSteps, kNodes}));
  ASSERT_EQ(time.dims, loss.dims);
  ASSERT_EQ(compute.dims, loss.dims);
  const double one_hop = kLatency;  // a step cannot end before a message crossed a link
  for (int s = 0; s < kSteps; ++s) {
    for (int n = 0; n < kNodes; ++n) {
      EXPECT_TRUE(std::isfinite(loss.at(s, n)) && loss.at(s, n) > 0);
      EXPECT_DOUBLE_EQ(compute.at(s, n), kStepTime / kSpeeds[n]) << "step " << s << " node " << n;
      const double start = s == 0 ? 0 : time.at(s - 1, n);
      EXPECT_GE(time.at(s, n), start + compute.at(s, n) + one_hop) << "step " << s << " node " << n;
    }
  }
  // DDP: every node waits for the slowest (node 2) before its all-reduce can end.
  for (int s = 0; s < kSteps; ++s) {
    for (int n = 0; n < kNodes; ++n) EXPECT_GE(time.at(s, n), (s + 1) * kStepTime / kSpeeds[2]);
  }
}

TEST_F(Hdf5Contents, MessagesAndBytes) {
  const auto rows = messages();
  const Array bytes = read("/comm/bytes"), time = read("/train/time"), compute = read("/train/compute_time");
  ASSERT_EQ(bytes.dims, (std::vector<hsize_t>{kSteps, kNodes}));
  // Ring all-reduce of d floats over 3 ranks: 2(p-1) messages of d/p floats per node per step.
  const uint64_t chunk = kParameters / kNodes * 4;
  ASSERT_EQ(kParameters % kNodes, 0);
  ASSERT_EQ(rows.size(), static_cast<size_t>(kSteps * kNodes * 2 * (kNodes - 1)));
  // The file says past how many messages a collective is one row (docs/output.md).
  const H5::Group comm = file_->openGroup("/comm");
  EXPECT_EQ(number_attribute(comm, "messages_one_row_above"), 65536);
  std::vector<std::vector<uint64_t>> from_messages(kSteps, std::vector<uint64_t>(kNodes, 0));
  for (const auto& m : rows) {
    EXPECT_EQ(m.bytes, chunk);
    EXPECT_EQ(m.lost_bytes, 0u);
    EXPECT_EQ(m.dst, (m.src + 1) % kNodes);                               // the ring's direction
    EXPECT_GE(m.t_recv, m.t_send + kLatency + m.bytes * 8 / kBandwidth);  // alpha-beta, one hop
    // The step whose communication phase (compute end .. step end) holds the send; the
    // clock counts whole nanoseconds, so sums of seconds match it to 1 ns.
    int owner = -1;
    for (int s = 0; s < kSteps; ++s) {
      const double start = s == 0 ? 0 : time.at(s - 1, m.src);
      if (m.t_send >= start + compute.at(s, m.src) - 1e-9 && m.t_send <= time.at(s, m.src)) owner = s;
    }
    ASSERT_GE(owner, 0) << "message from " << m.src << " at " << m.t_send << " belongs to no step";
    from_messages[owner][m.src] += m.bytes;
  }
  for (int s = 0; s < kSteps; ++s) {
    for (int n = 0; n < kNodes; ++n) {
      EXPECT_EQ(bytes.at(s, n), 2.0 * (kNodes - 1) * chunk);
      EXPECT_EQ(bytes.at(s, n), static_cast<double>(from_messages[s][n]));
    }
  }
}

TEST_F(Hdf5Contents, EvalAndReplicas) {
  const Array step = read("/eval/step"), loss = read("/eval/loss"), accuracy = read("/eval/accuracy"),
              perplexity = read("/eval/perplexity"), replica = read("/eval/replica_loss"),
              replica_accuracy = read("/eval/replica_accuracy"), noise_loss = read("/eval/variants/noise/loss"),
              noise_acc = read("/eval/variants/noise/accuracy"), correlation = read("/replicas/correlation"),
              min_correlation = read("/replicas/min_correlation"), matrix = read("/replicas/correlation_matrix"),
              distance = read("/replicas/distance");
  ASSERT_EQ(step.values, (std::vector<double>{kEvalEvery, kSteps}));
  const size_t evals = step.values.size();
  for (const Array* a :
       {&loss, &accuracy, &perplexity, &noise_loss, &noise_acc, &correlation, &min_correlation, &distance})
    ASSERT_EQ(a->values.size(), evals);
  ASSERT_EQ(replica.dims, (std::vector<hsize_t>{evals, kNodes}));
  ASSERT_EQ(replica_accuracy.dims, replica.dims);
  ASSERT_EQ(matrix.dims, (std::vector<hsize_t>{evals, kNodes, kNodes}));
  for (size_t e = 0; e < evals; ++e) {
    EXPECT_GT(loss.values[e], 0);
    EXPECT_GT(accuracy.values[e], 0.1);  // above chance after a few steps of 3 x 32
    EXPECT_LE(accuracy.values[e], 1.0);
    EXPECT_TRUE(std::isnan(perplexity.values[e]));  // a classifier
    // DDP replicas are identical, so each replica's loss is the averaged model's.
    for (int n = 0; n < kNodes; ++n) {
      EXPECT_NEAR(replica.at(e, n), loss.values[e], 1e-6);
      EXPECT_NEAR(replica_accuracy.at(e, n), accuracy.values[e], 1e-9);
    }
    EXPECT_NE(noise_loss.values[e], loss.values[e]);  // a different test set
    EXPECT_NEAR(correlation.values[e], 1.0, 1e-9);
    EXPECT_NEAR(min_correlation.values[e], 1.0, 1e-9);
    EXPECT_NEAR(distance.values[e], 0.0, 1e-9);
    for (int i = 0; i < kNodes * kNodes; ++i) EXPECT_NEAR(matrix.values[e * kNodes * kNodes + i], 1.0, 1e-9);
  }
  const Array speed = read("/nodes/speed");
  EXPECT_EQ(speed.values, std::vector<double>(kSpeeds, kSpeeds + kNodes));
}

TEST_F(Hdf5Contents, SummaryFollowsFromTheDatasets) {
  const Array time = read("/train/time"), bytes = read("/comm/bytes"), loss = read("/eval/loss"),
              accuracy = read("/eval/accuracy");
  double last = 0;
  for (int n = 0; n < kNodes; ++n) last = std::max(last, time.at(kSteps - 1, n));
  EXPECT_EQ(summary("projected_time_s"), last);
  double total = std::accumulate(bytes.values.begin(), bytes.values.end(), 0.0);
  uint64_t from_messages = 0;
  uint64_t lost = 0;
  for (const auto& m : messages()) {
    from_messages += m.bytes;
    lost += m.lost_bytes;
  }
  EXPECT_EQ(summary("total_bytes"), total);
  EXPECT_EQ(summary("total_bytes"), static_cast<double>(from_messages));
  EXPECT_EQ(summary("lost_bytes"), static_cast<double>(lost));
  EXPECT_EQ(summary("final_eval_loss"), loss.values.back());
  EXPECT_EQ(summary("final_accuracy"), accuracy.values.back());
  EXPECT_TRUE(std::isnan(summary("final_perplexity")));
  EXPECT_GT(summary("host_time_s"), 0);
  EXPECT_EQ(summary("model_parameters"), kParameters);
  EXPECT_EQ(summary("trainable_parameters"), kParameters);
  EXPECT_EQ(summary("steps_completed"), kSteps);
  EXPECT_EQ(summary("eval_samples"), 500);
  EXPECT_EQ(summary("final_eval_samples"), 10000);  // Fashion-MNIST's whole test split
}

}  // namespace
