// One trial as one Slurm batch job, watched from this host: what `paratune-slurm-job` does.
//
// The Slurm backend (trial/slurm_backend.h) runs each trial's command through this small local
// program, so the trial runner (trial/runner.h) keeps doing what it does for local trials --
// timeouts, hang detection, early stopping by SIGTERM, the watchdog that stops every trial when the
// controller dies -- while the training runs on the cluster:
//   1. submit: `sbatch --parsable --job-name=... --chdir=... --output=DIR/slurm-%j.out
//      --error=DIR/slurm-%j.err --open-mode=append --export=ALL [partition, account, ...]
//      DIR/paratune-job.sh COMMAND...` -- the batch script is `exec "$@"`, the trial's command its
//      arguments as sbatch passes them: no value ever goes through a shell. The job id is kept in
//      DIR/slurm-job-id (a later controller cancels a job it finds there, trial/slurm_backend.h).
//   2. watch: every `poll_s`, `scontrol show job -o ID` (then `sacct` once scontrol has forgotten
//      the job, where accounting runs); the job's output files are copied to this program's
//      stdout and stderr as they grow, so step times arrive live. While the job waits it prints
//      `@paratune {"queued": ...}` (the runner's limits wait too); when it starts,
//      `@paratune {"started": "slurm job ID on NODE"}` (the trial's location; its limits start).
//   3. end: the job's own end is mirrored -- its exit code, or the signal that killed it (raised
//      here, so SIGKILL reads as the out-of-memory killer as it does locally); ends only Slurm
//      knows are said with `@paratune {"ended": ...}`: OUT_OF_MEMORY -> oom, TIMEOUT and DEADLINE
//      -> timeout, NODE_FAIL, BOOT_FAIL and the like -> failed (a crash, not a refusal of the
//      configuration), PREEMPTED or cancelled by someone else -> interrupted (run again).
//   4. stop: SIGTERM or SIGINT (the runner stopping the trial, the controller's Ctrl-C, its
//      watchdog) -> `scancel ID`, then it waits for the job to leave the running states.
// sbatch refusing the job (no such partition, more GPUs than a node has) ends this program with
// exit code 3 and sbatch's message before any step: a refused configuration (trial/failure.h); an
// sbatch that fails otherwise (no answer from slurmctld) is the cluster's failure ("ended": failed),
// and a job it may have created all the same is cancelled by its name. Slurm's tools run in a
// process group of their own, so stopping the trial never cuts an sbatch short.
// Its protocol lines carry the trial's backend token ($PARATUNE_BACKEND_TOKEN, removed from the
// environment before sbatch, so the job cannot know it): the runner believes queued/started/ended
// lines only with it, never from the job's own output.
#pragma once

#include <atomic>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "paratune/trial/protocol.h"

namespace paratune::trial {

// What Slurm says about a job (scontrol's or sacct's fields).
struct SlurmJobState {
  std::string state;   // JobState: PENDING, RUNNING, COMPLETED, OUT_OF_MEMORY, ...
  std::string reason;  // Reason: why it waits or ended (Resources, Priority, NonZeroExitCode, ...)
  int exit_code = 0;   // ExitCode X:Y -- X
  int exit_signal = 0; // -- Y
  std::string nodes;   // NodeList
};

// `scontrol show job -o` output -> the state; nullopt when it has no JobState (an unknown job).
std::optional<SlurmJobState> parse_scontrol_job(std::string_view text);
// `sacct -X -n -P -o State,Reason,ExitCode,NodeList` output -> the state; nullopt when empty.
std::optional<SlurmJobState> parse_sacct_job(std::string_view text);

enum class SlurmPhase { kWaiting, kRunning, kEnded };
// PENDING, REQUEUED, CONFIGURING, ... -> waiting; RUNNING, COMPLETING, SUSPENDED, ... -> running;
// the rest (COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, PREEMPTED, ...) ended.
SlurmPhase slurm_phase(std::string_view state);

// How a job that ended is told to the runner: an "ended" protocol line (for ends only the scheduler
// knows), else the job's own exit code or signal.
struct SlurmJobEnd {
  std::optional<BackendEnd> ended;
  int exit_code = 0;
  int exit_signal = 0;  // raise it rather than exit
};
// `cancelled_by_us`: paratune asked for the scancel (then the runner knows why it stopped).
SlurmJobEnd slurm_job_end(const SlurmJobState& job, std::string_view job_id, bool cancelled_by_us);

struct SlurmJobRequest {
  std::vector<std::string> sbatch_args;  // --job-name, --partition, --gpus, ... (before the script)
  std::vector<std::string> command;      // the trial's command
  std::filesystem::path dir;             // the trial's directory (script, job output, job id)
  std::string job_name;                  // --job-name (paratune-STUDY-NUMBER-DIRHASH); empty: sbatch's default
  std::string token;                     // the trial's backend token, put in every protocol line (protocol.h)
  double poll_s = 1;                     // between two `scontrol show job`
  double command_timeout_s = 60;         // for one sbatch / scontrol / scancel call
};

// Submits, watches and mirrors one job (see the top of this file); `stop` is polled (set it from a
// SIGTERM handler). Returns the exit code to exit with, or a negative signal number to raise.
int run_slurm_job(const SlurmJobRequest& request, std::ostream& out, std::ostream& err, const std::atomic<int>& stop);

// The job a run_slurm_job left in `dir` (slurm-job-id: its id, then its name), if any.
struct SlurmJobRecord {
  std::string id, name;
};
std::optional<SlurmJobRecord> slurm_job_in(const std::filesystem::path& dir);
std::optional<std::string> slurm_job_id_in(const std::filesystem::path& dir);  // its id

}  // namespace paratune::trial
