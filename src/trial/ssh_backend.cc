// The SSH backend: hosts file, placement of a trial's slots on one host, the `ssh` command line and
// the remote wrapper that runs the trial in its own process group there (ssh_backend.h).
#include "paratune/trial/ssh_backend.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <random>

#include "paratune/spec/error.h"
#include "paratune/spec/input_file.h"
#include "paratune/spec/option_error.h"

namespace paratune::trial {
namespace {

constexpr int kMaxHostSlots = 4096;  // as --slots

// The remote wrapper. Positional parameters: GRACE (whole seconds) DIR TOKEN, then NAME=VALUE for
// each variable, `--`, the program's argv. Notes:
// - fd 3 keeps the connection's stdin; everything else gets /dev/null as stdin.
// - The program is started from a subshell that exports the variables and execs setsid: the
//   subshell is not a process-group leader (no job control here), so setsid does not fork and $!
//   is the program's pid, its session and its process group. Only the program (and what it starts)
//   carries PARATUNE_SSH_TRIAL=TOKEN; the wrapper does not, so it never signals itself.
// - sweep SIG: the group, the leader (before its setsid, still the subshell) and every process with
//   the token in its environment (GNU grep -z over /proc/*/environ; nothing where that fails).
// - The watcher reads fd 3 until end-of-file (the `read` builtin: no child process to leave
//   behind when it is killed), then stops the trial: SIGTERM, up to GRACE seconds, SIGKILL.
// - After the program exits, the watcher is killed, whatever is left of the trial is stopped the
//   same way, and the wrapper exits with the program's status (a shell's 128 + N for signal N).
// Single quotes never appear in it: it travels single-quoted.
constexpr const char* kWrapper = R"(g=$1 d=$2 t=$3
shift 3
exec 3<&0 </dev/null
h=$(uname -n 2>/dev/null)
if ! mkdir -p -- "$d" || ! cd -- "$d"; then
  echo "paratune-ssh: cannot create or enter the trial directory $d on $h" >&2; exit 126
fi
if ! command -v setsid >/dev/null 2>&1; then
  echo "paratune-ssh: setsid (util-linux) is missing on $h" >&2; exit 126
fi
(
  while [ "$#" -gt 0 ] && [ "$1" != -- ]; do export "$1" || exit 126; shift; done
  shift
  export PARATUNE_SSH_TRIAL="$t"
  exec setsid "$@" 3<&-
) &
p=$!
sweep() {
  kill -s "$1" -- -"$p" 2>/dev/null
  kill -s "$1" "$p" 2>/dev/null
  for f in $(grep -lsxzF -e "PARATUNE_SSH_TRIAL=$t" /proc/[0-9]*/environ 2>/dev/null); do
    q=${f#/proc/}
    kill -s "$1" "${q%/environ}" 2>/dev/null
  done
}
alive() {
  kill -0 "$p" 2>/dev/null || kill -0 -- -"$p" 2>/dev/null ||
    grep -qsxzF -e "PARATUNE_SSH_TRIAL=$t" /proc/[0-9]*/environ 2>/dev/null
}
stop() {
  sweep TERM
  n=0
  while [ "$n" -lt "$g" ] && alive; do sleep 1; n=$((n + 1)); done
  sweep KILL
}
( while read -r _ <&3; do :; done; stop ) >/dev/null 2>&1 &
w=$!
wait "$p" 2>/dev/null
s=$?
kill "$w" 2>/dev/null
wait "$w" 2>/dev/null
if alive; then stop; fi
if [ "$s" -eq 255 ]; then echo "paratune-ssh: the trial program exited with status 255" >&2; fi
exit "$s"
)";

bool valid_env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return c == '_' || std::isalnum(static_cast<unsigned char>(c)) != 0; });
}

// A value unique to one launch, carried only by the remote trial's processes.
std::string launch_token() {
  static std::atomic<std::uint64_t> counter{0};
  static const std::uint64_t salt = [] {
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }();
  return fmt::format("{:016x}-{}-{}", salt, ::getpid(), counter.fetch_add(1));
}

}  // namespace

std::string shell_single_quote(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  out += '\'';
  return out;
}

const std::string& ssh_remote_wrapper() {
  static const std::string wrapper = kWrapper;
  return wrapper;
}

std::vector<SshHost> parse_hosts(std::string_view text, const std::string& source) {
  std::vector<SshHost> hosts;
  int line_number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string line(text.substr(start, end - start));
    start = end + 1;
    ++line_number;
    if (const std::size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::vector<std::string> words;
    for (std::size_t at = 0;;) {
      at = line.find_first_not_of(" \t\r", at);
      if (at == std::string::npos) break;
      const std::size_t stop = std::min(line.find_first_of(" \t\r", at), line.size());
      words.push_back(line.substr(at, stop - at));
      at = stop;
    }
    if (words.empty()) continue;
    const auto bad = [&](const std::string& value, const std::string& rule) {
      return Error(fmt::format("{}:{}: '{}': {}", source, line_number, value, rule));
    };
    SshHost host;
    host.destination = words.front();
    if (host.destination.front() == '-' || host.destination.find('=') != std::string::npos)
      throw bad(host.destination, "a line starts with the host as ssh takes it (host, user@host, an alias from "
                                  "~/.ssh/config); it may not start with '-' or hold '='");
    for (char c : host.destination)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) throw bad(host.destination, "a host name has no control characters");
    std::string devices;
    for (std::size_t i = 1; i < words.size(); ++i) {
      const std::string& word = words[i];
      if (word.rfind("slots=", 0) == 0) {
        const std::string digits = word.substr(6);
        if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos ||
            std::stoi(digits) < 1 || std::stoi(digits) > kMaxHostSlots)
          throw bad(word, fmt::format("slots must be a whole number from 1 to {}", kMaxHostSlots));
        host.slots = std::stoi(digits);
      } else if (word.rfind("slot-devices=", 0) == 0) {
        devices = word.substr(13);
        try {
          host.slot_devices = parse_slot_devices(devices);
        } catch (const Error&) {
          throw bad(word, "slot-devices lists CUDA_VISIBLE_DEVICES per slot: device numbers like 0,1, slots separated "
                          "by ';' (\"0,1;2,3\")");
        }
      } else {
        throw bad(word, "after the host, a line may give slots=N and slot-devices=LIST (e.g. \"gpu-1 slots=2 "
                        "slot-devices=0,1;2,3\")");
      }
    }
    if (!host.slot_devices.empty() && static_cast<int>(host.slot_devices.size()) != host.slots)
      throw bad("slot-devices=" + devices, fmt::format("gives {} slots but the host has slots={}: give one device list "
                                                      "per slot",
                                                      host.slot_devices.size(), host.slots));
    hosts.push_back(std::move(host));
  }
  if (hosts.empty()) throw Error(fmt::format("{}: names no host (one per line: host [slots=N] [slot-devices=LIST])", source));
  return hosts;
}

std::vector<SshHost> parse_hosts_file(const std::filesystem::path& path) {
  return parse_hosts(read_input_file(path.string(), "hosts file (--hosts)"), path.string());
}

SshBackend::SshBackend(std::vector<SshHost> hosts, SshOptions options)
    : hosts_(std::move(hosts)), options_(std::move(options)) {
  if (hosts_.empty()) throw OptionError("hosts", "", "must name at least one host");
  for (const SshHost& host : hosts_) {
    first_slot_.push_back(total_slots_);
    total_slots_ += host.slots;
  }
  for (const std::string& option : options_.options)
    if (option.empty() || option.front() == '-' || option.find('=') == std::string::npos)
      throw OptionError("ssh_options", fmt::format("'{}'", option),
                        "an ssh option is given as NAME=VALUE, passed as -o NAME=VALUE (e.g. ConnectTimeout=10)");
}

int SshBackend::max_trial_slots() const {
  int most = 0;
  for (const SshHost& host : hosts_) most = std::max(most, host.slots);
  return most;
}

std::size_t SshBackend::host_of(int slot) const {
  const auto after = std::upper_bound(first_slot_.begin(), first_slot_.end(), slot);
  return static_cast<std::size_t>(after - first_slot_.begin()) - 1;
}

std::vector<int> SshBackend::place(const std::vector<char>& busy, int n) const {
  for (std::size_t h = 0; h < hosts_.size(); ++h) {
    std::vector<int> out;
    for (int slot = first_slot_[h]; slot < first_slot_[h] + hosts_[h].slots && static_cast<int>(out.size()) < n; ++slot)
      if (!busy[static_cast<std::size_t>(slot)]) out.push_back(slot);
    if (n >= 1 && static_cast<int>(out.size()) == n) return out;
  }
  return {};
}

LaunchCommand SshBackend::command_for(const TrialCommand& trial, const std::vector<int>& slots) const {
  const std::size_t h = host_of(slots.front());
  const SshHost& host = hosts_[h];
  std::vector<std::pair<std::string, std::string>> env = trial.env;
  if (!host.slot_devices.empty()) {
    std::string devices;
    for (int slot : slots)
      devices += (devices.empty() ? "" : ",") + host.slot_devices[static_cast<std::size_t>(slot - first_slot_[h])];
    env.emplace_back("CUDA_VISIBLE_DEVICES", devices);
  }
  const int grace = std::max(1, static_cast<int>(std::ceil(trial.grace_s)));
  std::string remote = "sh -c " + shell_single_quote(ssh_remote_wrapper()) + " paratune-ssh " + shell_single_quote(std::to_string(grace)) +
                       " " + shell_single_quote(trial.dir.string()) + " " + shell_single_quote(launch_token());
  for (const auto& [name, value] : env) {
    if (!valid_env_name(name))
      throw Error(fmt::format("ssh backend: environment variable name '{}': must be letters, digits and '_', not "
                              "starting with a digit",
                              name));
    remote += " " + shell_single_quote(name + "=" + value);
  }
  remote += " --";
  for (const std::string& arg : trial.argv) remote += " " + shell_single_quote(arg);

  LaunchCommand out;
  out.argv = {options_.program};
  if (!options_.config_file.empty()) out.argv.insert(out.argv.end(), {"-F", options_.config_file});
  // The first value ssh obtains for an option wins: BatchMode first (never a password prompt), the
  // user's options next, then defaults they may override.
  out.argv.insert(out.argv.end(), {"-o", "BatchMode=yes"});
  for (const std::string& option : options_.options) out.argv.insert(out.argv.end(), {"-o", option});
  out.argv.insert(out.argv.end(), {"-o", fmt::format("ServerAliveInterval={}", options_.server_alive_interval_s), "-o",
                                   fmt::format("ServerAliveCountMax={}", options_.server_alive_count_max),
                                   // Never start a shared master connection: it would outlive the trial
                                   // in the trial's group (an existing one is used).
                                   "-o", "ControlMaster=no", "-T", "--", host.destination, remote});
  out.location = "ssh " + host.destination;
  out.keep_stdin_open = true;
  out.find_by_environment = false;
  return out;
}

std::optional<std::string> SshBackend::launcher_failure(const LaunchCommand& command, int code,
                                                        const std::string& last_stderr_line) const {
  if (code != 255 || last_stderr_line == kProgramExit255Line) return std::nullopt;
  const std::string host = command.location.substr(command.location.find(' ') + 1);
  return fmt::format("ssh to {} failed or lost the connection (exit 255, no exit status from the trial); ssh's last "
                     "stderr line: {}",
                     host, last_stderr_line.empty() ? "(none)" : last_stderr_line);
}

}  // namespace paratune::trial
