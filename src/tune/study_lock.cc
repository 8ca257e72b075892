#include "paratune/tune/study_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
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

}  // namespace paratune::tune
