// Test helper: one whole engine run in memory, with every replica's parameters at the end.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include <torch/torch.h>

#include "sim/engine.h"

namespace testbed {

// make_mlp(784, 128, 10): 784 -> 256 -> 128 -> 10 with biases.
constexpr int64_t kMlpParameters = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10;

struct EngineRun {
  std::vector<torch::Tensor> parameters;  // each replica's, at the end
  MemoryRecorder record;
  RunSummary summary;
};

// Runs `s` on `data` to the end; a run that does not complete fails the calling test.
inline EngineRun run_engine(const Scenario& s, const Dataset& data) {
  EngineRun r;
  Engine engine(s, data);
  r.summary = engine.run(r.record);
  EXPECT_EQ(r.summary.status, "completed") << r.summary.error;
  for (const auto& replica : engine.replicas()) r.parameters.push_back(replica->parameters().clone());
  return r;
}

}  // namespace testbed
