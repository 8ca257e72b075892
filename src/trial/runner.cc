// Trial processes: spawn into their own process group, read their output without blocking, stop
// them with SIGTERM then SIGKILL, classify how they ended.
#include "paratune/trial/runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/spec/units.h"
#include "trial_cgroup.h"

extern char** environ;

namespace paratune::trial {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::array<std::string_view, 7> kStatusNames{"completed", "early-stopped", "oom",        "infeasible",
                                                       "failed",    "timeout",       "interrupted"};
constexpr std::size_t kMaxLine = 1 << 20;  // a longer line without a newline is parsed in pieces

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One output stream of a trial: its pipe, its log file, the unfinished last line.
//
// The log is written with write(2), each result checked: on a full disk an unchecked stream left
// an empty stdout.log with no word of it. The first failure is kept (and said on stderr at once);
// the trial goes on, its output still parsed, and its reason says the log is incomplete.
struct Stream {
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (log_fd >= 0) ::close(log_fd);
  }

  // Appends to the log unless an earlier write failed; false (with `log_error` set) if this one did.
  bool write_log(const char* data, std::size_t size) {
    while (log_fd >= 0 && log_error.empty() && size > 0) {
      const ssize_t n = ::write(log_fd, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        log_error = fmt::format("cannot write {}: {}", log_path.string(), n < 0 ? std::strerror(errno) : "nothing written");
        return false;
      }
      data += n;
      size -= static_cast<std::size_t>(n);
    }
    return true;
  }

  // Closes the log; a failure there (NFS reports a full disk on close) is kept like a write's.
  void close_log() {
    if (log_fd < 0) return;
    if (::close(log_fd) != 0 && log_error.empty())
      log_error = fmt::format("cannot write {}: {}", log_path.string(), std::strerror(errno));
    log_fd = -1;
  }

  int fd = -1;
  int log_fd = -1;
  std::filesystem::path log_path;
  std::string log_error;  // the first failure to write the log ("" while none)
  std::string pending;
  std::string last_line;  // the last non-empty line (stderr: shown when a trial fails)
};


// The watchdog: a small child of the controller that holds the read end of a pipe on which the
// controller announces each trial's process group (+pgid) and its end (-pgid). If the controller
// dies, even by SIGKILL, the pipe reaches end-of-file and the watchdog stops every group still
// announced: SIGTERM, one second, SIGKILL -- and SIGKILL to every process in the trials' cgroups
// (`cgroup_kill`: the runner's base cgroup.kill, or null), which catches those that left their
// group. (PR_SET_PDEATHSIG alone reaches only a trial's leader, not the processes it started.)
// Runs between fork and _exit only async-signal-safe calls.
[[noreturn]] void watchdog_main(int read_fd, const char* cgroup_kill) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) ::signal(sig, SIG_IGN);  // Ctrl-C is the controller's
  ::dup2(read_fd, 3);
  ::close_range(4, ~0U, 0);  // cgroup.kill is opened when needed, below  // hold nothing else open (another runner's pipe, the controller's output)
  const int devnull = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd <= 2; ++fd) ::dup2(devnull, fd);
  constexpr int kMaxGroups = 4096;
  pid_t groups[kMaxGroups];
  int n = 0;
  for (;;) {
    std::int32_t message = 0;
    const ssize_t got = ::read(3, &message, sizeof message);
    if (got < 0 && errno == EINTR) continue;
    if (got != static_cast<ssize_t>(sizeof message)) break;  // the controller is gone, or done
    if (message > 0 && n < kMaxGroups) groups[n++] = message;
    for (int i = 0; message < 0 && i < n; ++i)
      if (groups[i] == -message) {
        groups[i] = groups[--n];
        break;
      }
  }
  if (n > 0) {
    for (int i = 0; i < n; ++i) ::kill(-groups[i], SIGTERM);
    const timespec second{1, 0};
    ::nanosleep(&second, nullptr);
    for (int i = 0; i < n; ++i) ::kill(-groups[i], SIGKILL);
  }
  if (n > 0 && cgroup_kill) {
    const int fd = ::open(cgroup_kill, O_WRONLY);
    if (fd >= 0) {
      [[maybe_unused]] const ssize_t w = ::write(fd, "1", 1);
      ::close(fd);
    }
  }
  ::_exit(0);
}

}  // namespace

const char* to_string(TrialStatus status) { return kStatusNames[static_cast<std::size_t>(status)].data(); }

TrialStatus parse_trial_status(std::string_view name) {
  for (std::size_t i = 0; i < kStatusNames.size(); ++i)
    if (kStatusNames[i] == name) return static_cast<TrialStatus>(i);
  const std::vector<std::string> valid(kStatusNames.begin(), kStatusNames.end());
  throw Error(unknown_name_message("trial status", name, valid));
}

std::vector<std::string> parse_slot_devices(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(';', start), text.size());
    const std::string_view entry = text.substr(start, end - start);
    if (entry.empty() || entry.find_first_not_of("0123456789,") != std::string_view::npos || entry.front() == ',' ||
        entry.back() == ',' || entry.find(",,") != std::string_view::npos)
      throw OptionError("slot_devices", fmt::format("'{}'", text),
                        fmt::format("slot {} is '{}'; expected device numbers like 0,1 and slots separated by ';' "
                                    "(\"0,1;2,3\")",
                                    out.size(), entry));
    out.emplace_back(entry);
    start = end + 1;
  }
  return out;
}

std::vector<std::vector<int>> parse_slot_cpus(std::string_view text) {
  std::vector<std::vector<int>> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(';', start), text.size());
    const std::string entry(text.substr(start, end - start));
    const auto bad = [&] {
      return OptionError("slot_cpus", fmt::format("'{}'", text),
                         fmt::format("slot {} is '{}'; expected CPU numbers and ranges like 0-3 or 0,2 and slots "
                                     "separated by ';' (\"0-1;2-3\")",
                                     out.size(), entry));
    };
    std::vector<int> cpus;
    std::size_t at = 0;
    while (at <= entry.size()) {
      const std::size_t comma = std::min(entry.find(',', at), entry.size());
      const std::string part = entry.substr(at, comma - at);
      const std::size_t dash = part.find('-');
      int first = 0, last = 0;
      const auto number = [&](const std::string& digits, int& value) {
        if (digits.empty() || digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos) throw bad();
        value = std::stoi(digits);
      };
      number(part.substr(0, dash), first);
      if (dash == std::string::npos) last = first;
      else number(part.substr(dash + 1), last);
      if (last < first) throw bad();
      for (int c = first; c <= last; ++c) cpus.push_back(c);
      at = comma + 1;
    }
    out.push_back(std::move(cpus));
    start = end + 1;
  }
  return out;
}

LocalBackend::LocalBackend(int slots, std::vector<std::string> slot_devices, std::vector<std::vector<int>> slot_cpus)
    : slots_(slots), slot_devices_(std::move(slot_devices)), slot_cpus_(std::move(slot_cpus)) {
  if (slots < 1) throw OptionError("slots", std::to_string(slots), "must be >= 1");
  if (!slot_devices_.empty() && static_cast<int>(slot_devices_.size()) != slots)
    throw OptionError("slot_devices", "",
                      fmt::format("gives {} slots but {} is {}: give one device list per slot", slot_devices_.size(),
                                  option_ref("slots"), slots));
  if (!slot_cpus_.empty() && static_cast<int>(slot_cpus_.size()) != slots)
    throw OptionError("slot_cpus", "",
                      fmt::format("gives {} slots but {} is {}: give one CPU list per slot", slot_cpus_.size(),
                                  option_ref("slots"), slots));
  // Every CPU named must be one this process may run on, or pinning would fail (or silently not pin).
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (!slot_cpus_.empty() && ::sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    for (std::size_t slot = 0; slot < slot_cpus_.size(); ++slot)
      for (int cpu : slot_cpus_[slot])
        if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed))
          throw OptionError(
              "slot_cpus", "",
              fmt::format("slot {} names CPU {}, which this process may not run on ({} CPUs allowed here)", slot, cpu,
                          CPU_COUNT(&allowed)));
}

namespace {

// The processes (not zombies) whose environment says PARATUNE_TRIAL_DIR=`dir`.
std::vector<pid_t> processes_by_environment(const std::filesystem::path& dir) {
  const std::string needle = "PARATUNE_TRIAL_DIR=" + std::filesystem::absolute(dir).string();
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == ::getpid()) continue;
    std::ifstream in(entry.path() / "environ", std::ios::binary);  // unreadable, gone or a zombie: not found
    std::string var;
    bool match = false;
    while (!match && std::getline(in, var, '\0')) match = var == needle;
    if (match) found.push_back(pid);
  }
  return found;
}

}  // namespace

int kill_trial_processes(const std::filesystem::path& dir) {
  std::set<pid_t> found;
  // A few rounds: a process may fork between the scan and the kill.
  for (int round = 0; round < 5; ++round) {
    const std::vector<pid_t> now = processes_by_environment(dir);
    if (now.empty()) break;
    for (pid_t pid : now) {
      found.insert(pid);
      const pid_t group = ::getpgid(pid);
      if (group > 0 && group != ::getpgrp()) ::kill(-group, SIGKILL);
      ::kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return static_cast<int>(found.size());
}

std::vector<int> Backend::place(const std::vector<char>& busy, int n) const {
  std::vector<int> out;
  for (int slot = 0; slot < static_cast<int>(busy.size()) && static_cast<int>(out.size()) < n; ++slot)
    if (!busy[static_cast<std::size_t>(slot)]) out.push_back(slot);
  if (n < 1 || static_cast<int>(out.size()) < n) out.clear();
  return out;
}

int Backend::clean_up_left_over(const std::filesystem::path& dir) const { return kill_trial_processes(dir); }

LaunchCommand LocalBackend::command_for(const TrialCommand& trial, const std::vector<int>& slots) const {
  LaunchCommand out;
  out.argv = trial.argv;
  out.location = "local";
  if (!slot_devices_.empty()) {
    std::string devices;
    for (int slot : slots) devices += (devices.empty() ? "" : ",") + slot_devices_[static_cast<std::size_t>(slot)];
    out.env.emplace_back("CUDA_VISIBLE_DEVICES", devices);
  }
  if (!slot_cpus_.empty())
    for (int slot : slots)
      for (int cpu : slot_cpus_[static_cast<std::size_t>(slot)]) out.cpus.push_back(cpu);
  return out;
}

struct TrialRunner::Process {
  TrialLaunch launch;
  std::vector<int> slots;
  LaunchCommand command;  // how it was launched (its location, stdin, where its processes are)
  int stdin_fd = -1;      // the write end of its stdin (LaunchCommand::keep_stdin_open), else -1
  pid_t pid = -1;  // the leader; also the process group id
  int pidfd = -1;  // readable when the leader exits (Linux pidfd_open), so its end wakes poll() at once
  Stream out, err;
  OutputParser parser;
  Clock::time_point started, last_progress;
  double started_unix_s = 0;
  std::string start_error;  // exec failed
  bool leader_exited = false;
  int wait_status = 0;
  // Why paratune stopped it (nullopt: it ended on its own), and how far the stopping got.
  std::optional<std::pair<TrialStatus, std::string>> stopped;
  bool term_sent = false, kill_sent = false;
  Clock::time_point term_at;
  Clock::time_point streams_wait_since;  // leader and group gone, pipes still open (escaped processes)
  std::unique_ptr<TrialCgroup> cgroup;   // null where cgroups are unavailable (trial_cgroup.h)
  std::vector<pid_t> escaped;            // processes outside the group that were signalled
  // Serving (runner.h). The fields above from `launch` to `stopped` are the trial it runs now.
  bool serve_launch = false;  // started with PARATUNE_SERVE=1 (stdin a pipe for assignments)
  bool serving = false;       // it said {"serve": 1}
  bool in_flight = true;      // it runs a trial (false: a serving process between assignments)
  std::optional<Clock::time_point> done_awaited_since;  // its trial was stopped: its done line is due
  std::optional<std::string> done_said;  // its trial's done line came ("failed"'s reason, or empty)
  std::string other_done;  // the id of a done line for a trial it was not running (named if its own never comes)
  std::set<std::string> held;                           // trial ids whose paused state it keeps in memory

  explicit Process(const ParserOptions& options) : parser(options) {}
  ~Process() {
    close_pidfd();
    close_stdin();
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  void close_pidfd() {
    if (pidfd >= 0) ::close(pidfd);
    pidfd = -1;
  }
  void close_stdin() {
    if (stdin_fd >= 0) ::close(stdin_fd);
    stdin_fd = -1;
  }
  // A launcher that stops the trial itself on end-of-file (ssh) gets its grace and this margin for
  // it (the connection's round trips, the remote wrapper's 1 s polls) before SIGKILL here.
  [[nodiscard]] double kill_after_s() const {
    return launch.limits.grace_s + (command.keep_stdin_open ? kRemoteStopMargin_s : 0.0);
  }
  static constexpr double kRemoteStopMargin_s = 10;

  // Signals the trial's process group and the processes that left it (its cgroup's, or -- without
  // a cgroup, once the leader is gone -- those whose environment names the trial's directory).
  void signal_all(int sig) {
    if (pid > 0) ::kill(-pid, sig);
    if (cgroup) {
      cgroup->signal(sig, escaped);
    } else if (leader_exited && command.find_by_environment) {
      for (pid_t other : processes_by_environment(launch.dir)) {
        ::kill(other, sig);
        escaped.push_back(other);
      }
    }
  }
  [[nodiscard]] bool group_alive() const { return pid > 0 && (::kill(-pid, 0) == 0 || errno == EPERM); }
  // Whether any process of the trial lives, in its group or outside it.
  [[nodiscard]] bool anything_alive() const {
    if (group_alive()) return true;
    if (cgroup) return cgroup->populated();
    return leader_exited && command.find_by_environment && !processes_by_environment(launch.dir).empty();
  }
  // Processes that left the group and were reparented to us (we are a subreaper) are ours to reap.
  // Never the leader (a cgroup's list holds it too): reaped here, its status would be lost and the
  // wait loop, never seeing it exit, would wait for the trial for ever.
  void reap_escaped() {
    for (pid_t other : escaped)
      if (other != pid) ::waitpid(other, nullptr, WNOHANG);
  }
  void stop(TrialStatus status, std::string reason) {
    if (!stopped) stopped.emplace(status, std::move(reason));
    if (serving && in_flight) {  // the process serves on: only its trial ends, at its done line
      if (!done_awaited_since) {
        // Stopped after all its steps: the program ends the assignment by itself.
        if (status != TrialStatus::kCompleted && !send(nlohmann::json{{"cancel", launch.id}}.dump())) terminate();
        done_awaited_since = Clock::now();
      }
      return;
    }
    if (!term_sent) {
      // A remote trial: end-of-file on its launcher's stdin, and the far side stops its group.
      if (command.keep_stdin_open) {
        close_stdin();
      } else {
        close_stdin();  // a serving process's: it may stop on end-of-file as well
        signal_all(SIGTERM);
      }
      term_sent = true;
      term_at = Clock::now();
    }
  }
  // Stops the whole process (a serving one: with whatever trial it runs and keeps).
  void terminate() {
    if (term_sent) return;
    close_stdin();
    signal_all(SIGTERM);
    term_sent = true;
    term_at = Clock::now();
  }
  // Writes one line to a serving process's stdin (non-blocking: an assignment or a cancel is small
  // and a serving program reads them); false if it cannot take it (gone, or not reading).
  bool send(const std::string& line) {
    if (stdin_fd < 0) return false;
    struct sigaction ignore {}, previous{};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &previous);  // a process that is gone: EPIPE, not the signal
    const std::string text = line + "\n";
    std::size_t written = 0;
    while (written < text.size()) {
      const ssize_t n = ::write(stdin_fd, text.data() + written, text.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      written += static_cast<std::size_t>(n);
    }
    ::sigaction(SIGPIPE, &previous, nullptr);
    return written == text.size();
  }
};

namespace {

// What a trial's program sees of it: PARATUNE_TRIAL_ID, _DIR, _PARAMS, _MAX_STEPS and the
// launch's extra variables (a process's environment, a served trial's assignment).
std::vector<std::pair<std::string, std::string>> trial_environment(const TrialLaunch& launch,
                                                                   const std::filesystem::path& dir) {
  std::vector<std::pair<std::string, std::string>> env;
  env.emplace_back("PARATUNE_TRIAL_ID", launch.id);
  env.emplace_back("PARATUNE_TRIAL_DIR", dir.string());
  env.emplace_back("PARATUNE_PARAMS", launch.params_json);
  if (launch.max_steps > 0) env.emplace_back("PARATUNE_MAX_STEPS", std::to_string(launch.max_steps));
  env.insert(env.end(), launch.env.begin(), launch.env.end());
  return env;
}

// A served trial's assignment line (docs/trial-protocol.md, "Serving").
std::string assignment_line(const TrialLaunch& launch, const std::filesystem::path& dir) {
  nlohmann::ordered_json env = nlohmann::ordered_json::object();
  for (const auto& [key, value] : trial_environment(launch, dir)) env[key] = value;
  return nlohmann::ordered_json{{"trial", launch.id}, {"steps_done", launch.steps_done}, {"env", env}}.dump();
}

// Opens (appends to, or truncates) the trial's stdout.log and stderr.log in its directory.
void open_logs(const TrialLaunch& launch, Stream& out, Stream& err) {
  const std::filesystem::path dir = std::filesystem::absolute(launch.dir);
  const int mode = O_WRONLY | O_CREAT | O_CLOEXEC | (launch.append_logs ? O_APPEND : O_TRUNC);
  for (auto [s, name] : {std::pair{&out, "stdout.log"}, std::pair{&err, "stderr.log"}}) {
    s->close_log();
    s->log_error.clear();
    s->log_path = dir / name;
    s->log_fd = ::open(s->log_path.c_str(), mode, 0644);
    if (s->log_fd < 0)
      throw Error(fmt::format("trial {}: cannot write its log {}: {}", launch.id, s->log_path.string(), std::strerror(errno)));
  }
}

void create_trial_dir(const TrialLaunch& launch) {
  std::error_code ec;
  std::filesystem::create_directories(launch.dir, ec);
  if (ec) throw Error(fmt::format("trial {}: cannot create its directory {}: {}", launch.id, launch.dir.string(), ec.message()));
}

}  // namespace

TrialRunner::TrialRunner(const Backend& backend, ParserOptions parser)
    : backend_(backend), parser_options_(std::move(parser)), slot_busy_(static_cast<std::size_t>(backend.slots()), 0) {
  OutputParser check(parser_options_);  // a bad regex fails here, before any trial runs
  // Orphans of a trial's group come to us rather than to init, so we can reap them and tell when
  // the group is really gone (an init that reaps late would keep zombies in it).
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  cgroups_ = std::make_unique<TrialCgroups>();
  const std::string cgroup_kill = cgroups_->kill_file();
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw Error(fmt::format("trial runner: pipe: {}", std::strerror(errno)));
  watchdog_pid_ = ::fork();
  if (watchdog_pid_ < 0) throw Error(fmt::format("trial runner: fork: {}", std::strerror(errno)));
  if (watchdog_pid_ == 0) watchdog_main(pipe_fds[0], cgroup_kill.empty() ? nullptr : cgroup_kill.c_str());
  ::close(pipe_fds[0]);
  watchdog_fd_ = pipe_fds[1];
}

void TrialRunner::tell_watchdog(std::int32_t message) const {
  ssize_t n;
  do n = ::write(watchdog_fd_, &message, sizeof message);  // 4 bytes: atomic on a pipe
  while (n < 0 && errno == EINTR);
}

TrialRunner::~TrialRunner() {
  // SIGTERM first, as a stop would (a wrapper -- ssh, the Slurm watcher -- needs it to clean up
  // remotely), then SIGKILL to what is left after the longest grace (at most 10 s).
  double grace_s = 0;
  for (auto& p : processes_) {
    p->close_stdin();
    p->signal_all(SIGTERM);
    grace_s = std::max(grace_s, p->launch.limits.grace_s);
  }
  const Clock::time_point kill_at =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::min(grace_s, 10.0)));
  for (bool alive = !processes_.empty(); alive && Clock::now() < kill_at;) {
    alive = false;
    for (auto& p : processes_) {
      if (p->pid > 0)
        while (::waitpid(-p->pid, nullptr, WNOHANG) > 0) {
        }
      alive = alive || p->group_alive();
    }
    if (alive) ::usleep(10000);
  }
  for (auto& p : processes_) {
    p->signal_all(SIGKILL);
    if (p->pid > 0)
      while (::waitpid(-p->pid, nullptr, 0) > 0) {
      }
    if (p->cgroup)
      for (int i = 0; i < 100 && p->cgroup->populated(); ++i) ::usleep(10000);
    p->reap_escaped();
    if (p->cgroup) p->cgroup->remove();
    for (Stream* s : {&p->out, &p->err})
      if (s->fd >= 0) ::close(s->fd);
  }
  ::close(watchdog_fd_);  // end-of-file: the watchdog, with nothing announced, exits
  while (::waitpid(watchdog_pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

int TrialRunner::free_slots() const {
  int n = 0;
  for (char busy : slot_busy_) n += busy ? 0 : 1;
  return n;
}

bool TrialRunner::idle() const {
  return std::none_of(processes_.begin(), processes_.end(), [](const auto& p) { return p->in_flight; });
}

bool TrialRunner::holds(const std::string& id) const {
  return std::any_of(processes_.begin(), processes_.end(),
                     [&](const auto& p) { return !p->term_sent && !p->leader_exited && p->held.contains(id); });
}

bool TrialRunner::holder_busy(const std::string& id) const {
  return std::any_of(processes_.begin(), processes_.end(), [&](const auto& p) {
    return !p->term_sent && !p->leader_exited && p->held.contains(id) && p->in_flight;
  });
}

// An idle serving process of the launch's command and slot count: the one that keeps the trial's
// paused state if any, else the one that keeps the fewest (the others stay free for promotions).
TrialRunner::Process* TrialRunner::idle_server_for(const TrialLaunch& launch) {
  Process* found = nullptr;
  for (auto& p : processes_) {
    if (!p->serving || p->in_flight || p->term_sent || p->leader_exited || p->stdin_fd < 0) continue;
    if (p->launch.argv != launch.argv || static_cast<int>(p->slots.size()) != launch.slots) continue;
    if (p->held.contains(launch.id)) return p.get();
    if (!found || p->held.size() < found->held.size()) found = p.get();
  }
  return found;
}

void TrialRunner::assign(Process& server, const TrialLaunch& launch, const std::vector<int>& slots) {
  create_trial_dir(launch);
  open_logs(launch, server.out, server.err);
  for (auto& other : processes_) other->held.erase(launch.id);  // what any process kept of it is older
  server.launch = launch;
  server.slots = slots;
  server.parser = OutputParser(parser_options_);
  server.started = server.last_progress = Clock::now();
  server.started_unix_s = unix_now();
  server.stopped.reset();
  server.done_awaited_since.reset();
  server.other_done.clear();
  server.out.last_line.clear();  // a failure's reason quotes this trial's stderr, not an earlier one's
  server.err.last_line.clear();
  server.in_flight = true;
  for (int slot : slots) slot_busy_[static_cast<std::size_t>(slot)] = 1;
  // One that cannot take it is stopped: its trial fails as the process ends (wait()).
  if (!server.send(assignment_line(launch, std::filesystem::absolute(launch.dir)))) server.terminate();
}

// Idle serving processes on slots another run takes: {"stop": true} and end-of-file, SIGKILL
// after the grace if they do not exit.
void TrialRunner::retire_idle_servers_on(const std::vector<int>& slots) {
  for (auto& p : processes_) {
    if (p->in_flight || p->term_sent) continue;
    if (std::none_of(p->slots.begin(), p->slots.end(),
                     [&](int s) { return std::find(slots.begin(), slots.end(), s) != slots.end(); }))
      continue;
    p->send(R"({"stop": true})");
    p->close_stdin();
    p->term_sent = true;  // SIGKILL after its grace (wait())
    p->term_at = Clock::now();
  }
}

bool TrialRunner::can_start(int slots) const { return !backend_.place(slot_busy_, slots).empty(); }

std::vector<int> TrialRunner::start(const TrialLaunch& launch) {
  if (launch.argv.empty()) throw Error(fmt::format("trial {}: empty command", launch.id));
  if (launch.serve && !backend_.can_serve())
    throw Error(fmt::format("trial {}: the {} backend runs each trial as a process of its own (no serving)", launch.id,
                            backend_.name()));
  if (launch.serve)
    if (Process* server = idle_server_for(launch)) {
      std::vector<int> slots = server->slots;
      assign(*server, launch, slots);
      return slots;
    }
  std::vector<int> slots = backend_.place(slot_busy_, launch.slots);
  if (slots.empty())
    throw Error(fmt::format("trial {}: needs {} free slots{}, {} are free", launch.id, launch.slots,
                            backend_.max_trial_slots() < backend_.slots() ? " on one host" : "", free_slots()));
  retire_idle_servers_on(slots);

  auto p = std::make_unique<Process>(parser_options_);
  p->launch = launch;
  p->slots = slots;
  p->serve_launch = launch.serve;
  create_trial_dir(launch);
  const std::filesystem::path dir = std::filesystem::absolute(launch.dir);
  open_logs(launch, p->out, p->err);
  if (launch.serve)
    for (auto& other : processes_) other->held.erase(launch.id);

  // Everything the child needs is built before fork(): after it, only async-signal-safe calls.
  TrialCommand trial{launch.argv, dir, trial_environment(launch, dir), launch.limits.grace_s};
  if (launch.serve) trial.env.emplace_back("PARATUNE_SERVE", "1");
  const LaunchCommand command = backend_.command_for(trial, slots);
  p->command = command;
  if (!command.backend_token.empty()) {
    ParserOptions with_token = parser_options_;
    with_token.backend_token = command.backend_token;
    p->parser = OutputParser(with_token);
  }
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int cpu : command.cpus)
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &cpus);
  std::vector<std::string> env_strings;
  // PARATUNE_BACKEND_TOKEN: only a wrapping backend's own (command.env), never one inherited.
  // PARATUNE_SERVE: only a serving launch's (an inherited one would make every trial's program serve).
  std::vector<std::string> overridden{"PARATUNE_TRIAL_ID",      "PARATUNE_TRIAL_DIR", "PARATUNE_PARAMS",
                                      "PARATUNE_MAX_STEPS",     "PARATUNE_BACKEND_TOKEN", "PARATUNE_SERVE"};
  for (const auto& [key, value] : command.env) overridden.push_back(key);
  for (const auto& [key, value] : launch.env) overridden.push_back(key);
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const std::string_view key = entry.substr(0, entry.find('='));
    if (std::find(overridden.begin(), overridden.end(), key) == overridden.end()) env_strings.emplace_back(entry);
  }
  for (const auto& [key, value] : trial.env) env_strings.push_back(key + "=" + value);
  for (const auto& [key, value] : command.env) env_strings.push_back(key + "=" + value);
  std::vector<char*> envp, argv;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = command.argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  std::unique_ptr<TrialCgroup> cgroup = cgroups_->create();
  const int cgroup_procs_fd = cgroup ? cgroup->procs_fd() : -1;
  int out_pipe[2], err_pipe[2], exec_pipe[2], in_pipe[2] = {-1, -1};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 || ::pipe2(exec_pipe, O_CLOEXEC) != 0 ||
      ((command.keep_stdin_open || launch.serve) && ::pipe2(in_pipe, O_CLOEXEC) != 0))
    throw Error(fmt::format("trial {}: pipe: {}", launch.id, std::strerror(errno)));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(fmt::format("trial {}: fork: {}", launch.id, std::strerror(errno)));
  if (pid == 0) {
    // Child: own cgroup (where there is one) and process group; die with the controller; default
    // signal handling; pipes as 1 and 2.
    if (cgroup_procs_fd >= 0) {
      [[maybe_unused]] const ssize_t joined = ::write(cgroup_procs_fd, "0", 1);
    }
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT}) ::signal(sig, SIG_DFL);
    const int input = in_pipe[0] >= 0 ? in_pipe[0] : ::open("/dev/null", O_RDONLY);
    if (input >= 0) ::dup2(input, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    if (!command.cpus.empty()) ::sched_setaffinity(0, sizeof cpus, &cpus);
    ::execvpe(argv[0], argv.data(), envp.data());
    const int error = errno;
    [[maybe_unused]] const ssize_t n = ::write(exec_pipe[1], &error, sizeof error);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so the group exists before we might signal it
  tell_watchdog(pid);
  if (cgroup) cgroup->close_procs_fd();
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(exec_pipe[1]);
  if (in_pipe[0] >= 0) ::close(in_pipe[0]);
  // The write end (O_CLOEXEC: no other trial's process holds it open). A remote launcher's: nothing
  // is written to it, closing it is the stop signal; a serving process's: its assignments.
  p->stdin_fd = in_pipe[1];
  if (p->stdin_fd >= 0) ::fcntl(p->stdin_fd, F_SETFL, ::fcntl(p->stdin_fd, F_GETFL) | O_NONBLOCK);
  int exec_error = 0;
  ssize_t got;
  do got = ::read(exec_pipe[0], &exec_error, sizeof exec_error);
  while (got < 0 && errno == EINTR);
  ::close(exec_pipe[0]);
  p->pid = pid;
  p->cgroup = std::move(cgroup);
  p->pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // -1 on kernels before 5.3: polled instead
  p->out.fd = out_pipe[0];
  p->err.fd = err_pipe[0];
  for (int fd : {p->out.fd, p->err.fd}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  p->started = p->last_progress = Clock::now();
  p->started_unix_s = unix_now();
  if (got == static_cast<ssize_t>(sizeof exec_error))
    p->start_error = fmt::format("cannot start '{}': {}", args.front(), std::strerror(exec_error));
  for (int slot : slots) slot_busy_[static_cast<std::size_t>(slot)] = 1;
  if (launch.serve) {
    ++servers_started_;
    // Its first assignment: a serving program reads it at once, any other never reads it.
    if (p->start_error.empty()) p->send(assignment_line(launch, dir));
  }
  processes_.push_back(std::move(p));
  return slots;
}

void TrialRunner::interrupt_all(const std::string& reason) {
  for (auto& p : processes_) {
    if (!p->serving) {
      p->stop(TrialStatus::kInterrupted, reason);
      continue;
    }
    // A serving process stops whole: the trial it runs (interrupted) and what it keeps.
    if (p->in_flight && !p->stopped) p->stopped.emplace(TrialStatus::kInterrupted, reason);
    p->terminate();
  }
}

std::vector<RunningTrial> TrialRunner::running() const {
  std::vector<RunningTrial> out;
  const Clock::time_point now = Clock::now();
  for (const auto& p : processes_) {
    if (!p->in_flight) continue;
    const auto& steps = p->parser.output().steps;
    out.push_back({p->launch.id, p->slots.front(), p->slots, steps.size(), seconds(now - p->started),
                   steps.empty() ? 0.0 : steps.back().step_time_s});
  }
  return out;
}

namespace {

// How a trial that was not stopped by paratune ended.
std::pair<TrialStatus, std::string> classify(const TrialRunner::Process& p, const TrialLimits& limits,
                                             const Stream& err, const Backend& backend);
// How a served trial that said done ended (`failure`: its done line's "failed").
std::pair<TrialStatus, std::string> classify_served(const TrialRunner::Process& p, const std::string& failure);
std::pair<TrialStatus, std::string> classify_output(const TrialOutput& out, const TrialLimits& limits);

// A trial's result as far as the runner tells it, but for its status and reason.
TrialResult result_of(const TrialRunner::Process& p) {
  TrialResult r;
  r.id = p.launch.id;
  r.process_group = p.pid;
  r.location = p.command.location;
  r.started_unix_s = p.started_unix_s;
  r.ended_unix_s = unix_now();
  r.output = p.parser.output();
  std::vector<double> times;
  for (const StepReport& s : r.output.steps) times.push_back(s.step_time_s);
  r.throughput = estimate_throughput(times);
  const std::filesystem::path dir = std::filesystem::absolute(p.launch.dir);
  r.stdout_path = dir / "stdout.log";
  r.stderr_path = dir / "stderr.log";
  return r;
}

// The trial's result stands (its output was parsed as it came), but its logs are not whole.
void add_log_errors(const TrialRunner::Process& p, TrialResult& r) {
  for (const Stream* s : {&p.out, &p.err})
    if (!s->log_error.empty())
      r.reason += fmt::format("{}{} (the log is incomplete)", r.reason.empty() ? "" : "; ", s->log_error);
}

}  // namespace

std::vector<TrialResult> TrialRunner::wait(double timeout_s, const StepCallback& on_step) {
  const Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                        std::chrono::duration<double>(std::max(0.0, timeout_s)));
  std::vector<TrialResult> finished;
  for (;;) {
    // 1. Output.
    std::vector<pollfd> fds;
    std::vector<std::pair<Process*, Stream*>> owners;
    for (auto& p : processes_) {
      for (Stream* s : {&p->out, &p->err})
        if (s->fd >= 0) {
          fds.push_back({s->fd, POLLIN, 0});
          owners.emplace_back(p.get(), s);
        }
      if (p->pidfd >= 0) {
        fds.push_back({p->pidfd, POLLIN, 0});
        owners.emplace_back(p.get(), nullptr);
      }
    }
    const double left = seconds(deadline - Clock::now());
    const int wait_ms = static_cast<int>(std::clamp(left * 1000, 0.0, 50.0));
    if (!fds.empty()) ::poll(fds.data(), fds.size(), wait_ms);
    else if (wait_ms > 0) ::usleep(static_cast<useconds_t>(wait_ms) * 1000);
    // Reads what stream `s` of `p` holds now and handles its lines.
    const auto read_now = [&](Process* p, Stream* s) {
      std::array<char, 65536> buffer;
      for (;;) {
        const ssize_t n = ::read(s->fd, buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          if (n == 0 || errno != EAGAIN) {
            ::close(s->fd);
            s->fd = -1;
          }
          break;
        }
        if (!s->write_log(buffer.data(), static_cast<std::size_t>(n)))
          std::cerr << fmt::format("paratune: warning: trial {}: {}; the rest of its output is not kept there\n",
                                   p->launch.id, s->log_error);
        s->pending.append(buffer.data(), static_cast<std::size_t>(n));
        std::size_t begin = 0;
        for (;;) {
          std::size_t newline = s->pending.find('\n', begin);
          if (newline == std::string::npos && s->pending.size() - begin >= kMaxLine) newline = begin + kMaxLine;
          if (newline == std::string::npos) break;
          const std::string_view line(s->pending.data() + begin, newline - begin);
          if (line.find_first_not_of(" \t\r") != std::string_view::npos) s->last_line = std::string(line.substr(0, 300));
          const LineReport r = p->parser.feed(line);
          begin = newline + (newline < s->pending.size() && s->pending[newline] == '\n' ? 1 : 0);
          if (r.kind == LineReport::Kind::kServe && p->serve_launch) p->serving = true;
          if (r.kind == LineReport::Kind::kDone && p->serving && p->in_flight && !p->done_said &&
              r.done_trial == p->launch.id)
            p->done_said = r.done_failure;  // the trial ends once its other stream is read (below)
          else if (r.kind == LineReport::Kind::kDone && p->serving && p->in_flight && r.done_trial != p->launch.id)
            p->other_done = r.done_trial;  // ignored; said in the reason if the trial's own never comes
          if (!p->in_flight) continue;
          if (r.kind == LineReport::Kind::kStarted) {
            // A wrapping backend's trial left its queue: its limits count from here.
            p->command.location = r.location;
            p->started = p->last_progress = Clock::now();
            p->started_unix_s = unix_now();
          }
          if (r.kind != LineReport::Kind::kStep || p->stopped || p->done_said) continue;
          p->last_progress = Clock::now();
          const TrialOutput& so_far = p->parser.output();
          if (on_step && !on_step(p->launch.id, r.step, so_far))
            p->stop(TrialStatus::kEarlyStopped, fmt::format("stopped early by the search after {} steps", so_far.steps.size()));
          else if (p->launch.max_steps > 0 &&
                   p->launch.steps_done + static_cast<std::int64_t>(so_far.steps.size()) >= p->launch.max_steps)
            p->stop(TrialStatus::kCompleted, "");  // ran all its steps; the program need not exit by itself
        }
        s->pending.erase(0, begin);
      }
    };
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto [p, s] = owners[i];
      if (s) read_now(p, s);  // else a leader's pidfd: it exited, reaped below
    }
    // Served trials that said done. What their other stream holds was written before the done line
    // (an out-of-memory message on stderr, then done on stdout): theirs too. Then they end, and the
    // process waits for its next assignment.
    for (auto& p : processes_) {
      if (!p->done_said) continue;
      for (Stream* s : {&p->out, &p->err})
        if (s->fd >= 0) read_now(p.get(), s);
      TrialResult result = result_of(*p);
      result.exit_code = p->done_said->empty() ? 0 : -1;
      const bool stopped_early = p->stopped && p->stopped->first != TrialStatus::kCompleted;
      std::tie(result.status, result.reason) = stopped_early ? *p->stopped : classify_served(*p, *p->done_said);
      add_log_errors(*p, result);
      if (result.output.checkpoint_step && result.output.checkpoint_in_memory) p->held.insert(p->launch.id);
      finished.push_back(std::move(result));
      for (int slot : p->slots) slot_busy_[static_cast<std::size_t>(slot)] = 0;
      p->in_flight = false;
      p->stopped.reset();
      p->done_awaited_since.reset();
      p->done_said.reset();
      p->parser = OutputParser(parser_options_);  // lines until the next assignment: its own
    }

    // 2. Exits, limits, escalation.
    const Clock::time_point now = Clock::now();
    for (auto it = processes_.begin(); it != processes_.end();) {
      Process& p = **it;
      const TrialLimits& limits = p.launch.limits;
      // Reap the leader and any member of its group that was reparented to us (we are a subreaper).
      for (int status = 0;;) {
        const pid_t reaped = ::waitpid(-p.pid, &status, WNOHANG);
        if (reaped <= 0) break;
        if (reaped == p.pid) {
          p.leader_exited = true;
          p.wait_status = status;
          p.close_pidfd();
        }
      }
      // A served trial stopped without its done line within the grace: its process is stopped.
      if (p.done_awaited_since && !p.term_sent && seconds(now - *p.done_awaited_since) > p.kill_after_s()) p.terminate();
      // A job waiting in a scheduler's queue is not running yet: its limits start when it does.
      if (p.in_flight && !p.stopped && !p.leader_exited && !p.parser.output().queued) {
        if (limits.timeout_s > 0 && seconds(now - p.started) > limits.timeout_s)
          p.stop(TrialStatus::kTimeout, fmt::format("ran past its wall-clock limit of {}", units::format_duration(limits.timeout_s)));
        else if (limits.hang_s > 0 && seconds(now - p.last_progress) > limits.hang_s)
          p.stop(TrialStatus::kTimeout, fmt::format("hung: no new step for {}", units::format_duration(limits.hang_s)));
      }
      // The leader is gone but others of the trial live on (in its group, or having left it): they
      // are orphans, stop them too.
      p.reap_escaped();
      const bool alive = p.anything_alive();
      if (p.leader_exited && alive && !p.term_sent) {
        p.signal_all(SIGTERM);
        p.term_sent = true;
        p.term_at = now;
      }
      if (p.term_sent && !p.kill_sent && alive && seconds(now - p.term_at) > p.kill_after_s()) {
        p.signal_all(SIGKILL);
        p.kill_sent = true;
      }
      // Done when the leader was reaped, its group is empty and its output is read (or, if a
      // process that left the group still holds the pipes, after a grace period).
      bool done = p.leader_exited && !alive;
      if (done && (p.out.fd >= 0 || p.err.fd >= 0)) {
        if (p.streams_wait_since == Clock::time_point{}) p.streams_wait_since = now;
        done = seconds(now - p.streams_wait_since) > limits.grace_s;
      }
      if (!done) {
        ++it;
        continue;
      }
      p.reap_escaped();
      p.close_stdin();
      if (p.cgroup) p.cgroup->remove();
      for (Stream* s : {&p.out, &p.err}) {
        if (s->fd >= 0) ::close(s->fd);
        s->fd = -1;
        if (!s->pending.empty()) p.parser.feed(s->pending);  // a last line without a newline
        const bool failed_before = !s->log_error.empty();
        s->close_log();
        if (!failed_before && !s->log_error.empty())
          std::cerr << fmt::format("paratune: warning: trial {}: {}\n", p.launch.id, s->log_error);
      }
      // A serving process that ended between assignments (retired, or gone): no trial ends with it.
      if (p.in_flight) {
        TrialResult r = result_of(p);
        if (WIFEXITED(p.wait_status)) r.exit_code = WEXITSTATUS(p.wait_status);
        if (WIFSIGNALED(p.wait_status)) r.exit_signal = WTERMSIG(p.wait_status);
        // A wrapping backend said how the trial ended: the wrapper's exit is not the program's.
        if (r.output.ended) {
          r.exit_code = -1;
          r.exit_signal = 0;
        }
        // Stopped after all its steps: judged like a trial that ended by itself (OOM, memory limit).
        const bool stopped_early = p.stopped && p.stopped->first != TrialStatus::kCompleted;
        std::tie(r.status, r.reason) = stopped_early ? *p.stopped : classify(p, limits, p.err, backend_);
        add_log_errors(p, r);
        finished.push_back(std::move(r));
        for (int slot : p.slots) slot_busy_[static_cast<std::size_t>(slot)] = 0;
      }
      tell_watchdog(-p.pid);
      it = processes_.erase(it);
    }
    if (!finished.empty() || Clock::now() >= deadline) return finished;
  }
}

namespace {

std::pair<TrialStatus, std::string> classify(const TrialRunner::Process& p, const TrialLimits& limits, const Stream& err,
                                             const Backend& backend) {
  const TrialOutput& out = p.parser.output();
  if (!p.start_error.empty()) return {TrialStatus::kFailed, p.start_error};
  // A wrapping backend's scheduler said how it ended (OUT_OF_MEMORY, TIMEOUT, NODE_FAIL, PREEMPTED).
  if (out.ended) return {parse_trial_status(out.ended->status), out.ended->reason};
  const bool stopped_after_all_steps = p.stopped && p.stopped->first == TrialStatus::kCompleted;
  if (WIFEXITED(p.wait_status) && !stopped_after_all_steps)
    if (std::optional<std::string> lost = backend.launcher_failure(p.command, WEXITSTATUS(p.wait_status), err.last_line))
      return {TrialStatus::kFailed, *lost};
  if (out.oom) return {TrialStatus::kOom, out.oom_line.empty() ? "reported out of memory" : out.oom_line};
  const bool signaled = WIFSIGNALED(p.wait_status);
  const int code = WIFEXITED(p.wait_status) ? WEXITSTATUS(p.wait_status) : -1;
  // SIGKILL that paratune did not send (or exit status 137, a shell's report of it): on a training
  // job that is almost always the kernel's out-of-memory killer.
  if (!p.kill_sent && ((signaled && WTERMSIG(p.wait_status) == SIGKILL) || code == 137))
    return {TrialStatus::kOom, "killed by SIGKILL that paratune did not send (the kernel's out-of-memory killer?)"};
  const std::string tail = err.last_line.empty() ? "" : fmt::format("; last stderr line: {}", err.last_line);
  // A serving process ended before its trial's done line: whatever its exit, the trial failed. When
  // paratune stopped it -- all steps run, no done line within the grace -- the reason says so (not
  // "killed by signal 15", which reads as a crash), and names the trial a done line it said was for.
  if (p.serving) {
    const std::string other =
        p.other_done.empty() ? "" : fmt::format(" (it said done for '{}', a trial it was not running)", p.other_done);
    if (stopped_after_all_steps && p.done_awaited_since && p.term_sent)
      return {TrialStatus::kFailed,
              fmt::format("ran its steps, but its serving process said no done line for it within {}{}; paratune "
                          "stopped the process{}",
                          units::format_duration(p.kill_after_s()), other, tail)};
    return {TrialStatus::kFailed,
            fmt::format("its serving process {} before the trial's done line{}{}",
                        signaled ? fmt::format("was killed by signal {} ({})", WTERMSIG(p.wait_status),
                                               strsignal(WTERMSIG(p.wait_status)))
                                 : fmt::format("exited with code {}", code),
                        other, tail)};
  }
  if (!stopped_after_all_steps) {
    if (signaled)
      return {TrialStatus::kFailed, fmt::format("killed by signal {} ({}){}", WTERMSIG(p.wait_status),
                                                strsignal(WTERMSIG(p.wait_status)), tail)};
    if (code != 0) return {TrialStatus::kFailed, fmt::format("exit code {}{}", code, tail)};
  }
  return classify_output(out, limits);
}

std::pair<TrialStatus, std::string> classify_served(const TrialRunner::Process& p, const std::string& failure) {
  const TrialOutput& out = p.parser.output();
  if (out.oom) return {TrialStatus::kOom, out.oom_line.empty() ? "reported out of memory" : out.oom_line};
  if (!failure.empty())
    return {TrialStatus::kFailed,
            failure + (p.err.last_line.empty() ? "" : fmt::format("; last stderr line: {}", p.err.last_line))};
  return classify_output(out, p.launch.limits);
}

// A trial that ended well by its exit (or done line): no steps, or above the memory limit, still fail.
std::pair<TrialStatus, std::string> classify_output(const TrialOutput& out, const TrialLimits& limits) {
  if (out.steps.empty()) {
    std::string why = "reported no steps";
    if (out.malformed_lines > 0)
      why += fmt::format(" ({} malformed @paratune lines, the first: {})", out.malformed_lines, out.first_malformed);
    return {TrialStatus::kFailed, why};
  }
  if (limits.memory_limit_bytes > 0 && out.peak_memory_bytes && *out.peak_memory_bytes > limits.memory_limit_bytes)
    return {TrialStatus::kInfeasible, fmt::format("peak memory {} above the limit {}",
                                                  units::format_bytes(*out.peak_memory_bytes),
                                                  units::format_bytes(limits.memory_limit_bytes))};
  return {TrialStatus::kCompleted, ""};
}

}  // namespace

}  // namespace paratune::trial
