// What both stores promise beyond the basic round trip (StoreTest: each on SQLite and PostgreSQL):
// exact values, distinct trial numbers under concurrent writers, one controller per study, the
// schema version, heartbeats, and where and by whom a trial ran.
#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <set>
#include <thread>

#include "paratune/spec/error.h"
#include "store_test_util.h"

namespace paratune::store {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Values that a text or float conversion with too few digits would change.
TEST_P(StoreTest, DoublesNullsAndLargeIntegersRoundTripExactly) {
  const std::unique_ptr<StudyStore> store = open();
  store->set_worker_name("host-a:4242");
  const std::int64_t study = store->open_study("exact", "{\"quote\":\"it's \\\\ fine\"}");
  const auto [id, number] = store->begin_trial(study, R"({"lr":0.1})", [](int) {
    return StudyStore::LaunchRecord{"{}", "run 'x' \"y\" ünïcode", "/tmp/dir with space", "ssh node-7"};
  });
  trial::TrialResult r;
  r.status = trial::TrialStatus::kCompleted;
  r.exit_code = 0;
  r.started_unix_s = 1700000000.123456789;
  r.ended_unix_s = 1700000001.0 / 3.0 + 1e9;
  r.output.steps = {{1, 0.1}, {2, 1.0 / 3.0}, {std::numeric_limits<std::int64_t>::max(), 5e-324},
                    {-7, 1.7976931348623157e308}, {4, std::numeric_limits<double>::infinity()}};
  r.output.metrics = {{"loss", 2.220446049250313e-16, std::nullopt, std::nullopt},
                      {"a\"c,c{} \\ NULL ünï", -0.0, std::int64_t{9007199254740993}, std::nullopt}};
  r.output.peak_memory_bytes = 81604378624.0 + 0.5;
  r.output.malformed_lines = 9007199254740993;  // 2^53 + 1: not a double
  r.throughput.steps_used = 3;
  r.throughput.steps_per_s = 0.1 + 0.2;
  r.throughput.variance = 1e-300;
  r.throughput.ci95_low = -1.5e-7;
  r.throughput.ci95_high = 123456789.123456789;
  r.location = "local";
  TrialOutcome outcome;
  outcome.status = "completed";
  outcome.objective = 0.30000000000000004;
  outcome.rung = std::nullopt;
  outcome.hpo_json = "{\"runs\":1}";
  store->finish_trial(id, r, &outcome);

  const std::unique_ptr<StudyStore> again = open();
  const StoredTrial t = again->trials(study, true).at(0);
  EXPECT_EQ(t.number, number);
  EXPECT_EQ(t.command, "run 'x' \"y\" ünïcode");
  EXPECT_EQ(t.dir, "/tmp/dir with space");
  EXPECT_EQ(t.started_unix_s, 1700000000.123456789);
  EXPECT_EQ(t.ended_unix_s, 1700000001.0 / 3.0 + 1e9);
  EXPECT_EQ(t.step_numbers, (std::vector<std::int64_t>{1, 2, std::numeric_limits<std::int64_t>::max(), -7, 4}));
  EXPECT_EQ(t.step_times_s, (std::vector<double>{0.1, 1.0 / 3.0, 5e-324, 1.7976931348623157e308,
                                                 std::numeric_limits<double>::infinity()}));
  ASSERT_EQ(t.metrics.size(), 2u);
  EXPECT_EQ(t.metrics[0].name, "loss");
  EXPECT_EQ(t.metrics[1].name, "a\"c,c{} \\ NULL ünï");  // array-literal syntax in a name, stored as it is
  EXPECT_EQ(t.metrics[0].value, 2.220446049250313e-16);
  EXPECT_FALSE(t.metrics[0].step.has_value());
  EXPECT_EQ(t.metrics[1].step, std::int64_t{9007199254740993});
  EXPECT_EQ(t.peak_memory_bytes, 81604378624.5);
  EXPECT_EQ(t.malformed_lines, 9007199254740993);
  EXPECT_EQ(t.throughput, 0.1 + 0.2);
  EXPECT_EQ(t.throughput_variance, 1e-300);
  EXPECT_EQ(t.throughput_ci_low, -1.5e-7);
  EXPECT_EQ(t.throughput_ci_high, 123456789.123456789);
  EXPECT_EQ(t.objective, 0.30000000000000004);
  EXPECT_FALSE(t.rung.has_value());
  EXPECT_EQ(t.location, "local");  // the run's, over the one given at start
  EXPECT_EQ(t.worker, "host-a:4242");
  EXPECT_TRUE(t.heartbeat_unix_s.has_value());
  EXPECT_EQ(again->studies().at(0).config_json, "{\"quote\":\"it's \\\\ fine\"}");
  EXPECT_EQ(again->studies().at(0).model_json, "");  // NULL
}

TEST_P(StoreTest, LocationAtStartAndHeartbeats) {
  const std::unique_ptr<StudyStore> store = open();
  EXPECT_FALSE(store->worker_name().empty());
  EXPECT_NE(store->worker_name().find(':'), std::string::npos);  // host:pid
  const std::int64_t study = store->open_study("s", "{}");
  const auto [a, na] = store->begin_trial(study, "{}", [](int) { return StudyStore::LaunchRecord{"{}", "x", "/d", "ssh n1"}; });
  const auto [b, nb] = store->begin_trial(study, "{}", "{}", "x", "/d");
  EXPECT_EQ(store->trial(a).location, "ssh n1");
  EXPECT_EQ(store->trial(b).location, "");
  EXPECT_EQ(store->trial(a).worker, store->worker_name());
  const double first = store->trial(a).heartbeat_unix_s.value();
  EXPECT_GT(first, 1.6e9);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // so that a renewed heartbeat is later
  store->heartbeat({a, b});
  EXPECT_GT(store->trial(a).heartbeat_unix_s.value(), first);  // renewed, not only still there
  EXPECT_TRUE(store->trial(b).heartbeat_unix_s.has_value());
  store->finish_trial(b, completed(0.5));  // a run without a location keeps the stored one (none)
  EXPECT_EQ(store->trial(b).location, "");
  (void)na, (void)nb;
}

// Four writers, each with its own connection, begin trials of one study at once.
TEST_P(StoreTest, ConcurrentWritersGetDistinctTrialNumbers) {
  std::int64_t study = 0;
  {
    const std::unique_ptr<StudyStore> store = open();
    study = store->open_study("shared", "{}");
  }
  constexpr int kWriters = 4, kEach = 25;
  std::vector<std::vector<int>> numbers(kWriters);
  std::vector<std::string> errors(kWriters);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      try {
        const std::unique_ptr<StudyStore> store = open();
        for (int i = 0; i < kEach; ++i) {
          const auto [id, number] = store->begin_trial(study, "{}", "{}", "x", "/d");
          numbers[static_cast<std::size_t>(w)].push_back(number);
          store->finish_trial(id, completed(0.25));
        }
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(w)] = e.what();
      }
    });
  for (std::thread& t : writers) t.join();
  for (const std::string& e : errors) EXPECT_EQ(e, "");
  std::set<int> all;
  for (const auto& n : numbers) all.insert(n.begin(), n.end());
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kWriters * kEach));
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), kWriters * kEach);
  EXPECT_EQ(open()->trials(study).size(), static_cast<std::size_t>(kWriters * kEach));
}

// Several processes' stores opening a new store at once: one creates it, none fails.
TEST_P(StoreTest, ConcurrentCreationOfTheSchema) {
  std::vector<std::string> errors(4);
  std::vector<std::thread> openers;
  for (std::size_t k = 0; k < errors.size(); ++k)
    openers.emplace_back([&, k] {
      try {
        open()->studies();
      } catch (const std::exception& e) {
        errors[k] = e.what();
      }
    });
  for (std::thread& t : openers) t.join();
  for (const std::string& e : errors) EXPECT_EQ(e, "");
}

TEST_P(StoreTest, OneControllerPerStudy) {
  const std::unique_ptr<StudyStore> first = open();
  const std::unique_ptr<StudyStore> second = open();
  {
    const std::unique_ptr<ControllerLock> held = first->lock_controller("main");
    for (StudyStore* store : {first.get(), second.get()}) {
      try {
        const std::unique_ptr<ControllerLock> again = store->lock_controller("main");
        ADD_FAILURE() << "a second controller got the lock";
      } catch (const Error& e) {
        EXPECT_TRUE(contains(e.what(), "another paratune controller")) << e.what();
        EXPECT_TRUE(contains(e.what(), store->locator())) << e.what();
      }
    }
  }
  EXPECT_NO_THROW(second->lock_controller("main"));  // released with the first one's lock
}

TEST_P(StoreTest, RefusesANewerSchema) {
  open()->studies();
  if (GetParam() == "postgres") {
    ::paratune::testing::PostgresServer::execute(locator_, "UPDATE paratune_meta SET value = '5' WHERE key = 'schema_version'");
  } else {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(locator_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=5", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  try {
    (void)open();
    FAIL() << "a newer schema was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "schema version 5 is newer than this paratune's (4)")) << e.what();
    EXPECT_TRUE(contains(e.what(), mask_locator(locator_))) << e.what();
  }
}

TEST(StoreLocator, MasksPasswords) {
  EXPECT_EQ(mask_locator("postgresql://me:s3cr@t@db.example:5433/studies"), "postgresql://me:***@db.example:5433/studies");
  EXPECT_EQ(mask_locator("postgres://me@db/studies"), "postgres://me@db/studies");
  EXPECT_EQ(mask_locator("postgresql://db/studies?sslmode=require&password=hunter2"),
            "postgresql://db/studies?sslmode=require&password=***");
  EXPECT_EQ(mask_locator("postgresql://me:pw@db?password=x&user=y"), "postgresql://me:***@db?password=***&user=y");
  EXPECT_EQ(mask_locator("studies/a:b@c.db"), "studies/a:b@c.db");  // a file path is shown as it is
  EXPECT_TRUE(is_postgres_locator("postgres://x"));
  EXPECT_FALSE(is_postgres_locator("postgresql.db"));
}

TEST(PostgresStudyStore, ConnectionErrorsNameTheLocatorWithoutItsPassword) {
  PARATUNE_NEED_POSTGRES();
  const int port = ::paratune::testing::PostgresServer::instance().port();
  for (const std::string& locator :
       {"postgresql://postgres:sw0rdfish@127.0.0.1:" + std::to_string(port) + "/no_such_database",
        std::string("postgresql://postgres:sw0rdfish@127.0.0.1:1/x?connect_timeout=5")}) {
    try {
      open_store(locator);
      ADD_FAILURE() << locator << " opened";
    } catch (const Error& e) {
      EXPECT_FALSE(contains(e.what(), "sw0rdfish")) << e.what();
      EXPECT_TRUE(contains(e.what(), "postgresql://postgres:***@127.0.0.1:")) << e.what();
      EXPECT_TRUE(contains(e.what(), "cannot connect")) << e.what();
    }
  }
}

TEST(PostgresStudyStore, AnUnknownHostIsAClearError) {
  try {
    open_store("postgresql://nohost:1/x");
    FAIL() << "opened";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "study store postgresql://nohost:1/x: cannot connect")) << e.what();
  }
}

}  // namespace
}  // namespace paratune::store
