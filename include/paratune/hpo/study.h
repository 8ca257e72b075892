// A hyperparameter study: a sampler proposes configurations, each becomes a real training trial
// (trial/runner.h), a pruner stops or pauses the bad ones on their learning curves, and every run
// goes to the study store (store/study_store.h). The objective is any metric the trials report
// (`--objective val_accuracy --direction maximize`), or their throughput.
//
// The controller loop (src/hpo/controller.cc; HyperTune's controller/scheduler split, data/papers/README.md#hypertune-distributed-hpo-report
// Sec. 3; ASHA's get_job, Li et al. 2020 Alg. 2): while there
// is a free slot and time left, first promote a resting trial if the pruner has one (ASHA), else run
// a configuration a killed controller left unfinished, else ask the sampler for a new one (while
// --max-trials allows); wait for output; feed each new intermediate value to the pruner (median,
// percentile: it may stop the trial); store every run that ends.
//
// Runs, rungs and checkpoints: with ASHA or Hyperband a trial first runs to its bracket's first rung
// (PARATUNE_MAX_STEPS = the rung's steps; {steps} and the schedule keep the full resource), then
// rests there as "pruned" with its rung. Each run gets PARATUNE_CHECKPOINT_DIR =
// TRIAL_DIR/checkpoint-<steps>; a program that saves there and says so ({"checkpoint_step": N},
// trial/protocol.h) is promoted by resuming: the next run gets a copy (hard links) of that
// checkpoint and PARATUNE_MAX_STEPS = the next rung, and its steps and metrics are added to the
// earlier ones'. A program that does not checkpoint is promoted by running it again from step 0 for
// longer (its earlier output is replaced when that run ends, not before, so an interrupted promotion
// loses nothing). A resumed run whose first step is not the one after its checkpoint fails with that
// reason (the program announced checkpoints it does not resume from).
//
// Resuming (same store, study name and identity — space, command, steps, objectives, directions,
// pruner and its settings, memory limit, step-time regex, trial ranks, strategy): every finished run
// is reused; a trial left running on its
// first run is marked interrupted and its configuration runs again as a new trial; a trial left
// running on a promotion rests at its rung again, promotable as before (its rung's checkpoint is
// untouched: the promotion wrote to a directory of its own).
#pragma once

#include <atomic>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "paratune/hpo/pruner.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/space.h"
#include "paratune/store/study_store.h"
#include "paratune/trial/runner.h"
#include "paratune/tune/study.h"

namespace paratune::hpo {

class TrainerProgram;  // hpo/trainer_program.h

// The objective that means "the trial's measured steps per second" rather than a reported metric.
inline constexpr const char* kThroughputObjective = "throughput";

struct HpoOptions {
  std::string name = "main";        // the study within the store file
  std::string command;              // the command template (trial/command.h)
  int steps = 20;                   // a full trial's steps: the pruners' max resource, {steps}
  std::string objective = kThroughputObjective;  // a metric name the trials report, or "throughput"
  Direction direction = Direction::kMaximize;
  // A study of several objectives (a Pareto front, hpo/pareto.h): each one -- a metric, or
  // throughput -- and its direction, in order; `objective` and `direction` are then the first's
  // (its curve is the one shown while trials run). Empty for a study of one objective; never of
  // size 1. A completed trial's values are the last value it reported of each (trial_values); a
  // trial that reports not every one fails. Pruning needs one objective: the pruner must be none.
  std::vector<std::string> objectives;
  std::vector<Direction> directions;
  trial::TrialLimits limits;        // timeout, hang, grace, memory limit (per run)
  std::string step_time_regex;      // trial/protocol.h
  int max_trials = 0;               // configurations in the study in all, reused ones included; 0: no limit
  double budget_s = 0;              // wall time of this run; 0: no limit
  bool retry_failed = false;        // run the configurations of failed trials again (not by default)
  std::filesystem::path trials_dir; // trial N runs in trials_dir/trial-NNNN (made absolute)
  // Two levels of parallelism (HyperTune): each trial takes `trial_ranks` of the backend's slots
  // ({ranks}) and trains across them with `strategy` ({strategy}: none, dp, mp, gpipe, dp+gpipe,
  // or auto: chosen per trial; empty: the command has no {strategy}). A parameter of the space
  // named "ranks" gives each trial its own count instead, and trials of different sizes are packed
  // onto the free slots.
  int trial_ranks = 1;
  std::string strategy;
  // Hydro's surrogate models (hpo/surrogate.h): trials train the trainer's model with every width
  // divided by this, under muP (PARATUNE_PARAMS gets what the trainer asks for: paratune-train's
  // surrogate_ratio and parametrization mup); a retrain trains the target (1). 1: the model as the
  // command describes it.
  double surrogate_ratio = 1;
  // Inter-trial fusion (hpo/fusion.h): up to `fuse` trials that differ only in fusable options
  // train as one fused model in one process; `fuse_auto` picks the size by a probe instead (up to
  // kMaxFusedTrials and --max-trials). 1 and not auto: every trial alone.
  int fuse = 1;
  bool fuse_auto = false;
  // Trials that stay alive (docs/trial-protocol.md, "Serving"; trial/runner.h): each slot's trials
  // run in one serving process of the command, which keeps paused trials (ASHA's rungs) in memory.
  // The local backend only; not with fusion or workers; the command may not name a trial's own
  // values ({lr}, {trial_id}, {trial_dir}, {config}): they come in each trial's assignment. A
  // program that does not serve runs each trial as a process of its own, as without it.
  bool serve = false;
  // One of several workers on the study (tune/study_common.h: WorkerOptions). Samplers and pruners
  // see every worker's trials, refreshed at each claim and heartbeat; an ASHA promotion is claimed
  // like a new trial, so no trial is promoted twice. Not with fusion or --strategy auto (each
  // decides outside the claim's transaction).
  tune::WorkerOptions worker;
  // What the study is stored as, which a resumed run must match (store/study_store.h open_study);
  // null: hpo_identity(). A configuration study keeps the form it had before both kinds of study ran
  // in this loop (tune/study.h configuration_identity), so that the studies written then resume.
  nlohmann::ordered_json identity;
  // The trial program as the engine asks it for surrogates, fusion and --strategy auto
  // (hpo/trainer_program.h); not owned. Null: the known trainer the command runs, if any.
  const TrainerProgram* trainer = nullptr;
};
// Throws OptionError naming the field and the rule.
void validate(const HpoOptions& options);
// Whether the study has several objectives (HpoOptions::objectives).
inline bool many_objectives(const HpoOptions& options) { return !options.objectives.empty(); }
// The study's trainer: options.trainer, else trainer_for(options.command); null when neither.
const TrainerProgram* trainer_of(const HpoOptions& options);
// --strategy auto: each trial's strategy chosen by the cost model of the study's trainer
// (src/hpo/trial_launcher.h; paratune-train's is train/strategy_cost.h).
inline constexpr const char* kAutoStrategy = "auto";
// The strategies a trial may train with (paratune-train's --strategy: none, dp, mp, gpipe,
// dp+gpipe), and auto.
const std::vector<std::string>& trial_strategies();

// The placeholders a command template may use besides the space's unconditional parameters (a
// conditional one may be absent: programs read it from PARATUNE_PARAMS):
//   {gpus}      the product of the parameters dp, tp, pp and cp that exist (1 if none), unless the
//               space has its own parameter "gpus";
//   {config}    every active parameter as name=value joined by commas;
//   {steps}     a full trial's steps;
//   {ranks}     the slots (processes, devices) the trial has;
//   {strategy}  how it trains across them (HpoOptions::strategy, or the trial's own with auto);
//   {trial_id}, {trial_dir}: as in the environment.
std::vector<std::string> hpo_placeholders();

struct HpoSummary {
  std::string name, sampler, pruner, objective;
  Direction direction = Direction::kMaximize;
  int reused = 0;                     // trials found in the store
  int requeued = 0;                   // configurations of interrupted first runs that run again
  int leftover_processes_killed = 0;  // processes of a killed controller's trials still alive at resume
  int retried_failed = 0;             // failed trials whose configurations run again (--retry-failed)
  int started = 0;                    // new trials started by this run
  int promotions = 0;                 // runs of resting trials started by this run
  int reaped = 0;                     // worker mode: other workers' trials marked interrupted (no heartbeat)
  int dropped = 0;                    // worker mode: results of runs taken from this worker, not stored
  int fused_groups = 0;               // processes that trained several new trials fused (hpo/fusion.h)
  int fused_trials = 0;               // the new trials they trained
  int serving_processes = 0;          // HpoOptions::serve: the processes that ran this run's trials
  nlohmann::ordered_json fusion_probe;  // --fuse auto's measurements and choice (to_json(FusionProbe)); null without
  tune::StopReason stop = tune::StopReason::kExhausted;
  double elapsed_s = 0;
  std::vector<store::StoredTrial> trials;  // every trial of the study, in number order
  std::optional<std::size_t> best;         // index into trials: best_hpo_trial; none with several objectives
  // Several objectives (HpoOptions::objectives): the Pareto front, indices into trials
  // (pareto_front_trials); `trials` then holds their metrics. Empty otherwise.
  std::vector<std::size_t> front;
  std::vector<std::string> objectives;
  std::vector<Direction> directions;
  // A configuration study's space (tune::run_configuration_study), whose summary is told in the
  // terms configuration studies always had (report/tune_report.h format_study); none otherwise.
  std::optional<tune::SpaceSize> space;
};

// What a stored trial is ranked by: its objective; where none is stored -- a trial of a
// configuration study written before both kinds of study ran in one loop (main e0b0512), or of a
// retrain -- its throughput, which was its objective (a completed trial of a metric objective always
// has its value stored).
std::optional<double> trial_value(const store::StoredTrial& trial);
// The best trial of any study: completed with a finite trial_value, the best by `direction`
// (earliest on a tie).
std::optional<std::size_t> best_hpo_trial(const std::vector<store::StoredTrial>& trials, Direction direction);

// A study of several objectives: each objective's value in a run's metrics, in order -- the last
// value reported of each metric, the throughput estimate for "throughput" -- or the first objective
// with no finite value (its name) when one is missing. Shared by the controller (a run that ends)
// and readers of stored trials (trial_values), so both take the same values.
struct ObjectiveValues {
  std::vector<double> values;  // complete when `missing` is empty
  std::string missing;
};
ObjectiveValues objective_values(const std::vector<trial::MetricReport>& metrics, std::optional<double> throughput,
                                 const std::vector<std::string>& objectives);
// A stored trial's values (read with its metrics): objective_values of its metrics and throughput;
// none unless it completed with every one.
std::optional<std::vector<double>> trial_values(const store::StoredTrial& trial, const std::vector<std::string>& objectives);
// The Pareto front of a study of several objectives (hpo/pareto.h): the indices of the completed
// trials with every value (trial_values) that no other such trial dominates, by the first
// objective's value, best first (then by number). Equal points are all on it.
std::vector<std::size_t> pareto_front_trials(const std::vector<store::StoredTrial>& trials,
                                             const std::vector<std::string>& objectives,
                                             const std::vector<Direction>& directions);

// The slots a configuration's trial takes: its "ranks" parameter, else options.trial_ranks.
int ranks_of(const HpoOptions& options, const Config& config);

// A run of `config`: its command rendered from the template ({steps} = horizon_steps, the schedule's
// length; {strategy} = `strategy`, the trial's own with --strategy auto), PARATUNE_MAX_STEPS =
// max_steps, its slots and limits; no checkpoint directory.
trial::TrialLaunch render_run(const Space& space, const HpoOptions& options, const Config& config, const std::string& id,
                              const std::filesystem::path& dir, int max_steps, int horizon_steps,
                              const std::string& strategy);

// A stored trial (read with its metrics: StudyStore::trials(study, true)) as samplers and pruners
// see it: state from its status, the objective's curve from its metrics, value when completed. A
// study of several objectives (`objectives` not empty; `objective` their first): a completed trial's
// values too (trial_values; one stored without them, which the study never writes, is failed).
TrialRecord record_of(const store::StoredTrial& trial, const std::string& objective,
                      const std::vector<std::string>& objectives = {});

// The study's identity as stored: what must match to resume it.
nlohmann::ordered_json hpo_identity(const Space& space, const HpoOptions& options, const Pruner& pruner);

// Runs (or resumes) the study. `stop_requested` is polled; once non-zero, running trials are stopped
// (first runs stored as interrupted, promotions back at their rung) and the run returns. Throws
// Error on bad options, a template with an unknown or conditional placeholder, a pruner without
// intermediate values (objective throughput) or a study stored with another identity.
HpoSummary run_hpo(const Space& space, const HpoOptions& options, store::StudyStore& store,
                   const trial::Backend& backend, Sampler& sampler, Pruner& pruner, tune::StudyObserver& observer,
                   const std::atomic<int>& stop_requested);

}  // namespace paratune::hpo
