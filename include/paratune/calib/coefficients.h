// The fitted coefficients of the Calibration: what each means physically, the range physics and
// published measurements allow, and the prior the fit is pulled towards.
//
// A coefficient the data push to the edge of its physical range is a hole in the model (something
// it does not count), not a win: `paratune calibrate` reports every one that sits at a bound, and a
// test fails when a shipped coefficient does. The fit is regularised (fit.cc): it minimises the
// error plus kPriorWeight x sum of ((value - prior) / prior_sd)^2, so a coefficient moves from its
// prior only as far as the rows pay for it.
#pragma once

#include <limits>
#include <map>
#include <string>
#include <vector>

#include "paratune/cost/calibration.h"

namespace paratune {

// Percentage points of the fit's objective (mean + max/5 of |error| in percent) that one prior
// standard deviation squared costs: a coefficient 2 sd from its prior costs 1 point.
inline constexpr double kPriorWeight = 0.25;

struct FittedCoefficient {
  const char* name = "";       // "gemm_efficiency[hopper]", "op_issue_s", ...
  double lower = 0, upper = 0;       // the physical range: the fit's box
  double prior = 0, prior_sd = 1;    // Gaussian prior on the value (on its natural log when log_scale)
  bool log_scale = false;      // spans decades (overheads): fitted and judged on log(value)
  const char* why = "";        // the physical reason for the range and the prior, with sources
  // Where it lives: a scalar of Calibration, or, for a GPU class, the entries `gpus` of a per-GPU map.
  double Calibration::*field = nullptr;
  std::vector<std::string> gpus;
  std::map<std::string, double> Calibration::*by_gpu = &Calibration::gemm_efficiency_by_gpu;
  // For a coefficient that changes predicted memory: the value in [lower, upper] at which predicted
  // memory is lowest (fit.cc screens candidates there). NaN: it does not change memory.
  double least_memory_value = std::numeric_limits<double>::quiet_NaN();
};

// Every fitted coefficient, in a fixed order (the fit's variables).
const std::vector<FittedCoefficient>& fitted_coefficients();

// The coefficient's value in `calibration` (a GPU class: its first GPU's entry, or the scalar the
// map overrides when the entry is absent).
double coefficient_value(const Calibration& calibration, const FittedCoefficient& coefficient);

// The optimiser's variable for a coefficient: its value, or its natural log for one that spans
// decades (an overhead of 2 us and one of 200 us are equally plausible steps apart), and back.
double coefficient_variable(const FittedCoefficient& coefficient, double value);
double coefficient_from_variable(const FittedCoefficient& coefficient, double variable);
// The priors' price of the variables `x` of `coefficients`, in percentage points of a fit's
// objective: kPriorWeight x sum of ((x - prior) / prior_sd)^2.
double prior_penalty(const std::vector<FittedCoefficient>& coefficients, const std::vector<double>& x);
// `base` with each of `coefficients` set from its variable in `x`.
Calibration with_coefficients(const Calibration& base, const std::vector<FittedCoefficient>& coefficients,
                              const std::vector<double>& x);
// The optimiser's start and bounds for `coefficients`, on each one's variable scale: its value in
// `start` clamped to its physical range, and that range's ends (fit.cc, profile_fit.cc).
struct CoefficientVariables {
  std::vector<double> start, lower, upper;
};
CoefficientVariables coefficient_variables(const Calibration& start,
                                           const std::vector<FittedCoefficient>& coefficients);

// A coefficient at (or within 1% of the range, on its scale, of) a bound of its physical range.
struct CoefficientAtBound {
  std::string name;
  double value = 0;
  double bound = 0;
  bool upper = false;  // at the upper bound (else the lower)
  std::string why;
};
std::vector<CoefficientAtBound> coefficients_at_bounds(const Calibration& calibration);

// "op_issue_s = 2e-06 sits at the lower bound 2e-06 of its physical range (host time per operator ...)"
std::string describe(const CoefficientAtBound& hit);

}  // namespace paratune
