// The study stores: round trip of a trial, resume rules, and durability when the writer is killed
// with SIGKILL in the middle of a study -- each on SQLite and on PostgreSQL (StoreTest's parameter)
// -- and the SQLite file's own rules.
#include "store_test_util.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "paratune/spec/error.h"
#include "paratune/store/sqlite_store.h"

namespace paratune::store {
namespace {

TEST_P(StoreTest, RoundTripsATrial) {
  const std::unique_ptr<StudyStore> opened = open();
  StudyStore& store = *opened;
  const std::int64_t study = store.open_study("default", R"({"algo":"grid"})");
  const auto [id, number] = store.begin_trial(study, R"({"tp":2})", R"({"steps":4})", "train.py --tp 2", "/tmp/t1");
  EXPECT_EQ(number, 1);
  std::vector<StoredTrial> trials = store.trials(study);
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].status, "running");
  store.finish_trial(id, completed(0.5));
  trials = store.trials(study, /*with_steps=*/true);
  const StoredTrial& t = trials[0];
  EXPECT_EQ(t.status, "completed");
  EXPECT_EQ(t.params_json, R"({"tp":2})");
  EXPECT_EQ(t.command, "train.py --tp 2");
  EXPECT_EQ(t.steps, 4);
  ASSERT_TRUE(t.throughput.has_value());
  EXPECT_DOUBLE_EQ(*t.throughput, 2.0);
  EXPECT_EQ(t.peak_memory_bytes, 1e9);
  EXPECT_EQ(t.step_times_s, (std::vector<double>{1.0, 0.5, 0.5, 0.5}));
  EXPECT_EQ(store.begin_trial(study, "{}", "{}", "x", "/tmp/t2").second, 2);
}

// A reason may carry a trial's stderr, which may hold any bytes: each store keeps it as printable
// UTF-8 (PostgreSQL's text would refuse the bytes; JSON output and Python's str could not take them).
TEST_P(StoreTest, ReasonsFromTrialOutputAreStoredPrintable) {
  const std::unique_ptr<StudyStore> opened = open();
  StudyStore& store = *opened;
  const std::int64_t study = store.open_study("default", R"({"algo":"grid"})");
  const std::int64_t id = store.begin_trial(study, R"({"tp":2})", "{}", "x", "/tmp/t1").first;
  trial::TrialResult failed;
  failed.status = trial::TrialStatus::kFailed;
  failed.reason = std::string("exit code 1; last stderr line: caf\xE9 \x1B[2J\0end", 44);
  store.finish_trial(id, failed);
  EXPECT_EQ(store.trials(study).at(0).reason, "exit code 1; last stderr line: caf\\xE9 \\x1B[2J\\x00end");
}

TEST_P(StoreTest, ResumeNeedsTheSameConfigurationAndRequeuesRunningTrials) {
  {
    const std::unique_ptr<StudyStore> store = open();
    const std::int64_t study = store->open_study("default", R"({"space":1})");
    store->begin_trial(study, "{}", "{}", "x", "/tmp/a");
  }
  const std::unique_ptr<StudyStore> opened = open();
  StudyStore& store = *opened;
  try {
    store.open_study("default", R"({"space":2})");
    FAIL() << "another configuration was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("created with another configuration: space is 2 now, 1 when the study was "
                                         "created"),
              std::string::npos)
        << e.what();
  }
  const std::int64_t study = store.open_study("default", R"({"space":1})");
  EXPECT_EQ(store.mark_running_interrupted(study), 1);
  EXPECT_EQ(store.trials(study)[0].status, "interrupted");
  EXPECT_EQ(store.mark_running_interrupted(study), 0);
}

// open_study's refusal names the first field that differs, not only "another configuration".
TEST(IdentityDifference, NamesTheFirstFieldThatDiffers) {
  EXPECT_EQ(identity_difference(R"({"a":1,"b":{"c":2}})", R"({"a":1,"b":{"c":3}})"),
            "b.c is 3 now, 2 when the study was created");
  EXPECT_EQ(identity_difference(R"({"a":1})", R"({"a":1,"d":true})"), "d is new (it was not set when the study was created)");
  EXPECT_EQ(identity_difference(R"({"a":1,"d":true})", R"({"a":1})"), "d is gone (it was true when the study was created)");
  EXPECT_EQ(identity_difference(R"({"p":{"x":1,"y":2}})", R"({"p":{"y":2,"x":1}})"), "p: the same fields in another order");
  EXPECT_EQ(identity_difference(R"({"a":[1,2]})", R"({"a":[1,3]})"), "a is [1,3] now, [1,2] when the study was created");
  EXPECT_EQ(identity_difference(R"({"a":1})", R"({"a":1})"), "");
}

TEST(SqliteStudyStore, RejectsFilesThatAreNotStudies) {
  const std::filesystem::path file = fresh_file("not-a-study.db");
  std::ofstream(file) << "hello, this is not SQLite\n";
  try {
    SqliteStudyStore store(file);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
}

// Read-only (the dashboard, reports): a missing file is not created, a file that is not a study is
// refused, and a study is read without a byte of the file changing.
TEST(SqliteStudyStore, ReadOnlyCreatesAndWritesNothing) {
  const std::filesystem::path missing = fresh_file("missing.db");
  EXPECT_THROW(SqliteStudyStore(missing, Access::kReadOnly), Error);
  EXPECT_FALSE(std::filesystem::exists(missing));
  const std::filesystem::path garbage = fresh_file("garbage.db");
  std::ofstream(garbage) << "hello, this is not SQLite\n";
  try {
    SqliteStudyStore store(garbage, Access::kReadOnly);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(garbage.string()), std::string::npos) << e.what();
  }
  const std::filesystem::path file = fresh_file("read-only.db");
  {
    SqliteStudyStore writer(file);
    const std::int64_t study = writer.open_study("s", "{}");
    writer.finish_trial(writer.begin_trial(study, R"({"a":1})", "{}", "cmd", "/tmp/t").first, completed(0.5));
  }
  const auto bytes = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string before = bytes(file);
  const std::unique_ptr<StudyStore> reader = open_store(file.string(), Access::kReadOnly);
  const std::vector<StudyInfo> studies = reader->studies();
  ASSERT_EQ(studies.size(), 1u);
  EXPECT_EQ(reader->trials(studies[0].id, true).size(), 1u);
  EXPECT_THROW(reader->open_study("t", "{}"), Error);  // a write is refused
  EXPECT_EQ(bytes(file), before);
}

// A writer killed with SIGKILL loses no finished trial; the one it was running is found "running".
TEST_P(StoreTest, SigkillOfTheWriterLosesNoFinishedTrial) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::unique_ptr<StudyStore> opened = open();
    StudyStore& store = *opened;
    const std::int64_t study = store.open_study("default", "{}");
    for (int i = 0; i < 20; ++i) {
      const auto [id, number] = store.begin_trial(study, "{\"i\":" + std::to_string(i) + "}", "{}", "x", "/tmp/k");
      store.finish_trial(id, completed(0.25));
    }
    store.begin_trial(study, "{\"i\":20}", "{}", "x", "/tmp/k");
    ::raise(SIGKILL);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  const std::unique_ptr<StudyStore> opened = open();
  StudyStore& store = *opened;
  const std::int64_t study = store.open_study("default", "{}");
  const std::vector<StoredTrial> trials = store.trials(study, true);
  ASSERT_EQ(trials.size(), 21u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(trials[static_cast<std::size_t>(i)].status, "completed");
    EXPECT_EQ(trials[static_cast<std::size_t>(i)].step_times_s.size(), 4u);
  }
  EXPECT_EQ(trials[20].status, "running");
  EXPECT_EQ(store.mark_running_interrupted(study), 1);
}

}  // namespace
}  // namespace paratune::store

namespace paratune::store {
namespace {

TEST_P(StoreTest, KeepsPredictionsAndTheModel) {
  const std::unique_ptr<StudyStore> opened = open();
  StudyStore& store = *opened;
  const std::int64_t study = store.open_study("main", "{}");
  const auto [id, number] = store.begin_trial(study, R"({"dp":2})", "{}", "cmd", "/tmp/t");
  store.set_prediction(id, R"({"predicted_throughput":1.5})");
  store.set_model(study, R"({"algorithm":"oppa"})");
  EXPECT_EQ(store.trial(id).prediction_json, R"({"predicted_throughput":1.5})");
  EXPECT_EQ(store.studies().front().model_json, R"({"algorithm":"oppa"})");
}

// A study file written by schema version 1 (before predictions) opens and gains the new columns.
TEST(SqliteStudyStore, UpgradesVersionOneFiles) {
  const std::filesystem::path file = fresh_file("v1.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  const char* v1 =
      "CREATE TABLE studies (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_unix_s REAL NOT NULL, "
      "config_json TEXT NOT NULL);"
      "CREATE TABLE trials (id INTEGER PRIMARY KEY, study_id INTEGER NOT NULL REFERENCES studies(id), number INTEGER NOT "
      "NULL, params_json TEXT NOT NULL, config_json TEXT NOT NULL, command TEXT NOT NULL, dir TEXT NOT NULL, status TEXT "
      "NOT NULL, started_unix_s REAL NOT NULL, ended_unix_s REAL, exit_code INTEGER, exit_signal INTEGER, reason TEXT, "
      "stdout_path TEXT, stderr_path TEXT, steps INTEGER NOT NULL DEFAULT 0, throughput REAL, throughput_variance REAL, "
      "throughput_ci_low REAL, throughput_ci_high REAL, peak_memory_bytes REAL, malformed_lines INTEGER NOT NULL DEFAULT "
      "0, UNIQUE (study_id, number));"
      "INSERT INTO studies VALUES (1, 'old', 0, '{}');"
      "INSERT INTO trials (study_id, number, params_json, config_json, command, dir, status, started_unix_s) "
      "VALUES (1, 1, '{\"dp\":1}', '{}', 'cmd', '/tmp', 'completed', 0);"
      "PRAGMA user_version=1;";
  ASSERT_EQ(sqlite3_exec(db, v1, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  SqliteStudyStore store(file);
  const std::vector<StoredTrial> trials = store.trials(1);
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].params_json, R"({"dp":1})");
  EXPECT_EQ(trials[0].prediction_json, "");
  EXPECT_EQ(trials[0].location, "");  // version 4's columns, NULL in old rows
  EXPECT_FALSE(trials[0].heartbeat_unix_s.has_value());
  store.set_prediction(trials[0].id, "{}");
  store.set_model(1, "{}");
  EXPECT_EQ(store.studies().front().model_json, "{}");
}

}  // namespace
}  // namespace paratune::store

namespace paratune::store {

INSTANTIATE_TEST_SUITE_P(Stores, StoreTest, ::testing::Values("sqlite", "postgres"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace paratune::store
