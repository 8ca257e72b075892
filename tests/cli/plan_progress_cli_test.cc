// `paratune plan`'s progress line, end to end: on a terminal (a pseudo-terminal, forkpty) it shows
// and is erased, and the report on stdout is what a piped run prints; piped, stderr stays empty.
// PARATUNE_PROGRESS_AFTER_S=0 draws the line before the search starts, so nothing here depends on
// how fast the machine is.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "../support/test_files.h"
#include "cli_util.h"
#include "terminal_run.h"

namespace paratune::testing {
namespace {

const std::vector<std::string> kPlanArgs{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100:1", "--seq-len", "4096",
                                        "--global-batch", "16"};

std::string shell_words(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : args) out += " '" + a + "'";
  return out;
}

TEST(PlanProgressCli, ShownOnATerminalErasedAndTheReportUnchanged) {
  const std::filesystem::path dir = fresh_test_dir("plan_progress", "terminal");
  // Piped: the report, and nothing on stderr, even with the line due at once.
  // (In a subshell: run_command sends the subshell's stderr to its pipe, not the program's.)
  const Result piped = run_command("(PARATUNE_PROGRESS_AFTER_S=0 " + std::string(PARATUNE_BINARY) + shell_words(kPlanArgs) +
                                   " > " + (dir / "piped.out").string() + " 2> " + (dir / "piped.err").string() + ")");
  ASSERT_EQ(piped.exit_code, 0) << piped.output;
  const std::string report = read_file(dir / "piped.out");
  EXPECT_NE(report.find("dp="), std::string::npos) << report;
  EXPECT_EQ(read_file(dir / "piped.err"), "");

  const TerminalRun run = run_on_terminal(kPlanArgs, dir / "terminal.out", {{"PARATUNE_PROGRESS_AFTER_S", "0"}});
  ASSERT_EQ(run.exit_code, 0) << run.terminal;
  // The line: drawn over itself ("\r", clear to the end of the line), then erased the same way.
  EXPECT_EQ(run.terminal.rfind("\r\x1b[Kplan: ", 0), 0u) << run.terminal;
  EXPECT_NE(run.terminal.find(" s"), std::string::npos) << run.terminal;  // the elapsed time
  ASSERT_GE(run.terminal.size(), 4u);
  EXPECT_EQ(run.terminal.substr(run.terminal.size() - 4), "\r\x1b[K") << run.terminal;
  EXPECT_EQ(run.terminal.find('\n'), std::string::npos) << run.terminal;  // never a line of its own
  // The report is the piped run's, byte for byte but for the search's wall time ("...; 0.02 s").
  const auto untimed = [](const std::string& text) {
    return std::regex_replace(text, std::regex(R"(; [0-9.]+ s\n)"), "; (time) s\n");
  };
  EXPECT_NE(untimed(report), report);
  EXPECT_EQ(untimed(run.out), untimed(report));
}

TEST(PlanProgressCli, NothingBeforeTheWaitIsOver) {
  const std::filesystem::path dir = fresh_test_dir("plan_progress", "wait");
  const TerminalRun run = run_on_terminal(kPlanArgs, dir / "terminal.out", {{"PARATUNE_PROGRESS_AFTER_S", "3600"}});
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
