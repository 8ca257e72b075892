#include "paratune/tune/study_common.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "paratune/spec/error.h"
#include "paratune/trial/command.h"

namespace paratune::tune {

StudyLock::StudyLock(const std::filesystem::path& store_path) : path_(store_path.string() + ".lock") {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(fmt::format("{}: cannot create the study lock: {}", path_, std::strerror(errno)));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    throw Error(fmt::format("--study {}: another paratune controller is running this study file (lock {} held)",
                            store_path.string(), path_));
  }
}

StudyLock::~StudyLock() { ::close(fd_); }

std::string shown_command(const trial::TrialLaunch& launch) {
  std::string shown = fmt::format("PARATUNE_MAX_STEPS={} PARATUNE_PARAMS={}", launch.max_steps,
                                  trial::shell_quote(launch.params_json));
  for (const auto& [key, value] : launch.env) shown.append(fmt::format(" {}={}", key, trial::shell_quote(value)));
  for (const std::string& a : launch.argv) shown.append(" ").append(trial::shell_quote(a));
  return shown;
}

void validate_limits(const trial::TrialLimits& limits, double budget_s) {
  const std::array<std::pair<const char*, double>, 5> non_negative{{{"--budget", budget_s},
                                                                    {"--timeout", limits.timeout_s},
                                                                    {"--hang", limits.hang_s},
                                                                    {"--grace", limits.grace_s},
                                                                    {"--memory-limit", limits.memory_limit_bytes}}};
  for (const auto& [flag, value] : non_negative)
    if (!(value >= 0) || !std::isfinite(value)) throw Error(fmt::format("{} {}: must be >= 0 (0: none)", flag, value));
}

}  // namespace paratune::tune
