// The ended trials' outputs a store keeps between reads (store/output_cache.h): which trials it
// answers from memory, and that every way a trial's outputs change makes it read them again -- in
// the cache alone, then through both stores with a second store (another worker) writing (StoreTest
// is instantiated for both stores in study_store_test.cc).
#include "paratune/store/output_cache.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <functional>

#include "store_test_util.h"

namespace paratune::store {
namespace {

StoredTrial ended_trial(std::int64_t id, double ended_unix_s) {
  StoredTrial t;
  t.id = id;
  t.number = static_cast<int>(id);
  t.status = "completed";
  t.started_unix_s = 100;
  t.ended_unix_s = ended_unix_s;
  t.steps = 2;
  t.step_numbers = {1, 2};
  t.step_times_s = {0.5, 0.25};
  t.metrics = {{"loss", 1.5, 2, std::nullopt}};
  return t;
}

// The row alone, as a store reads it before its outputs.
StoredTrial row_of(StoredTrial t) {
  t.step_numbers.clear();
  t.step_times_s.clear();
  t.metrics.clear();
  return t;
}

TEST(OutputCache, AnswersForEndedTrialsWhoseRowIsUnchanged) {
  OutputCache cache;
  std::vector<StoredTrial> rows{row_of(ended_trial(1, 101)), row_of(ended_trial(2, 102))};
  rows[1].status = "running";
  rows[1].ended_unix_s = 0;
  std::vector<StoredTrial*> to_read = cache.fill(rows);
  ASSERT_EQ(to_read.size(), 2u);  // nothing kept yet
  rows[0] = ended_trial(1, 101);   // as the store reads them
  rows[1].step_numbers = {1};
  cache.keep(to_read);
  EXPECT_EQ(cache.size(), 1u);  // the running trial is not kept

  std::vector<StoredTrial> again{row_of(ended_trial(1, 101)), rows[1]};
  again[1].step_numbers.clear();
  to_read = cache.fill(again);
  ASSERT_EQ(to_read.size(), 1u);
  EXPECT_EQ(to_read[0]->id, 2);  // the running one is read again
  EXPECT_EQ(again[0].step_numbers, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(again[0].step_times_s, (std::vector<double>{0.5, 0.25}));
  ASSERT_EQ(again[0].metrics.size(), 1u);
  EXPECT_EQ(again[0].metrics[0].name, "loss");
}

TEST(OutputCache, AnyChangeOfTheRowsRunFieldsMeansReadingAgain) {
  const std::vector<std::function<void(StoredTrial&)>> changes{
      [](StoredTrial& t) { t.status = "pruned"; },           [](StoredTrial& t) { t.status = "running"; },
      [](StoredTrial& t) { t.ended_unix_s = 105; },          [](StoredTrial& t) { t.started_unix_s = 99; },
      [](StoredTrial& t) { t.steps = 3; },                   [](StoredTrial& t) { t.objective = 0.5; },
      [](StoredTrial& t) { t.hpo_json = R"({"runs":2})"; }, [](StoredTrial& t) { t.number = 7; }};
  for (std::size_t i = 0; i < changes.size(); ++i) {
    OutputCache cache;
    std::vector<StoredTrial> rows{row_of(ended_trial(1, 101))};
    std::vector<StoredTrial*> to_read = cache.fill(rows);
    rows[0] = ended_trial(1, 101);
    cache.keep(to_read);
    std::vector<StoredTrial> changed{row_of(ended_trial(1, 101))};
    changes[i](changed[0]);
    EXPECT_EQ(cache.fill(changed).size(), 1u) << "change " << i;
    EXPECT_TRUE(changed[0].step_numbers.empty()) << "change " << i;
  }
}

// Every way a trial's outputs change, written by one store while another reads the study.
TEST_P(StoreTest, AReaderSeesEveryChangeOfATrialsOutputs) {
  const std::unique_ptr<StudyStore> writer = open();
  const std::unique_ptr<StudyStore> reader = open();
  writer->set_worker_name("w1");
  const std::int64_t study = writer->open_study("s", "{}");
  const auto propose = [](const std::vector<StoredTrial>&, int number) -> std::optional<StudyStore::NewTrial> {
    return StudyStore::NewTrial{fmt::format(R"({{"a":{}}})", number), {"{}", "cmd", "/tmp/t", ""}, std::nullopt};
  };
  const std::int64_t id = writer->claim_trial(study, 60, propose, false).claimed->first;
  EXPECT_TRUE(reader->trials(study, true).at(0).step_numbers.empty());  // running, nothing yet
  // A second trial that ends now and never changes: later reads read only the first's outputs.
  const std::int64_t other = writer->claim_trial(study, 60, propose, false).claimed->first;
  ASSERT_TRUE(writer->finish_own_trial(other, completed(0.75)));
  EXPECT_EQ(reader->trials(study, true).at(1).step_numbers.size(), 4u);

  // It rests at a rung: 4 steps.
  TrialOutcome rest;
  rest.status = "pruned";
  rest.rung = 0;
  rest.objective = 2.5;
  rest.hpo_json = R"({"runs":1})";
  ASSERT_TRUE(writer->finish_own_trial(id, completed(0.5), &rest));
  EXPECT_EQ(reader->trials(study, true).at(0).step_numbers.size(), 4u);
  EXPECT_EQ(reader->trials(study, true).at(0).step_numbers.size(), 4u);  // again, unchanged

  // Promoted: its next run adds 4 steps and a metric.
  const auto resume = [&](const std::vector<StoredTrial>&, int) -> std::optional<StudyStore::NewTrial> {
    StudyStore::NewTrial r;
    r.resume = id;
    return r;
  };
  ASSERT_TRUE(writer->claim_trial(study, 60, resume, false).claimed);
  EXPECT_EQ(reader->trials(study, true).at(0).status, "running");
  trial::TrialResult second = completed(0.25);
  second.started_unix_s = 102;
  second.ended_unix_s = 103;
  rest.hpo_json = R"({"runs":2})";
  ASSERT_TRUE(writer->finish_own_trial(id, second, &rest));
  StoredTrial seen = reader->trials(study, true).at(0);
  EXPECT_EQ(seen.step_numbers.size(), 8u);
  EXPECT_EQ(seen.metrics.size(), 2u);

  // Promoted again, restarting from step 0: its outputs are replaced.
  ASSERT_TRUE(writer->claim_trial(study, 60, resume, false).claimed);
  trial::TrialResult restarted = completed(0.125);
  restarted.started_unix_s = 104;
  restarted.ended_unix_s = 105;
  restarted.output.steps.resize(2);
  restarted.output.metrics = {{"loss", 0.75, 2, std::nullopt}};
  TrialOutcome done;
  done.status = "completed";
  done.objective = 0.75;
  done.hpo_json = R"({"runs":3})";
  done.replace_output = true;
  ASSERT_TRUE(writer->finish_own_trial(id, restarted, &done));
  seen = reader->trials(study, true).at(0);
  EXPECT_EQ(seen.step_numbers, (std::vector<std::int64_t>{1, 2}));
  ASSERT_EQ(seen.metrics.size(), 1u);
  EXPECT_EQ(seen.metrics[0].value, 0.75);
  // The claim's view (with outputs) agrees.
  std::vector<StoredTrial> in_claim;
  (void)reader->claim_trial(
      study, 60,
      [&](const std::vector<StoredTrial>& all, int) -> std::optional<StudyStore::NewTrial> {
        in_claim = all;
        return std::nullopt;
      },
      true);
  ASSERT_EQ(in_claim.size(), 2u);
  EXPECT_EQ(in_claim[0].step_numbers, seen.step_numbers);
  EXPECT_EQ(in_claim[0].metrics.size(), 1u);
  EXPECT_EQ(in_claim[1].step_times_s, reader->trials(study, true).at(1).step_times_s);
  EXPECT_EQ(in_claim[1].step_times_s.size(), 4u);
}

// The point of the cache: an ended trial's outputs are read from the database once. Shown by
// deleting them behind the store's back (SQLite): the store still has them; a new store does not.
TEST(SqliteOutputCache, AnEndedTrialsOutputsAreReadOnce) {
  const std::string path = fresh_file("output_cache_read_once.db").string();
  const std::unique_ptr<StudyStore> store = open_store(path);
  const std::int64_t study = store->open_study("s", "{}");
  const std::int64_t id =
      store->begin_trial(study, R"({"a":1})", [](int) { return StudyStore::LaunchRecord{"{}", "cmd", "/tmp/t", ""}; })
          .first;
  store->finish_trial(id, completed(0.5));
  ASSERT_EQ(store->trials(study, true).at(0).step_numbers.size(), 4u);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DELETE FROM steps; DELETE FROM metrics;", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(store->trials(study, true).at(0).step_numbers.size(), 4u);
  EXPECT_TRUE(open_store(path)->trials(study, true).at(0).step_numbers.empty());
}

}  // namespace
}  // namespace paratune::store
