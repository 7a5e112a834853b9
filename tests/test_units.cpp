// Tests the SI-suffixed unit parsers (bandwidth, duration, bytes, fraction) and format_number.
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

TEST(Units, FormatNumberRoundTrips) {
  for (double v : {0.0, 1e8, 0.01, 1e-3, 0.1 + 0.2, 5e-4, 123456789.125, 1.0 / 3.0,
                   std::numeric_limits<double>::min()}) {
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
