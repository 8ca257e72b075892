#include "tune_options.h"

#include <fmt/format.h>

#include "duration_flag.h"
#include "paratune/spec/error.h"
#include "paratune/spec/units.h"
#include "paratune/store/study_store.h"

namespace paratune::cli {

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
