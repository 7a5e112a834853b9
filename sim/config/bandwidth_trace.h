// Reading a link's bandwidth-over-time CSV trace (rows `time_s,bandwidth`).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "topologies/link_spec.h"

namespace testbed {

// A trace file that cannot be used, with the line and column (1-based) of the first fault.
class TraceError : public std::invalid_argument {
 public:
  TraceError(std::string path, int line, int col, const std::string& message)
      : std::invalid_argument(path + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + message),
        path(std::move(path)),
        line(line),
        col(col),
        message(message) {}
  std::string path;
  int line, col;
  std::string message;
};

// Reads `path`: one change a row, `time,bandwidth`; time in seconds or with a unit (500ms),
// bandwidth as scenarios write it (100Mbps) or in bps. A first line that does not start with a
// number is a header; blank lines and lines starting with '#' are skipped. Times must be >= 0
// and increase, rates > 0, and the file must hold at least one row. Throws TraceError.
std::vector<RateChange> read_bandwidth_trace(const std::string& path);

}  // namespace testbed
