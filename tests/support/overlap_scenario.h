// What the overlap tests (DDP's buckets, DeAR) share: a bucket's expected place, and the run
// they pin by hand: two nodes, alpha-beta links, a
// fixed 50 ms step split over the passes by FLOPs, the synthetic MLP 512 -> 1024 -> 512 -> 10
// (tensors fc1 524288 + 1024, fc2 524288 + 512, fc3 5120 + 10).
#pragma once

#include <string>
#include <vector>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "tests/support/engine_run.h"
#include "training/algorithms/gradient_buckets.h"

namespace testbed {

inline void expect_bucket(const GradientBucket& b, const std::vector<int>& tensors, int64_t elements, int last_ready) {
  EXPECT_EQ(b.tensors, tensors);
  EXPECT_EQ(b.elements, elements);
  EXPECT_EQ(b.last_ready, last_ready);
}

constexpr const char* kOverlapMlp = R"(name: overlap
seed: 5
nodes: 2
threads: 1
topology: {kind: ring, link: {bandwidth: 1Gbps, latency: 100us}}
network: {backend: analytical}
workload: {model: mlp, dataset: synthetic, synthetic: {inputs: 512, hidden: 512, train_samples: 512, test_samples: 64},
           batch_size: 8, steps: 3, eval_every: 3}
compute: {model: fixed, step_time: 50ms}
collective: {library: none}  # the timelines are worked by hand at line rate
)";

class OverlapMlp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { data_ = new Dataset(load_dataset(parse_scenario(kOverlapMlp, "overlap"))); }
  static void TearDownTestSuite() {
    delete data_;
    data_ = nullptr;
  }
  static Scenario scenario(const std::vector<std::string>& sets = {}) {
    return parse_scenario(kOverlapMlp, "overlap", sets);
  }
  static EngineRun run(const std::vector<std::string>& sets) { return run_engine(scenario(sets), *data_); }
  // The same two nodes training a small GPT (2 blocks of `width`, context 32) on Brown: it
  // registers its head before its blocks, so registration order is not forward order.
  static std::vector<std::string> gpt(int width) {
    // The MLP's synthetic task has no effect on Brown: it goes back to its defaults.
    return {"workload.model=gpt",
            "workload.dataset=brown",
            "workload.synthetic={}",
            "workload.batch_size=4",
            "workload.eval_samples=32",
            "workload.gpt={preset: tiny, layers: 2, width: " + std::to_string(width) + ", heads: 2, context: 32}"};
  }
  static EngineRun run_gpt(int width, const std::string& algorithm) {
    auto sets = gpt(width);
    sets.push_back(algorithm);
    const Scenario s = scenario(sets);
    return run_engine(s, load_dataset(s));
  }
  static inline Dataset* data_ = nullptr;
};

}  // namespace testbed
