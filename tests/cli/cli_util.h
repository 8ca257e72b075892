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

// Runs `paratune ARGS` through the shell (ARGS is shell text) and collects its output.
inline Result run(const std::string& args) {
  const std::string command = std::string(PARATUNE_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) output += buffer.data();
  const int status = pclose(pipe);
  return {WEXITSTATUS(status), output};
}

}  // namespace paratune::testing
