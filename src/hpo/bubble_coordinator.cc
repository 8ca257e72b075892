#include "paratune/hpo/bubble_coordinator.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill()/sigaction(), not in <csignal>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"

extern char** environ;

namespace paratune::hpo {
namespace {

constexpr int kMaxFailuresInARow = 3;

double monotonic_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// A child process with its stdout and stderr on a pipe, in a process group of its own.
struct Child {
  pid_t pid = -1;
  int out = -1;          // read end of its output
  std::string pending;   // a partial line
  trial::OutputParser parser;
  std::ofstream log;
  bool exited = false;
  int status = 0;
};

struct SpawnSettings {
  std::vector<std::pair<std::string, std::string>> env;
  int cpu = -1;              // pin to this CPU (-1: any)
  bool idle_priority = false;  // SCHED_IDLE
  bool start_stopped = false;  // SIGSTOP before exec: the first SIGCONT starts it
};

std::unique_ptr<Child> spawn(const std::vector<std::string>& argv, const SpawnSettings& s, const std::filesystem::path& log) {
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const bool replaced = std::any_of(s.env.begin(), s.env.end(),
                                      [&](const auto& kv) { return entry.rfind(kv.first + "=", 0) == 0; });
    if (!replaced) env_text.push_back(entry);
  }
  for (const auto& [key, value] : s.env) env_text.push_back(key + "=" + value);
  std::vector<char*> envp, args;
  for (std::string& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (s.cpu >= 0) CPU_SET(static_cast<unsigned>(s.cpu), &set);
  const pid_t parent = getpid();
  const int null_in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  sigset_t no_signals;
  sigemptyset(&no_signals);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(fmt::format("harvest: pipe failed ({})", std::strerror(errno)));
  const pid_t pid = fork();
  if (pid < 0) throw Error(fmt::format("harvest: fork failed ({})", std::strerror(errno)));
  if (pid == 0) {  // only async-signal-safe calls from here
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    // What the program gets is a fresh start: no blocked or ignored signals, no stdin.
    for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD}) sigaction(signal, &default_action, nullptr);
    sigprocmask(SIG_SETMASK, &no_signals, nullptr);
    if (null_in >= 0) dup2(null_in, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    if (s.cpu >= 0) sched_setaffinity(0, sizeof set, &set);
    if (s.idle_priority) {
      sched_param param{};
      sched_setscheduler(0, SCHED_IDLE, &param);
    }
    if (s.start_stopped) raise(SIGSTOP);
    execvpe(args[0], args.data(), envp.data());  // as `executable` checked: a path, or on PATH
    _exit(127);
  }
  setpgid(pid, pid);  // also here: no race with the child's own call
  close(fds[1]);
  if (null_in >= 0) close(null_in);
  auto child = std::make_unique<Child>();
  child->pid = pid;
  child->out = fds[0];
  fcntl(child->out, F_SETFL, O_NONBLOCK);
  child->log.open(log);
  if (s.start_stopped) {  // parked until the rank's first bubble; it may have died instead
    int status = 0;
    if (waitpid(pid, &status, WUNTRACED) == pid && !WIFSTOPPED(status)) {
      child->exited = true;
      child->status = status;
    }
  }
  return child;
}

// Whether the child has ended (reaped here, or already by spawn); its wait status in `status`.
bool ended(Child& c, int& status) {
  if (!c.exited) {
    const pid_t r = waitpid(c.pid, &c.status, WNOHANG);
    if (r == 0) return false;
    if (r < 0) c.status = 0;  // not ours any more: count it as gone
    c.exited = true;
  }
  status = c.status;
  return true;
}

// Reads what is there; calls on_line(line) for each complete line (and a last one without its
// newline at the end). False at end of file.
template <typename OnLine>
bool drain(Child& c, OnLine on_line) {
  char buffer[8192];
  for (;;) {
    const ssize_t n = read(c.out, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) {
      if (!c.pending.empty()) {
        c.log << c.pending << '\n';
        on_line(c.pending);
        c.pending.clear();
      }
      return false;
    }
    c.pending.append(buffer, static_cast<std::size_t>(n));
    for (std::size_t nl; (nl = c.pending.find('\n')) != std::string::npos;) {
      const std::string line = c.pending.substr(0, nl);
      c.pending.erase(0, nl + 1);
      c.log << line << '\n';
      on_line(line);
    }
  }
}

void write_group_file(const std::filesystem::path& dir, int rank, int group) {
  const std::filesystem::path path = dir / fmt::format("rank-{}.pgid", rank);
  const std::filesystem::path tmp = dir / fmt::format("rank-{}.pgid.tmp", rank);
  std::ofstream(tmp) << group << "\n";
  std::filesystem::rename(tmp, path);  // a rank reads the old or the new file, never half of one
}

// Whether `program` names an executable regular file, as execvp would find it (a path, or on PATH).
bool executable_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

bool executable(const std::string& program) {
  if (program.find('/') != std::string::npos) return executable_file(program);
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    if (executable_file((dir.empty() ? "." : dir) + "/" + program)) return true;
    start = end + 1;
  }
  return false;
}

int members_of(const std::string& params) {
  const nlohmann::json j = nlohmann::json::parse(params, nullptr, false);
  return j.is_array() ? static_cast<int>(j.size()) : 1;
}

}  // namespace

HarvestRun run_harvest(const HarvestOptions& o) {
  if (o.job_argv.empty()) throw OptionError("job_argv", "", "the job's command is required");
  if (o.ranks < 1) throw OptionError("ranks", std::to_string(o.ranks), "must be >= 1");
  if (!o.trial_argv.empty() && o.trial_params.empty())
    throw OptionError("trial_argv", "",
                      fmt::format("needs the trials' PARATUNE_PARAMS ({})", option_ref("trial_params")));
  if (!executable(o.job_argv.front()))
    throw OptionError("job_argv", "",
                      fmt::format("'{}' is not an executable program (nor one on PATH)", o.job_argv.front()));
  if (!o.trial_argv.empty() && !executable(o.trial_argv.front()))
    throw OptionError("trial_argv", "",
                      fmt::format("'{}' is not an executable program (nor one on PATH)", o.trial_argv.front()));
  std::filesystem::create_directories(o.dir);
  for (int r = 0; r < o.ranks; ++r) {
    std::filesystem::remove(o.dir / fmt::format("rank-{}.pgid", r));
    std::filesystem::remove(o.dir / fmt::format("rank-{}.bubbles", r));
  }
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  HarvestRun run;
  std::size_t next_params = 0;
  int trial_count = 0;
  std::vector<std::unique_ptr<Child>> slots(static_cast<std::size_t>(o.ranks));
  std::vector<HarvestTrialRun> current(static_cast<std::size_t>(o.ranks));
  std::vector<int> failures_in_a_row(static_cast<std::size_t>(o.ranks), 0);
  double start = 0;

  auto start_trial = [&](int rank) {
    HarvestTrialRun t;
    t.rank = rank;
    t.params = o.trial_params[next_params++ % o.trial_params.size()];
    t.members = members_of(t.params);
    t.started_s = monotonic_s() - start;
    const std::filesystem::path trial_dir = std::filesystem::absolute(o.dir / fmt::format("trial-{:04d}", ++trial_count));
    std::filesystem::create_directories(trial_dir);
    t.dir = trial_dir.string();
    SpawnSettings s;
    s.env = {{"PARATUNE_PARAMS", t.params}, {"PARATUNE_TRIAL_DIR", trial_dir.string()}};
    s.cpu = static_cast<int>(static_cast<unsigned>(rank) % cpus);
    s.idle_priority = true;
    s.start_stopped = true;
    slots[static_cast<std::size_t>(rank)] = spawn(o.trial_argv, s, trial_dir / "output.log");
    current[static_cast<std::size_t>(rank)] = t;
    write_group_file(o.dir, rank, slots[static_cast<std::size_t>(rank)]->pid);
  };
  auto end_trial = [&](int rank, const std::string& status) {
    HarvestTrialRun t = current[static_cast<std::size_t>(rank)];
    t.ended_s = monotonic_s() - start;
    t.status = status;
    t.steps = static_cast<std::int64_t>(slots[static_cast<std::size_t>(rank)]->parser.output().steps.size());
    run.trials.push_back(t);
  };

  start = monotonic_s();
  if (!o.trial_argv.empty())
    for (int r = 0; r < o.ranks; ++r) start_trial(r);
  SpawnSettings job_settings;
  job_settings.env = {{"PARATUNE_BUBBLE_DIR", std::filesystem::absolute(o.dir).string()}};
  std::unique_ptr<Child> job = spawn(o.job_argv, job_settings, o.dir / "job.log");
  start = monotonic_s();  // the job's clock: bubbles and steps count from here
  run.start_monotonic_s = start;
  for (HarvestTrialRun& t : current) t.started_s = 0;

  // Until the job is reaped: its output, the trials' output, trials that end (replaced), the timeout.
  bool job_open = true, timed_out = false;
  int status = 0;
  for (;;) {
    std::vector<pollfd> fds;
    if (job_open) fds.push_back({job->out, POLLIN, 0});
    for (const auto& slot : slots)
      if (slot && slot->out >= 0) fds.push_back({slot->out, POLLIN, 0});
    poll(fds.data(), fds.size(), 100);
    if (job_open)
      job_open = drain(*job, [&](const std::string& line) {
        const trial::LineReport r = job->parser.feed(line);
        if (r.kind == trial::LineReport::Kind::kStep) run.job_step_read_s.push_back(monotonic_s() - start);
      });
    for (int r = 0; r < o.ranks; ++r) {
      Child* slot = slots[static_cast<std::size_t>(r)].get();
      if (!slot) continue;
      const auto take = [&](const std::string& line) {
        if (slot->parser.feed(line).kind == trial::LineReport::Kind::kStep)
          current[static_cast<std::size_t>(r)].step_times_s.push_back(monotonic_s() - start);
      };
      if (slot->out >= 0 && !drain(*slot, take)) {
        close(slot->out);
        slot->out = -1;
      }
      int trial_status = 0;
      if (!ended(*slot, trial_status)) continue;
      // Ended: the next configuration takes the slot.
      if (slot->out >= 0) {
        drain(*slot, take);
        close(slot->out);
        slot->out = -1;
      }
      end_trial(r, WIFEXITED(trial_status) && WEXITSTATUS(trial_status) == 0
                       ? "completed"
                       : fmt::format("failed ({})", WIFEXITED(trial_status)
                                                        ? fmt::format("exit code {}", WEXITSTATUS(trial_status))
                                                        : fmt::format("signal {}", WTERMSIG(trial_status))));
      // A slot whose trials keep ending without a step is given up, not refilled at every bubble.
      const HarvestTrialRun& last = run.trials.back();
      int& in_a_row = failures_in_a_row[static_cast<std::size_t>(r)];
      in_a_row = last.steps == 0 ? in_a_row + 1 : 0;
      if (in_a_row >= kMaxFailuresInARow) {
        run.notes.push_back(fmt::format("rank {}'s trial slot was given up: {} trials in a row ended without a step "
                                        "(the last: {}; see {}/output.log)",
                                        r, kMaxFailuresInARow, last.status, last.dir));
        std::filesystem::remove(o.dir / fmt::format("rank-{}.pgid", r));
        slots[static_cast<std::size_t>(r)].reset();
        continue;
      }
      start_trial(r);
    }
    if (ended(*job, status)) break;
    if (!timed_out && o.timeout_s > 0 && monotonic_s() - start > o.timeout_s) {
      run.notes.push_back(fmt::format("the job was stopped after its timeout of {:.0f} s", o.timeout_s));
      kill(-job->pid, SIGKILL);
      timed_out = true;
    }
  }
  if (job_open) drain(*job, [&](const std::string& line) { job->parser.feed(line); });
  run.job_exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.elapsed_s = monotonic_s() - start;
  run.job_steps = job->parser.output().steps;
  close(job->out);
  // The job is over: the trials still parked are stopped where they are.
  for (int r = 0; r < o.ranks; ++r) {
    Child* slot = slots[static_cast<std::size_t>(r)].get();
    if (!slot) continue;
    kill(-slot->pid, SIGKILL);
    if (!slot->exited) waitpid(slot->pid, &status, 0);
    if (slot->out >= 0) {
      drain(*slot, [&](const std::string& line) { slot->parser.feed(line); });
      close(slot->out);
    }
    end_trial(r, "stopped");
  }
  // The ranks' bubbles, on the job's clock.
  for (int r = 0; r < o.ranks; ++r) {
    std::ifstream in(o.dir / fmt::format("rank-{}.bubbles", r));
    double a = 0, b = 0;
    while (in >> a >> b) run.bubbles.push_back({r, a - start, b - start});
  }
  return run;
}

double median_step_time(const HarvestRun& run, std::size_t skip) {
  std::vector<double> times;
  for (std::size_t i = skip; i < run.job_steps.size(); ++i) times.push_back(run.job_steps[i].step_time_s);
  if (times.empty()) return 0;
  std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
  return times[times.size() / 2];
}

}  // namespace paratune::hpo
