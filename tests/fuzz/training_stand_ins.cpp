// What the scenario loader reaches on the training side, for the clang fuzzing build, where
// LibTorch's headers do not compile (tests/fuzz/CMakeLists.txt). The loader checks a scenario
// without building an algorithm, so the factories are never called; the model's own shape
// checks (sim/config/model_check.h) are the one rule these harnesses do not exercise.
#include <cstdlib>

#include "sim/config/model_check.h"
#include "training/algorithms/registry.h"

namespace testbed {

ModelShapes check_model(const Scenario&) { return {}; }
size_t second_order_layers(const Scenario&) { return 1; }

#define TESTBED_UNREACHABLE_FACTORY(factory) \
  std::unique_ptr<Algorithm> factory(const AlgorithmSettings&) { std::abort(); }
TESTBED_ALGORITHM_FACTORIES(TESTBED_UNREACHABLE_FACTORY)

}  // namespace testbed
