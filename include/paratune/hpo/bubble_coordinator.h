// Hydro's Coordinator on one machine (data/papers/README.md#hydro-surrogate-tuning-slides, "Bubble
// Squeezing"; docs/hydro.md, "Trials in a pipeline job's bubbles"): runs a pipeline-parallel pretraining job of paratune-train
// and, beside each of its ranks, tuning trials (fused surrogate groups) that run only inside that
// rank's bubbles.
//
// How: the job's ranks get PARATUNE_BUBBLE_DIR (src/trainer/bubble_gate.h). Each rank pins itself
// to CPU R; its trial slot's processes are pinned there too, run under SCHED_IDLE, and start
// stopped (SIGSTOP before exec); the coordinator writes the running trial's process group to
// DIR/rank-R.pgid. The rank resumes it (SIGCONT) when it starts waiting for a pipeline peer and
// pauses it (SIGSTOP) when the wait ends, and appends each bubble to DIR/rank-R.bubbles. A trial
// that ends is replaced by the next configuration (trial_params, taken in turn, cycled); a slot
// whose trials fail three times in a row before their first step is given up (noted); when the job
// ends, the trials still running are killed and counted with the steps they did.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "paratune/trial/protocol.h"

namespace paratune::hpo {

struct HarvestOptions {
  std::vector<std::string> job_argv;      // the pipeline job (its ranks must run paratune-train)
  int ranks = 2;                          // the job's ranks: one trial slot each
  std::vector<std::string> trial_argv;    // a tuning trial; empty: none (the job alone, bubbles recorded)
  std::vector<std::string> trial_params;  // each trial's PARATUNE_PARAMS (a JSON array: a fused group)
  std::filesystem::path dir;              // logs, the pgid and bubble files
  double timeout_s = 0;                   // the job is stopped after this long; 0: none
};

struct HarvestBubble {
  int rank = 0;
  double start_s = 0, end_s = 0;  // from the job's start
};

struct HarvestTrialRun {
  int rank = 0;
  std::string params;
  std::string dir;                // its PARATUNE_TRIAL_DIR (its output.log)
  int members = 1;                // a fused group's size
  double started_s = 0, ended_s = 0;
  std::int64_t steps = 0;         // training steps it reported (each trains every member)
  std::vector<double> step_times_s;  // when the coordinator read each step line, from the job's start
  std::string status;             // completed, failed (exit code), stopped (at the job's end)
};

struct HarvestRun {
  int job_exit_code = -1;
  std::vector<trial::StepReport> job_steps;
  std::vector<double> job_step_read_s;  // when each step line was read, from the job's start
  std::vector<HarvestBubble> bubbles;
  std::vector<HarvestTrialRun> trials;
  double elapsed_s = 0;
  double start_monotonic_s = 0;  // the job's start on CLOCK_MONOTONIC (the bubble files' clock)
  std::vector<std::string> notes;  // e.g. a trial slot given up after trials that kept failing
};

// Runs the job to its end with trials in its bubbles. Throws Error when the job's or the trial's
// program is not an executable (named), or a process cannot be started.
HarvestRun run_harvest(const HarvestOptions& options);

// The median job step time, the first `skip` steps left out (warm-up).
double median_step_time(const HarvestRun& run, std::size_t skip = 2);

}  // namespace paratune::hpo
