// DDP through the engine with every all-reduce algorithm: real tensors ride each plan through
// sim/core/engine/collective_run, so every algorithm must keep the replicas identical and train the same
// model as the ring, up to float summation order.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/engine/engine.h"

namespace testbed {
namespace {

Scenario ddp_with(const std::string& algorithm, int slices) {
  return parse_scenario(R"(
name: collective_ddp_test
seed: 5
nodes: 5
threads: 1
topology: {kind: star, link: {bandwidth: 1Gbps, latency: 1ms}}
network: {backend: flow}
collective: {algorithm: )" + algorithm +
                            ", slices: " + std::to_string(slices) +
                            (algorithm == "parameter_server" ? ", server: 2" : "") +
                            (algorithm == "hierarchical" ? ", clusters: [[0, 1], [2, 3, 4]]" : "") + R"(}
workload: {model: mlp, batch_size: 16, steps: 4, eval_every: 4, eval_samples: 200}
optimizer: {name: sgd, lr: 0.05, momentum: 0.9}
compute: {model: fixed, step_time: 10ms}
)",
                        "collective_ddp_test");
}

// Under the default library (NCCL's message latency before each message leaves) as well: the
// slip caught there is a message's values taken when it goes on the wire instead of when its
// dependencies are in, which lets another message's arrival into the same slice ride along (the
// tree, halving-doubling and parameter-server replicas then differ).
TEST(CollectiveDdp, EveryAlgorithmTrainsTheRingsModel) {
  const Dataset data = load_dataset(ddp_with("ring", 1));
  auto train = [&](const std::string& algorithm, int slices) {
    MemoryRecorder rec;
    const Scenario scenario = ddp_with(algorithm, slices);  // the engine keeps a reference
    Engine engine(scenario, data);
    const auto summary = engine.run(rec);
    EXPECT_EQ(summary.status, testbed::RunStatus::Completed) << algorithm << ": " << summary.error;
    auto first = flatten_parameters(engine.replicas()[0]->model());
    for (const auto& r : engine.replicas())
      EXPECT_TRUE(torch::equal(first, flatten_parameters(r->model()))) << algorithm << ": replicas differ";
    return first;
  };
  const auto ring = train("ring", 1);
  const auto initial = flatten_parameters(*make_model(ddp_with("ring", 1)));
  EXPECT_GT((ring - initial).abs().max().item<double>(), 1e-3);  // training moved the weights
  // Slicing keeps each element's ring path, so its sums are the same bits.
  EXPECT_TRUE(torch::equal(ring, train("ring", 3)));
  for (const char* algorithm : {"tree", "halving_doubling", "direct", "parameter_server", "hierarchical"}) {
    // Slices pipeline a ring: only the hierarchical leaders' has one (the others refuse the key).
    const auto got = train(algorithm, std::string(algorithm) == "hierarchical" ? 2 : 1);
    const double relative = ((got - ring).abs().max() / ring.abs().max()).item<double>();
    EXPECT_LT(relative, 1e-5) << algorithm;
  }
}

}  // namespace
}  // namespace testbed
