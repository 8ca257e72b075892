// Where a trial's processes are, even those that leave its process group.
//
// A trial is started in its own process group, and stopping it signals the group. A process that
// calls setsid() (a daemonizing helper, a data loader started with start_new_session=True) leaves
// the group and would survive the trial. So each trial also gets a cgroup v2 of its own when the
// controller may create one (Linux >= 4.5 with the unified hierarchy mounted and writable -- as
// root, or under a systemd delegation): the child joins it between fork and exec, every descendant
// inherits it and no process can leave it, so "is anything of this trial alive" is the cgroup's
// `populated` flag and stopping it signals every process listed in it (`cgroup.kill`, Linux >=
// 5.14, for SIGKILL). Where no cgroup can be made, the runner falls back on the environment:
// processes whose PARATUNE_TRIAL_DIR is the trial's (a process that clears its environment and
// calls setsid escapes that fallback; the README says so).
//
// PARATUNE_TRIAL_CGROUPS=off in the controller's environment turns the cgroups off (the fallback
// is then used; the tests use it to test the fallback).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace paratune::trial {

// One trial's cgroup: a directory under the runner's base cgroup.
class TrialCgroup {
 public:
  TrialCgroup(std::string path, int procs_fd) : path_(std::move(path)), procs_fd_(procs_fd) {}
  ~TrialCgroup();
  TrialCgroup(const TrialCgroup&) = delete;
  TrialCgroup& operator=(const TrialCgroup&) = delete;

  // Written "0" by the child between fork and exec (async-signal-safe: one write()) to join the
  // cgroup; closed by the parent after the fork.
  [[nodiscard]] int procs_fd() const { return procs_fd_; }
  void close_procs_fd();

  // Whether any process of the trial is alive (zombies are not counted: they are in no cgroup).
  [[nodiscard]] bool populated() const;
  // The processes in it now.
  [[nodiscard]] std::vector<pid_t> processes() const;
  // Sends `sig` to every process in it (SIGKILL through cgroup.kill where the kernel has it); the
  // pids signalled are added to `signalled` so that the runner can reap those reparented to it.
  void signal(int sig, std::vector<pid_t>& signalled) const;
  // Removes the (empty) directory; harmless if it is not empty yet.
  void remove() const;

  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
  int procs_fd_ = -1;
};

// The runner's base cgroup, "paratune-PID-N" under the controller's own cgroup, and the trials'
// cgroups below it.
class TrialCgroups {
 public:
  TrialCgroups();   // finds and creates the base; never throws: unavailable() says why not
  ~TrialCgroups();  // kills what is left in the base and removes it
  TrialCgroups(const TrialCgroups&) = delete;
  TrialCgroups& operator=(const TrialCgroups&) = delete;

  [[nodiscard]] bool available() const { return !base_.empty(); }
  [[nodiscard]] const std::string& unavailable_reason() const { return reason_; }
  // The base's cgroup.kill, or "" (what the watchdog writes "1" to if the controller dies).
  [[nodiscard]] const std::string& kill_file() const { return kill_file_; }

  // A new cgroup for one trial; null if cgroups are unavailable or this one cannot be made.
  std::unique_ptr<TrialCgroup> create();

 private:
  std::string base_, kill_file_, reason_;
  int next_ = 0;
};

}  // namespace paratune::trial
