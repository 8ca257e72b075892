#include "paratune/cost/calibration.h"

#include <gtest/gtest.h>

#include "../test_util.h"
#include "paratune/spec/io.h"

namespace paratune {
namespace {

TEST(Calibration, RoundTripsThroughJson) {
  Calibration c = default_calibration();
  c.gemm_efficiency_by_gpu["custom"] = 0.5;
  c.tp_overlap = 0.25;
  const Calibration back = calibration_from_json(to_json(c), "test");
  EXPECT_EQ(to_json(back), to_json(c));
}

TEST(Calibration, ShippedFileEqualsCompiledDefault) {
  const Calibration file = load_calibration(std::string(PARATUNE_SOURCE_DIR) + "/data/calibration.json");
  EXPECT_EQ(to_json(file), to_json(default_calibration()));
}

TEST(Calibration, RejectsUnknownKeysAndBadValues) {
  try {
    calibration_from_json(nlohmann::json{{"tp_overlapp", 0.5}}, "cal.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cal.json: unknown key 'tp_overlapp' (did you mean 'tp_overlap'?)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(calibration_from_json(nlohmann::json{{"hbm_efficiency", 1.5}}, "cal.json"), Error);
}

}  // namespace
}  // namespace paratune
