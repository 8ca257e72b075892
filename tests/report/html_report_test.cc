// The HTML views as a person sees them: each report written by the real paratune binary, loaded in
// headless Chromium (tests/web/check_page.mjs: playwright-core driving Debian's chromium), which
// checks that the page renders without console errors and that its charts have drawn data points,
// and writes a screenshot to BUILD/web-screenshots/. Studies of 0 trials, 1 trial, only failed
// trials and 5,000 trials; a plan; a simulation; and the live dashboard during a running study,
// opened before the study file exists, showing trials that finish after it was opened.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "../cli/cli_util.h"
#include "browser_page.h"
#include "../support/require_servers.h"
#include "../support/test_files.h"
#include "paratune/store/sqlite_store.h"

namespace {

using paratune::testing::browser_problem;
using paratune::testing::check_page;
using paratune::testing::dashboard_url;
using paratune::testing::Result;
using paratune::testing::run;
using paratune::testing::run_command;
using paratune::testing::write_file;

std::filesystem::path html_report_dir(const std::string& name) { return paratune::testing::fresh_test_dir("paratune_html", name); }

std::filesystem::path screenshot(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(PARATUNE_BUILD_DIR) / "web-screenshots";
  std::filesystem::create_directories(dir);
  return dir / name;
}

// A hyperparameter study of real trials (paratune-function-trial) in dir/s.db.
Result hpo_study(const std::filesystem::path& dir, const std::string& program_args, const std::string& extra) {
  write_file(dir / "space.yaml", "parameters:\n  x1: {type: float, low: -5, high: 10}\n  x2: {type: float, low: 0, high: 15}\n");
  return run(fmt::format("tune --space {} --study {} --trials-dir {} --command '{} branin {}' --objective value "
                         "--direction minimize {}",
                         (dir / "space.yaml").string(), (dir / "s.db").string(), (dir / "trials").string(),
                         PARATUNE_FUNCTION_TRIAL, program_args, extra));
}

// `paratune report` of dir/s.db, checked in the browser; returns check_page's output.
std::string report_and_check(const std::filesystem::path& dir, const std::string& shot, const std::string& checks) {
  const Result written = run(fmt::format("report {} --html {}", (dir / "s.db").string(), (dir / "s.html").string()));
  EXPECT_EQ(written.exit_code, 0) << written.output;
  const Result checked = check_page((dir / "s.html").string(), fmt::format("--screenshot {} {}", screenshot(shot).string(), checks));
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  return checked.output;
}

// What check_page's JSON line (in `output`) says of the chart `id`: points, series, x_axes, texts
// (null when there is no such chart).
nlohmann::json chart_info(const std::string& output, const std::string& id) {
  const nlohmann::json page = nlohmann::json::parse(output.substr(0, output.find('\n')), nullptr, false);
  if (page.is_object())
    for (const nlohmann::json& chart : page["charts"])
      if (chart["id"] == id) return chart;
  return nullptr;
}

TEST(HtmlReport, APrunedStudyShowsEveryView) {
  PARATUNE_NEED_SERVER(browser_problem());
  const auto dir = html_report_dir("pruned");
  const Result r = hpo_study(dir, "--curve", "--algo tpe --seed 2 --pruner median --steps 9 --max-trials 14");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // History (2), timeline, parallel coordinates, 2 slices, importance, learning curves: 8 charts.
  const std::string out = report_and_check(dir, "study.png", "--min-charts 8 --expect-text 'Learning curves' "
                                                              "--expect-text 'Parameter importance' --expect-text 'Best: trial'");
  EXPECT_NE(out.find("\"id\":\"chart-curves\""), std::string::npos) << out;
  // Every trial is in the history and the slice plots, pruned ones at their last value in their own
  // series (not only the completed ones); the timeline's legend names the statuses it colours.
  const nlohmann::json history = chart_info(out, "chart-history");
  EXPECT_EQ(history["points"], 14) << out;
  EXPECT_EQ(history["series"], nlohmann::json::array({"completed", "pruned", "best so far"})) << out;
  EXPECT_EQ(chart_info(out, "chart-slice-0")["points"], 14) << out;
  EXPECT_EQ(chart_info(out, "chart-timeline")["series"], nlohmann::json::array({"completed", "pruned"})) << out;
}

// Integer, categorical and log-scaled parameters on the axes they need (the space's types, which the
// study's JSON carries): whole numbers, the choices in order, decades.
TEST(HtmlReport, EachParameterGetsTheAxisOfItsType) {
  PARATUNE_NEED_SERVER(browser_problem());
  const auto dir = html_report_dir("axes");
  write_file(dir / "space.yaml", "parameters:\n  x1: {type: float, low: -5, high: 10}\n"
                                 "  x2: {type: float, low: 0.1, high: 15, log: true}\n"
                                 "  n: {type: int, low: 1, high: 8}\n  c: [1, 2, 4]\n");
  const Result r = run(fmt::format("tune --space {} --study {} --trials-dir {} --command '{} branin' --objective value "
                                   "--direction minimize --algo random --seed 3 --steps 3 --max-trials 10",
                                   (dir / "space.yaml").string(), (dir / "s.db").string(), (dir / "trials").string(),
                                   PARATUNE_FUNCTION_TRIAL));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string out = report_and_check(dir, "study-axes.png", "--min-charts 6");
  const auto x_axis = [&](const char* chart) { return chart_info(out, chart)["x_axes"][0]; };
  EXPECT_EQ(x_axis("chart-slice-0"), (nlohmann::json{{"type", "value"}, {"min_interval", 0}})) << out;  // x1
  EXPECT_EQ(x_axis("chart-slice-1")["type"], "log") << out;                                            // x2
  EXPECT_EQ(x_axis("chart-slice-2"), (nlohmann::json{{"type", "value"}, {"min_interval", 1}})) << out;  // n
  EXPECT_EQ(x_axis("chart-slice-3")["type"], "category") << out;                                       // c
}

// A search of parallel configurations by Bayesian optimization: what the model predicted for each
// trial it chose, next to what the trial measured.
TEST(HtmlReport, AConfigurationStudyShowsPredictedAgainstMeasured) {
  PARATUNE_NEED_SERVER(browser_problem());
  const auto dir = html_report_dir("configurations");
  write_file(dir / "space.yaml", "parameters:\n  a: [1, 2, 3, 4]\n  b: [1, 2, 3]\n");
  const Result r = run(fmt::format("tune --space {} --study {} --trials-dir {} --command '{} --step-time 0.00{{a}}{{b}}' "
                                   "--steps 4 --algo bo --initial 3 --max-trials 8",
                                   (dir / "space.yaml").string(), (dir / "s.db").string(), (dir / "trials").string(),
                                   PARATUNE_FAKE_TRIAL));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string out = report_and_check(dir, "study-configurations.png", "--min-charts 8 --expect-text 'Predicted vs measured' --expect-text 'Parameter importance' "
                                                                            "--expect-text 'predicted steps/s'");
  EXPECT_NE(out.find("\"id\":\"chart-predicted\""), std::string::npos) << out;
}

// A study of several objectives (tune --objective a,b): the Pareto front's chart -- every completed
// trial in the two objectives, the front's members a series of their own, joined -- and its table.
TEST(HtmlReport, AStudyOfTwoObjectivesShowsItsParetoFront) {
  PARATUNE_NEED_SERVER(browser_problem());
  const auto dir = html_report_dir("pareto");
  write_file(dir / "space.yaml", "parameters:\n  x: [0, 1, 2, 3, 4]\n  y: {type: float, low: 0, high: 1}\n");
  // loss = x + y, cost = 4 - x: the trials of the lowest y for each x are the front.
  write_file(dir / "trial.sh", R"(#!/bin/sh
echo "@paratune {\"metric\": \"loss\", \"value\": $(awk "BEGIN { print $1 + $2 }")}"
echo "@paratune {\"metric\": \"cost\", \"value\": $((4 - $1))}"
echo '@paratune {"step": 0, "step_time_s": 0.01}'
)");
  const Result r = run(fmt::format("tune --space {} --study {} --trials-dir {} --command 'sh {} {{x}} {{y}}' --steps 1 "
                                   "--algo random --seed 4 --max-trials 12 --objective loss,cost --direction minimize,minimize",
                                   (dir / "space.yaml").string(), (dir / "s.db").string(), (dir / "trials").string(),
                                   (dir / "trial.sh").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Result shown = run(fmt::format("study show {} --json", (dir / "s.db").string()));
  const nlohmann::json front = nlohmann::json::parse(shown.output)["pareto_front"];
  const std::string out = report_and_check(dir, "study-pareto.png", "--min-charts 5 --expect-text 'Pareto front' "
                                                                    "--expect-text 'Objectives: loss (minimize), cost (minimize)'");
  const nlohmann::json chart = chart_info(out, "chart-pareto");
  ASSERT_TRUE(chart.is_object()) << out;
  EXPECT_EQ(chart["points"], 12) << out;
  EXPECT_EQ(chart["series"], nlohmann::json::array({"dominated", "Pareto front"})) << out;
  EXPECT_GE(front["trials"].size(), 2u) << shown.output;
}

TEST(HtmlReport, AStudyOfOneTrialAndOneOfOnlyFailedTrialsOpen) {
  PARATUNE_NEED_SERVER(browser_problem());
  const auto one = html_report_dir("one");
  ASSERT_EQ(hpo_study(one, "", "--algo random --steps 3 --max-trials 1").exit_code, 0);
  report_and_check(one, "study-one.png", "--min-charts 4 --expect-text '1 trials: 1 completed'");
  const auto failed = html_report_dir("failed");
  // Every trial fails at start-up (exit 3): no value to plot, the table and timeline still show them.
  const Result r = hpo_study(failed, "--fail-above x1 -100", "--algo random --steps 3 --max-trials 3");
  ASSERT_EQ(r.exit_code, 3) << r.output;
  report_and_check(failed, "study-failed.png", "--min-charts 1 --expect-text '3 trials: 3 failed'");
}

TEST(HtmlReport, AnEmptyStudyAndFiveThousandTrialsOpen) {
  PARATUNE_NEED_SERVER(browser_problem());
  const auto empty = html_report_dir("empty");
  {
    paratune::store::SqliteStudyStore store(empty / "s.db");
    store.open_study("main", R"({"kind": "hpo", "objective": "loss", "direction": "minimize"})");
  }
  report_and_check(empty, "study-empty.png", "--expect-text 'No trials yet.'");

  // 5,000 stored trials (written through the store, as 5,000 finished trials of a study would be).
  const auto big = html_report_dir("big");
  {
    paratune::store::SqliteStudyStore store(big / "s.db");
    const std::int64_t study = store.open_study("main", "{}");
    for (int i = 0; i < 5000; ++i) {
      const auto [id, number] = store.begin_trial(study, fmt::format(R"({{"a":{},"b":{}}})", i % 100, i / 100), "{}",
                                                  "true", "/tmp/t");
      paratune::trial::TrialResult result;
      result.status = i % 7 == 0 ? paratune::trial::TrialStatus::kOom : paratune::trial::TrialStatus::kCompleted;
      result.started_unix_s = 1000 + i * 0.5;
      result.ended_unix_s = 1000 + i * 0.5 + 2;
      for (int k = 1; k <= 5; ++k) result.output.steps.push_back({k, 0.1 + 0.001 * (i % 100) + 0.01 * (i / 100)});
      std::vector<double> times;
      for (const auto& s : result.output.steps) times.push_back(s.step_time_s);
      result.throughput = paratune::trial::estimate_throughput(times);
      store.finish_trial(id, result);
    }
  }
  const std::string out = report_and_check(big, "study-5000.png", "--min-charts 5 --expect-text '5000 trials'");
  const std::uintmax_t size = std::filesystem::file_size(big / "s.html");
  std::smatch load;
  ASSERT_TRUE(std::regex_search(out, load, std::regex("\"load_ms\":([0-9]+)"))) << out;
  std::cout << fmt::format("[ measured ] report of 5,000 trials: {:.1f} MB, loaded and drawn in {} ms\n", size / 1e6,
                           load[1].str());
}

TEST(HtmlReport, PlanAndSimulatePages) {
  PARATUNE_NEED_SERVER(browser_problem());
  const auto dir = html_report_dir("plan");
  const std::string setup = "--model llama3-8b --cluster dgx-h100:2 --seq-len 8192 --global-batch 64";
  const Result plan = run(fmt::format("plan {} --top 5 --emit megatron --html {} --json", setup, (dir / "plan.html").string()));
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  const nlohmann::json planned = nlohmann::json::parse(plan.output);
  // Breakdown, speedup, memory and the winner's timeline; the launch with its copy button.
  // On a 1400 px page the ranked plans' long configurations wrap instead of pushing columns out.
  const Result checked = check_page((dir / "plan.html").string(),
                                    fmt::format("--min-charts 4 --expect-text 'Ranked plans' --expect-text "
                                                "'--tensor-model-parallel-size' --expect-text copy --width 1400 "
                                                "--fits-width --expect-text 'paratune builds by fixed rules' --screenshot {}",
                                                screenshot("plan.png").string()));
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  // Each baseline's bar says how many times faster the winner is: the speedup plan reports (and the
  // page's text says), not the baseline's fraction of the winner.
  const nlohmann::json speedup = chart_info(checked.output, "plan-speedup");
  for (const char* baseline : {"expert", "three_axis"}) {
    const std::string label = fmt::format("winner is {:.3g}x this", planned[fmt::format("speedup_over_{}", baseline)].get<double>());
    EXPECT_TRUE(std::find(speedup["texts"].begin(), speedup["texts"].end(), label) != speedup["texts"].end())
        << label << "\n" << speedup.dump();
  }
  const Result sim = run(fmt::format("simulate {} --config dp=4,tp=2,pp=2,mbs=1 --html {}", setup, (dir / "sim.html").string()));
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  const Result sim_checked = check_page((dir / "sim.html").string(),
                                        fmt::format("--min-charts 2 --expect-text 'Pipeline timeline' --screenshot {}",
                                                    screenshot("simulate.png").string()));
  EXPECT_EQ(sim_checked.exit_code, 0) << sim_checked.output;
}

// A child process (its own process group), killed at the end of the test unless it has ended.
struct Child {
  pid_t pid = -1;
  explicit Child(const std::string& shell_command) {
    pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      execl("/bin/sh", "sh", "-c", ("exec " + shell_command).c_str(), nullptr);
      _exit(127);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  // Its exit code once it ends within `seconds` (it is killed after that: -1).
  int wait(double seconds) {
    for (double waited = 0; waited < seconds; waited += 0.05) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }
  ~Child() {
    if (pid > 0) {
      ::kill(-pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

TEST(HtmlReport, TheLiveDashboardShowsTrialsThatFinishAfterItOpened) {
  PARATUNE_NEED_SERVER(browser_problem());
  const auto dir = html_report_dir("live");
  // The dashboard first, on a study file that does not exist yet.
  const Child dashboard(fmt::format("{} dashboard {} --port 0 --poll 0.3s > {} 2>&1", PARATUNE_BINARY,
                                    (dir / "s.db").string(), (dir / "dashboard.out").string()));
  const std::string url = dashboard_url(dir / "dashboard.out");
  ASSERT_FALSE(url.empty()) << paratune::testing::read_file(dir / "dashboard.out");
  const Result waiting = check_page(url, "--expect-text 'waiting for the study file'");
  EXPECT_EQ(waiting.exit_code, 0) << waiting.output;
  // Paths outside the two routes are never served.
  const Result outside = run_command(fmt::format("curl -s --path-as-is -o /dev/null -o /dev/null -w '%{{http_code}}' "
                                                 "'{}../etc/passwd' '{}api/study/../../s.db'", url, url));
  EXPECT_EQ(outside.output, "404404") << outside.output;

  // The page open (and drawn) first, then a study of 6 trials of about 1 s each: the page must come
  // to show all of them completed, through its live updates.
  const std::filesystem::path ready = dir / "page-ready";
  Child page(fmt::format("node {}/tests/web/check_page.mjs --page '{}' --ready-file {} --initial-not-text completed "
                         "--wait-text '6 trials: 6 completed' --wait-s 120 --min-charts 4 --screenshot {} > {} 2>&1",
                         PARATUNE_SOURCE_DIR, url, ready.string(), screenshot("dashboard.png").string(),
                         (dir / "page.out").string()));
  for (int i = 0; i < 1200 && !std::filesystem::exists(ready); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(std::filesystem::exists(ready)) << paratune::testing::read_file(dir / "page.out");
  write_file(dir / "space.yaml", "parameters:\n  x1: {type: float, low: -5, high: 10}\n  x2: {type: float, low: 0, high: 15}\n");
  const Result tune = run(fmt::format("tune --space {} --study {} --trials-dir {} --command '{} branin --curve --sleep 0.2' "
                                      "--objective value --direction minimize --algo random --steps 5 --max-trials 6",
                                      (dir / "space.yaml").string(), (dir / "s.db").string(), (dir / "trials").string(),
                                      PARATUNE_FUNCTION_TRIAL));
  ASSERT_EQ(tune.exit_code, 0) << tune.output;
  EXPECT_EQ(page.wait(150), 0) << paratune::testing::read_file(dir / "page.out");
}

// The dashboard on a file that is not a study: it says why on the page and in /api/study, and keeps
// serving; many requests at once (many tabs) are all answered.
TEST(HtmlReport, TheDashboardSurvivesACorruptFileAndManyTabs) {
  const auto dir = html_report_dir("corrupt");
  write_file(dir / "s.db", "this is not an SQLite file\n");
  const Child dashboard(fmt::format("{} dashboard {} --port 0 > {} 2>&1", PARATUNE_BINARY, (dir / "s.db").string(),
                                    (dir / "dashboard.out").string()));
  const std::string url = dashboard_url(dir / "dashboard.out");
  ASSERT_FALSE(url.empty()) << paratune::testing::read_file(dir / "dashboard.out");
  const Result answer = run_command(fmt::format("curl -s '{}api/study'", url));
  EXPECT_NE(answer.output.find("not a paratune study file"), std::string::npos) << answer.output;
  // 40 requests at once, pages and data: every one answered 200.
  const Result many = run_command(fmt::format(
      "for i in $(seq 20); do curl -s -o /dev/null -w '%{{http_code}}\\n' '{}' & curl -s -o /dev/null -w "
      "'%{{http_code}}\\n' '{}api/study' & done; wait",
      url, url));
  EXPECT_EQ(std::count(many.output.begin(), many.output.end(), '\n'), 40) << many.output;
  EXPECT_EQ(many.output.find_first_not_of("200\n"), std::string::npos) << many.output;
}

}  // namespace
