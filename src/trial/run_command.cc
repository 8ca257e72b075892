// Short commands run to their end (trial/run_command.h).
#include "paratune/trial/run_command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill(), not in <csignal>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "paratune/spec/error.h"

extern char** environ;

namespace paratune::trial {

bool CommandOutput::ok() const { return !timed_out && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }

std::string CommandOutput::describe_end(double timeout_s) const {
  if (timed_out) return fmt::format("timed out after {:g} s", timeout_s);
  if (WIFSIGNALED(wait_status)) return fmt::format("killed by signal {}", WTERMSIG(wait_status));
  return fmt::format("exit code {}", WEXITSTATUS(wait_status));
}

namespace {
namespace run_command_detail {

// The processes below `root` -- its children, theirs, ... -- from the parent ids in /proc.
std::vector<pid_t> descendants(pid_t root) {
  std::multimap<pid_t, pid_t> children;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, the last ')' ends it.
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    pid_t parent = 0;
    if (rest >> state >> parent) children.emplace(parent, static_cast<pid_t>(std::stol(name)));
  }
  std::vector<pid_t> out, frontier{root};
  while (!frontier.empty()) {
    const pid_t of = frontier.back();
    frontier.pop_back();
    const auto [first, last] = children.equal_range(of);
    for (auto it = first; it != last; ++it) {
      out.push_back(it->second);
      frontier.push_back(it->second);
    }
  }
  return out;
}

// Kills `pid` and every process below it. A command run to its end may start workers of its own
// (the profile measurer's --nproc processes): killing only `pid` would leave them running, and one
// of them writing the command's output after its caller gave up on it. Stopped first, so that none
// forks or is reparented (and lost from the tree) while the tree is being found.
void kill_tree(pid_t pid) {
  std::set<pid_t> found{pid};
  kill(pid, SIGSTOP);
  for (bool grew = true; grew;) {
    grew = false;
    for (pid_t d : descendants(pid))
      if (found.insert(d).second) {
        kill(d, SIGSTOP);
        grew = true;
      }
  }
  for (pid_t p : found) kill(p, SIGKILL);
}

}  // namespace run_command_detail
}  // namespace

CommandOutput run_command(const std::vector<std::string>& argv, double timeout_s, bool own_process_group) {
  if (argv.empty()) throw Error("run_command: no program given");
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw Error(fmt::format("cannot run '{}' (pipe: {})", argv[0], std::strerror(errno)));
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int error = errno;
    close(out_pipe[0]);
    close(out_pipe[1]);
    throw Error(fmt::format("cannot run '{}' (pipe: {})", argv[0], std::strerror(error)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  if (own_process_group) {
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
  }
  const int spawned = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (spawned != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw Error(fmt::format("cannot run '{}' ({})", argv[0], std::strerror(spawned)));
  }
  CommandOutput c;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&c.out, &c.err};
  int open_pipes = 2;
  while (open_pipes > 0) {
    const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      c.timed_out = true;
      if (own_process_group) kill(-pid, SIGKILL);
      run_command_detail::kill_tree(pid);
      break;
    }
    if (poll(fds, 2, static_cast<int>(std::min(left, 1.0) * 1000) + 1) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[4096];
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_pipes;
      }
    }
  }
  for (pollfd& f : fds)
    if (f.fd >= 0) close(f.fd);
  while (waitpid(pid, &c.wait_status, 0) < 0 && errno == EINTR) {
  }
  return c;
}

std::string last_lines(const std::string& text, std::size_t lines) {
  std::size_t at = text.size();
  while (at > 0 && (text[at - 1] == '\n')) --at;
  const std::size_t end = at;
  for (std::size_t n = 0; at > 0 && n < lines; --at)
    if (text[at - 1] == '\n' && ++n == lines) break;
  return text.substr(at, end - at);
}

}  // namespace paratune::trial
