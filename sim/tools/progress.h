// How a run's progress reaches the person who started it: on a terminal, one line rewritten
// after every step; anywhere else (a log file, a pipe, a batch job's output) a whole line at most
// every `interval_s` seconds of host time, so that a long run still says it is alive without
// filling its log.
#pragma once

#include <functional>
#include <string>

#include "sim/core/engine/engine.h"

namespace testbed {

struct ProgressSink {
  bool terminal = false;                          // rewrite one line ("\r") after every step
  double interval_s = 30;                         // elsewhere: at most one line this often
  std::function<double()> host_seconds;           // since the run started
  std::function<void(const std::string&)> write;  // where the text goes (stderr)
};

// The step, its loss (none in a projection), the projected time so far and the host time left.
std::function<void(const Progress&)> progress_printer(ProgressSink sink);

}  // namespace testbed
