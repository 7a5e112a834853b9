// Quantities with SI-suffixed units as scenarios write them: 100Mbps, 10ms, 1GB, 1%, 2TB/s,
// 312TFLOPS. Units match without regard to case except B (byte) against b (bit).
#pragma once

#include <optional>
#include <string>

namespace testbed {

// Each returns nullopt when the text is not a number with a known suffix.
// A plain number is taken in base units (bps, seconds, bytes, probability).
std::optional<double> parse_bandwidth_bps(const std::string& text);  // bps kbps Mbps Gbps Tbps, B/s forms
std::optional<double> parse_duration_s(const std::string& text);     // ns us ms s min h
std::optional<double> parse_bytes(const std::string& text);          // B kB MB GB TB KiB MiB GiB
std::optional<double> parse_fraction(const std::string& text);       // 0.01 or 1%
std::optional<double> parse_byte_rate(const std::string& text);      // B/s kB/s .. TB/s, or bit forms (Gbps = 1/8 GB/s)
std::optional<double> parse_flop_rate(const std::string& text);      // FLOPS kFLOPS .. PFLOPS, FLOP/s forms
std::optional<double> parse_bdp_multiple(
    const std::string& text);  // 1bdp 0.5bdp: a multiple of a bandwidth-delay product

// A quantity in the largest unit that keeps it at least 1 and reads back bit-exact
// ("100Mbps", "5us", "2.039TB/s", "82.6TFLOPS"); a bare base-unit number when none does.
std::string format_bandwidth(double bps);
std::string format_duration(double s);
std::string format_byte_rate(double bytes_per_s);
std::string format_flop_rate(double flops);

// Shortest decimal text that reads back to the same double.
std::string format_number(double value);

}  // namespace testbed
