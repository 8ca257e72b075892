// Worker mode (`paratune tune --worker`, store/study_store.h: lock_worker, claim_trial,
// finish_own_trial): the store's claims, dead-worker marking and locks on both stores, then real
// worker processes on one PostgreSQL study -- 4 workers, 40 points, each run exactly once; a worker
// killed with SIGKILL mid-trial, whose trial is marked interrupted and run exactly once more;
// heartbeats keeping trials longer than the timeout alive; a model-based search whose initial
// designs count every worker's trials -- and workers on SQLite.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "../cli/cli_util.h"
#include "paratune/spec/error.h"
#include "store_test_util.h"
#include "worker_test_util.h"
#include "../support/test_files.h"

namespace paratune::store {
namespace {

using paratune::testing::Result;
using paratune::testing::run;
using paratune::testing::run_command;

StudyStore::Proposer propose_params(const std::string& params, std::vector<StoredTrial>* seen = nullptr) {
  return [params, seen](const std::vector<StoredTrial>& all, int number) -> std::optional<StudyStore::NewTrial> {
    if (seen) *seen = all;
    return StudyStore::NewTrial{params, {"{}", "cmd", "/tmp/trial-" + std::to_string(number), ""}};
  };
}

TEST_P(StoreTest, ClaimsInsertTheProposedTrialAsTheWorkersOwn) {
  const std::unique_ptr<StudyStore> store = open();
  store->set_worker_name("w1");
  const std::int64_t study = store->open_study("s", "{}");
  std::vector<StoredTrial> seen;
  const StudyStore::ClaimOutcome first = store->claim_trial(study, 60, propose_params(R"({"a":1})", &seen), /*with_outputs=*/false);
  ASSERT_TRUE(first.claimed);
  EXPECT_EQ(first.claimed->second, 1);
  EXPECT_TRUE(seen.empty());
  const StudyStore::ClaimOutcome second = store->claim_trial(study, 60, propose_params(R"({"a":2})", &seen), /*with_outputs=*/false);
  ASSERT_TRUE(second.claimed);
  EXPECT_EQ(second.claimed->second, 2);
  ASSERT_EQ(seen.size(), 1u);  // the proposer saw the first, running
  EXPECT_EQ(seen[0].status, "running");
  const StoredTrial t = store->trial(second.claimed->first);
  EXPECT_EQ(t.status, "running");
  EXPECT_EQ(t.worker, "w1");
  EXPECT_EQ(t.dir, "/tmp/trial-2");
  EXPECT_TRUE(t.heartbeat_unix_s);
  // Nothing proposed: nothing inserted.
  const StudyStore::ClaimOutcome none = store->claim_trial(
      study, 60, [](const std::vector<StoredTrial>&, int) { return std::optional<StudyStore::NewTrial>(); }, /*with_outputs=*/false);
  EXPECT_FALSE(none.claimed);
  EXPECT_EQ(store->trials(study).size(), 2u);
}

TEST_P(StoreTest, AClaimMarksDeadWorkersTrialsAndTheirResultsAreDropped) {
  const std::unique_ptr<StudyStore> dead = open();
  const std::unique_ptr<StudyStore> alive = open();
  dead->set_worker_name("host-a:11");
  alive->set_worker_name("host-b:22");
  const std::int64_t study = dead->open_study("s", "{}");
  ASSERT_EQ(alive->open_study("s", "{}"), study);
  const std::int64_t lost = dead->claim_trial(study, 60, propose_params(R"({"a":1})"), /*with_outputs=*/false).claimed->first;
  const std::int64_t mine = alive->claim_trial(study, 60, propose_params(R"({"a":2})"), /*with_outputs=*/false).claimed->first;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // A timeout of 50 ms: the dead worker's trial is marked, the claiming worker's own is not.
  std::vector<StoredTrial> seen;
  const StudyStore::ClaimOutcome claim = alive->claim_trial(study, 0.05, propose_params(R"({"a":1})", &seen), /*with_outputs=*/false);
  ASSERT_EQ(claim.reaped.size(), 1u);
  EXPECT_EQ(claim.reaped[0].id, lost);
  EXPECT_EQ(claim.reaped[0].worker, "host-a:11");
  const StoredTrial marked = alive->trial(lost);
  EXPECT_EQ(marked.status, "interrupted");
  EXPECT_EQ(marked.reason, "worker host-a:11 sent no heartbeat for 0 s");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].status, "interrupted");  // the proposer sees it marked
  EXPECT_EQ(seen[1].status, "running");
  EXPECT_EQ(alive->trial(mine).status, "running");
  // The dead worker's late result is refused; the live worker's own is stored.
  EXPECT_FALSE(dead->finish_own_trial(lost, completed(0.5)));
  EXPECT_EQ(alive->trial(lost).status, "interrupted");
  EXPECT_FALSE(dead->finish_own_trial(mine, completed(0.5)));  // not its trial
  EXPECT_TRUE(alive->finish_own_trial(mine, completed(0.5)));
  EXPECT_EQ(alive->trial(mine).status, "completed");
  EXPECT_FALSE(alive->finish_own_trial(mine, completed(0.5)));  // no longer running
  // A heartbeat keeps a trial alive.
  const std::int64_t beating = dead->claim_trial(study, 60, propose_params(R"({"a":3})"), /*with_outputs=*/false).claimed->first;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  dead->heartbeat({beating});
  EXPECT_TRUE(alive->claim_trial(study, 10, propose_params(R"({"a":4})"), /*with_outputs=*/false).reaped.empty());
  EXPECT_EQ(alive->trial(beating).status, "running");
}

TEST_P(StoreTest, AClaimCanResumeARestingTrialAndShowsEveryTrialsOutputs) {
  const std::unique_ptr<StudyStore> first = open();
  const std::unique_ptr<StudyStore> second = open();
  first->set_worker_name("w1");
  second->set_worker_name("w2");
  const std::int64_t study = first->open_study("s", "{}");
  ASSERT_EQ(second->open_study("s", "{}"), study);
  const std::int64_t resting = first->claim_trial(study, 60, propose_params(R"({"a":1})"), false).claimed->first;
  TrialOutcome rung;
  rung.status = "pruned";
  rung.rung = 0;
  rung.objective = 0.5;
  ASSERT_TRUE(first->finish_own_trial(resting, completed(0.5), &rung));
  // The second worker sees the first's metrics in the claim, and takes the resting trial over.
  std::vector<StoredTrial> seen;
  const StudyStore::ClaimOutcome promoted = second->claim_trial(
      study, 60,
      [&](const std::vector<StoredTrial>& all, int) -> std::optional<StudyStore::NewTrial> {
        seen = all;
        StudyStore::NewTrial resume;
        resume.resume = all.at(0).id;
        return resume;
      },
      /*with_outputs=*/true);
  ASSERT_TRUE(promoted.claimed);
  EXPECT_EQ(*promoted.claimed, std::make_pair(resting, 1));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].metrics.size(), completed(0.5).output.metrics.size());
  EXPECT_EQ(seen[0].step_times_s.size(), completed(0.5).output.steps.size());
  const StoredTrial running = second->trial(resting);
  EXPECT_EQ(running.status, "running");
  EXPECT_EQ(running.worker, "w2");
  EXPECT_FALSE(running.ended_unix_s > 0);  // running again: no end yet
  // Now the second worker's: the first may no longer end it, the second may.
  EXPECT_FALSE(first->finish_own_trial(resting, completed(0.5)));
  EXPECT_TRUE(second->finish_own_trial(resting, completed(0.5)));
  // Only a resting trial can be resumed: asking for a completed one is a bug, and nothing changes.
  EXPECT_THROW((void)first->claim_trial(
                   study, 60,
                   [&](const std::vector<StoredTrial>&, int) -> std::optional<StudyStore::NewTrial> {
                     StudyStore::NewTrial resume;
                     resume.resume = resting;
                     return resume;
                   },
                   false),
               Error);
  EXPECT_EQ(first->trial(resting).status, "completed");
}

TEST_P(StoreTest, WorkersAndAControllerExcludeEachOther) {
  const std::unique_ptr<StudyStore> a = open();
  const std::unique_ptr<StudyStore> b = open();
  a->open_study("s", "{}");
  {
    const std::unique_ptr<ControllerLock> worker = a->lock_worker("s");
    try {
      (void)b->lock_controller("s");
      FAIL() << "a controller joined a study that a worker runs";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("another paratune controller is running"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW((void)b->lock_worker("s"));  // workers share it (in one process too: ask/tell studies)
  }
  const std::unique_ptr<ControllerLock> controller = a->lock_controller("s");
  try {
    (void)b->lock_worker("s");
    FAIL() << "a worker joined a study that a controller runs";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a paratune controller (not a worker) is running"), std::string::npos)
        << e.what();
  }
}

// The CLI tests: worker processes on one study.

std::filesystem::path workers_dir(const std::string& name) { return paratune::testing::fresh_test_dir("paratune_workers", name); }

TEST(Workers, FourWorkersRunFortyPointsEachOnce) {
  PARATUNE_NEED_POSTGRES();
  const std::string db = fresh_locator("postgres");
  const auto dir = workers_dir("four");
  write_space(dir, 10, 4);
  const Result r = run_workers(4, dir, worker_command(db, dir, "--step-time 0.01") + " --max-trials 40 --parallel 2");
  EXPECT_NE(r.output.find("ok=4"), std::string::npos) << r.output;
  const std::unique_ptr<StudyStore> store = open_store(db);
  const std::vector<StoredTrial> trials = store->trials(store->studies().at(0).id);
  EXPECT_EQ(trials.size(), 40u);
  std::set<std::string> workers;
  for (const StoredTrial& t : trials) workers.insert(t.worker);
  EXPECT_GE(workers.size(), 2u) << "one worker ran every trial";
  for (const std::string& w : workers) EXPECT_TRUE(w == "w1" || w == "w2" || w == "w3" || w == "w4") << w;
  expect_each_point_once(trials, dir / "runs.log", 40);
}

TEST(Workers, AKilledWorkersTrialIsMarkedAndRunOnceMore) {
  PARATUNE_NEED_POSTGRES();
  const std::string db = fresh_locator("postgres");
  const auto dir = workers_dir("killed");
  write_space(dir, 3, 2);
  const std::string command =
      worker_command(db, dir, "--step-time 0.4") + " --heartbeat 0.5s --heartbeat-timeout 3s";
  // The victim starts alone and is killed once its first trial runs.
  const Result started =
      run_command(command + " --worker-name victim > " + (dir / "victim.err").string() + " 2>&1 & echo $!");
  const pid_t victim = std::stoi(started.output);
  const std::filesystem::path log = dir / "runs.log";
  for (int i = 0; i < 600 && runs_by_params(log).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(runs_by_params(log).size(), 1u) << "the victim's trial never started";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  const std::string victims_point = runs_by_params(log).begin()->first;

  const Result r = run_workers(2, dir, command);
  EXPECT_NE(r.output.find("ok=2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("marked interrupted: worker victim sent no heartbeat for"), std::string::npos) << r.output;
  const std::unique_ptr<StudyStore> store = open_store(db);
  const std::vector<StoredTrial> trials = store->trials(store->studies().at(0).id);
  ASSERT_EQ(trials.size(), 7u);  // 6 points, one run twice
  const StoredTrial& first = trials[0];
  EXPECT_EQ(first.worker, "victim");
  EXPECT_EQ(first.status, "interrupted");
  EXPECT_EQ(first.reason.rfind("worker victim sent no heartbeat for ", 0), 0u) << first.reason;
  for (std::size_t i = 1; i < trials.size(); ++i) EXPECT_NE(trials[i].worker, "victim");
  expect_each_point_once(trials, log, 6, {victims_point});
}

TEST(Workers, HeartbeatsKeepTrialsLongerThanTheTimeoutAlive) {
  PARATUNE_NEED_POSTGRES();
  const std::string db = fresh_locator("postgres");
  const auto dir = workers_dir("heartbeats");
  write_space(dir, 2, 2);
  // Trials of 2 x 1.2 s, a timeout of 1 s: only the heartbeats (every 0.2 s) keep the other worker,
  // which claims every 0.5 s while it waits, from marking them interrupted.
  const Result r = run_workers(2, dir, worker_command(db, dir, "--step-time 1.2") +
                                           " --heartbeat 0.2s --heartbeat-timeout 1s");
  EXPECT_NE(r.output.find("ok=2"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("marked interrupted"), std::string::npos) << r.output;
  const std::unique_ptr<StudyStore> store = open_store(db);
  const std::vector<StoredTrial> trials = store->trials(store->studies().at(0).id);
  EXPECT_EQ(trials.size(), 4u);
  expect_each_point_once(trials, dir / "runs.log", 4);
}

TEST(Workers, AModelBasedSearchCountsEveryWorkersTrials) {
  PARATUNE_NEED_POSTGRES();
  const std::string db = fresh_locator("postgres");
  const auto dir = workers_dir("bo");
  write_space(dir, 4, 3);
  // 3 workers, 4 initial designs in all: each worker counting only its own would make 12.
  const Result r = run_workers(3, dir, worker_command(db, dir, "--step-time 0.01") +
                                      " --algo bo --initial 4 --seed 7");
  EXPECT_NE(r.output.find("ok=3"), std::string::npos) << r.output;
  const std::unique_ptr<StudyStore> store = open_store(db);
  const std::vector<StoredTrial> trials = store->trials(store->studies().at(0).id);
  int designs = 0;
  for (const StoredTrial& t : trials)
    if (t.prediction_json.find("initial design") != std::string::npos) ++designs;
  EXPECT_EQ(designs, 4);
  expect_each_point_once(trials, dir / "runs.log", 12);
}

TEST(Workers, WorkersShareAnSqliteFileAndExcludeAController) {
  const auto dir = workers_dir("sqlite");
  write_space(dir, 4, 3);
  const std::string file = (dir / "study.db").string();
  const Result r = run_workers(3, dir, worker_command(file, dir, "--step-time 0.01"));
  EXPECT_NE(r.output.find("ok=3"), std::string::npos) << r.output;
  const std::unique_ptr<StudyStore> store = open_store(file);
  expect_each_point_once(store->trials(store->studies().at(0).id), dir / "runs.log", 12);
  // A controller without --worker on a study that a worker runs: the lock error, exit 2.
  const std::unique_ptr<ControllerLock> worker = store->lock_worker("main");
  const Result controller = run("tune --space " + (dir / "space.yaml").string() + " --study " + file +
                                " --command 'true' --steps 2");
  EXPECT_EQ(controller.exit_code, 2) << controller.output;
  EXPECT_NE(controller.output.find("another paratune controller is running"), std::string::npos) << controller.output;
}

TEST(Workers, BadWorkerFlagsExitTwo) {
  const auto dir = workers_dir("flags");
  write_space(dir, 2, 1);
  const std::string base = "tune --space " + (dir / "space.yaml").string() + " --study " + (dir / "s.db").string() +
                           " --command 'true' --steps 2 ";
  const Result timeout = run(base + "--worker --heartbeat 5s --heartbeat-timeout 5s");
  EXPECT_EQ(timeout.exit_code, 2) << timeout.output;
  EXPECT_NE(timeout.output.find("--heartbeat-timeout 5: must be > --heartbeat (5 s)"), std::string::npos)
      << timeout.output;
  const Result zero = run(base + "--worker --heartbeat 0");
  EXPECT_EQ(zero.exit_code, 2) << zero.output;
  EXPECT_NE(zero.output.find("--heartbeat 0: must be > 0 seconds"), std::string::npos) << zero.output;
  const Result retry = run(base + "--worker --retry-failed");
  EXPECT_EQ(retry.exit_code, 2) << retry.output;
  EXPECT_NE(retry.output.find("not with --worker"), std::string::npos) << retry.output;
  const Result alone = run(base + "--heartbeat 1s");
  EXPECT_EQ(alone.exit_code, 2) << alone.output;
  EXPECT_NE(alone.output.find("--heartbeat: belongs to --worker"), std::string::npos) << alone.output;
}

}  // namespace
}  // namespace paratune::store
