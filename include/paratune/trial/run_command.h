// Runs a short command to its end and collects what it printed (sbatch, squeue, scontrol, a
// profile run): no shell, the program looked up in PATH, the controller's environment.
#pragma once

#include <string>
#include <vector>

namespace paratune::trial {

struct CommandOutput {
  int wait_status = 0;    // as waitpid() gave it
  std::string out, err;   // everything it printed
  bool timed_out = false; // killed (SIGKILL) after the timeout
  // Exited by itself with code 0.
  [[nodiscard]] bool ok() const;
  // "exit code 1", "killed by signal 9", "timed out after 10 s" -- for messages.
  [[nodiscard]] std::string describe_end(double timeout_s) const;
};

// Runs `argv` and waits for it, killing it after `timeout_s`. Throws Error ("cannot run 'X' (why)")
// when it cannot be started (not found, not executable). `own_process_group`: the command gets a
// process group of its own, so a signal to the caller's group (a trial being stopped) does not cut
// it short -- an sbatch killed halfway may leave a job no one knows of.
CommandOutput run_command(const std::vector<std::string>& argv, double timeout_s, bool own_process_group = false);

// The last `lines` lines of `text` (without the trailing newlines): a message's tail of a tool's output.
std::string last_lines(const std::string& text, std::size_t lines);

}  // namespace paratune::trial
