// What every study controller (tune/study.h, hpo/study.h) does the same way around its trials.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <utility>

#include "paratune/trial/runner.h"

namespace paratune::tune {

// One controller per study file at a time: an advisory lock (flock) on the study file itself, so a
// symlink or hard link to it meets the same lock; released by the kernel however the controller
// ends (a second controller would run the same trials again and kill the first one's). Throws
// Error naming the file when another controller -- in another process or this one -- holds it.
class StudyLock {
 public:
  explicit StudyLock(const std::filesystem::path& store_path);
  ~StudyLock();
  StudyLock(const StudyLock&) = delete;
  StudyLock& operator=(const StudyLock&) = delete;

 private:
  std::pair<dev_t, ino_t> key_;  // the file's device and inode
};

// As pasteable as it gets: the environment a trial program reads, then the command.
std::string shown_command(const trial::TrialLaunch& launch);

// The limits and the budget every study takes: each >= 0 and finite (0: none); throws OptionError
// naming the field (budget_s, limits.timeout_s, ...).
void validate_limits(const trial::TrialLimits& limits, double budget_s);

}  // namespace paratune::tune
