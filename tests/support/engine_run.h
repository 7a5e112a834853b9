// Test helpers: one whole engine run in memory, with every replica's parameters at the end,
// and replicas built as the engine builds them.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include <torch/torch.h>

#include "sim/config/workload.h"
#include "sim/core/engine/engine.h"

namespace testbed {

// make_mlp(784, 128, 10): 784 -> 256 -> 128 -> 10 with biases.
constexpr int64_t kMlpParameters = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10;

struct EngineRun {
  std::vector<torch::Tensor> parameters;  // each replica's, at the end
  MemoryRecorder record;
  RunSummary summary;
};

// Each node's replica as the engine builds it (model, optimizer, shard), for tests that step
// replicas beside a reference implementation.
inline std::vector<std::unique_ptr<Replica>> make_replicas(const Scenario& s, const Dataset& data) {
  std::vector<std::unique_ptr<Replica>> out;
  auto samplers = make_samplers(s, data);
  for (int n = 0; n < s.nodes; ++n)
    out.push_back(
        std::make_unique<Replica>(make_model(s, n), optimizer_config(s), samplers[n], torch::kCPU, data.task));
  return out;
}

// Runs `s` on `data` to the end; a run that does not complete fails the calling test.
inline EngineRun run_engine(const Scenario& s, const Dataset& data) {
  EngineRun r;
  Engine engine(s, data);
  r.summary = engine.run(r.record);
  EXPECT_EQ(r.summary.status, testbed::RunStatus::Completed) << r.summary.error;
  for (const auto& replica : engine.replicas()) r.parameters.push_back(replica->parameters().clone());
  return r;
}

}  // namespace testbed
