// `paratune calibrate`: fit the calibration coefficients to published runs, or (--loso) measure how
// well a fit predicts a source it has not seen.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "flag_checks.h"
#include "output.h"
#include "paratune/calib/prediction_intervals.h"
#include "paratune/calib/published_runs.h"
#include "paratune/cost/calibration.h"
#include "paratune/plan/planner.h"
#include "paratune/spec/error.h"
#include "progress_line.h"

namespace paratune::cli {
namespace {

struct CalibrateFlags {
  std::string runs_path, calibration_in, calibration_out;
  bool loso = false;
  FitOptions fit_options;
  std::string intervals_out;
  bool json = false;
};

// The fitted calibration, to --output.
void write_calibration(const std::string& path, const Calibration& c) {
  std::ofstream out(path);
  if (!out) throw Error(fmt::format("{}: cannot write file", path));
  out << to_json(c).dump(2) << "\n";
}

// --loso: the per-source table (and --intervals); --output gets the fit on all rows.
int write_loso(const CalibrateFlags& f, const LosoReport& report) {
  write_calibration(f.calibration_out, report.full.calibration);
  if (!f.intervals_out.empty()) {
    std::ofstream out(f.intervals_out);
    if (!out) throw Error(fmt::format("--intervals {}: cannot write file", f.intervals_out));
    out << to_json(interval_table(report.held_out)).dump(2) << "\n";
  }
  if (f.json) write_json(to_json(report));
  else
    std::cout << format_loso(report) << format_bounds(report.full.at_bounds) << "wrote " << f.calibration_out
              << " (the fit on all rows)\n";
  return 0;
}

int write_fit(const CalibrateFlags& f, const CalibrationFit& fit) {
  write_calibration(f.calibration_out, fit.calibration);
  if (f.json) {
    write_json({{"calibration", to_json(fit.calibration)},
                {"parameters", fit.parameters},
                {"rows_used", fit.rows_used},
                {"evaluations", fit.evaluations},
                {"seconds", fit.seconds},
                {"at_bounds", to_json(fit.at_bounds)},
                {"before", to_json(fit.before)},
                {"after", to_json(fit.after)}});
    return 0;
  }
  std::cout << fmt::format("fitted {} coefficients on {} rows in {} evaluations ({:.1f} s)\n", fit.parameters_fitted,
                           fit.rows_used, fit.evaluations, fit.seconds);
  std::cout << fmt::format("mean |error| {:.2f}% -> {:.2f}%, max {:.2f}% -> {:.2f}%\n", fit.before.mean_abs_pct_error,
                           fit.after.mean_abs_pct_error, fit.before.max_abs_pct_error, fit.after.max_abs_pct_error);
  std::cout << format_source_summary(fit.after);
  std::cout << format_bounds(fit.at_bounds);
  std::cout << "wrote " << f.calibration_out << "\n";
  return 0;
}

int run_calibrate(const CalibrateFlags& f) {
  const Calibration start = f.calibration_in.empty() ? default_calibration() : load_calibration(f.calibration_in);
  const auto runs = read_published_runs(f.runs_path);
  // A fit takes about a minute (LOSO: one per source): say where it is, on a terminal only.
  ProgressLine progress;
  FitOptions fit_options = f.fit_options;
  if (progress.enabled())
    fit_options.on_progress = [&progress](const FitProgress& p) {
      progress.show(fmt::format("calibrate: {}: evaluation {} of at most {}, best objective {:.2f}%", p.stage,
                                p.evaluation, p.max_evaluations, p.best_objective));
    };
  if (f.loso) {
    const LosoReport report = leave_one_source_out(runs, start, fit_options);
    progress.clear();
    return write_loso(f, report);
  }
  const CalibrationFit fit = fit_calibration(runs, start, fit_options);
  progress.clear();
  return write_fit(f, fit);
}

}  // namespace

void add_calibrate_command(CLI::App& app, Commands& commands) {
  const auto flags = std::make_shared<CalibrateFlags>();
  auto* calibrate_cmd = app.add_subcommand("calibrate", "fit the calibration coefficients to published runs (to a hardware profile: paratune profile --fit-calibration)");
  calibrate_cmd->add_option("--runs", flags->runs_path, "CSV with the columns of published_runs.csv")->required();
  calibrate_cmd->add_option("--output,-o", flags->calibration_out, "where to write the fitted calibration JSON")
      ->required();
  calibrate_cmd->add_option("--calibration", flags->calibration_in, "starting point (default: shipped)");
  calibrate_cmd->add_flag("--loso", flags->loso,
                          "leave-one-source-out: fit without each source and predict it (per-source table; the "
                          "fitted coefficients start from their priors; -o gets the fit on all rows)");
  calibrate_cmd
      ->add_option("--intervals", flags->intervals_out,
                   "with --loso: write the prediction intervals of each class of rows (held-out errors' 5th and 95th "
                   "percentiles; data/prediction-intervals.json)")
      ->needs("--loso");
  calibrate_cmd->add_option("--max-evaluations", flags->fit_options.max_evaluations, "objective evaluations per fit")
      ->transform(whole_number(1, kIntMax));
  calibrate_cmd
      ->add_option("--threads", flags->fit_options.threads, "rows estimated in parallel (0 = hardware threads)")
      ->transform(whole_number(0, plan::kMaxPlanThreads, "0: hardware threads"));
  calibrate_cmd->add_flag("--json", flags->json,
                          "machine-readable output (the fit's or the leave-one-source-out report)");
  commands.push_back({calibrate_cmd, [flags] { return run_calibrate(*flags); }});
}

}  // namespace paratune::cli
