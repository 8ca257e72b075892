// The flags of `paratune tune`: what they hold, and their registration with CLI11. Both kinds of
// study read them: searches of parallel configurations (tune_command.cc) and hyperparameter studies
// (hpo_tune.h).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "paratune/hpo/study.h"
#include "setup_flags.h"

namespace paratune::cli {

struct TuneFlags {
  std::string space_path;
  std::vector<std::string> fix, allow, max;  // narrow a derived space, as for `plan`
  std::string command;
  std::string study_path;
  std::string study_name = "main";
  std::string trials_dir;
  std::string algo = "grid";
  std::uint64_t seed = 0;
  std::string budget, memory_limit, timeout, hang, grace = "10s";
  int max_trials = 0;
  bool retry_failed = false;
  int steps = 20;
  int parallel = 1;
  std::optional<int> slots;  // --slots: the same as --parallel, named for two-level parallelism
  int trial_ranks = 1;
  std::string strategy;
  std::string slot_devices;
  std::string slot_cpus;
  std::string backend = "local";  // local | ssh | slurm
  std::string hosts;              // --backend ssh: the hosts file
  std::vector<std::string> ssh_options;
  std::string ssh_config;
  // --backend slurm (trial/slurm_backend.h).
  std::string slurm_partition, slurm_account, slurm_qos, slurm_constraint;
  std::string slurm_time, slurm_mem_per_slot, slurm_poll = "1s";
  int slurm_cpus_per_slot = 1, slurm_gpus_per_slot = 0;
  std::vector<std::string> sbatch_options;
  std::string step_time_regex;
  int min_steps = 5;
  int initial = 4;
  std::set<std::string> given;  // the flags on the command line (to refuse those that would do nothing)
  std::optional<bool> seed_from_plan;  // default: on when a model is given
  // Hyperparameter studies (hpo/study.h).
  std::string objective = hpo::kThroughputObjective;
  std::string direction;  // required with a metric objective
  std::string pruner = "none";
  double eta = 3;
  long long min_resource = 0;
  int pruner_startup = 5;
  long long pruner_warmup = 0;
  double percentile = 25;
  bool retrain = false;
  std::optional<int> retrain_steps;  // default: --steps
  std::string retrain_top;           // K or "auto" (hpo/retrain.h RetrainTop); empty: 1 with --retrain
  double retrain_budget = 1;         // --retrain-top auto's budget
  double surrogate_ratio = 1;
  std::string fuse;  // "auto" or a size (hpo/fusion.h); empty: no fusion
  bool serve = false;  // hpo::HpoOptions::serve
  // Worker mode (tune::WorkerOptions).
  bool worker = false;
  std::string worker_name;  // empty: HOSTNAME:PID
  std::string heartbeat = "10s", heartbeat_timeout = "60s";
  // How long store calls retry while the store is unavailable (store::StoreUnavailable).
  std::string store_retry = "60s";
};

// Registers tune's flags on `tune_cmd`, in the order `paratune tune --help` lists them (--json aside).
void add_tune_flags(CLI::App* tune_cmd, SetupFlags& tune_setup, TuneFlags& tune_flags);

// After the parse: the flags given on the command line (TuneFlags::given).
void record_given_flags(const CLI::App& tune_cmd, TuneFlags& tune_flags);

}  // namespace paratune::cli
