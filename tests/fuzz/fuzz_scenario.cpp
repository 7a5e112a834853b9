// Fuzzes the scenario loader with overrides: the input is YAML, then after a line "---SET---"
// one `--set key=value` a line. Every outcome is a Scenario or a ScenarioError (file:line:col).
#include <sstream>

#include "sim/config/input_error.h"
#include "sim/config/scenario_loader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = testbed::fuzz::text(data, size);
  const std::string marker = "\n---SET---\n";
  const size_t cut = input.find(marker);
  const std::string yaml = input.substr(0, cut);
  std::vector<std::string> sets;
  if (cut != std::string::npos) {
    std::istringstream lines(input.substr(cut + marker.size()));
    for (std::string line; std::getline(lines, line);) sets.push_back(line);
  }
  try {
    const testbed::Scenario s = testbed::parse_scenario(yaml, "fuzz.yaml", sets);
    // What validate prints must load again.
    (void)testbed::parse_scenario(testbed::to_yaml(s), "again.yaml");
  } catch (const testbed::InputError&) {
  }
  return 0;
}
