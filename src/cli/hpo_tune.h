// `paratune tune`'s two kinds of study, ready for the one loop: a search of parallel configurations
// for throughput (tune_command.cc), or training hyperparameters with a sampler, a pruner and any
// objective (hpo_tune.cc).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "paratune/hpo/pruner.h"
#include "paratune/hpo/retrain.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/study.h"
#include "paratune/tune/space.h"
#include "setup_flags.h"
#include "tune_flags.h"

namespace paratune::cli {

// A study as hpo::run_hpo runs it, whichever kind the flags asked for.
struct TuneStudy {
  hpo::HpoOptions options;  // validated; a configuration study's with its identity (tune::configuration_identity)
  // A configuration study's discrete view of the space (tune::SearchSpace::of), which its sampler
  // searches and must outlive it.
  std::unique_ptr<tune::SearchSpace> view;
  std::unique_ptr<hpo::Sampler> sampler;
  std::unique_ptr<hpo::Pruner> pruner;
  std::optional<tune::SpaceSize> size;  // a configuration study's space; none for a hyperparameter study
  // --retrain / --retrain-top: the best configurations trained again when the search ends (hpo/retrain.h).
  std::optional<hpo::RetrainTop> retrain;
  // What the study's first line says of it, before the backend's slots and after them.
  std::string head, per_trial;
};

// A hyperparameter study rather than a search of parallel configurations: a metric objective, a
// pruner, a hyperparameter sampler, trials of several ranks, or a space with typed or conditional
// parameters. Where only the space can tell, it reads the --space file into `space`, so that the
// study does not read it again.
bool is_hpo_study(const TuneFlags& f, std::optional<hpo::Space>& space);

// The hyperparameter study of the flags, over the --space file (read into `space` unless it is).
TuneStudy hpo_study_from(const SetupFlags& setup, const TuneFlags& f, std::optional<hpo::Space>& space);

}  // namespace paratune::cli
