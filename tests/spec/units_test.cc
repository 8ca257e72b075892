#include "paratune/spec/units.h"

#include <gtest/gtest.h>

#include "paratune/spec/error.h"

namespace paratune::units {

TEST(Units, ParsesBytes) {
  EXPECT_DOUBLE_EQ(parse_bytes("80GiB"), 80 * kGiB);
  EXPECT_DOUBLE_EQ(parse_bytes("80 GB"), 80e9);
  EXPECT_DOUBLE_EQ(parse_bytes("1024"), 1024);
}

TEST(Units, ParsesBandwidthIncludingBits) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("450GB/s"), 450e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gbps"), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("200 Gb/s"), 25e9);
}

TEST(Units, ParsesDurations) {
  EXPECT_DOUBLE_EQ(parse_duration("5us"), 5e-6);
  EXPECT_DOUBLE_EQ(parse_duration("2ms"), 2e-3);
  EXPECT_DOUBLE_EQ(parse_duration("20m"), 1200);
}

TEST(Units, RejectsUnknownUnitNamingIt) {
  try {
    parse_bandwidth("450 GB/h");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown unit 'GB/h'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_bytes("-5GB"), Error);
  EXPECT_THROW(parse_bytes("lots"), Error);
}

}  // namespace paratune::units
