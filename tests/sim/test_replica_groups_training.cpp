// Replica groups training for real (docs/replica_groups.md#training): a group of GPUs under each
// parallelism ends with the parameters of one replica trained on the group's whole batch, worked
// out here by a plain loop (one model, the group's batches, the mean of their micro-batches'
// gradients, the optimizer), and an algorithm across groups ends where it ends across single
// replicas on the same data. Floating point: the group sums its GPUs' gradients in the ring's
// order where the loop sums them in rank order (a few ulps).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/engine/engine.h"
#include "tests/support/engine_run.h"

namespace testbed {
namespace replica_groups_training_test {
namespace {

// Parameters agree to this under SGD (measured: 1.5e-8 after 4 steps); one step of the runs
// below moves them by 1e-3 (AdamW) or more.
constexpr double kTolerance = 1e-6;
// Under AdamW (lr 1e-3) an element whose gradient is all rounding (1e-10: terms of 1e-3 that
// cancel, its sign differing with the order of a sum) steps by up to lr x 1e-10 / eps (eps
// 1e-8), and the next steps keep it: the tiny GPT's such elements end up to 6.3e-5 apart after
// 4 steps (measured; 3e-4 of the run's movement in norm). A slice written to the wrong place
// moves its elements by up to 2 lr.
constexpr double kAdamTolerance = 1e-4;

const Dataset& dataset(const Scenario& s) {
  static std::map<std::string, std::unique_ptr<Dataset>> cache;
  auto& slot = cache[s.workload.dataset];
  if (!slot) {
    slot = std::make_unique<Dataset>(load_dataset(s));
    slot->test_inputs = slot->test_inputs.slice(0, 0, 64);  // the evaluations change no parameter
    slot->test_targets = slot->test_targets.slice(0, 0, 64);
  }
  return *slot;
}

std::string workload(const std::string& model, int batch, int steps) {
  const std::string common = ", batch_size: " + std::to_string(batch) + ", steps: " + std::to_string(steps) +
                             ", eval_every: 1000, eval_samples: 16";
  return model == "gpt" ? "workload: {model: gpt, dataset: brown" + common +
                              ", gpt: {preset: tiny, layers: 2, width: 48, heads: 2, context: 24}}\n"
                        : "workload: {model: cnn" + common + "}\n";
}

// The model's FSDP units: the GPT's blocks (its default), the CNN's convolutions (its classifier
// is then the root's).
std::string group(int gpus, const std::string& parallelism, const std::string& model) {
  return "replica_group: {gpus: " + std::to_string(gpus) + ", parallelism: " + parallelism +
         (parallelism == "fsdp" && model == "cnn" ? ", unit: 'conv*'" : "") + "}\n";
}

Scenario scenario(const std::string& yaml) {
  return parse_scenario(
      "name: groups\nthreads: 1\nnetwork: {backend: flow}\ncompute: {model: flops, device: a100}\n" + yaml,
      "groups.yaml");
}

// Every replica's trainable parameters at the end of the run.
std::vector<torch::Tensor> trained(const Scenario& s) {
  Engine engine(s, dataset(s));
  MemoryRecorder record;
  const RunSummary summary = engine.run(record);
  EXPECT_EQ(summary.status, testbed::RunStatus::Completed) << summary.error;
  std::vector<torch::Tensor> out;
  for (const auto& replica : engine.replicas()) out.push_back(replica->parameters().clone());
  return out;
}

double max_difference(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

struct GroupCase {
  std::string parallelism, model, optimizer;
};
void PrintTo(const GroupCase& c, std::ostream* os) { *os << c.parallelism << " " << c.model << " " << c.optimizer; }

class OneGroup : public ::testing::TestWithParam<GroupCase> {};

// One group of 4 GPUs, each on a micro-batch of 4, DDP across the one group (an all-reduce of
// one), 4 steps; against the plain loop: one replica, the group's shard and its 16-sample
// batches, the mean of the gradients of their 4 micro-batches, the optimizer. AdamW (the
// default) and SGD, which unlike Adam is not blind to the gradient's scale; each element and the
// norm of the difference against the run's movement. Slips caught: the
// group's sum not divided by its GPUs (SGD steps 4x), a reduce-scatter's share written to
// another GPU's slice or an all-gather's block to the wrong place (those elements keep one
// GPU's gradient), a GPU training on the group's whole batch or on another's micro-batch, the
// FSDP root's slice never gathered.
TEST_P(OneGroup, EqualsOneReplicaOnTheGroupsBatch) {
  const GroupCase& c = GetParam();
  const bool adam = c.optimizer == "adamw";
  const std::string optimizer = adam ? "" : "optimizer: {name: sgd, lr: 0.05}\n";
  const Scenario grouped = scenario("nodes: 4\ntopology: {kind: gpu_hosts, gpus_per_host: 4}\n" +
                                    workload(c.model, 4, 4) + group(4, c.parallelism, c.model) + optimizer);
  const Scenario single = scenario("nodes: 1\n" + workload(c.model, 16, 4) + optimizer);
  const Dataset& data = dataset(single);
  Replica replica(make_model(single, 0), optimizer_config(single, 0), std::move(make_samplers(single, data).at(0)),
                  torch::Device(torch::kCPU), data.task);
  const torch::Tensor start = replica.parameters().clone();
  double one_step = 0;
  for (int step = 0; step < 4; ++step) {
    const Batch batch = replica.next_batch(data, 16);
    torch::Tensor sum = torch::zeros_like(replica.gradients());
    for (int64_t r = 0; r < 4; ++r) {
      replica.forward_backward({batch.inputs.narrow(0, 4 * r, 4), batch.targets.narrow(0, 4 * r, 4)});
      sum += replica.gradients();
    }
    replica.gradients().copy_(sum / 4);
    const torch::Tensor before = replica.parameters().clone();
    replica.optimizer_step();
    if (step == 0) one_step = max_difference(replica.parameters(), before);
  }
  ASSERT_GE(one_step, 1e-3 * 0.99);
  const auto gpus = trained(grouped);
  ASSERT_EQ(gpus.size(), 4u);
  for (size_t g = 0; g < gpus.size(); ++g) {
    const double relative =
        ((gpus[g] - replica.parameters()).norm() / (replica.parameters() - start).norm()).item<double>();
    EXPECT_LT(max_difference(gpus[g], replica.parameters()), adam ? kAdamTolerance : kTolerance) << "GPU " << g;
    EXPECT_LT(relative, adam ? 1e-3 : 1e-5) << "GPU " << g;
    EXPECT_GT(max_difference(gpus[g], start), one_step) << "GPU " << g;
  }
}

std::vector<GroupCase> group_cases() {
  std::vector<GroupCase> out;
  for (const char* p : {"ddp", "zero1", "zero2", "fsdp"})
    for (const char* m : {"cnn", "gpt"})
      for (const char* o : {"adamw", "sgd"}) out.push_back({p, m, o});
  return out;
}
INSTANTIATE_TEST_SUITE_P(Parallelisms, OneGroup, ::testing::ValuesIn(group_cases()),
                         [](const ::testing::TestParamInfo<GroupCase>& info) {
                           return info.param.parallelism + "_" + info.param.model + "_" + info.param.optimizer;
                         });

struct AcrossCase {
  std::string algorithm, parallelism, model;
};
void PrintTo(const AcrossCase& c, std::ostream* os) {
  *os << c.algorithm << " across " << c.parallelism << " " << c.model;
}

class AcrossGroups : public ::testing::TestWithParam<AcrossCase> {};

// The algorithm across 2 groups of 2 GPUs (micro-batches of 4) against the same algorithm
// across 2 single replicas (batches of 8) on the same shards, 5 steps (the last one's training
// not yet averaged, so that the replicas differ): every GPU of group g ends with replica g's
// parameters. The single replicas' DiLoCo and local SGD are held to the papers' pseudo-code by
// reference_tests. The inner optimizer is SGD with momentum: a single replica takes one mean
// of its batch, and Adam divides by the root of the gradient's second moment, which turns a
// gradient that is all rounding (1e-10, its sign differing between one mean and the mean of
// two) into a step of up to lr x 1e-10 / eps, 5e-5 after one step of the tiny GPT. Slips
// caught: a sharded GPU sending a slice of the outer gradient it does not own (those elements
// would average stale values), the outer step applied to a ddp group's slice before the group
// has gathered the rest, a group's GPUs sharing one copy of the algorithm's state (the outer
// step taken twice).
TEST_P(AcrossGroups, EqualsTheAlgorithmAcrossSingleReplicas) {
  const AcrossCase& c = GetParam();
  const std::string algorithm = "algorithm: {name: " + c.algorithm + (c.algorithm == "ddp" ? "" : ", H: 2") +
                                "}\noptimizer: {name: sgd, lr: 0.05, momentum: 0.9}\n";
  const Scenario grouped = scenario("nodes: 4\ntopology: {kind: gpu_hosts, gpus_per_host: 2}\n" +
                                    workload(c.model, 4, 5) + group(2, c.parallelism, c.model) + algorithm);
  const Scenario singles =
      scenario("nodes: 2\ntopology: {kind: gpu_hosts, gpus_per_host: 1}\n" + workload(c.model, 8, 5) + algorithm);
  const auto gpus = trained(grouped), replicas = trained(singles);
  ASSERT_EQ(gpus.size(), 4u);
  ASSERT_EQ(replicas.size(), 2u);
  if (c.algorithm != "ddp") ASSERT_GT(max_difference(replicas[0], replicas[1]), 1000 * kTolerance);
  for (size_t g = 0; g < gpus.size(); ++g)
    EXPECT_LT(max_difference(gpus[g], replicas[g / 2]), kTolerance) << "GPU " << g;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AcrossGroups,
                         ::testing::Values(AcrossCase{"diloco", "fsdp", "gpt"}, AcrossCase{"diloco", "fsdp", "cnn"},
                                           AcrossCase{"diloco", "zero1", "cnn"}, AcrossCase{"diloco", "ddp", "gpt"},
                                           AcrossCase{"local_sgd", "zero2", "gpt"},
                                           AcrossCase{"local_sgd", "ddp", "cnn"}, AcrossCase{"ddp", "fsdp", "cnn"},
                                           AcrossCase{"ddp", "zero2", "gpt"}),
                         [](const ::testing::TestParamInfo<AcrossCase>& info) {
                           return info.param.algorithm + "_" + info.param.parallelism + "_" + info.param.model;
                         });

// workload.init: independent seeds each replica's weights apart; a group is one replica, so its
// GPUs start alike and apart from the next group's, whose first GPU starts as the second replica
// of an ungrouped run would. Slip caught: the GPU's node index taken as the replica's (each GPU
// of a ddp group would train its own weights for ever).
TEST(ReplicaGroupsInit, IndependentInitIsTheGroups) {
  const std::string common =
      "topology: {kind: gpu_hosts, gpus_per_host: 2}\n"
      "workload: {model: cnn, batch_size: 4, steps: 1, init: independent}\n";
  const Scenario grouped = scenario("nodes: 4\n" + common + "replica_group: {gpus: 2}\n");
  const Scenario singles = scenario("nodes: 2\n" + common);
  ASSERT_EQ(grouped.workload.init, "independent");
  auto weights = [](const Scenario& s, int node) { return flatten_parameters(*make_model(s, node)); };
  EXPECT_TRUE(torch::equal(weights(grouped, 0), weights(grouped, 1)));
  EXPECT_TRUE(torch::equal(weights(grouped, 2), weights(grouped, 3)));
  EXPECT_FALSE(torch::equal(weights(grouped, 0), weights(grouped, 2)));
  EXPECT_TRUE(torch::equal(weights(grouped, 2), weights(singles, 1)));
}

}  // namespace
}  // namespace replica_groups_training_test
}  // namespace testbed
