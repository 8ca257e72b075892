// Running the real paratune binary with its stderr on a terminal: a pseudo-terminal (forkpty), 200
// columns wide, for the displays that only a terminal gets (plan's progress line, tune's live block).
#pragma once

#include <fcntl.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "../support/test_files.h"

namespace paratune::testing {

struct TerminalRun {
  int exit_code = -1;
  std::string terminal;  // what the program wrote to the terminal: its stderr (the terminal turns "\n" into "\r\n")
  std::string out;       // its stdout (a file)
};

// `paratune ARGS` with stdin and stderr on a pseudo-terminal, stdout into `stdout_path`, and `env`
// added to the environment.
inline TerminalRun run_on_terminal(const std::vector<std::string>& args, const std::filesystem::path& stdout_path,
                                   const std::map<std::string, std::string>& env = {}) {
  winsize size{};
  size.ws_row = 24;
  size.ws_col = 200;
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, &size);
  if (pid < 0) ADD_FAILURE() << "forkpty failed: " << std::strerror(errno);
  if (pid == 0) {
    const int out = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || ::dup2(out, STDOUT_FILENO) < 0) _exit(125);
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> argv{const_cast<char*>(PARATUNE_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(PARATUNE_BINARY, argv.data());
    _exit(126);
  }
  TerminalRun run;
  if (pid < 0) return run;
  char buffer[4096];
  for (;;) {  // until the program's side closes (EIO on Linux)
    const ssize_t n = ::read(master, buffer, sizeof buffer);
    if (n > 0) run.terminal.append(buffer, static_cast<std::size_t>(n));
    else if (n < 0 && errno == EINTR) continue;
    else break;
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = read_file(stdout_path);
  return run;
}

}  // namespace paratune::testing
