// What guards a run before and while it runs: the memory estimate it is refused on (its parts
// against hand-counted vectors, the refusal against made-up machines) and the one-sentence
// text of a failure inside LibTorch.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "sim/config/scenario_loader.h"
#include "sim/core/error_text.h"
#include "sim/core/memory_estimate.h"
#include "training/dataset.h"

namespace testbed {
namespace run_guards {  // its own names: workload_tests compiles as one unity file
namespace {

constexpr int64_t kParameters = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10;  // the MLP

Dataset small_data() {
  Dataset d;
  d.train_inputs = torch::zeros({100, 784});                // 313600 bytes
  d.train_targets = torch::zeros({100}, torch::kInt64);     // 800
  d.test_inputs = torch::zeros({20, 784});                  // 62720
  d.test_targets = torch::zeros({20}, torch::kInt64);       // 160
  d.train_groups = torch::zeros({100}, torch::kInt64);      // 800
  d.test_variants.push_back({"noise", torch::zeros({20, 784})});  // 62720
  return d;
}
constexpr double kDataBytes = 313600 + 800 + 62720 + 160 + 800 + 62720;

TEST(MemoryEstimate, CountsEachReplicasVectors) {
  // Per node: parameters, gradients, one op buffer, plus the optimizer's and the algorithm's.
  struct Case {
    std::string yaml;
    int vectors;
  };
  const std::vector<Case> cases = {
      {"nodes: 7\n", 2 + 2 + 1},                                                 // adamw's two moments
      {"nodes: 7\nalgorithm: {name: diloco}\n", 2 + 2 + 2 + 1},                  // outer copy + momentum
      {"nodes: 7\nalgorithm: {name: streaming_diloco}\n", 2 + 2 + 2 + 1},
      {"nodes: 7\noptimizer: {name: sgd}\n", 2 + 0 + 1},                         // no momentum buffer
      {"nodes: 7\noptimizer: {name: sgd, momentum: 0.9}\nalgorithm: {name: demo}\n", 2 + 1 + 1 + 1},
      {"nodes: 7\noptimizer: {name: adam}\nalgorithm: {name: sparta}\n", 2 + 2 + 1},
  };
  const Dataset data = small_data();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.yaml);
    const MemoryEstimate e = estimate_memory(parse_scenario(c.yaml, "s.yaml"), data, kParameters);
    EXPECT_EQ(e.vectors_per_replica, c.vectors);
    EXPECT_DOUBLE_EQ(e.replicas_bytes, 7.0 * c.vectors * 4 * kParameters);
    EXPECT_DOUBLE_EQ(e.eval_model_bytes, 4.0 * kParameters);
    EXPECT_DOUBLE_EQ(e.data_bytes, kDataBytes);
    EXPECT_DOUBLE_EQ(e.total_bytes(), 7.0 * c.vectors * 4 * kParameters + 4.0 * kParameters + kDataBytes);
  }
}

TEST(MemoryEstimate, RefusesWhatTheMachineCannotHold) {
  const Dataset data = small_data();
  // 20000 replicas of the MLP under AdamW: 20000 x 5 x 4 x 235146 bytes, about 87.6 GiB.
  const MemoryEstimate big = estimate_memory(parse_scenario("nodes: 20000\n", "s.yaml"), data, kParameters);
  EXPECT_NEAR(big.total_bytes() / (1 << 30), 20000.0 * 5 * 4 * kParameters / (1 << 30), 0.01);
  MachineMemory machine;
  machine.available_bytes = 24.0 * (1 << 30);
  const std::string why = memory_refusal(big, machine, 20000);
  EXPECT_NE(why.find("needs about 87.6"), std::string::npos) << why;
  EXPECT_NE(why.find("20000 replicas x 5 vectors of 235146 parameters"), std::string::npos) << why;
  EXPECT_NE(why.find("24.00 GiB available"), std::string::npos) << why;

  const MemoryEstimate small = estimate_memory(parse_scenario("nodes: 4\n", "s.yaml"), data, kParameters);
  EXPECT_EQ(memory_refusal(small, machine, 4), "");
  // Under ulimit -v, what the process maps already counts too.
  machine.address_space_limit = 2.0 * (1 << 30);
  machine.address_space_used = 2.0 * (1 << 30) - small.total_bytes() + 1;
  EXPECT_NE(memory_refusal(small, machine, 4).find("limited to 2.00 GiB (ulimit -v)"), std::string::npos);
  machine.address_space_used = 2.0 * (1 << 30) - small.total_bytes() - 1;
  EXPECT_EQ(memory_refusal(small, machine, 4), "");
}

TEST(MemoryEstimate, ReadsThisMachine) {
  const MachineMemory m = machine_memory();
  EXPECT_GT(m.available_bytes, 0);
  EXPECT_GT(m.address_space_used, 0);
}

// A LibTorch failure reads as one sentence: its message, no C++ backtrace.
TEST(ErrorSentence, LibTorchFailuresLoseTheirBacktrace) {
  std::string what, sentence;
  try {
    (void)torch::mm(torch::zeros({2, 3}), torch::zeros({4, 5}));
  } catch (const std::exception& e) {
    what = e.what();
    sentence = error_sentence(e);
  }
  ASSERT_NE(what.find("Exception raised from"), std::string::npos) << "LibTorch's own text changed: " << what;
  EXPECT_EQ(sentence.rfind("LibTorch failed: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)", 0), 0u)
      << sentence;
  EXPECT_EQ(sentence.find("Exception raised from"), std::string::npos) << sentence;
  EXPECT_EQ(sentence.find("frame #"), std::string::npos) << sentence;
  EXPECT_EQ(sentence.find('\n'), std::string::npos) << sentence;

  try {
    throw std::bad_alloc();
  } catch (const std::exception& e) {
    EXPECT_EQ(error_sentence(e), "out of memory: an allocation failed (std::bad_alloc)");
  }
  try {
    throw std::runtime_error("plain words");
  } catch (const std::exception& e) {
    EXPECT_EQ(error_sentence(e), "plain words");
  }
}

}  // namespace
}  // namespace run_guards
}  // namespace testbed
