// The calibration fitted to a hardware profile (paratune/calib/profile_fit.h).
#include "paratune/calib/profile_fit.h"

#include <fmt/format.h>
#include <nlopt.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string_view>

#include "paratune/cost/profile_plan.h"
#include "paratune/spec/error.h"

namespace paratune {
namespace {
namespace profile_fitting {

// The coefficients that price a profile's rows on `gpu`: the kernel rates and roll-offs and the
// in-node links (not overheads, overlaps or jitter, which no single kernel shows). An FP8 profile
// measures its linear layers' GEMMs in FP8 and the output layer's in BF16, so it fits both rates --
// for the per-tensor recipes only: the measurer times per-tensor-scaled GEMMs (torch._scaled_mm),
// which a blockwise or MXFP8 plan does not run.
std::vector<FittedCoefficient> kernel_coefficients(const std::string& gpu, const TrainingSpec& training) {
  std::vector<FittedCoefficient> chosen;
  for (const FittedCoefficient& c : fitted_coefficients()) {
    const std::string_view name = c.name;
    const bool kernel = name.starts_with("gemm_efficiency") || name.starts_with("attention_efficiency") ||
                        name == "gemm_half_efficiency_dim" || name == "attention_half_kv_tokens" ||
                        name == "hbm_efficiency" || name == "intra_node_bandwidth_efficiency" ||
                        (name == "fp8_gemm_efficiency" && training.precision == Precision::kFP8 &&
                         (training.fp8_recipe == Fp8Recipe::kDelayed || training.fp8_recipe == Fp8Recipe::kTensorwise));
    if (!kernel) continue;
    // A per-GPU coefficient counts only for its own GPUs.
    if (!c.gpus.empty() && std::find(c.gpus.begin(), c.gpus.end(), gpu) == c.gpus.end()) continue;
    chosen.push_back(c);
  }
  return chosen;
}

double mean_log_error_pct(const ProfileComparison& comparison) {
  double sum = 0;
  for (const ProfileComparison::Row& r : comparison.rows) sum += std::abs(std::log(r.model_s / r.measured_s));
  return 100 * sum / static_cast<double>(comparison.rows.size());
}

}  // namespace profile_fitting
}  // namespace

ProfileFit fit_calibration_to_profile(const HardwareProfile& profile, const ModelSpec& model, const ClusterSpec& cluster,
                                      const TrainingSpec& training, const Calibration& start, int max_evaluations) {
  using namespace profile_fitting;
  auto error_at = [&](const Calibration& c) {
    return mean_log_error_pct(compare_profile(profile, model, cluster, training, c));
  };
  ProfileFit fit;
  fit.rows = static_cast<int>(compare_profile(profile, model, cluster, training, start).rows.size());
  if (fit.rows == 0) throw Error(fmt::format("{}: no measured GEMM, attention, collective or bandwidth row to fit to", profile.source));
  const std::vector<FittedCoefficient> params = kernel_coefficients(cluster.gpu.name, training);
  if (params.empty())
    throw Error(fmt::format("{}: no fitted coefficient prices GPU '{}' alone (coefficients.h)", profile.source, cluster.gpu.name));
  auto [x, lower, upper] = coefficient_variables(start, params);
  for (const FittedCoefficient& p : params) fit.parameters.emplace_back(p.name);
  fit.error_before_pct = error_at(start);
  struct State {
    const Calibration* start;
    const std::vector<FittedCoefficient>* params;
    const std::function<double(const Calibration&)>* error;
    int evaluations = 0;
  };
  const std::function<double(const Calibration&)> error = error_at;
  State state{&start, &params, &error};
  auto objective = [](const std::vector<double>& v, std::vector<double>&, void* data) -> double {
    auto* st = static_cast<State*>(data);
    ++st->evaluations;
    return (*st->error)(with_coefficients(*st->start, *st->params, v)) + prior_penalty(*st->params, v);
  };
  nlopt::opt optimizer(nlopt::LN_BOBYQA, static_cast<unsigned>(x.size()));
  optimizer.set_lower_bounds(lower);
  optimizer.set_upper_bounds(upper);
  optimizer.set_min_objective(objective, &state);
  optimizer.set_xtol_rel(1e-4);
  optimizer.set_maxeval(max_evaluations);
  double best = 0;
  try {
    optimizer.optimize(x, best);
  } catch (const nlopt::roundoff_limited&) {
    // converged as far as floating point allows; x holds the best point
  }
  fit.calibration = with_coefficients(start, params, x);
  fit.error_after_pct = error_at(fit.calibration);
  fit.evaluations = state.evaluations;
  for (const CoefficientAtBound& hit : coefficients_at_bounds(fit.calibration))
    if (std::find(fit.parameters.begin(), fit.parameters.end(), hit.name) != fit.parameters.end()) fit.at_bounds.push_back(hit);
  return fit;
}

}  // namespace paratune
