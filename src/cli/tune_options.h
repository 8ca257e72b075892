// What both kinds of `paratune tune` study take from tune's flags: the trials' limits, where their
// directories go, the worker mode and the store's retries; and the refusal of a flag that would do
// nothing.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "paratune/hpo/pruner.h"
#include "paratune/hpo/study.h"
#include "paratune/trial/runner.h"
#include "paratune/tune/study_common.h"
#include "tune_flags.h"

namespace paratune::cli {

// What every study takes from the flags: its name, the command, the steps, --max-trials, --budget,
// --retry-failed, the trials' limits, the step-time regex, the trials' directory and the worker
// mode; the objective is throughput until the caller says otherwise. Not yet validated.
hpo::HpoOptions study_options_from(const TuneFlags& f);

// --timeout, --hang, --grace and --memory-limit.
trial::TrialLimits limits_from(const TuneFlags& f);

// A flag that would do nothing in this study is refused rather than ignored.
void refuse_flags(const TuneFlags& f, const std::vector<std::string>& flags, const std::string& why);

// The study's pruner: the one --pruner names, else `implied` (--algo oppa's early termination, or
// none); `stated` when that is not `implied` (a configuration study's identity then names it). Its
// options from --eta, --min-resource, --pruner-startup, --pruner-warmup, --percentile and
// --min-steps, for trials of `steps` steps and the objective's `direction`; another pruner's flags
// are refused.
struct StudyPruner {
  std::unique_ptr<hpo::Pruner> pruner;
  bool stated = false;
};
StudyPruner pruner_from(const TuneFlags& f, hpo::PrunerKind implied, int steps, hpo::Direction direction);

// Default: next to an SQLite study file, one directory per study of the file (s.db: s.trials for the
// study "main", s.NAME.trials for another, so that two studies of one file never write each other's
// trial directories); for a study on PostgreSQL, NAME.trials in the current directory. Where the study
// name becomes part of a path, it must not lead out of that directory.
std::filesystem::path trials_dir_from(const TuneFlags& f);

// --worker, --heartbeat, --heartbeat-timeout (both kinds of study).
tune::WorkerOptions worker_options_from(const TuneFlags& f);

// --store-retry: 0 (fail at the first unavailability) or more.
double store_retry_from(const TuneFlags& f);

}  // namespace paratune::cli
