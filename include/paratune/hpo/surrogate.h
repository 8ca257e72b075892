// Hydro's surrogate tuning (data/papers/README.md#hydro-surrogate-tuning-slides, "Hydro Tuner"):
// `paratune tune --surrogate-ratio S` trains each trial's model with every width divided by S under
// muP, searches on these cheap surrogates, and transfers the best configuration to the target width
// by muP's rules (train/mup.h). The trial program must be a trainer that narrows its model
// (hpo/trainer_program.h): paratune-train.
//
// The base of muP's rules is the target itself, so the transfer keeps every global value (the
// learning rate, weight decay, momentum, ...): the per-layer factors that made the surrogate behave
// like the target are 1 at the target's width, where muP is the standard model. What changes from
// surrogate to target is each layer's effective rate, which the transfer reports per weight role.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "paratune/hpo/space.h"
#include "paratune/hpo/study.h"

namespace paratune::hpo {

// What a trial's program reads from PARATUNE_PARAMS: the configuration, plus the trainer's
// surrogate parameters when options.surrogate_ratio is not 1 (paratune-train's surrogate_ratio and
// parametrization "mup"; an option on its command line overrides PARATUNE_PARAMS: a command saying
// --parametrization sp trains SP surrogates).
nlohmann::ordered_json trial_params(const HpoOptions& options, const Config& config);

// Throws OptionError unless surrogate_ratio is a number >= 1 and, when it is not 1, the objective
// is a metric and the study's trainer narrows its model (trainer_of; paratune-train does).
void validate_surrogate(const HpoOptions& options);

// Throws OptionError (surrogate_ratio) when a surrogate study's space has a parameter paratune sets itself.
void check_surrogate_space(const Space& space, const HpoOptions& options);

struct RoleRates {
  std::string role;  // input, hidden, output, vector (train/mup.h)
  double surrogate_lr = 0, target_lr = 0, surrogate_weight_decay = 0, target_weight_decay = 0;
};

struct Transfer {
  double ratio = 1;
  std::string optimizer;
  std::string surrogate_widths, target_widths;  // e.g. "mlp_hidden 64,32", "mlp_hidden 256,128"
  Config hyperparameters;                       // the target's: the best configuration's values
  std::vector<RoleRates> rates;                 // each weight role's effective rate and decay
};

// The best configuration of a surrogate study transferred to the target (TrainerProgram::transfer).
// Throws Error when the trainer would refuse the configuration's options.
Transfer transfer_to_target(const Space& space, const HpoOptions& options, const Config& best);

}  // namespace paratune::hpo
