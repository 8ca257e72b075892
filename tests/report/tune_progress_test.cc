// `tune`'s live block (report/tune_report.h format_progress, progress_eta): the status line, the
// table of running trials, its columns and how it fits the terminal's width, the ETA.
#include <gtest/gtest.h>

#include <sstream>

#include "paratune/report/tune_report.h"

namespace paratune {
namespace {

tune::TrialProgress row(int number, const std::string& params_json, std::size_t steps, double elapsed_s,
                        double last_step_time_s = 0) {
  tune::TrialProgress r;
  r.number = number;
  r.params_json = params_json;
  r.steps = steps;
  r.max_steps = 20;
  r.elapsed_s = elapsed_s;
  r.last_step_time_s = last_step_time_s;
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(TuneProgress, ParallelConfigurationTrialsAsATableWithAColumnPerParameter) {
  ProgressView view;
  view.finished = 4;
  view.finished_this_run = 4;
  view.valid_points = 10;
  view.elapsed_s = 125;
  view.width = 120;
  const std::string out =
      format_progress({row(3, R"({"dp":2,"tp":4})", 5, 65, 0.5), row(12, R"({"dp":8,"tp":1})", 0, 3)}, view);
  EXPECT_EQ(out,
            "2 running, 4 of 10 finished | 2m05s | ETA ~3m07s (estimate: 4 trials finished in 2m05s)\n"
            "trial  dp  tp  status   step time  steps/s  steps  elapsed\n"
            "    3  2   4   running  500.00 ms        2   5/20    1m05s\n"
            "   12  8   1   running          -        -   0/20       3s\n");
}

TEST(TuneProgress, NoTableWithoutRunningTrialsAndTheBestOnTheFirstLine) {
  store::StoredTrial best;
  best.number = 7;
  best.params_json = R"({"dp":4,"tp":2})";
  best.throughput = 2.5;
  ProgressView view;
  view.finished = 9;
  view.elapsed_s = 61;
  view.best = &best;
  EXPECT_EQ(format_progress({}, view), "0 running, 9 finished | 1m01s | best: trial 7 2.5 steps/s dp=4 tp=2\n");
  best.objective = 0.25;
  EXPECT_EQ(format_progress({}, view), "0 running, 9 finished | 1m01s | best: trial 7 objective 0.25 dp=4 tp=2\n");
}

TEST(TuneProgress, HyperparameterTrialsShowTheObjectivesLatestValueAndStep) {
  tune::TrialProgress a = row(1, R"({"lr":0.0031622776,"opt":"adamw"})", 58, 62);
  a.metric_name = "val_loss";
  a.metric_value = 0.41234567;
  a.metric_step = 57;
  a.status = "promoted";
  tune::TrialProgress b = row(2, R"({"lr":0.1})", 0, 1);  // a conditional "opt" absent
  b.metric_name = "val_loss";
  ProgressView view;
  view.width = 100;
  const std::vector<std::string> lines = lines_of(format_progress({a, b}, view));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1], "trial  lr        opt    status    val_loss  at step  steps  elapsed");
  EXPECT_EQ(lines[2], "    1  0.003162  adamw  promoted  0.412346       57  58/20    1m02s");
  EXPECT_EQ(lines[3], "    2  0.1       -      running          -        -   0/20       1s");
}

TEST(TuneProgress, ParametersThatDoNotFitBecomeOneColumnCutToTheWidth) {
  const std::string params = R"({"learning_rate":0.0031622776,"warmup_steps":500,"optimizer":"adamw","schedule":"cosine"})";
  ProgressView view;
  view.width = 100;  // the table with a column per parameter is exactly 100 wide
  std::vector<std::string> lines = lines_of(format_progress({row(5, params, 3, 10, 0.25)}, view));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "trial  learning_rate  warmup_steps  optimizer  schedule  status   step time  steps/s  steps  elapsed");
  EXPECT_EQ(lines[2], "    5  0.003162       500           adamw      cosine    running  250.00 ms        4   3/20      10s");
  view.width = 99;  // one short: the words, in what is left of the 99 (47), cut
  lines = lines_of(format_progress({row(5, params, 3, 10, 0.25)}, view));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "trial  parameters                                       status   step time  steps/s  steps  elapsed");
  EXPECT_EQ(lines[2], "    5  learning_rate=0.003162 warmup_steps=500 optim..  running  250.00 ms        4   3/20      10s");
  // However narrow the terminal, the words keep 10 columns (the observer cuts the line).
  view.width = 30;
  lines = lines_of(format_progress({row(5, params, 3, 10, 0.25)}, view));
  EXPECT_EQ(lines[2].rfind("    5  learning..  running", 0), 0u) << lines[2];
}

TEST(TuneProgress, EtaFromTheBudgetAndFromTheRateOfFinishedTrials) {
  ProgressView v;
  v.elapsed_s = 90;
  EXPECT_EQ(progress_eta(v), "");  // neither a budget nor a count to reach
  v.max_trials = 20;
  v.finished = 2;  // reused from the store
  EXPECT_EQ(progress_eta(v), "");  // none finished by this run yet: no rate
  v.finished = 5;
  v.finished_this_run = 3;
  EXPECT_EQ(progress_eta(v), "ETA ~7m30s (estimate: 3 trials finished in 1m30s)");  // 15 left * 90 s / 3
  v.valid_points = 8;  // fewer points than --max-trials: the study ends with them
  EXPECT_EQ(progress_eta(v), "ETA ~1m30s (estimate: 3 trials finished in 1m30s)");
  v.finished = 8;  // all finished but the running ones
  EXPECT_EQ(progress_eta(v), "");
  v.finished = 5;
  v.budget_s = 600;
  EXPECT_EQ(progress_eta(v), "ETA ~1m30s (estimate: 3 trials finished in 1m30s), budget: 8m30s left");
  v.max_trials = 0;
  v.valid_points = 0;
  EXPECT_EQ(progress_eta(v), "budget: 8m30s left");
  v.elapsed_s = 700;
  EXPECT_EQ(progress_eta(v), "budget: 0s left");
  v.elapsed_s = 10;
  v.max_trials = 2;
  v.finished = 1;
  v.finished_this_run = 1;
  v.budget_s = 0;
  EXPECT_EQ(progress_eta(v), "ETA ~10s (estimate: 1 trial finished in 10s)");
  EXPECT_EQ(lines_of(format_progress({}, v))[0], "0 running, 1 of 2 finished | 10s | ETA ~10s (estimate: 1 trial finished in 10s)");
}

}  // namespace
}  // namespace paratune
