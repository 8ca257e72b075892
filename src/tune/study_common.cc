#include "paratune/tune/study_common.h"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cmath>
#include <utility>

#include "paratune/spec/error.h"
#include "paratune/spec/input_file.h"
#include "paratune/spec/option_error.h"
#include "paratune/trial/command.h"

namespace paratune::tune {

std::string shown_command(const trial::TrialLaunch& launch) {
  std::string shown = fmt::format("PARATUNE_MAX_STEPS={} PARATUNE_PARAMS={}", launch.max_steps,
                                  trial::shell_quote(launch.params_json));
  for (const auto& [key, value] : launch.env) shown.append(fmt::format(" {}={}", key, trial::shell_quote(value)));
  for (const std::string& a : launch.argv) shown.append(" ").append(trial::shell_quote(a));
  return shown;
}

void validate_study_name(const std::string& name) {
  if (name.empty()) throw OptionError("name", "", "must not be empty");
  for (const char c : name)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
      throw OptionError("name", fmt::format("'{}'", printable_text(name)),
                        fmt::format("contains the control character {}, which no study name may hold",
                                    printable_text(std::string(1, c))));
}

void validate_study_name_as_path(const std::string& name) {
  validate_study_name(name);
  if (name.find('/') != std::string::npos)
    throw OptionError("name", fmt::format("'{}'", printable_text(name)),
                      fmt::format("the study name also names its trials directory (NAME.trials in the current "
                                  "directory on PostgreSQL, FILE.NAME.trials beside an SQLite file), so it cannot "
                                  "contain '/'; give {} to keep the trials elsewhere",
                                  option_ref("trials_dir")));
}

void validate_trials_dir(const std::filesystem::path& trials_dir) {
  if (trials_dir.empty()) throw OptionError("trials_dir", "", "must not be empty");
  const std::filesystem::path full = std::filesystem::absolute(trials_dir);
  // The nearest part of the path that exists (the root at least) must be a directory.
  for (std::filesystem::path p = full;; p = p.parent_path()) {
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(p, ec);
    if (std::filesystem::exists(status)) {
      if (!std::filesystem::is_directory(status))
        throw OptionError("trials_dir", trials_dir.string(),
                          p == full ? "exists and is not a directory"
                                    : fmt::format("cannot be a directory: {} is a file", p.string()));
      return;
    }
    if (p == p.parent_path()) return;
  }
}

void validate_limits(const trial::TrialLimits& limits, double budget_s) {
  const std::array<std::pair<const char*, double>, 5> non_negative{
      {{"budget_s", budget_s},
       {"limits.timeout_s", limits.timeout_s},
       {"limits.hang_s", limits.hang_s},
       {"limits.grace_s", limits.grace_s},
       {"limits.memory_limit_bytes", limits.memory_limit_bytes}}};
  for (const auto& [field, value] : non_negative)
    if (!(value >= 0) || !std::isfinite(value))
      throw OptionError(field, fmt::format("{}", value), "must be >= 0 (0: none)");
}

void validate_worker(const WorkerOptions& worker, bool retry_failed) {
  if (!worker.enabled) return;
  if (!(worker.heartbeat_s > 0) || !std::isfinite(worker.heartbeat_s))
    throw OptionError("worker.heartbeat_s", fmt::format("{}", worker.heartbeat_s), "must be > 0 seconds");
  if (!(worker.heartbeat_timeout_s > worker.heartbeat_s) || !std::isfinite(worker.heartbeat_timeout_s))
    throw OptionError("worker.heartbeat_timeout_s", fmt::format("{}", worker.heartbeat_timeout_s),
                      fmt::format("must be > {} ({} s): a live worker would look dead", option_ref("worker.heartbeat_s"),
                                  worker.heartbeat_s));
  if (retry_failed)
    throw OptionError("retry_failed", "true",
                      fmt::format("not with {} (every worker joining would retry the others' failures): resume the "
                                  "study once as its only controller to retry failed trials",
                                  option_ref("worker.enabled")));
}

std::string reaped_note(const store::StoredTrial& trial, int killed) {
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return fmt::format("trial {} {} marked interrupted: {}{}; its point runs again", trial.number, trial.params_json,
                     store::dead_worker_reason(trial, now),
                     killed > 0 ? fmt::format(" (killed {} left-over process(es) here)", killed) : "");
}

}  // namespace paratune::tune
