// Configuration studies (the throughput objective) with the pruners that were hyperparameter
// studies' alone (issue 43): median pruning of throughput trials, ASHA's rungs and promotions, and
// OPPA's early termination as a pruner -- each with real trial processes (tests/trial/fake_trial.cc,
// whose step time is the configuration's `st`).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "../cli/cli_util.h"
#include "paratune/hpo/pruner.h"
#include "paratune/hpo/trial_record.h"
#include "../support/test_files.h"

namespace paratune::hpo {
namespace {

using testing::Result;
using testing::run;
using testing::write_file;

std::filesystem::path config_study_dir(const std::string& name) {
  return testing::fresh_test_dir("paratune_config_study", name);
}

// `paratune tune --json` over `space` with trials of the fake program (step time {st}); the JSON.
nlohmann::json run_study(const std::filesystem::path& dir, const std::string& space, const std::string& flags) {
  write_file(dir / "space.yaml", space);
  const Result r = run(fmt::format("tune --space {} --study {} --command '{} --step-time {{st}}' --json {}",
                                   (dir / "space.yaml").string(), (dir / "s.db").string(), PARATUNE_FAKE_TRIAL, flags));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::size_t json = r.output.find("{\n");
  if (json == std::string::npos) return {};
  return nlohmann::json::parse(r.output.substr(json));
}

// Trials by status, each as "st=<step time>".
std::map<std::string, std::multiset<double>> step_times_by_status(const nlohmann::json& summary) {
  std::map<std::string, std::multiset<double>> out;
  for (const auto& t : summary["trials"])
    out[t["status"].get<std::string>()].insert(nlohmann::json::parse(t["params"].dump())["st"].get<double>());
  return out;
}

// By hand: steps of 0.5, 0.25, 0.25, 0.5 s. The first is warm-up; after step 1 the estimate is
// 1/0.25 = 4 steps/s, after step 2 still 4, after step 3 (4 + 4 + 2) / 3 = 10/3.
TEST(ConfigStudy, TheThroughputCurveIsTheEstimateOverTheStepsSoFar) {
  const std::vector<double> times{0.5, 0.25, 0.25, 0.5};
  const std::vector<IntermediateValue> curve = throughput_curve(times);
  ASSERT_EQ(curve.size(), 3u);
  EXPECT_EQ(curve[0].step, 1);
  EXPECT_DOUBLE_EQ(curve[0].value, 4.0);
  EXPECT_DOUBLE_EQ(curve[1].value, 4.0);
  EXPECT_EQ(curve[2].step, 3);
  EXPECT_DOUBLE_EQ(curve[2].value, 10.0 / 3);
  // A long run keeps every (n / 256)-th step and the last.
  const std::vector<double> long_run(1000, 0.1);
  const std::vector<IntermediateValue> sparse = throughput_curve(long_run);
  EXPECT_EQ(sparse.size(), 334u);  // stride 1000 / 256 = 3: after steps 2, 5, ..., 998 (n = 3, 6, ..., 999), and 999
  EXPECT_EQ(sparse.back().step, 999);
}

// Eq. 5 by hand: after a warm-up step, steps of 0.1 and 0.125 s in turn give r = (5 x 10 + 5 x 8) / 10
// = 9 steps/s over the ten used steps, variance 1, standard error sqrt(1/10); the trial stops once
// its upper bound, 9 + 1.96 x 0.316 = 9.62, is below the best completed trial's throughput.
TEST(ConfigStudy, TheOppaPrunerStopsATrialWhoseUpperBoundIsBelowTheBest) {
  PrunerOptions options;
  options.max_resource = 20;
  options.min_steps = 5;
  const std::unique_ptr<Pruner> pruner = make_pruner(PrunerKind::kOppa, options);
  TrialRecord best;
  best.state = TrialRecord::State::kCompleted;
  best.value = 12.0;
  TrialRecord running;
  std::vector<double> times{0.5};
  for (int i = 0; i < 10; ++i) times.push_back(i % 2 == 0 ? 0.1 : 0.125);
  running.measured = trial::estimate_throughput(times);
  running.resource = 11;
  ASSERT_EQ(running.measured.steps_used, 10);
  EXPECT_NEAR(running.measured.steps_per_s, 9.0, 1e-12);
  EXPECT_NEAR(running.measured.standard_error, std::sqrt(0.1), 1e-12);
  const double upper = running.measured.steps_per_s + 1.96 * running.measured.standard_error;
  EXPECT_LT(upper, 12.0);
  EXPECT_FALSE(pruner->keep_running(running, {best, running}));
  best.value = upper + 1e-9;
  EXPECT_FALSE(pruner->keep_running(running, {best, running}));
  best.value = upper - 1e-9;
  EXPECT_TRUE(pruner->keep_running(running, {best, running}));  // could still beat it
  best.value = 12.0;
  running.resource = 4;
  EXPECT_TRUE(pruner->keep_running(running, {best, running}));  // fewer than q_min steps
  running.resource = 11;
  EXPECT_TRUE(pruner->keep_running(running, {running}));  // nothing completed yet
}

// Median pruning of throughput trials: in grid order the fast configurations run first; a slow one's
// throughput at each step is far below the median of the others' at that step, and it is stopped.
TEST(ConfigStudy, MedianPruningStopsSlowConfigurations) {
  const auto dir = config_study_dir("median");
  const nlohmann::json j = run_study(dir, "parameters:\n  st: [0.01, 0.08]\n  k: [1, 2, 3]\n",
                                     "--algo grid --pruner median --pruner-startup 2 --steps 15 --parallel 1");
  const auto by_status = step_times_by_status(j);
  ASSERT_TRUE(by_status.contains("completed")) << j.dump();
  EXPECT_EQ(by_status.at("completed"), (std::multiset<double>{0.01, 0.01, 0.01})) << j.dump();
  EXPECT_EQ(by_status.at("pruned"), (std::multiset<double>{0.08, 0.08, 0.08})) << j.dump();
  for (const auto& t : j["trials"])
    if (t["status"] == "pruned") EXPECT_LT(t["steps"].get<int>(), 15) << t.dump();
  EXPECT_EQ(j["pruner"], "median");
  EXPECT_EQ(j["objective"], "throughput");
}

// ASHA on a configuration study: trials run to rungs of 2, 6 and 18 steps; the slow ones rest at a
// rung, the fast ones are promoted (run again from step 0 for longer: the fake program keeps no
// checkpoint) and the best completed trial is a fastest configuration.
TEST(ConfigStudy, AshaPromotesFastConfigurationsAndLeavesSlowOnesAtTheirRung) {
  const auto dir = config_study_dir("asha");
  const nlohmann::json j = run_study(dir, "parameters:\n  st: [0.005, 0.01, 0.02, 0.04]\n  k: [1, 2, 3]\n",
                                     "--algo random --seed 5 --pruner asha --min-resource 2 --eta 3 --steps 18 "
                                     "--parallel 2");
  ASSERT_EQ(j["trials"].size(), 12u) << j.dump();
  int resting = 0;
  for (const auto& t : j["trials"]) resting += t["status"] == "pruned";
  EXPECT_GT(resting, 0) << j.dump();
  ASSERT_FALSE(j["best"].is_null()) << j.dump();
  EXPECT_EQ(j["best"]["params"]["st"].get<double>(), 0.005) << j["best"].dump();
  for (const auto& t : j["trials"])
    if (t["status"] == "completed") EXPECT_EQ(t["steps"].get<int>(), 18) << t.dump();
}

// OPPA's early termination with any sampler: after the fast configuration completed, each slow one
// stops once its throughput's upper bound is below the best (here after q_min = 4 steps).
TEST(ConfigStudy, TheOppaPrunerEndsSlowTrialsEarly) {
  const auto dir = config_study_dir("oppa");
  const nlohmann::json j =
      run_study(dir, "parameters:\n  st: [0.01, 0.06]\n  k: [1, 2]\n",
                "--algo grid --pruner oppa --min-steps 4 --steps 20 --parallel 1");
  const auto by_status = step_times_by_status(j);
  EXPECT_EQ(by_status.at("completed"), (std::multiset<double>{0.01, 0.01})) << j.dump();
  // Stored as configuration studies always stored OPPA's stops.
  EXPECT_EQ(by_status.at("early-stopped"), (std::multiset<double>{0.06, 0.06})) << j.dump();
  for (const auto& t : j["trials"])
    if (t["status"] == "early-stopped") EXPECT_LT(t["steps"].get<int>(), 20) << t.dump();
  // OPPA's rule judges throughput: a metric objective is refused before anything runs.
  write_file(dir / "space.yaml", "parameters:\n  st: [0.01]\n");
  const Result refused = run(fmt::format("tune --space {} --study {} --command '{} --step-time {{st}}' --pruner oppa "
                                         "--objective loss --direction minimize",
                                         (dir / "space.yaml").string(), (dir / "t.db").string(), PARATUNE_FAKE_TRIAL));
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("pruner oppa: stops a trial by its throughput's confidence bound"), std::string::npos)
      << refused.output;
}

// OPPA over a typed space: an integer range and a categorical with a constraint, read as every
// study's space is read; a float range is named as what the configuration searches cannot index.
TEST(ConfigStudy, OppaSearchesATypedSpaceWithACategorical) {
  const auto dir = config_study_dir("oppa-typed");
  const nlohmann::json j = run_study(dir, R"(parameters:
  st: [0.01, 0.02, 0.04]
  k: {type: int, low: 1, high: 4}
  mode: [fast, slow]
constraints:
  - mode == 'fast' or k <= 2
)",
                                     "--algo oppa --initial 2 --max-trials 6 --steps 8 --parallel 2 --seed 4");
  EXPECT_EQ(j["algorithm"], "oppa");
  EXPECT_EQ(j["valid_points"], 18);  // 3 step times x (4 fast + 2 slow)
  ASSERT_EQ(j["trials"].size(), 6u) << j.dump();
  std::set<std::string> seen;
  for (const auto& t : j["trials"]) {
    const auto& params = t["params"];
    ASSERT_TRUE(params["k"].is_number_integer()) << t.dump();
    EXPECT_TRUE(params["mode"] == "fast" || params["k"].get<int>() <= 2) << t.dump();
    EXPECT_TRUE(seen.insert(params.dump()).second) << "proposed twice: " << params.dump();
  }
  write_file(dir / "float.yaml", "parameters:\n  st: {type: float, low: 0.01, high: 0.04}\n");
  const Result refused = run(fmt::format("tune --space {} --study {} --command '{} --step-time {{st}}' --algo oppa",
                                         (dir / "float.yaml").string(), (dir / "f.db").string(), PARATUNE_FAKE_TRIAL));
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("parameters.st: a float range"), std::string::npos) << refused.output;
}

}  // namespace
}  // namespace paratune::hpo
