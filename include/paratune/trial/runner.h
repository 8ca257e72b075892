// Running trials: a configuration's command as a real process, its output as measurements.
//
// Each trial runs in its own process group (the leader gets SIGKILL if the controller dies, Linux
// PR_SET_PDEATHSIG) with stdin from /dev/null, stdout and stderr kept in `dir`/stdout.log and
// stderr.log and parsed line by line (trial/protocol.h). Stopping a trial — early termination,
// wall-clock timeout, hang (no new step for `hang_s`), interruption of the controller — sends
// SIGTERM to the whole group, then SIGKILL after `grace_s`; a trial whose leader exits while other
// processes of its group live on gets the same, so no process of a finished trial is left behind.
// A TrialRunner makes its process a child subreaper (PR_SET_CHILD_SUBREAPER): orphans of a trial
// are reaped here rather than by init, so "the group is gone" can be told reliably. It also starts
// a watchdog process that stops every running trial's group if the controller dies, even by
// SIGKILL (the leader's PR_SET_PDEATHSIG does not reach the processes it started). A process that
// leaves the group (setsid) is still the trial's: each trial also runs in a cgroup of its own where
// the controller may make one, else its processes are found by their PARATUNE_TRIAL_DIR
// (src/trial/trial_cgroup.h), and they are stopped with the trial.
//
// Serving (docs/trial-protocol.md, "Serving"): a launch with `serve` set goes to an idle process of
// the same command on the same slots that said `{"serve": 1}`, as one JSON assignment line on its
// stdin -- the environment a process of its own would get -- and ends at its `{"done": id}` line; it
// is a trial like any other (its own logs, limits, step callback, result). Without such a process
// one is started, with PARATUNE_SERVE=1 and the first assignment both in its environment and on its
// stdin: a program that never says it serves runs that trial as a process of its own and exits. A
// served trial that must stop early gets `{"cancel": id}` and, without its done line within its
// grace, its process is stopped; a serving process that dies fails only the trial it was running.
// An idle serving process whose slots another run takes gets `{"stop": true}` (and end-of-file).
//
// Backends say how a trial's command runs on one of their slots (module DESIGN: small interfaces for
// swappable parts). The local backend runs it here, optionally with its own CUDA_VISIBLE_DEVICES per
// slot; the SSH backend (trial/ssh_backend.h) wraps the same command in `ssh host ...`, so the
// trial is still a local process (an ssh client) under this runner, and Slurm's `srun ...` later.
// A remote command's stdin is a pipe the runner keeps open for the trial's life: stopping such a
// trial closes it (the far side stops the trial's group on end-of-file), then, should the
// launcher not end within the grace and a margin, the local group gets SIGKILL.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "paratune/trial/measurement.h"
#include "paratune/trial/protocol.h"

namespace paratune::trial {

// What became of a trial. Names: completed early-stopped oom infeasible failed timeout interrupted.
enum class TrialStatus { kCompleted, kEarlyStopped, kOom, kInfeasible, kFailed, kTimeout, kInterrupted };
const char* to_string(TrialStatus status);
TrialStatus parse_trial_status(std::string_view name);  // throws Error listing the names

struct TrialLimits {
  double timeout_s = 0;           // wall clock from the start; 0: none
  double hang_s = 0;              // no new step (or, before the first, no start) for this long; 0: none
  double grace_s = 10;            // SIGTERM, then SIGKILL after this long
  double memory_limit_bytes = 0;  // a reported peak above it makes the trial infeasible; 0: none
};

struct TrialLaunch {
  std::string id;                   // PARATUNE_TRIAL_ID
  std::vector<std::string> argv;    // the rendered command
  std::filesystem::path dir;        // PARATUNE_TRIAL_DIR, created if missing; logs go here
  std::string params_json = "{}";   // PARATUNE_PARAMS
  int max_steps = 0;                // PARATUNE_MAX_STEPS (0: not set)
  TrialLimits limits;
  // More environment for the program (e.g. PARATUNE_CHECKPOINT_DIR).
  std::vector<std::pair<std::string, std::string>> env;
  // A trial resumed from its checkpoint: the steps behind it. It is stopped once steps_done plus the
  // steps of this run reach max_steps (which counts from the trial's first step).
  std::int64_t steps_done = 0;
  // A later run of the same trial (a promotion): its output is appended to the earlier runs' logs.
  bool append_logs = false;
  // The backend's slots it takes (a trial of N ranks takes N; each slot a core group or a GPU).
  int slots = 1;
  // Run it on a serving process of the same command where one is idle (see above; the backend must
  // can_serve()).
  bool serve = false;
};

struct TrialResult {
  std::string id;
  TrialStatus status = TrialStatus::kFailed;
  std::string reason;         // one line: why it ended so (empty when completed)
  int exit_code = -1;         // the leader's exit code, -1 if killed by a signal or if a wrapping
                              // backend said how it ended (protocol "ended": no exit of its own)
  int exit_signal = 0;        // the signal that killed the leader, 0 if it exited
  int process_group = 0;      // its process group id (gone by the time the result exists)
  std::string location;       // where it ran, as the backend names it ("local", "ssh gpu-node-3", ...)
  double started_unix_s = 0, ended_unix_s = 0;
  TrialOutput output;
  ThroughputEstimate throughput;  // from output.steps
  std::filesystem::path stdout_path, stderr_path;
};

// A running trial as a progress display sees it.
struct RunningTrial {
  std::string id;
  int slot = 0;                // the first of its slots
  std::vector<int> slots;      // all of them
  std::size_t steps = 0;
  double elapsed_s = 0;
  double last_step_time_s = 0;  // 0 before the first step
};

// What a backend turns into a command: the trial's program and everything it must see.
struct TrialCommand {
  std::vector<std::string> argv;  // the rendered command
  std::filesystem::path dir;      // absolute; the program's working directory on a remote host
  // The trial's own environment: PARATUNE_TRIAL_ID, _DIR, _PARAMS, _MAX_STEPS (when set) and the
  // launch's extra variables. The runner sets them in the local process's environment; a remote
  // backend must carry them to the remote program.
  std::vector<std::pair<std::string, std::string>> env;
  double grace_s = 10;  // SIGTERM to SIGKILL when stopping it (a remote side stops its group itself)
};

struct LaunchCommand {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // added to the controller's environment
  std::vector<int> cpus;  // the CPUs it may run on (sched_setaffinity); empty: any
  std::string location;   // where it runs, as stored with the trial ("local", "ssh gpu-node-3", ...)
  // stdin: false: /dev/null; true: a pipe held open until the trial is stopped or ends (ssh: its
  // end-of-file is what tells the remote side to stop the trial's group).
  bool keep_stdin_open = false;
  // Whether the trial's processes that left its group may be looked for here by their
  // PARATUNE_TRIAL_DIR (false where they run on another host: only the launcher runs here).
  bool find_by_environment = true;
  // A wrapping backend's secret for this trial (also in `env` for its wrapper, as
  // PARATUNE_BACKEND_TOKEN): the runner believes the trial's queued/started/ended protocol lines
  // only with it (ParserOptions::backend_token). Empty: it believes none.
  std::string backend_token;
};

class Backend {
 public:
  virtual ~Backend() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual int slots() const = 0;
  // The most slots one trial may take (a backend over several hosts: the largest host's).
  [[nodiscard]] virtual int max_trial_slots() const { return slots(); }
  // The slots a trial of `n` slots takes now, given which are busy (busy.size() == slots()), in
  // ascending order; empty if it cannot start now. Default: the lowest free ones.
  [[nodiscard]] virtual std::vector<int> place(const std::vector<char>& busy, int n) const;
  // How the trial runs on the slots `slots` (each 0 <= slot < slots(), distinct, ascending).
  [[nodiscard]] virtual LaunchCommand command_for(const TrialCommand& trial, const std::vector<int>& slots) const = 0;
  // A launcher's own failure told apart from the program's exit: the reason when exit code `code`
  // (with `last_stderr_line`, the trial's last non-empty stderr line) means the launcher failed
  // (ssh: 255, the connection lost), else nullopt.
  [[nodiscard]] virtual std::optional<std::string> launcher_failure(const LaunchCommand& /*command*/, int /*code*/,
                                                                    const std::string& /*last_stderr_line*/) const {
    return std::nullopt;
  }
  // Whether a launch may be served (TrialLaunch::serve): a serving process and its runner talk
  // through its stdin, here. Default: no (each trial a process of its own).
  [[nodiscard]] virtual bool can_serve() const { return false; }
  // What is left of a trial whose controller died (it was "running" in the study): stops it and
  // returns how many processes or jobs it found. Default: kill_trial_processes(dir).
  virtual int clean_up_left_over(const std::filesystem::path& dir) const;
};

// Runs trials as local processes on `slots` slots. `slot_devices`, if given, has one entry per slot
// ("0,1"): a trial's CUDA_VISIBLE_DEVICES is its slots' entries joined. `slot_cpus`, if given, has
// one CPU list per slot ("0-3"): a trial runs on its slots' CPUs only (sched_setaffinity), so trials
// side by side do not share cores.
class LocalBackend final : public Backend {
 public:
  // Throws OptionError (naming slots, slot_devices or slot_cpus) on a count mismatch or a CPU this
  // process may not run on.
  LocalBackend(int slots, std::vector<std::string> slot_devices = {}, std::vector<std::vector<int>> slot_cpus = {});
  [[nodiscard]] std::string name() const override { return "local"; }
  [[nodiscard]] int slots() const override { return slots_; }
  [[nodiscard]] LaunchCommand command_for(const TrialCommand& trial, const std::vector<int>& slots) const override;
  [[nodiscard]] bool can_serve() const override { return true; }

 private:
  int slots_;
  std::vector<std::string> slot_devices_;
  std::vector<std::vector<int>> slot_cpus_;
};

// "0,1;2,3" -> {"0,1", "2,3"}; throws OptionError (slot_devices) naming the bad entry.
std::vector<std::string> parse_slot_devices(std::string_view text);
// "0-1;2-3" or "0,1;2,3" -> {{0, 1}, {2, 3}}: CPU numbers and ranges per slot; throws OptionError
// (slot_cpus) naming the bad entry.
std::vector<std::vector<int>> parse_slot_cpus(std::string_view text);

// Kills (SIGKILL, with their process groups) the processes whose environment says
// PARATUNE_TRIAL_DIR=`dir`: what is left of a trial whose controller was killed before it could
// stop it (the leader dies with the controller, PR_SET_PDEATHSIG, but its children may not).
// Reads /proc/*/environ, so it sees this user's processes. Returns how many it found.
int kill_trial_processes(const std::filesystem::path& dir);

class TrialCgroups;

class TrialRunner {
 public:
  // Called for every step a running trial reports; return false to stop it (early-stopped).
  using StepCallback = std::function<bool(const std::string& id, const StepReport& step, const TrialOutput& so_far)>;

  TrialRunner(const Backend& backend, ParserOptions parser = {});
  ~TrialRunner();  // stops (SIGTERM, then SIGKILL) whatever still runs
  TrialRunner(const TrialRunner&) = delete;
  TrialRunner& operator=(const TrialRunner&) = delete;

  [[nodiscard]] int free_slots() const;
  [[nodiscard]] bool idle() const;
  // Whether a trial of `slots` slots could start now (the backend places it: Backend::place).
  [[nodiscard]] bool can_start(int slots) const;
  // Starts a trial on launch.slots free slots (where the backend places it: the lowest free ones
  // locally, all on one host over ssh) and returns them. Throws Error if it cannot be placed now
  // (can_start); a command that cannot be started
  // (no such program) ends as a failed trial, reported by the next wait().
  std::vector<int> start(const TrialLaunch& launch);
  // Waits up to `timeout_s` for output, exits and limits; returns the trials that ended meanwhile.
  std::vector<TrialResult> wait(double timeout_s, const StepCallback& on_step = {});
  // Stops every running trial (they end as interrupted, reported by wait()).
  void interrupt_all(const std::string& reason);
  [[nodiscard]] std::vector<RunningTrial> running() const;
  // Serving: whether a live serving process keeps trial `id`'s paused state in its memory (its
  // last assignment ended with {"checkpoint_step": N, "in_memory": true}), and whether that
  // process runs another trial now (a promotion of `id` would then have to wait for it).
  [[nodiscard]] bool holds(const std::string& id) const;
  [[nodiscard]] bool holder_busy(const std::string& id) const;
  // Serving processes started so far (each reused for many trials).
  [[nodiscard]] int servers_started() const { return servers_started_; }

  struct Process;

 private:
  Process* idle_server_for(const TrialLaunch& launch);
  void assign(Process& server, const TrialLaunch& launch, const std::vector<int>& slots);
  void retire_idle_servers_on(const std::vector<int>& slots);
  int servers_started_ = 0;
  const Backend& backend_;
  ParserOptions parser_options_;
  void tell_watchdog(std::int32_t message) const;
  std::vector<std::unique_ptr<Process>> processes_;
  std::vector<char> slot_busy_;
  std::unique_ptr<TrialCgroups> cgroups_;  // one per trial where the system lets us (trial_cgroup.h)
  pid_t watchdog_pid_ = -1;  // stops every trial's group if this process dies (see runner.cc)
  int watchdog_fd_ = -1;
};

}  // namespace paratune::trial
