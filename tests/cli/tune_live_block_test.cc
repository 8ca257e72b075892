// `paratune tune`'s live block, end to end: on a terminal (a pseudo-terminal) the status line (counts,
// ETA, budget) and the table of running trials, for a hyperparameter study (the objective's latest
// value and step) and a search of parallel configurations (step time, steps/s); piped, only the log
// lines. Trials take about a second each (steps of 0.2 s), so the block, drawn about four times a
// second, shows each of them several times.
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

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(TuneLiveBlock, HyperparameterStudyShowsTheObjectiveTheEtaAndTheBudget) {
  const std::filesystem::path dir = fresh_test_dir("tune_live_block", "hpo");
  write_file(dir / "space.yaml", "parameters:\n  x1: {type: float, low: -5, high: 10}\n  x2: [1, 5]\n");
  const std::vector<std::string> args{"tune", "--space", (dir / "space.yaml").string(), "--study", (dir / "s.db").string(),
                                      "--command", std::string(PARATUNE_FUNCTION_TRIAL) + " branin --curve --sleep 0.2",
                                      "--objective", "value", "--direction", "minimize", "--algo", "random", "--seed",
                                      "1", "--steps", "5", "--max-trials", "2", "--parallel", "1", "--budget", "10m"};
  const TerminalRun run = run_on_terminal(args, dir / "out.txt");
  ASSERT_EQ(run.exit_code, 0) << run.terminal << run.out;
  const std::string& t = run.terminal;
  EXPECT_TRUE(has(t, "trial 1 started: x1=")) << t;                 // the log lines
  EXPECT_TRUE(has(t, "1 running, 0 of 2 finished | ")) << t;        // the counts
  EXPECT_TRUE(has(t, "budget: 9m5")) << t;                          // the budget left (10m less a few seconds)
  EXPECT_TRUE(has(t, "ETA ~")) << t;                                // once trial 1 finished
  EXPECT_TRUE(has(t, "(estimate: 1 trial finished in ")) << t;
  EXPECT_TRUE(has(t, "trial  x1 ")) << t;                           // a column per parameter
  EXPECT_TRUE(std::regex_search(t, std::regex(R"(x2  status +value  at step  steps  elapsed\r)"))) << t;
  // A row: number, x1, x2, status, the latest value, its step, steps done / 5, elapsed.
  EXPECT_TRUE(std::regex_search(t, std::regex(R"(\n +2  -?[0-9.]+ +[15] +running +[0-9.]+ +[0-4] +[1-5]/5 +[0-9]+s\r)")))
      << t;
  EXPECT_TRUE(has(t, "\x1b[J")) << t;  // the block erased before each redraw and at the end

  // Piped: the log lines, no block.
  // (In a subshell: run_command sends the subshell's stderr to its pipe, not the program's.)
  const Result piped = run_command("(" + std::string(PARATUNE_BINARY) + " tune --space " + (dir / "space.yaml").string() +
                                   " --study " + (dir / "p.db").string() + " --command '" + PARATUNE_FUNCTION_TRIAL +
                                   " branin --curve --sleep 0.2' --objective value --direction minimize --algo random "
                                   "--seed 1 --steps 5 --max-trials 2 --budget 10m 2>" + (dir / "err.txt").string() +
                                   " >/dev/null)");
  ASSERT_EQ(piped.exit_code, 0) << piped.output;
  const std::string err = read_file(dir / "err.txt");
  EXPECT_TRUE(has(err, "trial 1 started: x1=")) << err;
  EXPECT_FALSE(has(err, "running,")) << err;
  EXPECT_FALSE(has(err, "\x1b[")) << err;
}

TEST(TuneLiveBlock, ParallelConfigurationSearchShowsStepTimeAndSteps) {
  const std::filesystem::path dir = fresh_test_dir("tune_live_block", "throughput");
  write_file(dir / "space.yaml", "parameters:\n  st: [0.2, 0.25]\n  tp: [1]\n");
  const std::vector<std::string> args{"tune", "--space", (dir / "space.yaml").string(), "--study", (dir / "s.db").string(),
                                      "--command", std::string(PARATUNE_FAKE_TRIAL) + " --step-time {st}", "--steps",
                                      "5", "--algo", "grid", "--parallel", "1"};
  const TerminalRun run = run_on_terminal(args, dir / "out.txt");
  ASSERT_EQ(run.exit_code, 0) << run.terminal << run.out;
  const std::string& t = run.terminal;
  EXPECT_TRUE(has(t, "1 running, 0 of 2 finished | ")) << t;  // of the space's 2 valid points
  EXPECT_TRUE(has(t, "(estimate: 1 trial finished in ")) << t;
  EXPECT_FALSE(has(t, "budget:")) << t;
  EXPECT_TRUE(has(t, "trial  st    tp  status   step time  steps/s  steps  elapsed")) << t;
  EXPECT_TRUE(std::regex_search(t, std::regex(R"(\n +2  0\.25  1   running  250\.00 ms +4  +[1-5]/5 +[0-9]+s\r)"))) << t;
}

}  // namespace
}  // namespace paratune::testing
