// From a trial's step times to a throughput estimate (OPPA,
// data/papers/README.md#oppa-parallel-config-bayesian-optimization, App. F).
//
// F.2: drop the first step (warm-up), then every step whose time is further than 2 x IQR from the
// median (quartiles by linear interpolation). F.1, Eq. 28: with the q steps left,
//   r = (1/q) sum_j 1/t_j            (steps per second)
//   var = (1/q) sum_j (1/t_j - r)^2  (spread of one step's throughput)
// and the mean's standard error sqrt(var / q) (OPPA Corollary F.2: the mean of q noisy steps has
// variance s^2/q), giving a normal 95% interval r +- 1.96 x standard error.
#pragma once

#include <span>

namespace paratune::trial {

struct ThroughputEstimate {
  double steps_per_s = 0;     // r
  double variance = 0;        // Eq. 28's sigma^2 (per step, (steps/s)^2)
  double standard_error = 0;  // sqrt(variance / steps_used)
  double ci95_low = 0, ci95_high = 0;
  int steps_used = 0;
  int dropped_warmup = 0;     // 1 when there were steps at all
  int dropped_outliers = 0;
  int dropped_implausible = 0;  // not finite or outside [kMinStepTimeS, kMaxStepTimeS] (trial/protocol.h)
};

// An estimate from the steps in report order; steps_used == 0 (and r = 0) when nothing is left.
// Step times that are no measurement (trial/protocol.h plausible_step_time: NaN, 0, 1e-320 s, ...)
// are left out before anything else, so r is always finite. The parsers never pass them on; this
// guards steps read back from older study files.
ThroughputEstimate estimate_throughput(std::span<const double> step_times_s);

}  // namespace paratune::trial
