#include "tune_options.h"

#include <fmt/format.h>

#include <algorithm>

#include "duration_flag.h"
#include "paratune/spec/error.h"
#include "paratune/spec/units.h"
#include "paratune/store/study_store.h"

namespace paratune::cli {

hpo::HpoOptions study_options_from(const TuneFlags& f) {
  hpo::HpoOptions options;
  options.name = f.study_name;
  options.command = f.command;
  options.steps = f.steps;
  options.max_trials = f.max_trials;
  options.budget_s = optional_duration(f.budget, "--budget");
  options.retry_failed = f.retry_failed;
  options.limits = limits_from(f);
  options.step_time_regex = f.step_time_regex;
  options.trials_dir = trials_dir_from(f);
  options.worker = worker_options_from(f);
  return options;
}

trial::TrialLimits limits_from(const TuneFlags& f) {
  trial::TrialLimits limits;
  limits.timeout_s = optional_duration(f.timeout, "--timeout");
  limits.hang_s = optional_duration(f.hang, "--hang");
  limits.grace_s = optional_duration(f.grace, "--grace");
  if (!f.memory_limit.empty()) {
    try {
      limits.memory_limit_bytes = units::parse_bytes(f.memory_limit);
      // No trial runs in under a mebibyte: a smaller limit is a unit slip (a bare number is bytes).
      if (limits.memory_limit_bytes < units::kMiB)
        throw Error(fmt::format("{} is less than any trial's memory; a bare number is in bytes: write the unit, e.g. "
                                "80GiB",
                                units::format_bytes(limits.memory_limit_bytes)));
    } catch (const Error& e) {
      throw e.with_context("--memory-limit");
    }
  }
  return limits;
}

void refuse_flags(const TuneFlags& f, const std::vector<std::string>& flags, const std::string& why) {
  for (const std::string& flag : flags)
    if (f.given.contains(flag)) throw Error(fmt::format("{}: {}", flag, why));
}

namespace {

// The flags of a pruner other than `pruner` (the one the study runs with) are refused.
void check_pruner_flags(const TuneFlags& f, const std::string& pruner) {
  if (pruner != "oppa")
    refuse_flags(f, {"--min-steps"}, fmt::format("belongs to OPPA's early termination (--algo oppa, --pruner oppa), "
                                                 "not --pruner {}",
                                                 pruner));
  if (pruner != "asha" && pruner != "hyperband")
    refuse_flags(f, {"--eta", "--min-resource"}, fmt::format("rungs belong to --pruner asha or hyperband, not {}", pruner));
  if (pruner != "median" && pruner != "percentile")
    refuse_flags(f, {"--pruner-startup", "--pruner-warmup"},
                 fmt::format("belongs to --pruner median or percentile, not {}", pruner));
  if (pruner != "percentile") refuse_flags(f, {"--percentile"}, fmt::format("belongs to --pruner percentile, not {}", pruner));
}

}  // namespace

StudyPruner pruner_from(const TuneFlags& f, hpo::PrunerKind implied, int steps, hpo::Direction direction) {
  hpo::PrunerKind kind = implied;
  if (f.given.contains("--pruner")) {
    try {
      kind = hpo::parse_pruner(f.pruner);
    } catch (const Error& e) {
      throw e.with_context("--pruner");
    }
  }
  check_pruner_flags(f, hpo::to_string(kind));
  hpo::PrunerOptions o;
  o.direction = direction;
  o.max_resource = steps;
  o.min_resource = f.min_resource;
  o.eta = f.eta;
  o.startup_trials = f.pruner_startup;
  o.warmup_steps = f.pruner_warmup;
  o.percentile = f.percentile;
  // q_min's default (5) gives way to a shorter --steps; a --min-steps given is checked.
  o.min_steps = f.given.contains("--min-steps") ? f.min_steps : std::min(f.min_steps, steps);
  return {hpo::make_pruner(kind, o), kind != implied};
}

std::filesystem::path trials_dir_from(const TuneFlags& f) {
  if (!f.trials_dir.empty()) return f.trials_dir;
  if (store::is_postgres_locator(f.study_path)) {
    tune::validate_study_name_as_path(f.study_name);
    return std::filesystem::path(f.study_name + ".trials");
  }
  if (f.study_name == "main") return std::filesystem::path(f.study_path).replace_extension(".trials");
  tune::validate_study_name_as_path(f.study_name);
  return std::filesystem::path(f.study_path).replace_extension("." + f.study_name + ".trials");
}

tune::WorkerOptions worker_options_from(const TuneFlags& f) {
  tune::WorkerOptions worker;
  worker.enabled = f.worker;
  if (f.worker) {
    worker.heartbeat_s = optional_duration(f.heartbeat, "--heartbeat");
    worker.heartbeat_timeout_s = optional_duration(f.heartbeat_timeout, "--heartbeat-timeout");
  }
  return worker;
}

double store_retry_from(const TuneFlags& f) {
  try {
    return units::parse_duration(f.store_retry);
  } catch (const Error& e) {
    throw e.with_context("--store-retry");
  }
}

}  // namespace paratune::cli
