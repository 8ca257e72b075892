// Worker mode for hyperparameter studies (`paratune tune --worker` with a sampler, a pruner and a
// metric objective; hpo/controller.cc): real worker processes on one study, running
// paratune-function-trial. 4 workers run an ASHA study on PostgreSQL -- every configuration once,
// no run twice, no trial promoted twice, ASHA's top-1/eta rule kept over every worker's trials; a
// worker killed with SIGKILL has its trial marked and its configuration run exactly once more; two
// workers share an SQLite file; and what worker mode refuses.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "../cli/cli_util.h"
#include "paratune/hpo/trial_record.h"
#include "store_test_util.h"
#include "../support/test_files.h"

namespace paratune::store {
namespace {

using paratune::testing::Result;
using paratune::testing::run;
using paratune::testing::run_command;

std::filesystem::path hpo_workers_dir(const std::string& name) { return paratune::testing::fresh_test_dir("paratune_hpo_workers", name); }

// `paratune tune --worker` of an ASHA study (eta 3, rungs at 1, 3 and 9 steps) over Branin's two
// parameters; each run appends "TRIAL_ID MAX_STEPS" to dir/runs.log before it starts.
std::string asha_worker(const std::string& locator, const std::filesystem::path& dir, const std::string& sleep_s,
                        int max_trials) {
  std::ofstream(dir / "space.yaml") << "parameters:\n  x1: {type: float, low: -5, high: 10}\n"
                                       "  x2: {type: float, low: 0, high: 15}\n";
  const std::string program = fmt::format(
      "sh -c \"echo \\$PARATUNE_TRIAL_ID \\$PARATUNE_MAX_STEPS >> {}; exec {} branin --curve --sleep {}\"",
      (dir / "runs.log").string(), PARATUNE_FUNCTION_TRIAL, sleep_s);
  return fmt::format("{} tune --worker --space {} --study '{}' --trials-dir {} --command '{}' --objective value "
                     "--direction minimize --algo random --seed 3 --pruner asha --eta 3 --min-resource 1 --steps 9 "
                     "--max-trials {} --parallel 1",
                     PARATUNE_BINARY, (dir / "space.yaml").string(), locator, (dir / "trials").string(), program,
                     max_trials);
}

// `count` workers at once, named w1, w2, ...; returns their stderr and "ok=N", N the number that
// exited 0.
Result run_hpo_workers(int count, const std::filesystem::path& dir, const std::string& command) {
  std::string script = "TMPD=" + dir.string() + "; ok=0; ";
  for (int i = 1; i <= count; ++i)
    script += fmt::format("({} --worker-name w{} > /dev/null 2>$TMPD/w{}.err; echo $? > $TMPD/w{}.rc) & ", command, i,
                          i, i);
  script += "wait; for f in $TMPD/w*.rc; do [ \"$(cat $f)\" = 0 ] && ok=$((ok+1)); done; cat $TMPD/w*.err; echo ok=$ok";
  return run_command(script);
}

// Each logged run, "TRIAL_ID MAX_STEPS", with how often it started.
std::map<std::string, int> runs(const std::filesystem::path& log) {
  std::map<std::string, int> out;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) ++out[line];
  return out;
}

std::vector<StoredTrial> study_trials(const std::string& locator) {
  const std::unique_ptr<StudyStore> store = open_store(locator);
  return store->trials(store->studies().at(0).id, true);
}

hpo::TrialRecord curve_of(const StoredTrial& t) {
  hpo::TrialRecord r;
  for (const trial::MetricReport& m : t.metrics)
    if (m.name == "value") r.curve.push_back({m.step.value_or(0), m.value});
  return r;
}

// What every finished ASHA study over several workers must show: one trial per configuration (the
// interrupted aside), no run started twice, each completed trial's curve one value per step, and in
// every rung the top 1/eta of the trials that completed it promoted (ASHA's rule, Li et al. 2020,
// over all workers' trials).
void expect_asha_study(const std::vector<StoredTrial>& trials, const std::filesystem::path& log,
                       std::size_t configurations) {
  std::set<std::string> seen;
  for (const StoredTrial& t : trials) {
    if (t.status == "interrupted") continue;
    EXPECT_TRUE(t.status == "completed" || t.status == "pruned") << t.number << " " << t.status << " " << t.reason;
    EXPECT_TRUE(seen.insert(t.params_json).second) << "configuration run twice: " << t.params_json;
  }
  EXPECT_EQ(seen.size(), configurations);
  for (const auto& [run, n] : runs(log)) EXPECT_EQ(n, 1) << "run started " << n << " times: " << run;
  int completed = 0;
  for (const StoredTrial& t : trials) {
    if (t.status != "completed") continue;
    ++completed;
    std::vector<std::int64_t> steps;
    for (const hpo::IntermediateValue& v : curve_of(t).curve) steps.push_back(v.step);
    EXPECT_EQ(steps, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8})) << "trial " << t.number;
  }
  EXPECT_GE(completed, 1);
  const std::vector<std::int64_t> rungs{1, 3, 9};
  for (std::size_t k = 0; k + 1 < rungs.size(); ++k) {
    std::vector<std::pair<double, const StoredTrial*>> members;
    for (const StoredTrial& t : trials)
      if (t.rung && *t.rung >= static_cast<int>(k))
        members.emplace_back(hpo::value_at(curve_of(t), rungs[k]).value_or(1e300), &t);
    std::sort(members.begin(), members.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second->number < b.second->number;
    });
    for (std::size_t i = 0; i < members.size() / 3; ++i)
      EXPECT_GT(*members[i].second->rung, static_cast<int>(k))
          << "trial " << members[i].second->number << " ranks " << i + 1 << " of " << members.size() << " in rung "
          << k << " but was never promoted";
  }
}

TEST(HpoWorkers, FourWorkersRunAnAshaStudyPromotingEachTrialOnce) {
  PARATUNE_NEED_POSTGRES();
  const std::string db = fresh_locator("postgres");
  const auto dir = hpo_workers_dir("four");
  const Result r = run_hpo_workers(4, dir, asha_worker(db, dir, "0.01", 27));
  EXPECT_NE(r.output.find("ok=4"), std::string::npos) << r.output;
  const std::vector<StoredTrial> trials = study_trials(db);
  EXPECT_EQ(trials.size(), 27u);
  std::set<std::string> workers;
  for (const StoredTrial& t : trials) workers.insert(t.worker);
  EXPECT_GE(workers.size(), 2u) << "one worker ran every trial";
  expect_asha_study(trials, dir / "runs.log", 27);
}

TEST(HpoWorkers, AKilledWorkersTrialIsMarkedAndItsConfigurationRunsOnceMore) {
  PARATUNE_NEED_POSTGRES();
  const std::string db = fresh_locator("postgres");
  const auto dir = hpo_workers_dir("killed");
  const std::string command = asha_worker(db, dir, "0.3", 9) + " --heartbeat 0.5s --heartbeat-timeout 3s";
  const Result started =
      run_command(command + " --worker-name victim > " + (dir / "victim.err").string() + " 2>&1 & echo $!");
  const pid_t victim = std::stoi(started.output);
  for (int i = 0; i < 600 && runs(dir / "runs.log").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(runs(dir / "runs.log").size(), 1u) << "the victim's trial never started";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);

  const Result r = run_hpo_workers(2, dir, command);
  EXPECT_NE(r.output.find("ok=2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("marked interrupted: worker victim sent no heartbeat for"), std::string::npos) << r.output;
  const std::vector<StoredTrial> trials = study_trials(db);
  ASSERT_EQ(trials.size(), 10u);  // 9 configurations, the victim's twice
  EXPECT_EQ(trials[0].worker, "victim");
  EXPECT_EQ(trials[0].status, "interrupted");
  EXPECT_EQ(trials[0].reason.rfind("worker victim sent no heartbeat for ", 0), 0u) << trials[0].reason;
  int again = 0;
  for (std::size_t i = 1; i < trials.size(); ++i) {
    EXPECT_NE(trials[i].worker, "victim");
    if (trials[i].params_json == trials[0].params_json) {
      ++again;
      EXPECT_NE(trials[i].prediction_json.find("requeued"), std::string::npos) << trials[i].prediction_json;
    }
  }
  EXPECT_EQ(again, 1);
  expect_asha_study(trials, dir / "runs.log", 9);
}

TEST(HpoWorkers, TwoWorkersShareAnSqliteFile) {
  const auto dir = hpo_workers_dir("sqlite");
  const std::string file = (dir / "study.db").string();
  const Result r = run_hpo_workers(2, dir, asha_worker(file, dir, "0.01", 12));
  EXPECT_NE(r.output.find("ok=2"), std::string::npos) << r.output;
  expect_asha_study(study_trials(file), dir / "runs.log", 12);
}

TEST(HpoWorkers, WhatWorkerModeRefuses) {
  const auto dir = hpo_workers_dir("refused");
  const std::string base = asha_worker((dir / "s.db").string(), dir, "0", 3);
  const std::string args = base.substr(base.find(" tune ") + 1);  // run() adds the binary
  const auto expect_refused = [&](const std::string& extra, const std::string& message) {
    const Result r = run(args + " " + extra);
    EXPECT_EQ(r.exit_code, 2) << extra << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << extra << "\n" << r.output;
  };
  expect_refused("--retrain", "--retrain with --worker: every worker would retrain");
  expect_refused("--retry-failed", "retry");
  expect_refused("--fuse 2", "a fused group is formed of several proposals");
  expect_refused("--strategy auto", "auto may measure a profile");
  expect_refused("--heartbeat 5s --heartbeat-timeout 5s", "a live worker would look dead");
  EXPECT_FALSE(std::filesystem::exists(dir / "runs.log"));  // nothing ran
}

}  // namespace
}  // namespace paratune::store
