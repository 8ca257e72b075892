// The Slurm backend: each trial is one Slurm batch job (sbatch), watched from the controller's host
// by paratune-slurm-job (trial/slurm_job.h), which the trial runner runs like any local trial.
//
// Supported mode: one batch job per trial, submitted from wherever the controller runs (a login
// node). Not supported yet: `srun` steps inside one allocation (`salloc`).
//
// A trial of N slots (ranks) asks for one task with N x cpus_per_slot CPUs, N x gpus_per_slot GPUs
// (--gpus) and N x memory_per_slot (--mem); the trial's command starts its own ranks (torchrun,
// paratune-train), as it does locally. `slots` is how many trials' slots may be in flight at once
// (queued or running): the controller's concurrency, not a property of the cluster.
// The trial's directory must be on a filesystem the nodes share (the job writes its output there,
// the watcher reads it as it grows: live step times); so must the command's program.
// Stopping a trial (early stop, timeout, hang, Ctrl-C, the controller's death: the watcher's
// parent-death signal is SIGTERM) cancels its job with scancel; a controller that resumes a study
// cancels the jobs its dead predecessor left (their ids are in the trial directories).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "paratune/trial/runner.h"

namespace paratune::trial {

struct SlurmOptions {
  int slots = 1;                        // trial slots in flight at once
  std::string partition, account, qos, constraint;  // sbatch --partition ... (empty: the cluster's default)
  double time_limit_s = 0;              // --time, rounded up to a second; 0: the partition's default
  int cpus_per_slot = 1;                // --cpus-per-task = slots x this
  int gpus_per_slot = 0;                // --gpus = slots x this; 0: none asked for
  double memory_per_slot_bytes = 0;     // --mem = slots x this (MiB, rounded up); 0: the default
  std::vector<std::string> extra_sbatch_options;  // as given ("--exclusive", "--reservation=x")
  double poll_s = 1;                    // scontrol per running trial every poll_s
  std::filesystem::path watcher;        // paratune-slurm-job; empty: beside this program, else PATH
};

// Throws OptionError naming the field (slots, cpus_per_slot, ...) and the rule.
void validate(const SlurmOptions& options);

class SlurmBackend final : public Backend {
 public:
  explicit SlurmBackend(SlurmOptions options);  // validates
  [[nodiscard]] std::string name() const override { return "slurm"; }
  [[nodiscard]] int slots() const override { return options_.slots; }
  [[nodiscard]] LaunchCommand command_for(const TrialCommand& trial, const std::vector<int>& slots) const override;
  // A dead controller's trial: its job cancelled (the id in its directory) and its watcher killed.
  int clean_up_left_over(const std::filesystem::path& dir) const override;
  // The sbatch options of a trial on `slot_count` slots (what command_for passes to the watcher).
  [[nodiscard]] std::vector<std::string> sbatch_options(int slot_count) const;
  // Asks Slurm whether it would accept such a job (`sbatch --test-only`), before any trial runs;
  // throws OptionError naming the Slurm options with sbatch's message if not.
  void check_with_slurm() const;

 private:
  SlurmOptions options_;
  std::filesystem::path watcher_;
};

// Cancels the Slurm job a trial left in `dir` (its watcher killed before it could): returns 1 if
// there was one (scancel asked), 0 otherwise.
int cancel_left_over_slurm_job(const std::filesystem::path& dir);

}  // namespace paratune::trial
