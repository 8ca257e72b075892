// `study copy`: SQLite -> PostgreSQL -> SQLite keeps every field of every trial, step and metric;
// a study of the same name in the target is never overwritten. `study delete`: one study and its
// rows go, the others stay, and never while a process runs it.
#include "paratune/store/study_copy.h"

#include "paratune/spec/error.h"
#include "store_test_util.h"

namespace paratune::store {
namespace {

// A file with two studies: trials finished, pruned at a rung, promoted, still running.
void fill(StudyStore& store) {
  store.set_worker_name("copy-host:1");
  const std::int64_t a = store.open_study("search", R"({"space":"a"})");
  const auto [t1, n1] = store.begin_trial(a, R"({"tp":2})", [](int n) {
    return StudyStore::LaunchRecord{"{\"n\":" + std::to_string(n) + "}", "train --tp 2", "/trials/1", "ssh g1"};
  });
  store.set_prediction(t1, R"({"predicted_throughput":1.5})");
  store.finish_trial(t1, completed(0.5));
  const auto [t2, n2] = store.begin_trial(a, R"({"tp":4})", "{}", "train --tp 4", "/trials/2");
  trial::TrialResult pruned = completed(0.25);
  pruned.status = trial::TrialStatus::kFailed;
  pruned.exit_code = 3;
  pruned.reason = "exit code 3";
  pruned.location = "local";
  TrialOutcome outcome{"pruned", "rung 0", 0.75, 0, R"({"bracket":1})", false};
  store.finish_trial(t2, pruned, &outcome);
  store.resume_trial(t2);
  store.finish_trial(t2, completed(0.2), &outcome);
  store.begin_trial(a, R"({"tp":8})", "{}", "train --tp 8", "/trials/3");  // still running
  store.set_model(a, R"({"algorithm":"oppa"})");
  const std::int64_t b = store.open_study("search.retrain.1.8steps", R"({"kind":"retrain"})");
  const auto [t4, n4] = store.begin_trial(b, "{}", "{}", "retrain", "/trials/r");
  store.finish_trial(t4, completed(1.0));
  (void)n1, (void)n2, (void)n4;
}

// Every field but the ids (each store numbers its own rows).
void expect_same(const StudyStore& a, const StudyStore& b) {
  const std::vector<StudyInfo> sa = a.studies(), sb = b.studies();
  ASSERT_EQ(sa.size(), sb.size());
  for (std::size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].name, sb[i].name);
    EXPECT_EQ(sa[i].created_unix_s, sb[i].created_unix_s);
    EXPECT_EQ(sa[i].config_json, sb[i].config_json);
    EXPECT_EQ(sa[i].model_json, sb[i].model_json);
    const std::vector<StoredTrial> ta = a.trials(sa[i].id, true), tb = b.trials(sb[i].id, true);
    ASSERT_EQ(ta.size(), tb.size());
    for (std::size_t k = 0; k < ta.size(); ++k) {
      const StoredTrial& x = ta[k];
      const StoredTrial& y = tb[k];
      SCOPED_TRACE(sa[i].name + " trial " + std::to_string(x.number));
      EXPECT_EQ(x.number, y.number);
      EXPECT_EQ(x.params_json, y.params_json);
      EXPECT_EQ(x.config_json, y.config_json);
      EXPECT_EQ(x.command, y.command);
      EXPECT_EQ(x.dir, y.dir);
      EXPECT_EQ(x.status, y.status);
      EXPECT_EQ(x.started_unix_s, y.started_unix_s);
      EXPECT_EQ(x.ended_unix_s, y.ended_unix_s);
      EXPECT_EQ(x.exit_code, y.exit_code);
      EXPECT_EQ(x.exit_signal, y.exit_signal);
      EXPECT_EQ(x.reason, y.reason);
      EXPECT_EQ(x.stdout_path, y.stdout_path);
      EXPECT_EQ(x.stderr_path, y.stderr_path);
      EXPECT_EQ(x.steps, y.steps);
      EXPECT_EQ(x.throughput, y.throughput);
      EXPECT_EQ(x.throughput_variance, y.throughput_variance);
      EXPECT_EQ(x.throughput_ci_low, y.throughput_ci_low);
      EXPECT_EQ(x.throughput_ci_high, y.throughput_ci_high);
      EXPECT_EQ(x.peak_memory_bytes, y.peak_memory_bytes);
      EXPECT_EQ(x.malformed_lines, y.malformed_lines);
      EXPECT_EQ(x.step_times_s, y.step_times_s);
      EXPECT_EQ(x.step_numbers, y.step_numbers);
      ASSERT_EQ(x.metrics.size(), y.metrics.size());
      for (std::size_t m = 0; m < x.metrics.size(); ++m) {
        EXPECT_EQ(x.metrics[m].name, y.metrics[m].name);
        EXPECT_EQ(x.metrics[m].value, y.metrics[m].value);
        EXPECT_EQ(x.metrics[m].step, y.metrics[m].step);
      }
      EXPECT_EQ(x.prediction_json, y.prediction_json);
      EXPECT_EQ(x.objective, y.objective);
      EXPECT_EQ(x.rung, y.rung);
      EXPECT_EQ(x.hpo_json, y.hpo_json);
      EXPECT_EQ(x.location, y.location);
      EXPECT_EQ(x.worker, y.worker);
      EXPECT_EQ(x.heartbeat_unix_s, y.heartbeat_unix_s);
    }
  }
}

TEST(StudyCopy, SqliteToPostgresAndBackKeepsEveryField) {
  PARATUNE_NEED_POSTGRES();
  const std::unique_ptr<StudyStore> original = open_store(fresh_locator("sqlite"));
  fill(*original);
  ASSERT_EQ(original->trials(original->studies()[0].id, true)[1].step_times_s.size(), 8u);  // two runs
  const std::unique_ptr<StudyStore> shared = open_store(fresh_locator("postgres"));
  const CopySummary there = copy_studies(*original, *shared);
  EXPECT_EQ(there.studies, (std::vector<std::string>{"search", "search.retrain.1.8steps"}));
  EXPECT_EQ(there.trials, 4);
  expect_same(*original, *shared);
  const std::unique_ptr<StudyStore> back = open_store(fresh_file("copy-back.db").string());
  copy_studies(*shared, *back);
  expect_same(*original, *back);

  // Copied again: refused, and nothing is written (one transaction).
  try {
    copy_studies(*original, *shared);
    FAIL() << "a study was overwritten";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already holds a study 'search'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(shared->studies().size(), 2u);
}

TEST(StudyCopy, OneStudyByName) {
  const std::unique_ptr<StudyStore> from = open_store(fresh_locator("sqlite"));
  fill(*from);
  const std::unique_ptr<StudyStore> to = open_store(fresh_file("one.db").string());
  EXPECT_EQ(copy_studies(*from, *to, "search.retrain.1.8steps").trials, 1);
  ASSERT_EQ(to->studies().size(), 1u);
  EXPECT_EQ(to->studies()[0].name, "search.retrain.1.8steps");
  try {
    copy_studies(*from, *to, "serach");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'search'"), std::string::npos) << e.what();
  }
}

TEST(StudyCopy, OneStudyUnderAnotherName) {
  const std::unique_ptr<StudyStore> from = open_store(fresh_locator("sqlite"));
  fill(*from);
  const std::unique_ptr<StudyStore> to = open_store(fresh_file("renamed.db").string());
  const CopySummary copied = copy_studies(*from, *to, "search", "search-2026");
  EXPECT_EQ(copied.studies, std::vector<std::string>{"search-2026"});
  EXPECT_EQ(copied.trials, 3);
  ASSERT_EQ(to->studies().size(), 1u);
  EXPECT_EQ(to->studies()[0].name, "search-2026");
  EXPECT_EQ(to->trials(to->studies()[0].id, true).size(), 3u);
  // Into the same store too: a study beside its original.
  copy_studies(*from, *from, "search", "search-copy");
  EXPECT_EQ(from->studies().size(), 3u);
  EXPECT_THROW(copy_studies(*from, *to, "", "all-of-them"), Error);  // several studies, one name
}

class StudyDelete : public StoreTest {};

TEST_P(StudyDelete, TakesOneStudyWithItsRowsAndLeavesTheOthers) {
  const std::unique_ptr<StudyStore> store = open();
  fill(*store);
  const std::int64_t kept_id = store->studies()[1].id;
  // Not while a process runs it: the controller lock (a worker's share blocks it the same way).
  {
    const std::unique_ptr<ControllerLock> running = store->lock_worker("search");
    const std::unique_ptr<StudyStore> other = open();
    try {
      delete_study(*other, "search");
      FAIL() << "deleted a study a worker runs";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("running"), std::string::npos) << e.what();
    }
    EXPECT_EQ(other->studies().size(), 2u);
  }
  EXPECT_EQ(delete_study(*store, "search"), 3);
  const std::vector<StudyInfo> left = store->studies();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].name, "search.retrain.1.8steps");
  EXPECT_EQ(store->trials(kept_id, true).size(), 1u);
  EXPECT_EQ(store->trials(kept_id, true)[0].step_times_s.size(), 4u);  // its steps untouched
  // The name is free again, and a new study of it starts from trial 1 with no old rows.
  const std::int64_t again = store->open_study("search", R"({"space":"b"})");
  EXPECT_TRUE(store->trials(again).empty());
  EXPECT_EQ(store->begin_trial(again, "{}", "{}", "train", "/t").second, 1);
  try {
    delete_study(*store, "serach");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown study 'serach' (did you mean 'search'?)"), std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, StudyDelete, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace paratune::store
