// Fuzzes the unit parsers: any text gives a value or nullopt, and a value formats and reads back.
#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>

#include "sim/config/units.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace testbed;
  const std::string s = fuzz::text(data, size);
  // A plain number reads in base units, except for a bandwidth-delay multiple (a plain number
  // there would be bytes): that one reads back with its suffix.
  const std::pair<std::optional<double> (*)(const std::string&), const char*> parsers[] = {{parse_bandwidth_bps, ""},
                                                                                           {parse_duration_s, ""},
                                                                                           {parse_bytes, ""},
                                                                                           {parse_fraction, ""},
                                                                                           {parse_bdp_multiple, "bdp"}};
  for (const auto& [parse, suffix] : parsers) {
    const auto value = parse(s);
    if (!value || !std::isfinite(*value)) continue;
    // format_number promises the shortest text that reads back to the same double.
    const auto again = parse(format_number(*value) + suffix);
    if (!again || *again != *value) std::abort();
  }
  return 0;
}
