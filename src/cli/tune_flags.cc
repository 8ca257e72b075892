#include "tune_flags.h"

#include "flag_checks.h"

namespace paratune::cli {
namespace {

// The space, the trials' command and the study they are stored in.
void add_study_flags(CLI::App* tune_cmd, SetupFlags& tune_setup, TuneFlags& tune_flags) {
  tune_cmd->add_option("--space", tune_flags.space_path, "search-space file (YAML/JSON: parameters, constraints)");
  add_setup_flags(tune_cmd, tune_setup, false);
  tune_cmd->add_option("--fix", tune_flags.fix, "with --model: fix axes of the derived space, e.g. tp=8");
  tune_cmd->add_option("--allow", tune_flags.allow, "with --model: allowed values, e.g. zero=0,1");
  tune_cmd->add_option("--max", tune_flags.max, "with --model: upper bounds, e.g. pp=4");
  tune_cmd->add_option("--command", tune_flags.command,
                       "trial command template, e.g. 'torchrun --nproc-per-node {gpus} train.py --tp {tp}'; "
                       "placeholders: the parameters, {gpus} {config} {steps} {trial_id} {trial_dir} (hyperparameter studies: "
                       "{ranks} {strategy}, and no {gpus})")
      ->required();
  tune_cmd->add_option("--study", tune_flags.study_path,
                       "study store (created, or resumed): an SQLite file, or postgresql://[user[:password]@]host[:port]/db")->required();
  tune_cmd->add_option("--study-name", tune_flags.study_name, "study within the file")->capture_default_str();
  tune_cmd->add_option("--trials-dir", tune_flags.trials_dir, "where trial directories go (default: STUDY.trials)");
  tune_cmd->add_option("--algo", tune_flags.algo,
                       "grid | random | tpe | gp | cmaes | nsga2 (hyperparameters) | bo | xgboost | costmodel | oppa (parallel "
                       "configurations)")
      ->capture_default_str();
}

// Hyperparameter studies: the objective, the pruner and its rungs, the retrain, surrogates and fusion.
void add_hpo_flags(CLI::App* tune_cmd, TuneFlags& tune_flags) {
  tune_cmd->add_option("--objective", tune_flags.objective,
                       "a metric the trials report (e.g. val_loss, val_accuracy), or throughput")
      ->capture_default_str();
  tune_cmd->add_option("--direction", tune_flags.direction, "minimize | maximize (required with a metric objective)");
  tune_cmd->add_option("--pruner", tune_flags.pruner, "none | median | percentile | asha | hyperband | oppa")
      ->capture_default_str();
  tune_cmd->add_option("--eta", tune_flags.eta, "asha/hyperband: reduction factor between rungs")
      ->capture_default_str()
      ->transform(real_number(1, kInf, Ends::kOpenLow, "each rung keeps the best 1/eta"));
  tune_cmd->add_option("--min-resource", tune_flags.min_resource,
                       "asha/hyperband: steps of the first rung (0: --steps / eta^3)")
      ->capture_default_str()
      ->transform(whole_number(0, kInt64Max));
  tune_cmd->add_option("--pruner-startup", tune_flags.pruner_startup,
                       "median/percentile: completed trials before any is stopped")
      ->capture_default_str()
      ->transform(whole_number(0, kIntMax));
  tune_cmd->add_option("--pruner-warmup", tune_flags.pruner_warmup, "median/percentile: no stop before this step")
      ->capture_default_str()
      ->transform(whole_number(0, kInt64Max));
  tune_cmd->add_option("--percentile", tune_flags.percentile, "percentile pruner: keep trials within the best P %")
      ->capture_default_str()
      ->transform(real_number(0, 100, Ends::kOpen));
  tune_cmd->add_flag("--retrain", tune_flags.retrain,
                     "hyperparameter studies: train the best configuration again for --retrain-steps and report "
                     "its final metrics (e.g. test_accuracy)");
  tune_cmd->add_option("--retrain-steps", tune_flags.retrain_steps, "steps of the retrain (default: --steps)")
      ->transform(whole_number(1, kIntMax));
  tune_cmd->add_option("--retrain-top", tune_flags.retrain_top,
                       "hyperparameter studies: retrain the K best distinct configurations (a surrogate study's at "
                       "the target's width), in parallel over the slots, and choose the best of them there; auto: K "
                       "by --retrain-budget (implies --retrain; --retrain alone: 1)");
  tune_cmd->add_option("--retrain-budget", tune_flags.retrain_budget,
                       "--retrain-top auto: the retrains may take at most this many times the search's trial time")
      ->capture_default_str()
      ->transform(real_number(0, kInf, Ends::kOpen, "a multiple of the search's trial time"));
  tune_cmd->add_option("--surrogate-ratio", tune_flags.surrogate_ratio,
                       "hyperparameter studies of paratune-train: trials train the model with every width / S under "
                       "muP (Hydro's surrogates); the best is transferred to, and --retrain trains, the target")
      ->capture_default_str()
      ->transform(real_number(1, kInf, Ends::kClosed, "the surrogate is that many times narrower"));
  tune_cmd->add_option("--fuse", tune_flags.fuse,
                       "hyperparameter studies of paratune-train: up to B trials that differ only in optimizer "
                       "options train as one fused model in one process (HFTA/Hydro); auto: B from a probe of "
                       "B = 1, 2, 4, ... fused");
  tune_cmd->add_flag("--serve", tune_flags.serve,
                     "hyperparameter studies: each slot's trials run in one process of the command that serves them "
                     "(docs/trial-protocol.md, Serving: paratune-train does), which keeps paused trials in memory; "
                     "the local backend only");
}

// The searches' own settings: the seed and the model-based searches' designs.
void add_search_flags(CLI::App* tune_cmd, TuneFlags& tune_flags) {
  tune_cmd->add_option("--seed", tune_flags.seed, "seed of random orders and designs")
      ->capture_default_str()
      ->transform(cli::seed_number());
  tune_cmd->add_option("--min-steps", tune_flags.min_steps, "oppa (--algo or --pruner): steps before a trial may be stopped early (q_min)")
      ->capture_default_str()
      ->transform(whole_number(1, kIntMax));
  tune_cmd->add_option("--initial", tune_flags.initial,
                       "model-based searches: designs before the model picks (tpe: 10 and gp: "
                       "max(5, 2 x parameters) unless given)")
      ->capture_default_str()
      ->transform(whole_number(0, kIntMax));
  // A flag function, not add_flag(optional<bool>&): CLI11 2.1 treats a type constructible from an
  // integer as a flag count and sets it to 0 (false) before parsing, which made the default "off".
  tune_cmd->add_flag_function(
      "--seed-from-plan,!--no-seed-from-plan",
      [seed_from_plan = &tune_flags.seed_from_plan](std::int64_t n) { *seed_from_plan = n > 0; },
      "oppa/costmodel: first designs from the cost model's best predictions (default: on with --model)");
}

// How long and how many trials run, by how many workers, and how each trial is measured.
void add_run_flags(CLI::App* tune_cmd, TuneFlags& tune_flags) {
  tune_cmd->add_option("--budget", tune_flags.budget, "wall time of this run, e.g. 30m (running trials are stopped)");
  tune_cmd->add_option("--max-trials", tune_flags.max_trials, "trials in the study in all, reused ones included")
      ->transform(whole_number(0, kIntMax, "0: no limit"));
  tune_cmd->add_flag("--worker", tune_flags.worker,
                     "one of several workers (any hosts) running the study together through the store: claims "
                     "trials without duplicates, sends heartbeats, re-runs the trials of workers that died (README: "
                     "Many workers, one study)");
  tune_cmd->add_option("--worker-name", tune_flags.worker_name,
                       "--worker: this worker's name in the store, unique (default: HOSTNAME:PID)");
  tune_cmd->add_option("--heartbeat", tune_flags.heartbeat,
                       "--worker: how often the worker's running trials are marked alive")
      ->capture_default_str();
  tune_cmd->add_option("--heartbeat-timeout", tune_flags.heartbeat_timeout,
                       "--worker: a running trial with no heartbeat for this long is marked interrupted and runs again")
      ->capture_default_str();
  tune_cmd->add_option("--store-retry", tune_flags.store_retry,
                       "while the study store is unavailable (a database server restarting, a full disk), retry "
                       "for this long, then exit 4 (0: exit at once)")
      ->capture_default_str();
  tune_cmd->add_flag("--retry-failed", tune_flags.retry_failed,
                     "on resume, run the configurations of failed trials again (off: a failed trial stays failed)");
  tune_cmd->add_option("--steps", tune_flags.steps,
                       "training steps per trial (PARATUNE_MAX_STEPS); a throughput study needs >= 2 (its first "
                       "step is warm-up)")
      ->capture_default_str()
      ->transform(whole_number(1, kIntMax));
  tune_cmd->add_option("--memory-limit", tune_flags.memory_limit, "a measured peak above it is infeasible, e.g. 80GiB");
}

// The slots of this host that trials are packed onto, and each trial's ranks.
void add_slot_flags(CLI::App* tune_cmd, TuneFlags& tune_flags) {
  tune_cmd->add_option("--parallel", tune_flags.parallel, "--backend local: trials at once")
      ->capture_default_str()
      ->transform(whole_number(1, kMaxHostSlots));
  tune_cmd->add_option("--slots", tune_flags.slots,
                       "--backend local: slots of this host trials are packed onto (cores or GPUs; the newer name of --parallel)")
      ->transform(whole_number(1, kMaxHostSlots));
  tune_cmd->add_option("--trial-ranks", tune_flags.trial_ranks,
                       "hyperparameter studies: slots each trial takes, {ranks} (a space parameter 'ranks' overrides)")
      ->capture_default_str()
      ->transform(whole_number(1, kMaxHostSlots));
  tune_cmd->add_option("--strategy", tune_flags.strategy,
                       "hyperparameter studies: how each trial trains across its ranks, {strategy}: none | dp | mp | "
                       "gpipe | dp+gpipe | auto (paratune-train trials: the fastest by paratune's cost model, per "
                       "trial)");
  tune_cmd->add_option("--slot-devices", tune_flags.slot_devices,
                       "--backend local: CUDA_VISIBLE_DEVICES per slot, e.g. \"0,1;2,3\" (one entry per slot)");
  tune_cmd->add_option("--slot-cpus", tune_flags.slot_cpus,
                       "--backend local: CPUs per slot, e.g. \"0;1\" or \"0-3;4-7\": a trial runs on its slots' CPUs only");
}

// Where trials run: --backend, and the ssh and Slurm backends' settings.
void add_backend_flags(CLI::App* tune_cmd, TuneFlags& tune_flags) {
  tune_cmd->add_option("--backend", tune_flags.backend,
                       "where trials run: local (this host; --slots, --slot-devices, --slot-cpus), ssh (the hosts "
                       "of --hosts, one ssh connection per trial) or slurm (one sbatch job per trial; --slots trials "
                       "in flight, --slurm-* options)")
      ->capture_default_str()
      ->check(CLI::IsMember({"local", "ssh", "slurm"}));
  tune_cmd->add_option("--hosts", tune_flags.hosts,
                       "--backend ssh: hosts file, one host per line as ssh takes it (host, user@host, a ~/.ssh/config "
                       "alias), optionally slots=N and slot-devices=\"0,1;2,3\"; '#' comments");
  tune_cmd->add_option("--ssh-option", tune_flags.ssh_options,
                       "--backend ssh: an ssh option NAME=VALUE, passed as -o (repeatable); BatchMode=yes is always "
                       "set");
  tune_cmd->add_option("--ssh-config", tune_flags.ssh_config,
                       "--backend ssh: ssh configuration file, passed as -F (default: ssh's own, ~/.ssh/config)");
  tune_cmd->add_option("--slurm-partition", tune_flags.slurm_partition, "--backend slurm: sbatch --partition");
  tune_cmd->add_option("--slurm-account", tune_flags.slurm_account, "--backend slurm: sbatch --account");
  tune_cmd->add_option("--slurm-qos", tune_flags.slurm_qos, "--backend slurm: sbatch --qos");
  tune_cmd->add_option("--slurm-constraint", tune_flags.slurm_constraint, "--backend slurm: sbatch --constraint");
  tune_cmd->add_option("--slurm-time", tune_flags.slurm_time,
                       "--backend slurm: each job's time limit (sbatch --time), e.g. 2h; Slurm ending a job for it "
                       "makes the trial a timeout");
  tune_cmd->add_option("--slurm-cpus-per-slot", tune_flags.slurm_cpus_per_slot,
                       "--backend slurm: CPUs per trial slot (sbatch --cpus-per-task = slots x this)")
      ->capture_default_str();
  tune_cmd->add_option("--slurm-gpus-per-slot", tune_flags.slurm_gpus_per_slot,
                       "--backend slurm: GPUs per trial slot (sbatch --gpus = slots x this; 0: none asked for)")
      ->capture_default_str();
  tune_cmd->add_option("--slurm-mem-per-slot", tune_flags.slurm_mem_per_slot,
                       "--backend slurm: memory per trial slot (sbatch --mem), e.g. 64GiB; Slurm's OUT_OF_MEMORY makes "
                       "the trial oom");
  tune_cmd->add_option("--slurm-poll", tune_flags.slurm_poll,
                       "--backend slurm: how often each running trial's job state is asked (scontrol)")
      ->capture_default_str();
  tune_cmd->add_option("--sbatch-option", tune_flags.sbatch_options,
                       "--backend slurm: another sbatch option, as sbatch takes it (repeatable), e.g. --exclusive");
}

// When a trial is stopped, and how its log is read.
void add_trial_limit_flags(CLI::App* tune_cmd, TuneFlags& tune_flags) {
  tune_cmd->add_option("--timeout", tune_flags.timeout, "wall-clock limit per trial, e.g. 10m");
  tune_cmd->add_option("--hang", tune_flags.hang, "stop a trial with no new step for this long, e.g. 2m");
  tune_cmd->add_option("--grace", tune_flags.grace, "SIGTERM to SIGKILL delay when stopping a trial")
      ->capture_default_str();
  tune_cmd->add_option("--step-time-regex", tune_flags.step_time_regex,
                       "regex for step times in other log formats: group 1 seconds, optional group 2 step");
}

}  // namespace

void add_tune_flags(CLI::App* tune_cmd, SetupFlags& tune_setup, TuneFlags& tune_flags) {
  add_study_flags(tune_cmd, tune_setup, tune_flags);
  add_hpo_flags(tune_cmd, tune_flags);
  add_search_flags(tune_cmd, tune_flags);
  add_run_flags(tune_cmd, tune_flags);
  add_slot_flags(tune_cmd, tune_flags);
  add_backend_flags(tune_cmd, tune_flags);
  add_trial_limit_flags(tune_cmd, tune_flags);
}

void record_given_flags(const CLI::App& tune_cmd, TuneFlags& tune_flags) {
  for (const CLI::Option* option : tune_cmd.get_options())
    if (option->count() > 0) tune_flags.given.insert(option->get_name());
}

}  // namespace paratune::cli
