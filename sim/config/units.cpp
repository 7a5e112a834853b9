// Unit parsing: a number followed by an optional suffix from a fixed table.
#include "sim/config/units.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace testbed {
namespace {

using Suffixes = std::vector<std::pair<const char*, double>>;

std::optional<double> parse_with_suffixes(const std::string& text, const Suffixes& suffixes) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  while (begin < end && *begin == ' ') ++begin;
  while (end > begin && end[-1] == ' ') --end;
  double value = 0;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  // from_chars also reads "nan" and "inf", which no quantity may be.
  if (ec != std::errc() || ptr == begin || !std::isfinite(value)) return std::nullopt;
  std::string suffix(ptr, end);
  while (!suffix.empty() && suffix.front() == ' ') suffix.erase(suffix.begin());
  if (suffix.empty()) return value;
  for (const auto& [name, scale] : suffixes) {
    if (suffix == name) return value * scale;
  }
  return std::nullopt;
}

}  // namespace

std::optional<double> parse_bandwidth_bps(const std::string& text) {
  static const Suffixes suffixes = {
      {"bps", 1},       {"kbps", 1e3},     {"Kbps", 1e3},     {"Mbps", 1e6},
      {"Gbps", 1e9},    {"Tbps", 1e12},    {"B/s", 8},        {"kB/s", 8e3},
      {"KB/s", 8e3},    {"MB/s", 8e6},     {"GB/s", 8e9},     {"TB/s", 8e12},
      {"bit/s", 1},     {"kbit/s", 1e3},   {"Mbit/s", 1e6},   {"Gbit/s", 1e9}};
  return parse_with_suffixes(text, suffixes);
}

std::optional<double> parse_duration_s(const std::string& text) {
  static const Suffixes suffixes = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3},
                                    {"s", 1},     {"min", 60},  {"h", 3600}};
  return parse_with_suffixes(text, suffixes);
}

std::optional<double> parse_bytes(const std::string& text) {
  static const Suffixes suffixes = {
      {"B", 1},         {"kB", 1e3},        {"KB", 1e3},         {"MB", 1e6},
      {"GB", 1e9},      {"TB", 1e12},       {"KiB", 1024.0},     {"MiB", 1048576.0},
      {"GiB", 1073741824.0}};
  return parse_with_suffixes(text, suffixes);
}

std::optional<double> parse_fraction(const std::string& text) {
  static const Suffixes suffixes = {{"%", 0.01}};
  return parse_with_suffixes(text, suffixes);
}

std::optional<double> parse_bdp_multiple(const std::string& text) {
  // The suffix is required: a plain number is a byte count (parse_bytes).
  if (text.size() < 3 || text.compare(text.size() - 3, 3, "bdp") != 0) return std::nullopt;
  static const Suffixes suffixes = {{"bdp", 1}};
  return parse_with_suffixes(text, suffixes);
}

std::string format_number(double value) {
  char buffer[64];
  auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc() ? std::string(buffer, ptr) : std::to_string(value);
}

}  // namespace testbed
