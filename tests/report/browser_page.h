// Pages in a real browser, for the tests of the HTML views: tests/web/check_page.mjs (playwright-core
// driving Debian's chromium) on a file or URL, and a background process (the dashboard) to load from.
#pragma once

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>

#include "../cli/cli_util.h"
#include "../support/test_files.h"

namespace paratune::testing {

// Why the browser cannot run here ("" when it can): Debian's chromium and web/node_modules.
inline std::string browser_problem() {
  if (!std::filesystem::exists("/usr/bin/chromium")) return "no /usr/bin/chromium (scripts/setup.sh installs it)";
  if (!std::filesystem::exists(std::string(PARATUNE_SOURCE_DIR) + "/web/node_modules/playwright-core"))
    return "no web/node_modules/playwright-core (scripts/setup.sh runs npm ci in web/)";
  if (run_command("node --version").exit_code != 0) return "no node on PATH";
  return "";
}

// check_page.mjs on `page` (a file or URL, without single quotes) with `args`; its JSON line and verdict.
inline Result check_page(const std::string& page, const std::string& args) {
  return run_command(fmt::format("node {}/tests/web/check_page.mjs --page '{}' {}", PARATUNE_SOURCE_DIR, page, args));
}

// A child process (its own process group), killed at the end of the test unless it has ended.
struct BackgroundProcess {
  pid_t pid = -1;
  explicit BackgroundProcess(const std::string& shell_command) {
    pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      execl("/bin/sh", "sh", "-c", ("exec " + shell_command).c_str(), nullptr);
      _exit(127);
    }
  }
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;
  ~BackgroundProcess() {
    if (pid > 0) {
      ::kill(-pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

// The URL a dashboard prints to `out` once it listens ("" if it did not within 10 s).
inline std::string dashboard_url(const std::filesystem::path& out) {
  for (int i = 0; i < 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::smatch m;
    const std::string text = read_file(out);
    if (std::regex_search(text, m, std::regex("http://127\\.0\\.0\\.1:[0-9]+/"))) return m.str();
  }
  return "";
}

}  // namespace paratune::testing
