// Fitting the Calibration to published runs (NLopt BOBYQA) and leave-one-source-out validation.
#include <fmt/format.h>
#include <nlopt.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <cmath>
#include <thread>

#include "paratune/calib/coefficients.h"
#include "paratune/calib/published_runs.h"

namespace paratune {
namespace {

// The start with every fitted coefficient at its prior (paratune/calib/coefficients.h), so that no
// fold of leave-one-source-out starts from values fitted on its held-out source.
Calibration at_priors(const Calibration& start) {
  std::vector<double> priors;
  for (const auto& p : fitted_coefficients()) priors.push_back(p.prior);
  return with_coefficients(start, fitted_coefficients(), priors);
}

// |error| of each row under `calibration` (100 where the row cannot be estimated), rows spread over
// `threads` threads; the result does not depend on the thread count.
std::vector<double> row_errors(const std::vector<const RunSetup*>& rows, const Calibration& calibration, int threads) {
  std::vector<double> errors(rows.size(), 100.0);
  auto work = [&](std::atomic<std::size_t>& next) {
    for (std::size_t i = next++; i < rows.size(); i = next++) {
      try {
        errors[i] = evaluate_run(*rows[i], calibration).abs_pct_error;
      } catch (const Error&) {
      }
    }
  };
  std::atomic<std::size_t> next{0};
  const int n = std::max(1, std::min<int>(threads, static_cast<int>(rows.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(work, std::ref(next));
  work(next);
  for (auto& th : pool) th.join();
  return errors;
}

// For a fit: each row keeps the candidates that fit in memory, fastest first (so the first one
// bounds the others and estimate_if_faster skips most of them), or, when none fits, only the
// lowest-peak one (the memory-model-error reading). While no fitted coefficient changes memory this
// is exact: which candidates fit, and which has the lowest peak, does not change during the fit
// (memory depends on the specs and the memory coefficients only). With memory coefficients it is
// judged at their least-memory values, keeping every candidate that can fit somewhere in the box
// (a row where none can keeps all); evaluate_run still judges each kept one at each evaluation.
// Without screening a fit would estimate every candidate of every row at every evaluation.
PreparedRuns screen_candidates(const PreparedRuns& prepared, const Calibration& calibration, int threads) {
  PreparedRuns out = prepared;
  Calibration lean = calibration;
  bool memory_fitted = false;
  for (const auto& p : fitted_coefficients())
    if (!std::isnan(p.least_memory_value)) {
      memory_fitted = true;
      if (p.field) lean.*(p.field) = p.least_memory_value;
      for (const auto& gpu : p.gpus) (lean.*(p.by_gpu))[gpu] = p.least_memory_value;
    }
  auto work = [&](std::atomic<std::size_t>& next) {
    for (std::size_t i = next++; i < out.setups.size(); i = next++) {
      RunSetup& s = out.setups[i];
      std::vector<std::pair<double, std::size_t>> fitting;
      std::size_t lowest = 0;
      double lowest_peak = INFINITY;
      for (std::size_t k = 0; k < s.candidates.size(); ++k) {
        try {
          const Estimate e = estimate(s.model, s.cluster, s.training, s.candidates[k], lean,
                                      EstimateOptions{kValidationMemoryMargin});
          if (e.fits) fitting.emplace_back(e.iteration_time_s, k);
          if (e.peak_memory_bytes < lowest_peak) lowest_peak = e.peak_memory_bytes, lowest = k;
        } catch (const Error&) {
        }
      }
      std::vector<ParallelConfig> kept;
      kept.reserve(fitting.size());
      std::sort(fitting.begin(), fitting.end());
      for (const auto& [time, k] : fitting) kept.push_back(s.candidates[k]);
      if (kept.empty() && !s.candidates.empty()) {
        if (memory_fitted) continue;  // which candidate has the lowest peak may change: keep them all
        kept.push_back(s.candidates[lowest]);
      }
      s.candidates = std::move(kept);
    }
  };
  std::atomic<std::size_t> next{0};
  const int n = std::max(1, std::min<int>(threads, static_cast<int>(out.setups.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(work, std::ref(next));
  work(next);
  for (auto& th : pool) th.join();
  return out;
}

int thread_count(const FitOptions& options) {
  if (options.threads > 0) return options.threads;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));  // a core count
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void validate(const FitOptions& o) {
  if (o.max_evaluations < 1)
    throw Error(fmt::format("max_evaluations: {} must be >= 1", o.max_evaluations));
  if (!(o.xtol_rel > 0)) throw Error(fmt::format("xtol_rel: {} must be > 0", o.xtol_rel));
  if (o.threads < 0) throw Error(fmt::format("threads: {} must be >= 0 (0 = hardware threads)", o.threads));
}

std::vector<std::string> fit_parameter_names() {
  std::vector<std::string> names;
  for (const auto& p : fitted_coefficients()) names.emplace_back(p.name);
  return names;
}

namespace {

// The fit on screened rows.
CalibrationFit fit_rows(const std::vector<const RunSetup*>& rows, const Calibration& start, const FitOptions& options,
                        const std::string& stage = "fit") {
  const auto t0 = std::chrono::steady_clock::now();
  CalibrationFit fit;
  fit.rows_used = static_cast<int>(rows.size());
  if (rows.empty()) throw Error("calibrate: no row of the CSV can be estimated");
  const auto& params = fitted_coefficients();
  auto [x, lower, upper] = coefficient_variables(start, params);
  for (const auto& p : params) fit.parameters.emplace_back(p.name);
  struct State {
    const Calibration* start;
    const std::vector<FittedCoefficient>* params;
    const std::vector<const RunSetup*>* rows;
    int threads;
    const FitOptions* options;
    FitProgress progress;
    int evaluations = 0;
  } state{&start, &params, &rows, thread_count(options), &options, {stage, 0, options.max_evaluations, 0}};
  // Objective: mean + max/5 of |error| in percent over the rows used, plus the priors' price
  // (paratune/calib/coefficients.h): the mean is what a planner's ranking needs; the max term keeps
  // one source from being sacrificed wholesale; the priors keep coefficients physical where the
  // rows do not pin them.
  auto objective = [](const std::vector<double>& v, std::vector<double>&, void* data) -> double {
    auto* st = static_cast<State*>(data);
    ++st->evaluations;
    const auto errors = row_errors(*st->rows, with_coefficients(*st->start, *st->params, v), st->threads);
    double sum = 0, worst = 0;
    for (double e : errors) sum += e, worst = std::max(worst, e);
    const double value = sum / errors.size() + 0.2 * worst + prior_penalty(*st->params, v);
    if (st->options->on_progress) {
      st->progress.best_objective = st->evaluations == 1 ? value : std::min(st->progress.best_objective, value);
      st->progress.evaluation = st->evaluations;
      st->options->on_progress(st->progress);
    }
    return value;
  };
  nlopt::opt optimizer(nlopt::LN_BOBYQA, static_cast<unsigned>(x.size()));
  optimizer.set_lower_bounds(lower);
  optimizer.set_upper_bounds(upper);
  optimizer.set_min_objective(objective, &state);
  optimizer.set_xtol_rel(options.xtol_rel);
  optimizer.set_maxeval(options.max_evaluations);
  double best = 0;
  try {
    optimizer.optimize(x, best);
  } catch (const nlopt::roundoff_limited&) {
    // converged as far as floating point allows; x holds the best point
  }
  fit.calibration = with_coefficients(start, params, x);
  fit.parameters_fitted = static_cast<int>(params.size());
  fit.at_bounds = coefficients_at_bounds(fit.calibration);
  fit.evaluations = state.evaluations;
  fit.seconds = seconds_since(t0);
  return fit;
}

std::vector<const RunSetup*> rows_of(const PreparedRuns& prepared, const std::vector<std::size_t>& use) {
  std::vector<const RunSetup*> rows;
  if (use.empty())
    for (const auto& s : prepared.setups) rows.push_back(&s);
  else
    for (std::size_t i : use) rows.push_back(&prepared.setups.at(i));
  return rows;
}

}  // namespace

CalibrationFit fit_prepared(const PreparedRuns& prepared, const Calibration& start, const FitOptions& options,
                            const std::vector<std::size_t>& use) {
  validate(options);
  const auto t0 = std::chrono::steady_clock::now();
  const PreparedRuns screened = screen_candidates(prepared, start, thread_count(options));
  // From the priors, whatever `start` holds for the fitted coefficients: the result is the fit of the
  // rows and the priors alone (start supplies the coefficients that are not fitted).
  CalibrationFit fit = fit_rows(rows_of(screened, use), at_priors(start), options);
  fit.seconds = seconds_since(t0);
  return fit;
}

CalibrationFit fit_calibration(const std::vector<PublishedRun>& runs, const Calibration& start,
                               const FitOptions& options) {
  const PreparedRuns prepared = prepare_runs(runs);
  CalibrationFit fit = fit_prepared(prepared, start, options);
  fit.before = validate_prepared(prepared, start);
  fit.after = validate_prepared(prepared, fit.calibration);
  return fit;
}

LosoReport leave_one_source_out(const std::vector<PublishedRun>& runs, const Calibration& start,
                                const FitOptions& options) {
  validate(options);
  const auto t0 = std::chrono::steady_clock::now();
  LosoReport report;
  const PreparedRuns prepared = prepare_runs(runs);
  if (prepared.setups.empty()) throw Error("leave-one-source-out: no row of the CSV can be estimated");
  const Calibration prior = at_priors(start);
  // Screened once: which candidates fit does not depend on the fitted coefficients.
  const PreparedRuns screened = screen_candidates(prepared, prior, thread_count(options));
  report.full = fit_rows(rows_of(screened, {}), prior, options);
  report.full.before = validate_prepared(prepared, prior);
  report.full.after = validate_prepared(prepared, report.full.calibration);
  report.rows = static_cast<int>(prepared.setups.size());

  double in_sum = 0, loso_sum = 0;
  std::size_t fold_number = 0;
  for (const auto& source : prepared.source_order) {
    ++fold_number;
    std::vector<std::size_t> train, test;
    for (std::size_t i = 0; i < prepared.setups.size(); ++i)
      (prepared.setups[i].source_id == source ? test : train).push_back(i);
    if (test.empty()) continue;  // every row of this source was skipped
    LosoSource s;
    s.source_id = source;
    s.rows = static_cast<int>(test.size());
    for (const auto& row : report.full.after.rows)
      if (row.source_id == source) s.in_sample_mean_abs_pct_error += row.abs_pct_error;
    s.in_sample_mean_abs_pct_error /= s.rows;
    const auto fold_start = std::chrono::steady_clock::now();
    Calibration fitted = prior;
    if (!train.empty()) {
      const CalibrationFit fold =
          fit_rows(rows_of(screened, train), prior, options,
                   fmt::format("fold {} of {} (without {})", fold_number, prepared.source_order.size(), source));
      fitted = fold.calibration;
      s.evaluations = fold.evaluations;
    }
    for (std::size_t i : test) {
      RowResult r;
      try {
        r = evaluate_run(prepared.setups[i], fitted);
      } catch (const Error&) {
        r.row_id = prepared.setups[i].row_id;
        r.source_id = source;
        r.abs_pct_error = 100;
      }
      s.loso_mean_abs_pct_error += r.abs_pct_error;
      s.loso_max_abs_pct_error = std::max(s.loso_max_abs_pct_error, r.abs_pct_error);
      report.loso_max_abs_pct_error = std::max(report.loso_max_abs_pct_error, r.abs_pct_error);
      loso_sum += r.abs_pct_error;
      report.held_out.push_back(std::move(r));
    }
    in_sum += s.in_sample_mean_abs_pct_error * s.rows;
    s.loso_mean_abs_pct_error /= s.rows;
    s.seconds = seconds_since(fold_start);
    report.sources.push_back(s);
  }
  report.in_sample_mean_abs_pct_error = in_sum / report.rows;
  report.loso_mean_abs_pct_error = loso_sum / report.rows;
  report.seconds = seconds_since(t0);
  return report;
}

}  // namespace paratune
