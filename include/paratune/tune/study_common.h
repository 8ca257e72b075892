// What every study controller (tune/study.h, hpo/study.h) does the same way around its trials.
#pragma once

#include <filesystem>
#include <string>
#include <utility>

#include "paratune/trial/runner.h"

namespace paratune::tune {

// As pasteable as it gets: the environment a trial program reads, then the command.
std::string shown_command(const trial::TrialLaunch& launch);

// The limits and the budget every study takes: each >= 0 and finite (0: none); throws OptionError
// naming the field (budget_s, limits.timeout_s, ...).
void validate_limits(const trial::TrialLimits& limits, double budget_s);

}  // namespace paratune::tune
