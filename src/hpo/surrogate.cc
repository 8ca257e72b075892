#include "paratune/hpo/surrogate.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/train/mup.h"
#include "paratune/train/options.h"
#include "paratune/trial/command.h"
#include "trainer_command.h"

namespace paratune::hpo {
namespace {

std::string widths_of(const train::TrainOptions& o) {
  auto list = [](const std::vector<int>& values) {
    std::string text;
    for (int v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
    return text;
  };
  switch (o.model) {
    case train::Workload::kMlp: return "mlp_hidden " + list(o.mlp_hidden);
    case train::Workload::kCnn: return "cnn_channels " + list(o.cnn_channels);
    case train::Workload::kGpt: return fmt::format("d_model {}", o.d_model);
  }
  return "";
}

}  // namespace

nlohmann::ordered_json trial_params(const HpoOptions& options, const Config& config) {
  nlohmann::ordered_json params = config;
  if (options.surrogate_ratio != 1) {
    params["surrogate_ratio"] = options.surrogate_ratio;
    params["parametrization"] = "mup";
  }
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
  if (!runs_trainer(options.command))
    throw OptionError("surrogate_ratio", "",
                      fmt::format("narrows the model of {} (its option surrogate_ratio, and muP), and the command "
                                  "runs '{}'",
                                  kTrainerProgram, command_program(options.command)));
}

void check_surrogate_space(const Space& space, const HpoOptions& options) {
  if (options.surrogate_ratio == 1) return;
  for (const char* name : {"surrogate_ratio", "parametrization"})
    if (space.index_of(name))
      throw OptionError("surrogate_ratio", "",
                        fmt::format("the space's parameter '{}' is what {} sets", name, option_ref("surrogate_ratio")));
}

Transfer transfer_to_target(const Space& space, const HpoOptions& options, const Config& best) {
  HpoOptions target = options;
  target.surrogate_ratio = 1;
  const trial::TrialLaunch launch = render_run(space, target, best, "transfer", options.trials_dir, options.steps,
                                               options.steps, options.strategy.empty() ? "" : "none");
  const train::TrainOptions o = train::read_train_options(
      std::vector<std::string>(launch.argv.begin() + 1, launch.argv.end()), launch.params_json, "");
  train::TrainOptions surrogate = o;
  surrogate.surrogate_ratio = options.surrogate_ratio;
  train::resolve(surrogate);  // the widths divide (the trials ran), named if not
  Transfer t;
  t.ratio = options.surrogate_ratio;
  t.optimizer = train::to_string(o.optimizer);
  t.surrogate_widths = widths_of(train::narrowed(surrogate));
  t.target_widths = widths_of(o);
  t.hyperparameters = best;
  const double m = 1 / options.surrogate_ratio;
  const struct {
    train::WeightRole role;
    double m_in, m_out;
  } roles[] = {{train::WeightRole::kInput, 1, m},
               {train::WeightRole::kHidden, m, m},
               {train::WeightRole::kOutput, m, 1},
               {train::WeightRole::kVector, 1, m}};
  for (const auto& r : roles) {
    const train::MupScaling s = train::mup_scaling(r.role, o.optimizer, r.m_in, r.m_out);
    t.rates.push_back({train::to_string(r.role), o.lr * s.learning_rate, o.lr, o.weight_decay * s.weight_decay,
                       o.weight_decay});
  }
  return t;
}

}  // namespace paratune::hpo
