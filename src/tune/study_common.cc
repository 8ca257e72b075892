#include "paratune/tune/study_common.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <utility>

#include "paratune/spec/error.h"
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

}  // namespace paratune::tune
