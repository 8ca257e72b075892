// Prediction intervals from held-out errors (paratune/calib/prediction_intervals.h).
#include "paratune/calib/prediction_intervals.h"

#include <gtest/gtest.h>

#include "../test_util.h"
#include "paratune/spec/io.h"
#include "paratune/spec/presets.h"

namespace paratune {
namespace {

RowResult held_out(const std::string& cls, const std::string& metric, double pct_error) {
  RowResult r;
  r.prediction_class = cls;
  r.metric = metric;
  r.pct_error = pct_error;
  return r;
}

TEST(PredictionIntervals, ClassesNameModelKindGenerationAndPrecision) {
  const ModelSpec dense = find_model_preset("llama3-8b").spec;
  const ModelSpec moe = find_model_preset("mixtral-8x7b").spec;
  EXPECT_EQ(prediction_class(dense, find_gpu_preset("h100-sxm"), Precision::kBF16), "dense hopper bf16");
  EXPECT_EQ(prediction_class(moe, find_gpu_preset("gb200"), Precision::kFP8), "moe blackwell fp8");
  EXPECT_EQ(prediction_class(dense, find_gpu_preset("a100-80gb"), Precision::kFP16), "dense ampere bf16");
}

// Worked by hand: a time predicted 25% high (pct_error +25) means the true time is 1/1.25 = 0.8 of
// the prediction (-20%); a rate predicted 10% high means the true time is 1.1x the prediction (+10%).
TEST(PredictionIntervals, PercentilesOfTheTrueOverPredictedTime) {
  std::vector<RowResult> rows;
  rows.push_back(held_out("dense hopper bf16", "iteration_time_s", 25));   // -20%
  rows.push_back(held_out("dense hopper bf16", "tokens_per_s_per_gpu", 10));  // +10%
  rows.push_back(held_out("dense hopper bf16", "mfu", 0));                    // 0%
  rows.push_back(held_out("dense hopper bf16", "iteration_time_s", 0));       // 0%
  rows.push_back(held_out("dense hopper bf16", "tflops_per_gpu", -5));        // -5%
  rows.push_back(held_out("moe hopper bf16", "iteration_time_s", -50));       // +100%
  const IntervalTable table = interval_table(rows);
  // Sorted: -20, -5, 0, 0, +10. 5th percentile at position 0.2: -20 + 0.2 x 15 = -17; 95th at
  // position 3.8: 0 + 0.8 x 10 = +8.
  const IntervalClass& c = table.at("dense hopper bf16");
  EXPECT_EQ(c.rows, 5);
  EXPECT_NEAR(c.low_pct, -17, 1e-9);
  EXPECT_NEAR(c.high_pct, 8, 1e-9);
  EXPECT_EQ(table.at("dense").rows, 5);
  EXPECT_EQ(table.at("moe").rows, 1);
  EXPECT_EQ(table.at("all").rows, 6);
  // A class with fewer than 5 rows borrows the wider one: "moe hopper bf16" (1 row) -> "moe" (1) -> "all".
  EXPECT_EQ(interval_for(table, "dense hopper bf16").taken_from, "dense hopper bf16");
  EXPECT_EQ(interval_for(table, "moe hopper bf16").taken_from, "all");
  EXPECT_EQ(interval_for(table, "dense volta bf16").taken_from, "dense");
  EXPECT_EQ(describe(interval_for(table, "dense hopper bf16")),
            "-17%/+8%: 90% of the held-out errors of 5 dense hopper bf16 rows, leave-one-source-out");
  EXPECT_TRUE(interval_for(IntervalTable{}, "dense hopper bf16").taken_from.empty());
}

TEST(PredictionIntervals, JsonRoundTripsAndBadEntriesAreNamed) {
  IntervalTable t{{"all", {12, -9.5, 14.25}}};
  const IntervalTable back = interval_table_from_json(to_json(t), "x.json");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back.at("all").rows, 12);
  EXPECT_EQ(back.at("all").high_pct, 14.25);
  try {
    interval_table_from_json(nlohmann::json{{"all", {{"rows", 3}, {"low_pct", 5}, {"high_pct", -5}}}}, "x.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.json: all: needs rows >= 1 and -100 < low_pct <= high_pct"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(interval_table_from_json(nlohmann::json{{"all", {{"rows", 3}, {"lowpct", 5}}}}, "x.json"), Error);
}

TEST(PredictionIntervals, ShippedFileEqualsCompiledTable) {
  const IntervalTable file = interval_table_from_json(
      read_document(std::string(PARATUNE_SOURCE_DIR) + "/data/prediction-intervals.json"), "prediction-intervals.json");
  EXPECT_EQ(to_json(file), to_json(default_prediction_intervals()));
  EXPECT_GE(default_prediction_intervals().at("all").rows, 100);
}

}  // namespace
}  // namespace paratune
