// What the scenario loader reaches on the training side, for the clang fuzzing build, where
// LibTorch's headers do not compile (tests/fuzz/CMakeLists.txt). The loader checks a scenario
// without building an algorithm, so the factories are never called; the model's own shape
// checks (sim/config/model_check.h) are the one rule these harnesses do not exercise.
#include <cstdlib>

#include "sim/config/model_check.h"
#include "training/algorithms/registry.h"

namespace testbed {

void check_model(const Scenario&) {}

#define TESTBED_UNREACHABLE_FACTORY(name) \
  std::unique_ptr<Algorithm> name(const AlgorithmSettings&) { std::abort(); }
TESTBED_UNREACHABLE_FACTORY(make_ddp)
TESTBED_UNREACHABLE_FACTORY(make_lofi)
TESTBED_UNREACHABLE_FACTORY(make_local_sgd)
TESTBED_UNREACHABLE_FACTORY(make_diloco)
TESTBED_UNREACHABLE_FACTORY(make_streaming_diloco)
TESTBED_UNREACHABLE_FACTORY(make_sparta)
TESTBED_UNREACHABLE_FACTORY(make_sparta_diloco)
TESTBED_UNREACHABLE_FACTORY(make_demo)
TESTBED_UNREACHABLE_FACTORY(make_gossip)
TESTBED_UNREACHABLE_FACTORY(make_topk)
TESTBED_UNREACHABLE_FACTORY(make_signsgd)
TESTBED_UNREACHABLE_FACTORY(make_powersgd)
TESTBED_UNREACHABLE_FACTORY(make_acpsgd)
TESTBED_UNREACHABLE_FACTORY(make_dear)

}  // namespace testbed
