// The calibration fitted to a hardware profile (`paratune profile --fit-calibration`): the kernel
// coefficients -- GEMM efficiency and roll-off, attention efficiency and its short-block roll-off,
// HBM and NVLink efficiency -- moved, within their physical ranges and priors
// (paratune/calib/coefficients.h), until the fitted model's kernel times match what the profile
// measured. The result is a Calibration file every command takes (--calibration), so that the
// model's shape dependence, not only the measured shapes, follows the user's GPU.
#pragma once

#include <string>
#include <vector>

#include "paratune/calib/coefficients.h"
#include "paratune/cost/calibration.h"
#include "paratune/cost/hardware_profile.h"

namespace paratune {

struct ProfileFit {
  Calibration calibration;
  std::vector<std::string> parameters;  // the coefficients fitted
  int rows = 0;                         // measurements fitted to
  double error_before_pct = 0;          // mean |ln(model / measured)| x 100 at `start`
  double error_after_pct = 0;           // the same, fitted
  std::vector<CoefficientAtBound> at_bounds;
  int evaluations = 0;
};

// Minimises mean |ln(model / measured)| x 100 over the profile's GEMM, attention, collective and
// bandwidth rows plus the priors' price, with NLopt's BOBYQA within each coefficient's range; the
// coefficients are those that price these rows for the cluster's GPU. Throws Error when the profile
// has no measured row or none of its rows depends on a fitted coefficient.
ProfileFit fit_calibration_to_profile(const HardwareProfile& profile, const ModelSpec& model, const ClusterSpec& cluster,
                                      const TrainingSpec& training, const Calibration& start, int max_evaluations = 300);

}  // namespace paratune
