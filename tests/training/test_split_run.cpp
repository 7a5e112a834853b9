// A split fine-tuning run on the engine (training/algorithms/split.cpp, CommKind::Cut): one
// edge and its cloud on a star, alpha-beta network, so that a step's time is worked out here:
// the edge's front forward, the activations' message, the cloud's back passes, the gradient's
// message, then the edge's front backward and update. The two compute models are the tested
// roofline on each half's layers; the composition and the messages are what this checks.
#include <gtest/gtest.h>

#include <string>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/compute/compute_model.h"
#include "sim/core/engine/engine.h"
#include "training/metrics.h"
#include "training/models/model_shapes.h"

namespace testbed {
namespace {

// The scenario's data with its test split cut to 64 windows: the final evaluation of the whole
// split would be most of these tests' time, and no time or byte depends on it.
Dataset small_test_split(const Scenario& s) {
  Dataset data = load_dataset(s);
  data.test_inputs = data.test_inputs.slice(0, 0, 64);
  data.test_targets = data.test_targets.slice(0, 0, 64);
  return data;
}

const char* kSplitYaml =
    "nodes: 1\nthreads: 1\n"
    "topology: {kind: star, link: {bandwidth: 100Mbps, latency: 10ms}}\n"
    "network: {backend: analytical}\n"
    "collective: {library: none}\n"  // the cut's messages at line rate, as worked below
    "workload: {model: gpt, dataset: brown, batch_size: 4, steps: 3, eval_every: 1000, eval_samples: 8, "
    "gpt: {preset: tiny, layers: 2, width: 48, heads: 2, context: 24}}\n"
    "algorithm: {name: split, layer: 1, rank: 4, cloud: a100}\n"
    "compute: {model: flops, device: jetson_agx_orin}\n";

// Slips caught: the edge's backward run before the gradient is back (the step shorter by the
// round trip), the cloud's passes not held (shorter by them), the whole model charged on the
// edge, the cloud's update put on the edge's path, the plain cut's bytes sent at rank r, the
// gradient's message not counted in the run's bytes.
TEST(SplitRun, AStepIsFrontForwardCutBackPassesGradientFrontBackward) {
  for (int rank : {4, 0}) {
    SCOPED_TRACE(rank);
    const Scenario s = parse_scenario(kSplitYaml, "split.yaml", {"algorithm.rank=" + std::to_string(rank)});
    const ModelShapes shapes = shapes_of(*make_model(s));
    ASSERT_GT(shapes.cut_layer, 0);
    const std::vector<LayerCost> front(shapes.layers.begin(), shapes.layers.begin() + shapes.cut_layer),
        back(shapes.layers.begin() + shapes.cut_layer, shapes.layers.end());
    const ComputeModel edge(s.compute, training_work(s, front), 1, s.seed);
    ComputeSection cloud_section;
    cloud_section.device = "a100";
    const ComputeModel cloud(cloud_section, training_work(s, back), 1, s.seed);
    double forward_share = 0;
    for (double f : edge.shares().forward) forward_share += f;
    const double edge_s = edge.step_seconds(0, 0, 0), forward_s = edge_s * forward_share;
    const double cloud_s = cloud.step_seconds(0, 0, 0) * cloud.shares().backward_end();
    // 4 samples x 24 tokens x (rank, or the width 48 for a plain cut) floats each way; two hops
    // of 10 ms and the bytes at 100 Mb/s.
    const double bytes = 4.0 * 24 * (rank > 0 ? rank : 48) * 4;
    const double message_s = 2 * 10e-3 + bytes * 8 / 100e6;
    const double step_s = edge_s + 2 * message_s + cloud_s;

    const Dataset data = small_test_split(s);
    Engine engine(s, data);
    MemoryRecorder record;
    const RunSummary summary = engine.run(record);
    ASSERT_EQ(summary.status, testbed::RunStatus::Completed) << summary.error;
    EXPECT_NEAR(summary.projected_time_s, 3 * step_s, 1e-8);
    EXPECT_EQ(summary.total_bytes, static_cast<uint64_t>(3 * 2 * bytes));
    ASSERT_EQ(record.train_rows.size(), 3u);
    for (const TrainRow& row : record.train_rows) {
      EXPECT_EQ(row.bytes[0], static_cast<uint64_t>(bytes));  // the edge sends the activations
      EXPECT_NEAR(row.compute_time[0], edge_s, 1e-9);         // the edge's own compute
      EXPECT_NEAR(row.time[0], (row.step + 1) * step_s, 1e-8);
    }
    ASSERT_EQ(record.messages.size(), 6u);
    for (int step = 0; step < 3; ++step) {
      const MessageRecord &out = record.messages[2 * step], &back_msg = record.messages[2 * step + 1];
      EXPECT_EQ(out.src, 0);
      EXPECT_EQ(out.dst, 1);  // the cloud: the host after the edge
      EXPECT_EQ(back_msg.src, 1);
      EXPECT_EQ(back_msg.dst, 0);
      EXPECT_EQ(out.kind, "cut.0");
      EXPECT_NEAR(out.t_send, step * step_s + forward_s, 1e-8);
      EXPECT_NEAR(back_msg.t_send, step * step_s + forward_s + message_s + cloud_s, 1e-8);
    }
    EXPECT_GT(summary.final_accuracy, 0);
  }
}

// Edges keep models of their own: an evaluation row is the mean of the edges' models, each
// evaluated on its own (at the end on the whole test split), never an averaged model's. Slips
// caught: the snapshots averaged into one model, the last row's edges left on the sample.
TEST(SplitRun, AnEvaluationIsTheEdgesMean) {
  const Scenario s = parse_scenario(kSplitYaml, "split.yaml", {"nodes=2", "workload.eval_every=2"});
  const Dataset data = small_test_split(s);
  Engine engine(s, data);
  MemoryRecorder record;
  const RunSummary summary = engine.run(record);
  ASSERT_EQ(summary.status, testbed::RunStatus::Completed) << summary.error;
  ASSERT_FALSE(record.eval_rows.empty());
  const EvalRow& last = record.eval_rows.back();
  ASSERT_EQ(last.replica_accuracy.size(), 2u);
  double loss = 0, accuracy = 0;
  for (int n = 0; n < 2; ++n) {
    Model& model = engine.replicas()[n]->model();
    const auto result = evaluate(model, data.task, data.test_inputs, data.test_targets, torch::Device("cpu"));
    EXPECT_DOUBLE_EQ(last.replica_loss[n], result.loss);
    EXPECT_DOUBLE_EQ(last.replica_accuracy[n], result.accuracy);
    loss += result.loss / 2;
    accuracy += result.accuracy / 2;
  }
  EXPECT_NE(last.replica_loss[0], last.replica_loss[1]);  // two models of their own data
  EXPECT_DOUBLE_EQ(last.loss, loss);
  EXPECT_DOUBLE_EQ(last.accuracy, accuracy);
  EXPECT_DOUBLE_EQ(summary.final_accuracy, accuracy);
}

// The cut's keys are checked against the model before anything runs: a layer it does not have,
// a rank above min(f, h), a model with no feed-forward block, a cloud that is not a preset, a
// compute model that cannot time each half.
TEST(SplitRun, BadCutsAreRefusedAtTheirKeys) {
  struct Bad {
    std::string set, key;  // the override and what the error says
  };
  for (const Bad& b : std::vector<Bad>{{"algorithm.layer=3", "split layer 3 is not a block"},
                                       {"algorithm.rank=49", "split rank 49 is outside 1..48"},
                                       {"algorithm.cloud=a1000", "unknown device preset 'a1000'"},
                                       {"compute={model: fixed}", "it needs compute.model flops"}}) {
    SCOPED_TRACE(b.set);
    try {
      parse_scenario(kSplitYaml, "split.yaml", {b.set});
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(b.key), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_scenario("algorithm: {name: split}\n", "cnn.yaml"),
               InputError);  // the CNN has no feed-forward block
}

}  // namespace
}  // namespace testbed
