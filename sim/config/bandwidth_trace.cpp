// CSV bandwidth traces: strict, so that a typo in row 900 is not a silent zero.
#include "sim/config/bandwidth_trace.h"

#include <cctype>
#include <filesystem>
#include <fstream>

#include "sim/config/units.h"

namespace testbed {

namespace {

// The text between `from` and `to` without surrounding blanks, and the column it starts at.
std::string trimmed(const std::string& line, size_t from, size_t to, int& col) {
  while (from < to && std::isspace(static_cast<unsigned char>(line[from]))) ++from;
  while (to > from && std::isspace(static_cast<unsigned char>(line[to - 1]))) --to;
  col = static_cast<int>(from) + 1;
  return line.substr(from, to - from);
}

}  // namespace

std::vector<RateChange> read_bandwidth_trace(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw TraceError(path, 1, 1, "no such trace file");
  std::ifstream in(path);
  if (!in) throw TraceError(path, 1, 1, "cannot open the trace file");
  std::vector<RateChange> out;
  std::string line;
  int number = 0;
  bool first = true;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // files written on Windows
    int col = 1;
    const std::string whole = trimmed(line, 0, line.size(), col);
    if (whole.empty() || whole[0] == '#') continue;
    const size_t comma = line.find(',');
    int time_col = 1, rate_col = 1;
    const std::string time_text = trimmed(line, 0, comma == std::string::npos ? line.size() : comma, time_col);
    const auto time = parse_duration_s(time_text);
    if (first && !time) {  // a header such as `time_s,bandwidth`
      first = false;
      continue;
    }
    first = false;
    if (comma == std::string::npos || line.find(',', comma + 1) != std::string::npos)
      throw TraceError(path, number, 1, "a row is `time,bandwidth` (two fields), got '" + whole + "'");
    const std::string rate_text = trimmed(line, comma + 1, line.size(), rate_col);
    if (!time) throw TraceError(path, number, time_col, "cannot read time '" + time_text + "' (seconds, or 500ms)");
    if (!(*time >= 0)) throw TraceError(path, number, time_col, "time " + time_text + " is before 0");
    if (!out.empty() && !(*time > out.back().time_s))
      throw TraceError(
          path, number, time_col,
          "time " + time_text + " is not after the previous row's " + format_number(out.back().time_s) + " s");
    const auto rate = parse_bandwidth_bps(rate_text);
    if (!rate) throw TraceError(path, number, rate_col, "cannot read bandwidth '" + rate_text + "' (100Mbps, or bps)");
    if (!(*rate > 0 && *rate < 1e15))
      throw TraceError(path, number, rate_col, "bandwidth " + rate_text + " must be in (0, 1e15) bps");
    out.push_back({*time, *rate});
  }
  if (in.bad()) throw TraceError(path, number, 1, "cannot read the trace file");
  if (out.empty()) throw TraceError(path, 1, 1, "the trace holds no rows (`time,bandwidth`)");
  return out;
}

}  // namespace testbed
