// What the study engine needs from a trial program beyond the @paratune protocol (trial/protocol.h)
// that every program speaks. Any program can be tuned: the engine renders its command, passes the
// configuration in PARATUNE_PARAMS and reads its lines. Three features change what a trial trains,
// not only the values it gets, so they need a program that implements them -- a trainer:
//   - surrogates (hpo/surrogate.h; Hydro): each trial trains the model narrower, and the best
//     configuration is carried to the full width;
//   - inter-trial fusion (hpo/fusion.h; HFTA): trials that differ only in some options train as one
//     process;
//   - --strategy auto (src/hpo/trial_launcher.h): each trial's parallel strategy is picked by a cost
//     model of the program, from measurements of it.
// paratune-train implements all three (paratune_train(), src/hpo/paratune_train.cc). The engine asks
// for the study's trainer with trainer_of(options) (hpo/study.h): HpoOptions::trainer where a library
// user gives one, else the one the command runs (trainer_for), found by its program's file name. A
// study of a program no trainer answers for runs as any other, and a feature it needs is refused
// before anything runs.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "paratune/hpo/surrogate.h"
#include "paratune/trial/runner.h"

namespace paratune::hpo {

// --strategy auto's chooser for one study: it keeps the measurements it made.
class StrategyChooser {
 public:
  virtual ~StrategyChooser() = default;

  struct Choice {
    std::string strategy;          // as {strategy} renders it
    nlohmann::ordered_json notes;  // stored with the trial's predictions: what was predicted, or why none was chosen
  };
  // The strategy a trial trains fastest with on `ranks` ranks. `launch`: the trial's run, rendered
  // with the strategy "dp" (the command the program's options are read from). A trial the program
  // would refuse gets a strategy anyway, and a note saying why: the trial then fails with the
  // program's own message, as any failed trial. Throws Error when a measurement fails.
  virtual Choice choose(const trial::TrialLaunch& launch, int ranks) = 0;
};

class TrainerProgram {
 public:
  virtual ~TrainerProgram() = default;

  // The program's name, as messages give it.
  [[nodiscard]] virtual std::string name() const = 0;
  // Whether a command template runs this program.
  [[nodiscard]] virtual bool runs(const std::string& command) const = 0;

  // Fusion: the parameters that may differ between the members of a fused group. The program must
  // read PARATUNE_PARAMS as a JSON array (a configuration per member) and train the members in one
  // process, naming the member in each metric line ("member": b) and in a "diverged" line for a
  // member that diverged; every other parameter the members share. Empty: it does not fuse.
  [[nodiscard]] virtual std::vector<std::string> fusable_parameters() const = 0;

  // Surrogates: what PARATUNE_PARAMS carries besides the configuration for the program to train its
  // model `ratio` (> 1) times narrower, scaled so that the narrow model's best hyperparameters are
  // the full model's (muP); nullopt: it cannot. A study's space may not have these names.
  [[nodiscard]] virtual std::optional<nlohmann::ordered_json> surrogate_params(double ratio) const = 0;
  // A surrogate study's best configuration at the target's width: the widths and each weight role's
  // effective learning rate and decay there and on the surrogate (Transfer's ratio and
  // hyperparameters are the engine's to set). `target`: the configuration's run at full width.
  // Called where surrogate_params gave some; throws Error when the program refuses the options.
  [[nodiscard]] virtual Transfer transfer(const trial::TrialLaunch& target, double ratio) const = 0;

  // --strategy auto: a chooser that keeps its measurements under `profiles_dir` (so that a resumed
  // study decides as before without measuring again) and measures each of `study_ranks` -- the rank
  // counts above 1 the study's trials may have -- when it first sees a model, before the model's
  // first trial starts. Null: it has no cost model.
  [[nodiscard]] virtual std::unique_ptr<StrategyChooser> strategy_chooser(std::filesystem::path profiles_dir,
                                                                          std::vector<int> study_ranks) const = 0;
};

// paratune's own trainer, paratune-train (src/trainer), as the engine talks to it.
const TrainerProgram& paratune_train();

// The known trainer a command template runs (paratune_train() when its program's file name is
// paratune-train, wherever it is installed), or null.
const TrainerProgram* trainer_for(const std::string& command);

// The program a command template runs, as written ("" for an empty command): messages name it.
std::string command_program(const std::string& command);

}  // namespace paratune::hpo
