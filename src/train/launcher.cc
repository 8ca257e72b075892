#include "paratune/train/launcher.h"

#include <fmt/format.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill()/sigaction(), not in <csignal>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <string_view>

#include "paratune/spec/error.h"

extern char** environ;

namespace paratune::train {
namespace {

std::string describe(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return fmt::format("ended with wait status {}", status);
}

bool failed(int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }

struct Rank {
  int rank;
  pid_t pid;
  bool running = true;
};

// Reaps every rank that has ended without blocking and keeps the failure that explains the others:
// a rank killed by a signal before one that exited with an error (a rank whose peer died usually
// exits with a Gloo error moments later), then the lowest rank. A child reaped elsewhere (ECHILD)
// counts as ended.
void reap(std::vector<Rank>& ranks, RankFailure& failure) {
  auto cause = [](const RankFailure& f) { return f.reason.find("killed by signal") != std::string::npos ? 0 : 1; };
  for (auto& r : ranks) {
    if (!r.running) continue;
    int status = 0;
    const pid_t got = waitpid(r.pid, &status, WNOHANG);
    if (got == 0 || (got < 0 && errno != ECHILD)) continue;
    r.running = false;
    if (got < 0 || !failed(status)) continue;
    const RankFailure f{r.rank, describe(status), WIFEXITED(status) ? WEXITSTATUS(status) : 1};
    if (failure.rank < 0 || cause(f) < cause(failure)) failure = f;
  }
}

bool any_running(const std::vector<Rank>& ranks) {
  for (const auto& r : ranks)
    if (r.running) return true;
  return false;
}

// SIGTERM to the ranks still running, SIGKILL after `grace_s`, every one reaped.
void stop(std::vector<Rank>& ranks, double grace_s) {
  RankFailure ignored;
  for (const auto& r : ranks)
    if (r.running) kill(r.pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (any_running(ranks) && std::chrono::steady_clock::now() < deadline) {
    reap(ranks, ignored);
    if (any_running(ranks)) usleep(10'000);
  }
  for (auto& r : ranks)
    if (r.running) {
      kill(r.pid, SIGKILL);
      int status = 0;
      waitpid(r.pid, &status, 0);
      r.running = false;
    }
}

}  // namespace

RankFailure run_ranks(const std::string& program, const std::vector<std::string>& args, int first_rank, int count,
                      const std::vector<std::pair<std::string, std::string>>& environment, double grace_s) {
  // Everything a child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<std::string> arg_strings{program};
  arg_strings.insert(arg_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(arg_strings.size() + 1);
  for (auto& a : arg_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The inherited environment less the variables this launch sets (exact names: getenv would
  // return an inherited copy first).
  auto set_here = [&](const char* entry) {
    const std::string_view name(entry, std::strcspn(entry, "="));
    if (name == kRankVariable) return true;
    for (const auto& [key, value] : environment)
      if (name == key) return true;
    return false;
  };
  std::vector<std::string> base_env;
  for (char** e = environ; *e; ++e)
    if (!set_here(*e)) base_env.emplace_back(*e);
  for (const auto& [key, value] : environment) base_env.push_back(key + "=" + value);

  // Signals are taken synchronously (sigtimedwait) so a child's end or a stop request is never lost.
  sigset_t watched, previous;
  sigemptyset(&watched);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&watched, s);
  sigprocmask(SIG_BLOCK, &watched, &previous);
  // An ignored SIGCHLD (inherited across exec) would have the kernel reap the ranks unseen.
  struct sigaction default_child {}, previous_child {};
  default_child.sa_handler = SIG_DFL;
  sigaction(SIGCHLD, &default_child, &previous_child);
  auto restore_signals = [&] {
    sigaction(SIGCHLD, &previous_child, nullptr);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
  };

  std::vector<Rank> ranks;
  RankFailure failure;
  const pid_t launcher = getpid();
  for (int i = 0; i < count; ++i) {
    std::vector<std::string> env_strings = base_env;
    env_strings.push_back(fmt::format("{}={}", kRankVariable, first_rank + i));
    std::vector<char*> envp;
    envp.reserve(env_strings.size() + 1);
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
      const std::string why = std::strerror(errno);
      stop(ranks, grace_s);
      restore_signals();
      throw Error(fmt::format("cannot start rank {}: fork failed ({})", first_rank + i, why));
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != launcher) _exit(127);  // the launcher died before the line above
      sigprocmask(SIG_SETMASK, &previous, nullptr);
      execve(program.c_str(), argv.data(), envp.data());
      const char message[] = "paratune-train: cannot execute the rank program\n";
      (void)!write(STDERR_FILENO, message, sizeof message - 1);
      _exit(127);
    }
    ranks.push_back({first_rank + i, pid});
  }

  while (true) {
    reap(ranks, failure);
    if (failure.rank >= 0 || !any_running(ranks)) break;
    timespec wait_for{0, 200'000'000};
    siginfo_t info;
    const int sig = sigtimedwait(&watched, &info, &wait_for);
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
      failure = {-1, fmt::format("the launcher received signal {} ({})", sig, strsignal(sig)), 128 + sig};
      for (const auto& r : ranks)
        if (r.running) kill(r.pid, sig);
      break;
    }
  }
  stop(ranks, grace_s);
  restore_signals();
  return failure;
}

}  // namespace paratune::train
