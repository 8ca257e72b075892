// Rendering studies of both kinds -- configuration studies (throughput) and hyperparameter studies
// (any objective): `paratune tune` (progress, final result) and `paratune study show`.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "paratune/store/study_store.h"
#include "paratune/hpo/study.h"

namespace paratune {

// A trial as JSON: number, params (object), status, reason, throughput (steps/s or null),
// throughput_ci ([low, high] or null), step_time_s (1 / throughput), peak_memory_bytes, steps,
// malformed_lines, exit_code, exit_signal, started_unix_s, ended_unix_s, dir, command, prediction
// (what a model-based search predicted and why it chose the trial, or null), objective and rung
// (hyperparameter studies; null otherwise).
nlohmann::ordered_json to_json(const store::StoredTrial& trial);

// Predicted vs measured throughput and memory of every trial a model-based search predicted
// (empty when none did).
std::string format_predictions(const std::vector<store::StoredTrial>& trials);
// A study's fitted model: learned lengthscales (shortest first) and prior coefficients; empty when
// there is none.
std::string format_model(const std::string& model_json);

// {"best": {"number", "params", "throughput", "throughput_ci", "peak_memory_bytes", "command"} or
// null, "trials": [...], "status_counts": {...}, "failures": failures_json(trials)}.
nlohmann::ordered_json trials_json(const std::vector<store::StoredTrial>& trials, std::optional<std::size_t> best);

// What the failed trials (oom, infeasible, failed, timeout) cost the study (issue 21 item 17): a
// failure counts against --max-trials and --budget like any trial, so its time is shown next to
// the time of every finished trial. {"trials": N, "kinds": {"refused": n, ...} (trial/failure.h),
// "never_again": the deterministic ones, "seconds": their run time, "of_seconds": every finished
// trial's}. failure_line: the same in one line ("" when nothing failed).
nlohmann::ordered_json failures_json(const std::vector<store::StoredTrial>& trials);
std::string failure_line(const std::vector<store::StoredTrial>& trials);

// trials_json plus the run. A configuration study (summary.space): study, algorithm, valid_points,
// cartesian_points, planned_points, reused, requeued, retried_failed, leftover_processes_killed,
// started, reaped, dropped, stop, elapsed_s; a hyperparameter study: study, sampler, pruner,
// objective, direction, reused, requeued, retried_failed, started, promotions, reaped, dropped,
// fused_groups, fused_trials, stop, elapsed_s, fusion_probe (with --fuse auto).
nlohmann::ordered_json to_json(const hpo::HpoSummary& summary);

// "dp=2 tp=4 mbs=1 lr=0.003162" from a stored params object (floats to 4 significant digits).
std::string params_words(const std::string& params_json);

// One line per trial event, for logs: "trial 3 started: dp=2 tp=4" / "trial 3 completed: ...".
std::string format_trial_started(const store::StoredTrial& trial);
std::string format_trial_finished(const store::StoredTrial& trial);

// What the live block shows besides the running trials.
struct ProgressView {
  int finished = 0;                // trials of the study finished, reused ones included
  int finished_this_run = 0;       // of them, those this run finished (the rate the ETA comes from)
  std::uint64_t valid_points = 0;  // points in the space; 0: no count (continuous hyperparameters)
  int max_trials = 0;              // --max-trials; 0: none
  double budget_s = 0;             // --budget; 0: none
  double elapsed_s = 0;            // since this run began
  const store::StoredTrial* best = nullptr;  // the best so far; null: none yet
  std::size_t width = 0;           // the columns a line may take (the terminal's); 0: no limit
};

// The live block on a terminal (Ray Tune's status table): one line with the counts ("2 running,
// 5 of 20 finished"), the elapsed time, progress_eta() and the best so far; then, while trials run,
// a table with one row per running trial: trial number, parameters, status, the latest metric
// (metric objectives: its latest value and step; otherwise the last step time and steps/s), steps
// done / target, elapsed. Each parameter has a column of its own when the table then fits in
// `width`; otherwise one "parameters" column of "name=value" words, cut to fit ("..").
std::string format_progress(const std::vector<tune::TrialProgress>& running, const ProgressView& view);

// The ETA part of the first line: with a budget, the time it leaves ("budget: 12m30s left"); with
// a trial count to reach (--max-trials, else the space's valid points), an estimate from the rate
// at which this run finished trials ("ETA ~4m10s (estimate: 3 trials finished in 2m05s)"), shown
// once one finished and while some are still to finish; both joined by ", " when both apply; ""
// when neither does.
std::string progress_eta(const ProgressView& view);

// Every trial as a table, then the best one (`study show`): of a configuration study (throughput,
// confidence interval, where it ran, why it ended), and of a hyperparameter study (status, rung,
// steps, objective, throughput, ranks and strategy when they trained with one, parameters).
std::string format_trials(const std::vector<store::StoredTrial>& trials, std::optional<std::size_t> best);
// `many_objectives`: a study of several objectives (hpo::HpoOptions::objectives), whose column is the first
// objective's and which has a Pareto front (report/hpo_report.h) instead of a best trial.
std::string format_hpo_trials(const std::vector<store::StoredTrial>& trials, std::optional<std::size_t> best,
                              const std::string& objective, bool many_objectives = false);

// The space's size, one phrase printed alike when `tune` starts and in its summary:
// "168 valid points of 192 combinations" (a space file), "8700 valid points (of 12000
// configurations the planner enumerated; the rest are predicted not to fit in memory)" (derived from
// --model), "5 listed points" (any other listed space).
std::string format_space_size(const tune::SpaceSize& size);

// `tune`'s final output: what ran, how trials ended, the best ones and the best with the command
// that reproduces it. A configuration study (summary.space) in its own terms: its space's size, the
// fastest trials with their confidence intervals; a hyperparameter study by its sampler, pruner and
// objective, with its promotions, fused groups and pruning.
std::string format_study(const hpo::HpoSummary& summary);

}  // namespace paratune
