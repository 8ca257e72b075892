#include "paratune/hpo/surrogate.h"

#include <fmt/format.h>

#include <cmath>

#include "paratune/hpo/trainer_program.h"
#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"

namespace paratune::hpo {
namespace {

// What PARATUNE_PARAMS carries for the study's surrogates (TrainerProgram::surrogate_params);
// nullopt when its trainer cannot narrow its model.
std::optional<nlohmann::ordered_json> surrogate_params_of(const HpoOptions& options) {
  const TrainerProgram* trainer = trainer_of(options);
  return trainer ? trainer->surrogate_params(options.surrogate_ratio) : std::nullopt;
}

}  // namespace

nlohmann::ordered_json trial_params(const HpoOptions& options, const Config& config) {
  nlohmann::ordered_json params = config;
  if (options.surrogate_ratio == 1) return params;
  const nlohmann::ordered_json surrogate = surrogate_params_of(options).value_or(nlohmann::ordered_json::object());
  for (const auto& [name, value] : surrogate.items()) params[name] = value;
  return params;
}

void validate_surrogate(const HpoOptions& options) {
  if (!std::isfinite(options.surrogate_ratio) || options.surrogate_ratio < 1)
    throw OptionError("surrogate_ratio", fmt::format("{}", options.surrogate_ratio),
                      "must be a number >= 1 (the surrogate is that many times narrower)");
  if (options.surrogate_ratio == 1) return;
  if (options.objective == kThroughputObjective)
    throw OptionError("surrogate_ratio", "",
                      fmt::format("tunes training hyperparameters on a narrower model; a surrogate's throughput says "
                                  "nothing of the target's (give {} METRIC and {})",
                                  option_ref("objective"), option_ref("direction")));
  if (!surrogate_params_of(options))
    throw OptionError("surrogate_ratio", "",
                      fmt::format("narrows the model of {} (its option surrogate_ratio, and muP), and the command "
                                  "runs '{}'",
                                  paratune_train().name(), command_program(options.command)));
}

void check_surrogate_space(const Space& space, const HpoOptions& options) {
  if (options.surrogate_ratio == 1) return;
  const nlohmann::ordered_json surrogate = surrogate_params_of(options).value_or(nlohmann::ordered_json::object());
  for (const auto& [name, value] : surrogate.items())
    if (space.index_of(name))
      throw OptionError("surrogate_ratio", "",
                        fmt::format("the space's parameter '{}' is what {} sets", name, option_ref("surrogate_ratio")));
}

Transfer transfer_to_target(const Space& space, const HpoOptions& options, const Config& best) {
  const TrainerProgram* trainer = trainer_of(options);
  if (!trainer) throw Error(fmt::format("no trainer runs '{}' to transfer to (a bug)", options.command));
  HpoOptions target = options;
  target.surrogate_ratio = 1;
  const trial::TrialLaunch launch = render_run(space, target, best, "transfer", options.trials_dir, options.steps,
                                               options.steps, options.strategy.empty() ? "" : "none");
  Transfer t = trainer->transfer(launch, options.surrogate_ratio);
  t.ratio = options.surrogate_ratio;
  t.hyperparameters = best;
  return t;
}

}  // namespace paratune::hpo
