// A store that blinks stops no worker and loses no trial (store/study_store.h: StoreUnavailable,
// `tune --store-retry`): real worker processes while the test's PostgreSQL server is stopped and
// started again, while an SQLite study's file system is full, and while another process holds its
// write lock longer than the busy timeout; past --store-retry, exit code 4 ("store unavailable"),
// not 2 (bad input).
//
// The full disk is a small tmpfs mounted in a private mount namespace (unshare -m: nothing outside
// the test sees it); where namespaces cannot be made (no CAP_SYS_ADMIN), those tests skip and say so.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "../support/postgres_server.h"
#include "../support/test_files.h"
#include "store_test_util.h"
#include "worker_test_util.h"

namespace paratune::store {
namespace {

using paratune::testing::PostgresServer;

std::filesystem::path store_faults_dir(const std::string& name) {
  return paratune::testing::fresh_test_dir("paratune_store_faults", name);
}

// Waits up to 30 s for `runs` trial runs in the log.
bool wait_for_runs(const std::filesystem::path& log, std::size_t runs) {
  for (int i = 0; i < 600 && runs_by_params(log).size() < runs; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return runs_by_params(log).size() >= runs;
}

TEST(StoreFaults, APostgresRestartStopsNoWorkerAndLosesNoTrial) {
  PARATUNE_NEED_POSTGRES();
  PostgresServer& server = PostgresServer::instance();
  const std::string db = fresh_locator("postgres");
  const auto dir = store_faults_dir("pg_restart");
  write_space(dir, 6, 4);
  // 3 workers, 2 slots each, trials of about 2 x 0.3 s: the server is away for 3 s while trials run,
  // so that trials end, and workers claim, heartbeat and read while it is.
  std::future<Result> workers = std::async(std::launch::async, [&] {
    return run_workers(3, dir, worker_command(db, dir, "--step-time 0.3") + " --parallel 2 --heartbeat 0.5s");
  });
  ASSERT_TRUE(wait_for_runs(dir / "runs.log", 4)) << "no trial ran";
  server.stop();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  server.start_again();
  const Result r = workers.get();
  EXPECT_NE(r.output.find("ok=3"), std::string::npos) << r.output;  // all 3 survived, exit 0
  EXPECT_NE(r.output.find("the store is unavailable, retrying for up to 60 s"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("is available again after"), std::string::npos) << r.output;
  const std::unique_ptr<StudyStore> store = open_store(db);
  const std::vector<StoredTrial> trials = store->trials(store->studies().at(0).id, /*with_steps=*/true);
  EXPECT_EQ(trials.size(), 24u);
  // Every trial stored exactly once, with its steps once (a retried end is not added twice).
  for (const StoredTrial& t : trials) EXPECT_EQ(t.step_times_s.size(), 2u) << t.params_json;
  expect_each_point_once(trials, dir / "runs.log", 24);
}

TEST(StoreFaults, AWorkerStartedWhileThePostgresServerIsDownWaitsForIt) {
  PARATUNE_NEED_POSTGRES();
  PostgresServer& server = PostgresServer::instance();
  const std::string db = fresh_locator("postgres");
  const auto dir = store_faults_dir("pg_down_at_start");
  write_space(dir, 2, 2);
  server.stop();
  std::future<Result> worker =
      std::async(std::launch::async, [&] { return run_workers(1, dir, worker_command(db, dir, "--step-time 0.1")); });
  // A reader (a dashboard's request, a report) is told at once, as "unavailable", not bad input.
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_THROW((void)open_store(db, Access::kReadOnly), StoreUnavailable);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count(), 2.0);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  server.start_again();
  const Result r = worker.get();
  EXPECT_NE(r.output.find("ok=1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cannot connect"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the store is unavailable, retrying for up to 60 s"), std::string::npos) << r.output;
  const std::unique_ptr<StudyStore> store = open_store(db);
  expect_each_point_once(store->trials(store->studies().at(0).id), dir / "runs.log", 4);
}

TEST(StoreFaults, APostgresServerAwayLongerThanStoreRetryEndsTheWorkerWithExitCodeFour) {
  PARATUNE_NEED_POSTGRES();
  PostgresServer& server = PostgresServer::instance();
  const std::string db = fresh_locator("postgres");
  const auto dir = store_faults_dir("pg_away");
  write_space(dir, 3, 2);
  std::future<Result> worker = std::async(std::launch::async, [&] {
    return run_workers(1, dir, worker_command(db, dir, "--step-time 0.5") + " --store-retry 2s");
  });
  ASSERT_TRUE(wait_for_runs(dir / "runs.log", 1)) << "no trial ran";
  server.stop();
  const auto stopped = std::chrono::steady_clock::now();
  const bool ended = worker.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  const double after_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
  server.start_again();
  ASSERT_TRUE(ended) << "the worker did not give up after --store-retry 2s";
  const Result r = worker.get();
  EXPECT_EQ(paratune::testing::read_file(dir / "w1.rc"), "4\n") << r.output;
  EXPECT_NE(r.output.find("paratune: error: store unavailable: study store " + mask_locator(db)), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("(--store-retry 2s): run the same command again once it is back"), std::string::npos)
      << r.output;
  EXPECT_LT(after_s, 15) << r.output;
}

// `script` (shell text) in a private mount namespace, where it may mount a file system of its own
// at DIR/small; nothing when namespaces cannot be made here (then `why_not` says why).
Result in_mount_namespace(const std::filesystem::path& dir, const std::string& script, std::string& why_not) {
  std::filesystem::create_directories(dir / "small");
  const Result probe = run_command("unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs " + (dir / "small").string() +
                                   " && umount " + (dir / "small").string() + "'");
  if (probe.exit_code != 0) {
    why_not = "cannot mount a tmpfs in a private mount namespace here (unshare -m, mount: needs CAP_SYS_ADMIN): " +
              probe.output;
    return {};
  }
  paratune::testing::write_file(dir / "script.sh", script);
  return run_command("unshare -m sh " + (dir / "script.sh").string());
}

// The file system of an SQLite study fills up while a worker runs: its writes wait for space, and
// the worker ends its study as if nothing happened -- or, when space stays gone longer than
// --store-retry, exits 4. The workers' trial directories and the run log are elsewhere.
// `store_retry`: the flag and its value, or "" for the default.
std::string full_disk_script(const std::filesystem::path& dir, const std::string& store_retry, int full_s) {
  const std::string small = (dir / "small").string(), study = small + "/study.db";
  const std::string log = (dir / "runs.log").string(), err = (dir / "w1.err").string();
  const std::vector<std::string> lines = {
      "mount -t tmpfs -o size=1m tmpfs " + small + " || exit 99",
      worker_command(study, dir, "--step-time 0.2") + " --parallel 2 --worker-name w1 " + store_retry +
          " > /dev/null 2> " + err + " &",
      "pid=$!",
      // Its first trial runs (unless it ended, or 30 s passed):
      "i=0; while [ ! -s " + log + " ] && kill -0 $pid 2> /dev/null && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done",
      "dd if=/dev/zero of=" + small + "/fill bs=4k > /dev/null 2>&1",  // the file system is full
      "sleep " + std::to_string(full_s), "rm -f " + small + "/fill", "wait $pid", "echo rc=$?",
      "cp " + study + "* " + dir.string(),  // out of the namespace (with its log, if any), for the test to read
      "cat " + err};
  std::string script;
  for (const std::string& line : lines) script += line + "\n";
  return script;
}

TEST(StoreFaults, AFullDiskStopsNoSqliteWorkerAndLosesNoTrial) {
  const auto dir = store_faults_dir("sqlite_full");
  write_space(dir, 4, 3);
  std::string why_not;
  const Result r = in_mount_namespace(dir, full_disk_script(dir, "", 3), why_not);
  if (!why_not.empty()) GTEST_SKIP() << why_not;
  EXPECT_NE(r.output.find("rc=0"), std::string::npos) << r.output;
  // The fault happened: a write failed, and was retried.
  EXPECT_NE(r.output.find("database or disk is full"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the store is unavailable, retrying for up to 60 s"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("is available again after"), std::string::npos) << r.output;
  const std::unique_ptr<StudyStore> store = open_store((dir / "study.db").string());
  const std::vector<StoredTrial> trials = store->trials(store->studies().at(0).id, /*with_steps=*/true);
  EXPECT_EQ(trials.size(), 12u);
  for (const StoredTrial& t : trials) EXPECT_EQ(t.step_times_s.size(), 2u) << t.params_json;
  expect_each_point_once(trials, dir / "runs.log", 12);
}

TEST(StoreFaults, ADiskFullLongerThanStoreRetryEndsTheSqliteWorkerWithExitCodeFour) {
  const auto dir = store_faults_dir("sqlite_full_long");
  write_space(dir, 4, 3);
  std::string why_not;
  const Result r = in_mount_namespace(dir, full_disk_script(dir, "--store-retry 1s", 8), why_not);
  if (!why_not.empty()) GTEST_SKIP() << why_not;
  EXPECT_NE(r.output.find("rc=4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("paratune: error: store unavailable: study file " + (dir / "small" / "study.db").string()),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("database or disk is full"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(--store-retry 1s)"), std::string::npos) << r.output;
}

TEST(StoreFaults, AnSqliteLockHeldLongerThanTheBusyTimeoutStopsNoWorker) {
  const auto dir = store_faults_dir("sqlite_locked");
  write_space(dir, 3, 2);
  const std::string study = (dir / "study.db").string();
  std::future<Result> worker = std::async(
      std::launch::async, [&] { return run_workers(1, dir, worker_command(study, dir, "--step-time 0.2")); });
  ASSERT_TRUE(wait_for_runs(dir / "runs.log", 1)) << "no trial ran";
  // Another process's transaction (here: this test's) holds the file's write lock for 13 s, longer
  // than the store's busy timeout (10 s): the worker's writes fail with "database is locked", and
  // are retried until the lock is free.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(study.c_str(), &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 10000);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::this_thread::sleep_for(std::chrono::seconds(13));
  EXPECT_EQ(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
  const Result r = worker.get();
  EXPECT_NE(r.output.find("ok=1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("database is locked"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the store is unavailable, retrying for up to 60 s"), std::string::npos) << r.output;
  const std::unique_ptr<StudyStore> store = open_store(study);
  expect_each_point_once(store->trials(store->studies().at(0).id), dir / "runs.log", 6);
}

}  // namespace
}  // namespace paratune::store
