// OPPA App. F: warm-up dropped, outliers beyond 2 x IQR dropped, Eq. 28 mean and variance.
#include "paratune/trial/measurement.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace paratune::trial {
namespace {

TEST(Throughput, DropsWarmupAndOutliersAndFollowsEq28) {
  // Warm-up 5 s, then 0.5 s steps with one 0.25 s step and a 3 s stall.
  const std::vector<double> t{5.0, 0.5, 0.5, 0.25, 0.5, 0.5, 3.0, 0.5, 0.5};
  const ThroughputEstimate e = estimate_throughput(t);
  EXPECT_EQ(e.dropped_warmup, 1);
  // Sorted remainder: 0.25 0.5 x6 3.0 -> median 0.5, IQR 0: only exact 0.5 s steps stay.
  EXPECT_EQ(e.dropped_outliers, 2);
  EXPECT_EQ(e.steps_used, 6);
  EXPECT_DOUBLE_EQ(e.steps_per_s, 2.0);
  EXPECT_DOUBLE_EQ(e.variance, 0.0);
  EXPECT_DOUBLE_EQ(e.ci95_low, 2.0);
}

TEST(Throughput, ByHand) {
  const std::vector<double> t{9.0, 0.5, 0.25, 1.0, 0.5};
  // After warm-up: 0.5 0.25 1.0 0.5 -> sorted 0.25 0.5 0.5 1.0; median 0.5; Q1 = 0.4375, Q3 = 0.625,
  // IQR 0.1875, limit 0.375: 1.0 is 0.5 away (dropped), 0.25 is 0.25 away (kept).
  const ThroughputEstimate e = estimate_throughput(t);
  EXPECT_EQ(e.dropped_outliers, 1);
  EXPECT_EQ(e.steps_used, 3);
  const double r = (2 + 4 + 2) / 3.0;
  EXPECT_DOUBLE_EQ(e.steps_per_s, r);
  const double var = ((2 - r) * (2 - r) * 2 + (4 - r) * (4 - r)) / 3;
  EXPECT_NEAR(e.variance, var, 1e-12);
  EXPECT_NEAR(e.standard_error, std::sqrt(var / 3), 1e-12);
  EXPECT_NEAR(e.ci95_high - e.ci95_low, 2 * 1.96 * std::sqrt(var / 3), 1e-12);
}

TEST(Throughput, NothingToEstimate) {
  EXPECT_EQ(estimate_throughput(std::vector<double>{}).steps_used, 0);
  const ThroughputEstimate one = estimate_throughput(std::vector<double>{1.0});
  EXPECT_EQ(one.steps_used, 0);
  EXPECT_EQ(one.dropped_warmup, 1);
  EXPECT_EQ(one.steps_per_s, 0);
}

TEST(Throughput, StepTimesThatAreNoMeasurementAreLeftOut) {
  // 1e-320 s is a subnormal whose inverse is infinite: it made the best trial of a study.
  const std::vector<double> t{9.0, 0.5, 1e-320, 0.5, 0.0, -1.0, std::nan(""), INFINITY, 0.5};
  const ThroughputEstimate e = estimate_throughput(t);
  EXPECT_EQ(e.dropped_implausible, 5);
  EXPECT_EQ(e.dropped_warmup, 1);
  EXPECT_EQ(e.steps_used, 3);
  EXPECT_DOUBLE_EQ(e.steps_per_s, 2.0);
  EXPECT_TRUE(std::isfinite(e.ci95_high));
  EXPECT_EQ(estimate_throughput(std::vector<double>{1e-320, 1e-320}).steps_used, 0);
}

}  // namespace
}  // namespace paratune::trial
