// `paratune tune` for training hyperparameters: a sampler, a pruner and a metric objective.
#pragma once

#include "setup_flags.h"
#include "tune_flags.h"

namespace paratune::cli {

// A hyperparameter study rather than a search of parallel configurations: a metric objective, a
// pruner, a hyperparameter sampler, trials of several ranks, or a space with typed or conditional
// parameters.
bool is_hpo_study(const TuneFlags& f);

// Runs the hyperparameter study; the exit code as `paratune tune`'s.
int run_hpo_tune(const SetupFlags& setup, const TuneFlags& f, bool json);

}  // namespace paratune::cli
