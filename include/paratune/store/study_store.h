// Durable studies: every trial, how it ended and what it measured, in one SQLite file.
//
// WAL mode, synchronous=NORMAL: a committed transaction survives the controller being killed
// (even with SIGKILL) at any moment; only an OS crash may lose the last ones. A trial is written
// twice: when it starts (status "running", its parameters, full configuration and command) and when
// it ends (status, times, exit, reason, throughput, peak memory, every step time and metric, in one
// transaction). A study reopened after a crash finds its unfinished trials still "running":
// `mark_running_interrupted` turns them into "interrupted" so the search runs them again, while
// finished trials are reused as they are.
//
// Schema (version 3): studies(id, name, created_unix_s, config_json, model_json), trials(id,
// study_id, number, params_json, config_json, command, dir, status, started_unix_s, ended_unix_s,
// exit_code, exit_signal, reason, stdout_path, stderr_path, steps, throughput, throughput_variance,
// throughput_ci_low, throughput_ci_high, peak_memory_bytes, malformed_lines, prediction_json,
// objective, rung, hpo_json), steps(trial_id, step, step_time_s), metrics(trial_id, name, value,
// step). Files of versions 1 and 2 are upgraded in place.
//
// Hyperparameter studies (hpo/study.h) run a trial in one or more runs: a trial resting at an ASHA
// rung is "pruned" with its rung, and a promotion runs it again (resume_trial), adding the steps and
// metrics of the new run to the earlier ones'.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "paratune/trial/runner.h"

struct sqlite3;

namespace paratune::store {

struct StoredTrial {
  std::int64_t id = 0;
  int number = 0;              // 1, 2, ... within its study, in start order
  std::string params_json;     // the searched parameters
  std::string config_json;     // everything that produced it (command template, steps, limits, ...)
  std::string command;         // the command as run, shell-quoted (pasteable)
  std::string dir;
  std::string status;          // "running" or a trial::TrialStatus name
  double started_unix_s = 0, ended_unix_s = 0;
  int exit_code = -1, exit_signal = 0;
  std::string reason;
  std::string stdout_path, stderr_path;
  int steps = 0;
  std::optional<double> throughput;  // steps/s (OPPA App. F), when any step was usable
  double throughput_variance = 0, throughput_ci_low = 0, throughput_ci_high = 0;
  std::optional<double> peak_memory_bytes;
  std::int64_t malformed_lines = 0;
  std::vector<double> step_times_s;  // filled by trials(..., with_steps = true)
  std::vector<trial::MetricReport> metrics;  // the same: every metric it reported, in order
  std::string prediction_json;       // what the search predicted for it and why it chose it (empty: nothing)
  // Hyperparameter studies: the objective (completed: its final value; pruned: its last), the rung
  // it rests at (ASHA, Hyperband) and the rest of its state (bracket, checkpoint, runs) as JSON.
  std::optional<double> objective;
  std::optional<int> rung;
  std::string hpo_json;
};

// How a hyperparameter study judges a trial's run (stored with it by finish_trial).
struct TrialOutcome {
  std::string status;               // "completed", "pruned", or the run's own status
  std::string reason;               // replaces the run's when not empty
  std::optional<double> objective;
  std::optional<int> rung;
  std::string hpo_json;
  // The run started again from step 0 (a promotion of a program without checkpoints): the trial's
  // earlier steps and metrics are replaced by this run's, in the same transaction.
  bool replace_output = false;
};

struct StudyInfo {
  std::int64_t id = 0;
  std::string name;
  double created_unix_s = 0;
  std::string config_json;  // the identity it was created with
  std::string model_json;   // the search's fitted model (lengthscales, prior coefficients); empty: none
};

class StudyStore {
 public:
  // Opens (creating if needed) the study file. Throws Error naming the file if it cannot be opened,
  // is not a paratune study or has a newer schema.
  explicit StudyStore(const std::filesystem::path& path);
  ~StudyStore();
  StudyStore(const StudyStore&) = delete;
  StudyStore& operator=(const StudyStore&) = delete;

  // The study `name`: created with `config_json`, or the existing one, which must have been created
  // with the same configuration (else Error: resuming with another space or command would mix
  // measurements of different things).
  std::int64_t open_study(const std::string& name, const std::string& config_json);

  // Trials left "running" by a controller that died: now "interrupted", or "pruned" again when they
  // were running a promotion from a rung. Returns how many.
  int mark_running_interrupted(std::int64_t study);

  // `--retry-failed`: the study's failed trials become "interrupted", so the search runs their
  // configurations again; each keeps why it failed in its reason ("retried by --retry-failed; it
  // had failed: exit code 3 ..."). Returns how many.
  int mark_failed_for_retry(std::int64_t study);

  // A trial that starts now; returns its id and number.
  std::pair<std::int64_t, int> begin_trial(std::int64_t study, const std::string& params_json,
                                           const std::string& config_json, const std::string& command,
                                           const std::string& dir);
  // The same when what is stored depends on the trial's number (its id, directory): `describe` is
  // called with the number inside the transaction that inserts the trial.
  struct LaunchRecord {
    std::string config_json, command, dir;
  };
  std::pair<std::int64_t, int> begin_trial(std::int64_t study, const std::string& params_json,
                                           const std::function<LaunchRecord(int number)>& describe);
  // What the search predicted for a trial (set right after begin_trial).
  void set_prediction(std::int64_t trial, const std::string& prediction_json);
  // The search's latest fitted model, kept with the study.
  void set_model(std::int64_t study, const std::string& model_json);
  // The end of a trial's run, all at once (one transaction): its status, times, exit, throughput,
  // steps and metrics (added to those of earlier runs), and `outcome` when a hyperparameter study
  // judged it.
  void finish_trial(std::int64_t trial, const trial::TrialResult& result, const TrialOutcome* outcome = nullptr);
  // A trial runs again (a promotion): "running". Its earlier output stays until the run ends
  // (finish_trial adds to it, or replaces it with TrialOutcome::replace_output).
  void resume_trial(std::int64_t trial);

  [[nodiscard]] std::vector<StoredTrial> trials(std::int64_t study, bool with_steps = false) const;
  [[nodiscard]] StoredTrial trial(std::int64_t id) const;  // throws Error if there is none
  [[nodiscard]] std::vector<StudyInfo> studies() const;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  void exec(const char* sql) const;
  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

}  // namespace paratune::store
