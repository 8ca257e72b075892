// Running the real paratune binary from the tests.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace paratune::testing {

struct Result {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// Runs a shell command and collects its output (stdout and stderr).
inline Result run_command(const std::string& shell_command) {
  const std::string command = shell_command + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) output += buffer.data();
  const int status = pclose(pipe);
  return {WEXITSTATUS(status), output};
}

// Runs `paratune ARGS` through the shell (ARGS is shell text) and collects its output.
inline Result run(const std::string& args) { return run_command(std::string(PARATUNE_BINARY) + " " + args); }

}  // namespace paratune::testing
