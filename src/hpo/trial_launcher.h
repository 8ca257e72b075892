// How the study loop (controller.cc) describes a trial's run and registers a new trial: the launch
// (its command, environment and checkpoint directory), the configuration record that reproduces the
// trial alone, and -- for a new trial -- its number, record and book, stored with the sampler's notes
// and model. A promotion's run gets the checkpoint it resumes from here; a fused group's process its
// one launch.
//
// --strategy auto: each new trial's parallel strategy is chosen here by the cost model of the study's
// trainer (hpo/trainer_program.h StrategyChooser; paratune-train's is train/strategy_cost.h, measured
// by `paratune-train --profile` and kept in TRIALS_DIR/strategy-profiles/, so a resumed study decides
// as before without measuring again). Every rank count the study's trials may have is measured when
// a model shape is first seen -- before its first trial starts, so no trial of it runs beside a
// measurement.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "paratune/hpo/study.h"
#include "paratune/hpo/trainer_program.h"
#include "study_trials.h"

namespace paratune::hpo {

// Where a run to `steps` steps checkpoints: a directory of this name in its trial's.
std::string checkpoint_dir_name(std::int64_t steps);

class TrialLauncher {
 public:
  // Throws OptionError when --strategy auto has no cost model of the study's trainer.
  TrialLauncher(const LoopContext& loop, StudyTrials& trials);

  // A fused group's member after the first: the group's process runs in the first member's
  // directory (hpo/fusion.h), which its stored configuration names.
  struct FusedPlace {
    int member = 0;
    std::filesystem::path group_dir;
  };
  // A new trial as it is stored and launched, once its number is known.
  struct NewRun {
    TrialRecord record;
    trial::TrialLaunch launch;
    store::StudyStore::LaunchRecord stored;
    std::int64_t resource = 0;
    std::string strategy;
  };
  // No store call: it runs inside the store's transaction (begin_trial, claim_trial).
  [[nodiscard]] NewRun describe_new(const Config& config, const Assignment& assignment, int number,
                                    const std::string& strategy, const std::optional<FusedPlace>& fused) const;
  // A new trial the store holds now (id `db_id`): its notes, the sampler's model, its record and book.
  Begun register_new(NewRun run, std::int64_t db_id, const nlohmann::ordered_json& notes);
  // A new trial stored and registered, its strategy chosen first with --strategy auto (throws
  // Error when a measurement it needs fails).
  Begun begin_new(const Config& config, nlohmann::ordered_json notes, const Assignment& assignment,
                  const std::optional<FusedPlace>& fused = std::nullopt);

  // A promotion's run of trial `r` to `resource` steps: from a copy of its checkpoint when it has
  // one, else from step 0. Returns the launch, and the run as `live` tracks it.
  // `in_memory`: a serving process keeps the trial's paused state (trial::TrialRunner::holds).
  trial::TrialLaunch promotion_run(const TrialRecord& r, Book& book, std::int64_t resource, LiveRun& live,
                                   bool in_memory) const;
  // The id a run of trial `number` has (PARATUNE_TRIAL_ID): the same for each of its runs.
  [[nodiscard]] std::string run_id(int number) const;
  // One process for a group's members: rendered as the first member's run (the shared options), in
  // its directory, with every member's PARATUNE_PARAMS in an array and no checkpoint directory.
  [[nodiscard]] trial::TrialLaunch fused_run(const std::vector<Begun>& members) const;

 private:
  [[nodiscard]] trial::TrialLaunch launch_for(const TrialRecord& r, const std::filesystem::path& dir,
                                              std::int64_t target, const std::string& strategy) const;
  [[nodiscard]] nlohmann::ordered_json trial_config(const trial::TrialLaunch& launch, int bracket,
                                                    const std::string& strategy) const;

  const LoopContext& loop_;
  StudyTrials& trials_;
  const std::filesystem::path trials_dir_;
  nlohmann::ordered_json stored_model_;
  std::unique_ptr<StrategyChooser> strategies_;  // --strategy auto
};

}  // namespace paratune::hpo
