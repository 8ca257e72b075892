// Trials on other hosts over OpenSSH: `paratune tune --backend ssh --hosts FILE`.
//
// A trial is still a local process under the TrialRunner -- the `ssh` client -- so its process
// group, pipes, timeouts, hang detection and the watchdog work as for the local backend; the
// backend only says how the command runs (runner.h, Backend). The remote command is a small POSIX
// sh wrapper (ssh_remote_wrapper()) that creates the trial's directory (the same path as here),
// enters it, sets the trial's environment, starts the program in a session and process group of
// its own (setsid) with stdin from /dev/null, passes its exit status back, and stops the whole
// group -- SIGTERM, then SIGKILL after the grace -- when its stdin (the connection) reaches
// end-of-file: the runner closes it to stop a trial, and it is closed too when the local ssh dies
// (stopped, killed, or the controller killed and its watchdog stopping the local group) or the
// remote sshd notices the connection is gone. Processes that left the group (setsid, daemons) are
// found by a variable only they carry (PARATUNE_SSH_TRIAL, in /proc/*/environ on Linux hosts) and
// stopped with it; one that also clears its environment is not (the README says so).
//
// Every argument and environment value reaches the remote shell single-quoted (shell_single_quote), the
// only quoting POSIX sh applies no expansion inside: values arrive byte for byte. (trial/command.h's
// shell_quote is for display: it leaves plain words bare.)
//
// Hosts file: one host per line as `ssh` accepts it (`host`, `user@host`, a ~/.ssh/config alias,
// `ssh://user@host:port`), optionally followed by `slots=N` (default 1) and `slot-devices=0,1;2,3`
// (CUDA_VISIBLE_DEVICES per slot, as --slot-devices); `#` starts a comment. A trial's slots are all
// on one host: the first host in the file with enough free slots, its lowest free ones (packed).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "paratune/trial/runner.h"

namespace paratune::trial {

struct SshHost {
  std::string destination;                // as given to ssh
  int slots = 1;                          // trials of up to this many slots run here
  std::vector<std::string> slot_devices;  // CUDA_VISIBLE_DEVICES per slot; empty: not set
};

// Reads a hosts file. Throws Error naming the file, the line, the value and the rule.
std::vector<SshHost> parse_hosts_file(const std::filesystem::path& path);
// The same from text; `source` names it in errors.
std::vector<SshHost> parse_hosts(std::string_view text, const std::string& source);

// `value` as one word for a POSIX shell: 'value', each ' written as '\''. Any bytes (newlines,
// non-UTF-8) pass unchanged; the empty string is ''.
std::string shell_single_quote(std::string_view value);

// The remote wrapper (POSIX sh), run as `sh -c WRAPPER paratune-ssh GRACE DIR TOKEN NAME=VALUE...
// -- ARGV...`. Exit status: the program's (128 + N if a signal N killed it); 126 if the directory
// cannot be made or setsid is missing. When the program exits with 255 it says so on stderr
// (kProgramExit255Line) so that ssh's own 255 (connection lost) can be told apart.
const std::string& ssh_remote_wrapper();
inline constexpr std::string_view kProgramExit255Line = "paratune-ssh: the trial program exited with status 255";

struct SshOptions {
  std::vector<std::string> options;  // extra `-o` options (--ssh-option), e.g. "ConnectTimeout=5"
  std::string config_file;           // ssh -F FILE (--ssh-config); empty: ssh's own (~/.ssh/config)
  std::string program = "ssh";       // the client
  // A dead connection is noticed after interval x count seconds without an answer.
  int server_alive_interval_s = 5, server_alive_count_max = 3;
};

class SshBackend final : public Backend {
 public:
  // Throws OptionError (hosts) if there are none.
  SshBackend(std::vector<SshHost> hosts, SshOptions options = {});
  [[nodiscard]] std::string name() const override { return "ssh"; }
  [[nodiscard]] int slots() const override { return total_slots_; }
  [[nodiscard]] int max_trial_slots() const override;
  [[nodiscard]] std::vector<int> place(const std::vector<char>& busy, int n) const override;
  [[nodiscard]] LaunchCommand command_for(const TrialCommand& trial, const std::vector<int>& slots) const override;
  [[nodiscard]] std::optional<std::string> launcher_failure(const LaunchCommand& command, int code,
                                                            const std::string& last_stderr_line) const override;
  [[nodiscard]] const std::vector<SshHost>& hosts() const { return hosts_; }
  // The host a slot belongs to (an index into hosts()).
  [[nodiscard]] std::size_t host_of(int slot) const;

 private:
  std::vector<SshHost> hosts_;
  std::vector<int> first_slot_;  // hosts_[i]'s slots are first_slot_[i] .. first_slot_[i] + slots - 1
  int total_slots_ = 0;
  SshOptions options_;
};

}  // namespace paratune::trial
