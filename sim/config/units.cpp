// Unit parsing and printing: a number followed by an optional suffix from a fixed table.
#include "sim/config/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

namespace testbed {
namespace {

using Suffixes = std::vector<std::pair<const char*, double>>;

// The one case rule (docs/scenario.md, Units): a unit is matched without regard to case, except
// that B (byte) and b (bit) differ, so 1gbps is 1Gbps and 1GB/s is not 1Gb/s.
bool same_unit(const std::string& written, const char* name) {
  size_t i = 0;
  for (; i < written.size() && name[i]; ++i) {
    const char a = written[i], b = name[i];
    const bool byte_or_bit = a == 'b' || a == 'B' || b == 'b' || b == 'B';
    if (byte_or_bit ? a != b
                    : std::tolower(static_cast<unsigned char>(a)) != std::tolower(static_cast<unsigned char>(b)))
      return false;
  }
  return i == written.size() && !name[i];
}

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
    if (!same_unit(suffix, name)) continue;
    // A power-of-ten unit shifts the decimal exponent, so that 5us is the double nearest 5e-6
    // and 2.039TB/s the one nearest 2.039e12 (5 x 1e-6 and 2.039 x 1e12 are not).
    const double power = std::log10(scale);
    if (std::fabs(power - std::round(power)) > 1e-9) return value * scale;  // 8 (B/s), 1024, 60
    std::string number(begin, ptr);
    long exponent = std::lround(power);
    if (auto e = number.find_first_of("eE"); e != std::string::npos) {
      exponent += std::strtol(number.c_str() + e + 1, nullptr, 10);
      number.erase(e);
    }
    number += "e" + std::to_string(exponent);
    double shifted = 0;
    auto read = std::from_chars(number.data(), number.data() + number.size(), shifted);
    if (read.ec != std::errc() || !std::isfinite(shifted)) return std::nullopt;
    return shifted;
  }
  return std::nullopt;
}

}  // namespace

std::optional<double> parse_bandwidth_bps(const std::string& text) {
  static const Suffixes suffixes = {{"bps", 1},    {"kbps", 1e3},   {"Kbps", 1e3},   {"Mbps", 1e6},
                                    {"Gbps", 1e9}, {"Tbps", 1e12},  {"B/s", 8},      {"kB/s", 8e3},
                                    {"KB/s", 8e3}, {"MB/s", 8e6},   {"GB/s", 8e9},   {"TB/s", 8e12},
                                    {"bit/s", 1},  {"kbit/s", 1e3}, {"Mbit/s", 1e6}, {"Gbit/s", 1e9}};
  return parse_with_suffixes(text, suffixes);
}

std::optional<double> parse_duration_s(const std::string& text) {
  static const Suffixes suffixes = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"min", 60}, {"h", 3600}};
  return parse_with_suffixes(text, suffixes);
}

std::optional<double> parse_bytes(const std::string& text) {
  static const Suffixes suffixes = {{"B", 1},        {"kB", 1e3},        {"KB", 1e3},
                                    {"MB", 1e6},     {"GB", 1e9},        {"TB", 1e12},
                                    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
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

std::optional<double> parse_byte_rate(const std::string& text) {
  static const Suffixes suffixes = {{"B/s", 1},        {"kB/s", 1e3},     {"MB/s", 1e6},     {"GB/s", 1e9},
                                    {"TB/s", 1e12},    {"bps", 1.0 / 8},  {"kbps", 1e3 / 8}, {"Mbps", 1e6 / 8},
                                    {"Gbps", 1e9 / 8}, {"Tbps", 1e12 / 8}};
  return parse_with_suffixes(text, suffixes);
}

std::optional<double> parse_flop_rate(const std::string& text) {
  static const Suffixes suffixes = {{"FLOPS", 1},     {"kFLOPS", 1e3},  {"MFLOPS", 1e6},   {"GFLOPS", 1e9},
                                    {"TFLOPS", 1e12}, {"PFLOPS", 1e15}, {"FLOP/s", 1},     {"kFLOP/s", 1e3},
                                    {"MFLOP/s", 1e6}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15}};
  return parse_with_suffixes(text, suffixes);
}

namespace {

// The largest unit that leaves at least 1 and reads back to the same double; else the number in
// the base unit, shortest form, with the unit still written (a bare number does not read back).
std::string format_with_units(double value, const Suffixes& units, std::optional<double> (*parse)(const std::string&)) {
  for (const auto& [name, scale] : units) {
    if (value == 0) {  // nothing, in the base unit: "0s", "0bps"
      if (scale == 1) return std::string("0") + name;
      continue;
    }
    if (std::fabs(value) < scale && scale != units.back().second) continue;
    // The fewest decimals that read back: 0.05 s is "50ms", not "50.00000000000001ms".
    for (int decimals = 0; decimals <= 17; ++decimals) {
      char number[40];
      std::snprintf(number, sizeof number, "%.*f", decimals, value / scale);
      std::string text = std::string(number) + name;
      if (auto back = parse(text); back && *back == value) return text;
    }
  }
  for (const auto& [name, scale] : units)
    if (scale == 1) return format_number(value) + name;
  return format_number(value);
}

}  // namespace

std::string format_bandwidth(double bps) {
  static const Suffixes units = {{"Tbps", 1e12}, {"Gbps", 1e9}, {"Mbps", 1e6}, {"kbps", 1e3}, {"bps", 1}};
  return format_with_units(bps, units, parse_bandwidth_bps);
}

std::string format_duration(double s) {
  static const Suffixes units = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  return format_with_units(s, units, parse_duration_s);
}

std::string format_byte_rate(double bytes_per_s) {
  static const Suffixes units = {{"TB/s", 1e12}, {"GB/s", 1e9}, {"MB/s", 1e6}, {"kB/s", 1e3}, {"B/s", 1}};
  return format_with_units(bytes_per_s, units, parse_byte_rate);
}

std::string format_flop_rate(double flops) {
  static const Suffixes units = {{"PFLOPS", 1e15}, {"TFLOPS", 1e12}, {"GFLOPS", 1e9},
                                 {"MFLOPS", 1e6},  {"kFLOPS", 1e3},  {"FLOPS", 1}};
  return format_with_units(flops, units, parse_flop_rate);
}

std::string format_number(double value) {
  char buffer[64];
  auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc() ? std::string(buffer, ptr) : std::to_string(value);
}

}  // namespace testbed
