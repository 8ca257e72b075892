// Rendering tuning studies: `paratune tune` (progress, final result) and `paratune study show`.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "paratune/store/study_store.h"
#include "paratune/tune/study.h"

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

// trials_json plus the run: study, algorithm, valid_points, reused, requeued, started, stop,
// elapsed_s.
nlohmann::ordered_json to_json(const tune::StudySummary& summary);

// "dp=2 tp=4 mbs=1 lr=0.003162" from a stored params object (floats to 4 significant digits).
std::string params_words(const std::string& params_json);

// One line per trial event, for logs: "trial 3 started: dp=2 tp=4" / "trial 3 completed: ...".
std::string format_trial_started(const store::StoredTrial& trial);
std::string format_trial_finished(const store::StoredTrial& trial);

// The live block on a terminal: the study's state, one line per running trial, the best so far
// (valid_points 0: a space without a count, e.g. continuous hyperparameters).
std::string format_progress(const std::vector<tune::TrialProgress>& running, int finished, std::uint64_t valid_points,
                            double elapsed_s, const store::StoredTrial* best);

// Every trial as a table, then the best one (`study show`).
std::string format_trials(const std::vector<store::StoredTrial>& trials, std::optional<std::size_t> best);

// `tune`'s final output: what ran, how trials ended, the fastest ones, the best with its
// confidence interval and the command that reproduces it.
std::string format_study(const tune::StudySummary& summary);

}  // namespace paratune
