// The progress line: rewritten on a terminal, a line at a time elsewhere.
#include "sim/tools/progress.h"

#include <cmath>
#include <cstdio>
#include <memory>

namespace testbed {

std::function<void(const Progress&)> progress_printer(ProgressSink sink) {
  auto last = std::make_shared<double>(0.0);  // host seconds of the last line written elsewhere
  return [sink = std::move(sink), last](const Progress& p) {
    const double elapsed = sink.host_seconds();
    if (!sink.terminal && elapsed - *last < sink.interval_s) return;
    *last = elapsed;
    const double eta = elapsed / p.step * (p.steps - p.step);
    char text[160];
    if (std::isnan(p.loss))  // a projection
      std::snprintf(text, sizeof text, "step %d/%d  projected %.2f s  ETA %.0f s", p.step, p.steps, p.projected_time_s,
                    eta);
    else
      std::snprintf(text, sizeof text, "step %d/%d  loss %.4f  projected %.2f s  ETA %.0f s", p.step, p.steps, p.loss,
                    p.projected_time_s, eta);
    sink.write(sink.terminal ? "\r" + std::string(text) + "   " : std::string(text) + "\n");
  };
}

}  // namespace testbed
