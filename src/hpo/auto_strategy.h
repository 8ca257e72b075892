// --strategy auto: each trial's parallel strategy chosen by paratune's cost model of paratune-train
// (train/strategy_cost.h) for that trial's model, batch and ranks. The model's per-layer costs on
// this host are measured once per model shape and rank count by `paratune-train --profile` (a few
// seconds each) and kept in TRIALS_DIR/strategy-profiles/, so a resumed study decides as before
// without measuring again. Every rank count the study's trials may have is measured when a model
// shape is first seen -- before its first trial starts, so no trial of it runs beside a measurement.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "paratune/hpo/space.h"
#include "paratune/hpo/study.h"
#include "paratune/train/strategy_cost.h"

namespace paratune::hpo {

class AutoStrategy {
 public:
  // Throws Error when the command does not run paratune-train (the only program whose strategies
  // paratune can model).
  AutoStrategy(const Space& space, const HpoOptions& options, std::filesystem::path profiles_dir);

  struct Choice {
    std::string strategy;
    nlohmann::ordered_json notes;  // the predictions, stored with the trial
  };
  // The strategy a trial of `config` on `ranks` ranks trains with: the fastest predicted. One rank:
  // none. A configuration paratune-train refuses, or one no strategy can run, gets "dp" ("none" on
  // one rank) and a note saying why: the trial then fails with paratune-train's own message (a
  // failed trial, as any).
  // Throws Error when the profile cannot be measured.
  Choice choose(const Config& config, int ranks);

 private:
  const train::StrategyProfile& profile(const std::string& program, const train::TrainOptions& options, int ranks);

  const Space& space_;
  const HpoOptions& options_;
  std::vector<int> study_ranks_;  // the rank counts above 1 the study's trials may have
  std::filesystem::path profiles_dir_;
  std::map<std::string, train::StrategyProfile> profiles_;  // by profile command line
};

}  // namespace paratune::hpo
