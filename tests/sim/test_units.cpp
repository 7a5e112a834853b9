// Tests the SI-suffixed unit parsers (bandwidth, duration, bytes, fraction, memory and FLOP
// rates), their one case rule, the unit-choosing printers and format_number.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sim/config/units.h"

namespace testbed {
namespace {

TEST(Units, BandwidthSuffixes) {
  EXPECT_DOUBLE_EQ(*parse_bandwidth_bps("100Mbps"), 1e8);
  EXPECT_DOUBLE_EQ(*parse_bandwidth_bps("1Gbps"), 1e9);
  EXPECT_DOUBLE_EQ(*parse_bandwidth_bps("10kbps"), 1e4);
  EXPECT_DOUBLE_EQ(*parse_bandwidth_bps("1 MB/s"), 8e6);
}

TEST(Units, DurationSuffixes) {
  EXPECT_DOUBLE_EQ(*parse_duration_s("10ms"), 0.01);
  EXPECT_DOUBLE_EQ(*parse_duration_s("500us"), 5e-4);
  EXPECT_DOUBLE_EQ(*parse_duration_s("2s"), 2.0);
  EXPECT_DOUBLE_EQ(*parse_duration_s("1min"), 60.0);
}

TEST(Units, FractionPercentOrPlain) {
  EXPECT_DOUBLE_EQ(*parse_fraction("1%"), 0.01);
  EXPECT_DOUBLE_EQ(*parse_fraction("0.01"), 0.01);
  EXPECT_DOUBLE_EQ(*parse_fraction("50%"), 0.5);
}

TEST(Units, PlainNumbersAreBaseUnits) {
  EXPECT_DOUBLE_EQ(*parse_bandwidth_bps("1000"), 1000.0);
  EXPECT_DOUBLE_EQ(*parse_duration_s("0.25"), 0.25);
  EXPECT_DOUBLE_EQ(*parse_bytes("4096"), 4096.0);
  EXPECT_DOUBLE_EQ(*parse_bandwidth_bps("1e9"), 1e9);
}

TEST(Units, BytesDecimalAndBinary) {
  EXPECT_DOUBLE_EQ(*parse_bytes("1GB"), 1e9);
  EXPECT_DOUBLE_EQ(*parse_bytes("1MiB"), 1048576.0);
  EXPECT_DOUBLE_EQ(*parse_bytes("2KiB"), 2048.0);
}

TEST(Units, GarbageIsNullopt) {
  EXPECT_FALSE(parse_bandwidth_bps("fast"));
  EXPECT_FALSE(parse_duration_s("10 parsecs"));
  EXPECT_FALSE(parse_duration_s(""));
  EXPECT_FALSE(parse_bandwidth_bps("100Mbs"));
  EXPECT_FALSE(parse_bytes("1GiBs"));
  EXPECT_FALSE(parse_fraction("1%%"));
}

TEST(Units, SuffixOfAnotherQuantityIsRejected) {
  EXPECT_FALSE(parse_duration_s("100Mbps"));
  EXPECT_FALSE(parse_bandwidth_bps("10ms"));
}

TEST(Units, NonFiniteIsRejected) {
  EXPECT_FALSE(parse_fraction("nan"));
  EXPECT_FALSE(parse_duration_s("inf"));
  EXPECT_FALSE(parse_bandwidth_bps("infGbps"));
}

// Case does not matter except bytes against bits: 1gbps is 1Gbps, 1gb/s is nothing.
TEST(Units, OneCaseRuleExceptBytesAgainstBits) {
  EXPECT_EQ(*parse_bandwidth_bps("1gbps"), 1e9);
  EXPECT_FALSE(parse_bandwidth_bps("1GBPS"));  // B is a byte: there is no "GBPS"
  EXPECT_EQ(*parse_bandwidth_bps("1mbit/S"), 1e6);
  EXPECT_EQ(*parse_bandwidth_bps("1gB/s"), 8e9);
  EXPECT_FALSE(parse_bandwidth_bps("1gb/s"));
  EXPECT_EQ(*parse_duration_s("2S"), 2.0);
  EXPECT_EQ(*parse_duration_s("10MS"), 0.01);
  EXPECT_EQ(*parse_bytes("1miB"), 1048576.0);
  EXPECT_FALSE(parse_bytes("1mb"));  // a megabit is not a size
}

TEST(Units, MemoryAndFlopRates) {
  EXPECT_EQ(*parse_byte_rate("2.039TB/s"), 2.039e12);
  EXPECT_EQ(*parse_byte_rate("900GB/s"), 900e9);
  EXPECT_EQ(*parse_byte_rate("8Gbps"), 1e9);  // bits: an eighth as many bytes
  EXPECT_EQ(*parse_byte_rate("1e9"), 1e9);    // a bare number is bytes/s
  EXPECT_EQ(*parse_flop_rate("312TFLOPS"), 312e12);
  EXPECT_EQ(*parse_flop_rate("312 tflop/s"), 312e12);
  EXPECT_EQ(*parse_flop_rate("19.5e12"), 19.5e12);
  EXPECT_FALSE(parse_flop_rate("312TB/s"));
  EXPECT_FALSE(parse_byte_rate("312TFLOPS"));
}

// Below the base unit a suffix divides by an exact power of ten: the value is the decimal's.
TEST(Units, SmallUnitsGiveTheNearestDouble) {
  EXPECT_EQ(*parse_duration_s("5us"), 5e-6);
  EXPECT_EQ(*parse_duration_s("0.3ms"), 0.3e-3);
  EXPECT_EQ(*parse_duration_s("7ns"), 7e-9);
  EXPECT_EQ(*parse_fraction("0.5%"), 0.005);
}

// The largest unit that keeps the number at least 1, with the fewest decimals that read back.
TEST(Units, PrintedInTheirUnits) {
  EXPECT_EQ(format_bandwidth(100e6), "100Mbps");
  EXPECT_EQ(format_bandwidth(1e11), "100Gbps");
  EXPECT_EQ(format_bandwidth(2.5e6), "2.5Mbps");
  EXPECT_EQ(format_bandwidth(999), "999bps");
  EXPECT_EQ(format_bandwidth(0), "0bps");
  EXPECT_EQ(format_duration(0.05), "50ms");
  EXPECT_EQ(format_duration(5e-6), "5us");
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(90), "90s");
  EXPECT_EQ(format_byte_rate(2.039e12), "2.039TB/s");
  EXPECT_EQ(format_flop_rate(82.6e12), "82.6TFLOPS");
  EXPECT_EQ(format_flop_rate(0), "0FLOPS");
  // Whatever the value, the text reads back to the same double.
  for (double v : {1.0 / 3.0, 123456789.125, 4.9999999999999996e-06, 1e-12, 7e15}) {
    EXPECT_EQ(*parse_bandwidth_bps(format_bandwidth(v)), v) << format_bandwidth(v);
    EXPECT_EQ(*parse_duration_s(format_duration(v)), v) << format_duration(v);
    EXPECT_EQ(*parse_byte_rate(format_byte_rate(v)), v) << format_byte_rate(v);
    EXPECT_EQ(*parse_flop_rate(format_flop_rate(v)), v) << format_flop_rate(v);
  }
}

TEST(Units, FormatNumberRoundTrips) {
  for (double v :
       {0.0, 1e8, 0.01, 1e-3, 0.1 + 0.2, 5e-4, 123456789.125, 1.0 / 3.0, std::numeric_limits<double>::min()}) {
    std::string text = format_number(v);
    auto back = parse_fraction(text);
    ASSERT_TRUE(back) << text;
    EXPECT_EQ(*back, v) << text;  // bit-exact
  }
  EXPECT_EQ(format_number(0.01), "0.01");
  EXPECT_EQ(format_number(64), "64");
}

}  // namespace
}  // namespace testbed
