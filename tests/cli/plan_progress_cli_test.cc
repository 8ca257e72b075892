// `paratune plan`'s progress line, end to end: on a terminal (a pseudo-terminal, forkpty) it shows
// and is erased, and the report on stdout is what a piped run prints; piped, stderr stays empty.
// PARATUNE_PROGRESS_AFTER_S=0 draws the line before the search starts, so nothing here depends on
// how fast the machine is.
#include <fcntl.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "../support/test_files.h"
#include "cli_util.h"

namespace paratune::testing {
namespace {

const std::vector<std::string> kPlanArgs{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100:1", "--seq-len", "4096",
                                        "--global-batch", "16"};

struct TerminalRun {
  int exit_code = -1;
  std::string terminal;  // what the program wrote to the terminal (its stderr)
  std::string out;       // its stdout (a file)
};

// `paratune ARGS` with stderr (and stdin) on a pseudo-terminal 200 columns wide, stdout into
// `stdout_path`, PARATUNE_PROGRESS_AFTER_S=after_s.
TerminalRun run_on_terminal(const std::vector<std::string>& args, const std::filesystem::path& stdout_path,
                            const std::string& after_s) {
  winsize size{};
  size.ws_row = 24;
  size.ws_col = 200;
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, &size);
  if (pid < 0) ADD_FAILURE() << "forkpty failed: " << std::strerror(errno);
  if (pid == 0) {
    const int out = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || ::dup2(out, STDOUT_FILENO) < 0) _exit(125);
    ::setenv("PARATUNE_PROGRESS_AFTER_S", after_s.c_str(), 1);
    std::vector<char*> argv{const_cast<char*>(PARATUNE_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(PARATUNE_BINARY, argv.data());
    _exit(126);
  }
  TerminalRun run;
  if (pid < 0) return run;
  char buffer[4096];
  for (;;) {  // until the child's side closes (EIO on Linux)
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

std::string shell_words(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : args) out += " '" + a + "'";
  return out;
}

TEST(PlanProgressCli, ShownOnATerminalErasedAndTheReportUnchanged) {
  const std::filesystem::path dir = fresh_test_dir("plan_progress", "terminal");
  // Piped: the report, and nothing on stderr, even with the line due at once.
  const Result piped = run_command("PARATUNE_PROGRESS_AFTER_S=0 " + std::string(PARATUNE_BINARY) + shell_words(kPlanArgs) +
                                   " > " + (dir / "piped.out").string() + " 2> " + (dir / "piped.err").string());
  ASSERT_EQ(piped.exit_code, 0) << piped.output;
  const std::string report = read_file(dir / "piped.out");
  EXPECT_NE(report.find("dp="), std::string::npos) << report;
  EXPECT_EQ(read_file(dir / "piped.err"), "");

  const TerminalRun run = run_on_terminal(kPlanArgs, dir / "terminal.out", "0");
  ASSERT_EQ(run.exit_code, 0) << run.terminal;
  // The line: drawn over itself ("\r", clear to the end of the line), then erased the same way.
  EXPECT_EQ(run.terminal.rfind("\r\x1b[Kplan: ", 0), 0u) << run.terminal;
  EXPECT_NE(run.terminal.find(" s"), std::string::npos) << run.terminal;  // the elapsed time
  ASSERT_GE(run.terminal.size(), 4u);
  EXPECT_EQ(run.terminal.substr(run.terminal.size() - 4), "\r\x1b[K") << run.terminal;
  EXPECT_EQ(run.terminal.find('\n'), std::string::npos) << run.terminal;  // never a line of its own
  // The report is the piped run's, byte for byte (timings aside: the report has none).
  EXPECT_EQ(run.out, report);
}

TEST(PlanProgressCli, NothingBeforeTheWaitIsOver) {
  const std::filesystem::path dir = fresh_test_dir("plan_progress", "wait");
  const TerminalRun run = run_on_terminal(kPlanArgs, dir / "terminal.out", "3600");
  ASSERT_EQ(run.exit_code, 0) << run.terminal;
  EXPECT_EQ(run.terminal, "");
  EXPECT_NE(run.out.find("dp="), std::string::npos) << run.out;
}

TEST(PlanProgressCli, ABadWaitIsAnErrorNamingTheVariable) {
  const Result r = run_command("PARATUNE_PROGRESS_AFTER_S=soon " + std::string(PARATUNE_BINARY) + shell_words(kPlanArgs));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("PARATUNE_PROGRESS_AFTER_S: 'soon' must be a number of seconds >= 0"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace paratune::testing
