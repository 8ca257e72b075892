// The fitted coefficients' physical ranges and priors (paratune/calib/coefficients.h).
#include "paratune/calib/coefficients.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "paratune/calib/published_runs.h"

namespace paratune {
namespace {

TEST(Coefficients, EveryRangeHoldsItsPriorAndEveryReasonIsGiven) {
  std::set<std::string> names;
  for (const FittedCoefficient& k : fitted_coefficients()) {
    EXPECT_TRUE(names.insert(k.name).second) << "listed twice: " << k.name;
    EXPECT_LT(k.lower, k.upper) << k.name;
    EXPECT_GT(k.prior_sd, 0) << k.name;
    const double prior = k.log_scale ? std::exp(k.prior) : k.prior;
    EXPECT_GT(prior, k.lower) << k.name;
    EXPECT_LT(prior, k.upper) << k.name;
    EXPECT_GT(std::string(k.why).size(), 40u) << k.name << ": the physical reason is missing";
    EXPECT_TRUE(k.field != nullptr || !k.gpus.empty()) << k.name;
    if (k.log_scale) EXPECT_GT(k.lower, 0) << k.name;
  }
  // The names calibrate prints are the table's.
  EXPECT_EQ(fit_parameter_names().size(), fitted_coefficients().size());
}

// A shipped coefficient at the edge of what physics allows is a hole in the model (the fit used it
// to stand in for something the model lacks): the shipped calibration has none.
TEST(Coefficients, NoShippedCoefficientSitsAtABound) {
  std::string hits;
  for (const CoefficientAtBound& hit : coefficients_at_bounds(default_calibration())) hits += describe(hit) + "\n";
  EXPECT_EQ(hits, "");
}

TEST(Coefficients, AtBoundIsJudgedOnTheCoefficientsScale) {
  Calibration c = default_calibration();
  // hbm_efficiency: range [0.5, 0.95], 1% of the width = 0.0045: 0.946 is at the upper bound,
  // 0.94 is not.
  c.hbm_efficiency = 0.946;
  auto hits = coefficients_at_bounds(c);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].name, "hbm_efficiency");
  EXPECT_TRUE(hits[0].upper);
  EXPECT_EQ(hits[0].bound, 0.95);
  EXPECT_NE(describe(hits[0]).find("hbm_efficiency = 0.946 sits at the upper bound 0.95"), std::string::npos)
      << describe(hits[0]);
  c.hbm_efficiency = 0.94;
  EXPECT_TRUE(coefficients_at_bounds(c).empty());
  // op_issue_s: range [2e-6, 5e-5] on a log scale: 1% of ln(25) = 0.032, so up to 2e-6 x e^0.032 =
  // 2.065e-6 is at the lower bound; 2.1e-6 is not; 32 ns (an old fit's layer overhead) is.
  c.op_issue_s = 2.06e-6;
  ASSERT_EQ(coefficients_at_bounds(c).size(), 1u);
  EXPECT_FALSE(coefficients_at_bounds(c)[0].upper);
  c.op_issue_s = 2.1e-6;
  EXPECT_TRUE(coefficients_at_bounds(c).empty());
  c.op_issue_s = 32e-9;
  EXPECT_EQ(coefficients_at_bounds(c).size(), 1u);
  // A GPU class reads its first GPU's entry.
  c = default_calibration();
  c.gemm_efficiency_by_gpu["h100-sxm"] = 0.4;
  ASSERT_EQ(coefficients_at_bounds(c).size(), 1u);
  EXPECT_EQ(coefficients_at_bounds(c)[0].name, "gemm_efficiency[hopper]");
}

}  // namespace
}  // namespace paratune
