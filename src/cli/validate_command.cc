// `paratune validate`: the cost model's predictions against published training runs (time) and
// measured runs (memory).
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "output.h"
#include "paratune/calib/memory_runs.h"
#include "paratune/calib/published_runs.h"
#include "paratune/cost/calibration.h"
#include "paratune/spec/error.h"

namespace paratune::cli {
namespace {

struct ValidateFlags {
  std::string runs_path, memory_runs_path, calibration_in;
  bool json = false;
};

int run_validate(const ValidateFlags& f) {
  const Calibration start = f.calibration_in.empty() ? default_calibration() : load_calibration(f.calibration_in);
  // Both files read before anything is printed: a bad input fails before any output.
  const auto runs = f.runs_path.empty() ? std::vector<PublishedRun>{} : read_published_runs(f.runs_path);
  const auto memory_runs =
      f.memory_runs_path.empty() ? std::vector<MemoryRun>{} : read_memory_runs(f.memory_runs_path);
  std::optional<ValidationReport> report;
  std::optional<MemoryValidationReport> memory_report;
  if (!f.runs_path.empty()) report = validate_runs(runs, start);
  if (!f.memory_runs_path.empty()) memory_report = validate_memory_runs(memory_runs, start);
  if (f.json) {
    // One file: the time report as before; with both, {"time": ..., "memory": ...}.
    if (report && memory_report) write_json({{"time", to_json(*report)}, {"memory", to_json(*memory_report)}});
    else if (report) write_json(to_json(*report));
    else write_json(to_json(*memory_report));
  } else {
    if (memory_report) std::cout << "memory against measured runs (" << f.memory_runs_path << "):\n"
                                 << format_memory_validation(*memory_report) << (report ? "\n" : "");
    if (report) std::cout << format_validation(*report);
  }
  // No estimated row is no validation: a mean error of 0% over nothing must not pass a script's check.
  if (report && report->rows.empty())
    throw Error(fmt::format("--runs {}: no row could be estimated ({} rows, {} skipped{})", f.runs_path, runs.size(),
                            report->skipped.size(), report->skipped.empty() ? "" : ": the reasons are listed above"));
  if (memory_report && memory_report->rows.empty())
    throw Error(fmt::format("--memory-runs {}: no row could be predicted ({} rows, {} skipped)", f.memory_runs_path,
                            memory_runs.size(), memory_report->skipped.size()));
  return 0;
}

}  // namespace

void add_validate_command(CLI::App& app, Commands& commands) {
  const auto flags = std::make_shared<ValidateFlags>();
  auto* validate_cmd = app.add_subcommand("validate", "compare predictions with published training runs");
  auto* validate_runs_opt =
      validate_cmd->add_option("--runs", flags->runs_path, "CSV with the columns of published_runs.csv");
  auto* validate_memory_opt = validate_cmd->add_option(
      "--memory-runs", flags->memory_runs_path,
      "CSV with the columns of memory_runs.csv: predicted peak memory against measured runs");
  validate_cmd->callback([validate_runs_opt, validate_memory_opt] {
    if (validate_runs_opt->count() == 0 && validate_memory_opt->count() == 0)
      throw CLI::ValidationError("validate", "needs --runs FILE, --memory-runs FILE or both");
  });
  validate_cmd->add_option("--calibration", flags->calibration_in, "calibration JSON (default: shipped)");
  validate_cmd->add_flag("--json", flags->json, "machine-readable output");
  commands.push_back({validate_cmd, [flags] { return run_validate(*flags); }});
}

}  // namespace paratune::cli
