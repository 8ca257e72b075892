// What every study controller (tune/study.h, hpo/study.h) does the same way around its trials.
#pragma once

#include <filesystem>
#include <string>
#include <utility>

#include "paratune/store/study_store.h"
#include "paratune/trial/runner.h"

namespace paratune::tune {

// Worker mode (`paratune tune --worker`, both kinds of study): this process is one of several that
// run the study together, on any hosts, through the store (store/study_store.h: claim_trial). It
// takes the study's worker lock (shared) rather than the controller lock; claims each trial in a
// transaction that shows the search every worker's trials, so no point is handed out twice (and
// no resting trial promoted twice); renews its running trials' heartbeats every `heartbeat_s`;
// marks "interrupted" the running trials of workers silent for more than `heartbeat_timeout_s`
// (their points are then proposed again, once); and stops when nothing is left to propose, or
// --max-trials is reached, and no trial of any worker runs (one that dies may still need re-running),
// or its --budget is spent. It never marks other workers' trials interrupted at start, and refuses
// --retry-failed (run that once without --worker).
struct WorkerOptions {
  bool enabled = false;
  double heartbeat_s = 10;          // > 0
  double heartbeat_timeout_s = 60;  // > heartbeat_s
};
// Throws OptionError naming the field (worker.heartbeat_s, ..., retry_failed) and the rule.
void validate_worker(const WorkerOptions& worker, bool retry_failed);

// What a worker says of another worker's trial it marked interrupted (ClaimOutcome::reaped), and of
// the `killed` left-over processes of it that it found on this host.
std::string reaped_note(const store::StoredTrial& trial, int killed);

// As pasteable as it gets: the environment a trial program reads, then the command.
std::string shown_command(const trial::TrialLaunch& launch);

// The limits and the budget every study takes: each >= 0 and finite (0: none); throws OptionError
// naming the field (budget_s, limits.timeout_s, ...).
void validate_limits(const trial::TrialLimits& limits, double budget_s);

// Throws OptionError (trials_dir) unless `trials_dir` is, or can become, a directory: a path whose
// nearest existing part is a file would fail every trial at its start, after the study began.
// Creates nothing (on a remote backend the trial directories may be another host's).
void validate_trials_dir(const std::filesystem::path& trials_dir);

// Throws OptionError (name) unless `name` can name a study in any store: not empty, no NUL
// (PostgreSQL's text cannot hold one) and no control character (a name is printed in every report
// and message, where one could move the cursor or recolour the terminal).
void validate_study_name(const std::string& name);

// The name as the part of a path it becomes where no --trials-dir is given on PostgreSQL
// (NAME.trials in the current directory): validate_study_name's rules, and no '/', so that the
// directory can never be outside the current one ("../../x", "/etc/x"). Throws OptionError (name)
// with the hint to give trials_dir.
void validate_study_name_as_path(const std::string& name);

}  // namespace paratune::tune
