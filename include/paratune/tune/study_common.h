// What every study controller (tune/study.h, hpo/study.h) does the same way around its trials.
#pragma once

#include <filesystem>
#include <string>

#include "paratune/trial/runner.h"

namespace paratune::tune {

// One controller per study file at a time: an advisory lock on FILE.lock, released by the kernel
// however the controller ends (a second controller would run the same trials again). Throws Error
// naming the file when another controller holds it.
class StudyLock {
 public:
  explicit StudyLock(const std::filesystem::path& store_path);
  ~StudyLock();
  StudyLock(const StudyLock&) = delete;
  StudyLock& operator=(const StudyLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

// As pasteable as it gets: the environment a trial program reads, then the command.
std::string shown_command(const trial::TrialLaunch& launch);

// The limits and the budget every study takes: each >= 0 and finite (0: none); throws Error naming
// the flag.
void validate_limits(const trial::TrialLimits& limits, double budget_s);

}  // namespace paratune::tune
