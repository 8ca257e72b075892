#include "paratune/trial/measurement.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "paratune/trial/protocol.h"

namespace paratune::trial {
namespace {

// Quantile q of sorted values, linear interpolation between closest ranks (R type 7, NumPy's default).
double quantile(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const std::size_t below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(sorted.size() - 1, below + 1);
  return sorted[below] + (position - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

}  // namespace

ThroughputEstimate estimate_throughput(std::span<const double> step_times_s) {
  ThroughputEstimate out;
  std::vector<double> valid;
  for (double t : step_times_s)
    if (plausible_step_time(t)) valid.push_back(t);
  out.dropped_implausible = static_cast<int>(step_times_s.size() - valid.size());
  if (valid.empty()) return out;
  out.dropped_warmup = 1;
  std::vector<double> times(valid.begin() + 1, valid.end());
  if (times.empty()) return out;
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double median = quantile(sorted, 0.5);
  const double iqr = quantile(sorted, 0.75) - quantile(sorted, 0.25);
  std::vector<double> kept;
  for (double t : times)
    if (std::abs(t - median) <= 2 * iqr) kept.push_back(t);
  out.dropped_outliers = static_cast<int>(times.size() - kept.size());
  out.steps_used = static_cast<int>(kept.size());
  const double q = static_cast<double>(kept.size());
  double sum = 0;
  for (double t : kept) sum += 1 / t;
  out.steps_per_s = sum / q;
  double squares = 0;
  for (double t : kept) squares += (1 / t - out.steps_per_s) * (1 / t - out.steps_per_s);
  out.variance = squares / q;
  out.standard_error = std::sqrt(out.variance / q);
  out.ci95_low = out.steps_per_s - 1.96 * out.standard_error;
  out.ci95_high = out.steps_per_s + 1.96 * out.standard_error;
  return out;
}

}  // namespace paratune::trial
