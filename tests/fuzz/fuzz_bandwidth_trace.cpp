// Fuzzes the bandwidth-trace CSV reader: a trace, or a TraceError naming line and column.
#include <cstdlib>

#include "sim/config/bandwidth_trace.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = testbed::fuzz::scratch_file(".csv", testbed::fuzz::text(data, size));
  try {
    const auto trace = testbed::read_bandwidth_trace(path);
    // What the reader promises of a trace it accepts.
    if (trace.empty()) std::abort();
    for (size_t i = 0; i < trace.size(); ++i) {
      if (!(trace[i].bps > 0) || !(trace[i].time_s >= 0)) std::abort();
      if (i > 0 && !(trace[i].time_s > trace[i - 1].time_s)) std::abort();
    }
  } catch (const testbed::TraceError&) {
  }
  return 0;
}
