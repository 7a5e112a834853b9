// Fuzzes the sweep loader and the check of every run it expands to: a sweep, or an InputError
// at file:line:col. The base scenario a sweep names is `base.yaml` in the sweep's folder.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sim/config/input_error.h"
#include "sim/tools/sweep.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    const std::string d = "/tmp/testbed_fuzz_sweep_" + std::to_string(::getpid());
    std::filesystem::create_directories(d);
    std::ofstream(d + "/base.yaml") << "nodes: 2\nworkload: {model: mlp, dataset: synthetic, steps: 2}\n"
                                       "compute: {model: fixed, step_time: 10ms}\n";
    return d;
  }();
  try {
    const testbed::Sweep sweep = testbed::parse_sweep(testbed::fuzz::text(data, size), "sweep.yaml", dir);
    if (sweep.runs.size() <= 64) testbed::validate_sweep(sweep, 1);
  } catch (const testbed::InputError&) {
  }
  return 0;
}
