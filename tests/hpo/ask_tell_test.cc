// In-process trials (hpo/ask_tell.h) on an SQLite store: what is stored, what the pruner sees, how a
// study resumes. The Python module's tests (tests/python/test_tune.py) run the same class end to end.
#include "paratune/hpo/ask_tell.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <set>
#include <thread>

#include "../support/test_files.h"
#include "paratune/hpo/study.h"
#include "paratune/report/study_data.h"
#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/store/sqlite_store.h"

namespace paratune::hpo {
namespace {

const char* kSpace = "parameters:\n  x: {type: float, low: 0, high: 1}\n  n: [1, 2, 3]\n";

struct Parts {
  Space space = Space::parse(kSpace, "space.yaml");
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<Pruner> pruner;
  PrunerKind pruner_kind;
  explicit Parts(PrunerKind kind = PrunerKind::kMedian) : pruner_kind(kind) {
    sampler = make_sampler(SamplerKind::kRandom, space, {.direction = Direction::kMinimize, .seed = 7});
    PrunerOptions po;
    po.max_resource = 10;
    po.startup_trials = 2;
    pruner = make_pruner(kind, po);
  }
  // A study on these parts.
  std::unique_ptr<AskTellStudy> study(store::StudyStore& store, AskTellOptions options = {}) {
    return std::make_unique<AskTellStudy>(space, std::move(options), store, *sampler, *pruner, pruner_kind);
  }
};

// Each test: a fresh directory named after it, an SQLite store in it, and the parts of a study.
class AskTell : public ::testing::Test {
 protected:
  std::filesystem::path dir_ = paratune::testing::fresh_test_dir(
      "ask_tell", ::testing::UnitTest::GetInstance()->current_test_info()->name());
  store::SqliteStudyStore store_{dir_ / "s.db"};
  Parts parts_;
};

TEST_F(AskTell, StoresCurvesValuesAndThroughputAsAStudyOfItsOwnKind) {
  const auto study_ptr = parts_.study(store_, {.name = "py", .objective = "loss", .steps = 10});
  AskTellStudy& study = *study_ptr;
  const auto a = study.ask();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->number, 1);
  for (int step = 0; step < 10; ++step) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a step time the throughput estimate takes as real
    study.report(a->number, step, 1.0 / (step + 1));
  }
  study.report_metric(a->number, "accuracy", 0.9);
  EXPECT_FALSE(study.should_prune(a->number));
  const store::StoredTrial done = study.tell(a->number, {});
  EXPECT_EQ(done.status, "completed");
  ASSERT_TRUE(done.objective);
  EXPECT_DOUBLE_EQ(*done.objective, 0.1);  // no value told: the last reported
  EXPECT_EQ(done.steps, 10);
  EXPECT_TRUE(done.throughput);
  EXPECT_EQ(done.location, "in-process");
  const std::vector<store::StoredTrial> all = study.trials();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].metrics.size(), 11u);
  EXPECT_EQ(all[0].metrics.back().name, "accuracy");
  EXPECT_EQ(all[0].metrics.back().step, 9);  // the last report's step
  const auto identity = nlohmann::json::parse(store_.studies()[0].config_json);
  EXPECT_EQ(identity["kind"], "hpo");
  EXPECT_EQ(identity["objective"], "loss");
  EXPECT_EQ(identity["steps"], 10);
}

TEST_F(AskTell, TheMedianPrunerStopsATrialWorseThanTheOthers) {
  const auto study_ptr = parts_.study(store_);
  AskTellStudy& study = *study_ptr;
  for (int t = 0; t < 2; ++t) {  // two good trials complete (startup_trials 2)
    const auto a = study.ask();
    for (int step = 0; step < 10; ++step) study.report(a->number, step, 1.0);
    study.tell(a->number, {.kind = TrialEnd::Kind::kCompleted, .value = 1.0});
  }
  const auto bad = study.ask();
  study.report(bad->number, 0, 50.0);
  EXPECT_TRUE(study.should_prune(bad->number));
  const store::StoredTrial pruned = study.tell(bad->number, {.kind = TrialEnd::Kind::kPruned});
  EXPECT_EQ(pruned.status, "pruned");
  EXPECT_EQ(pruned.reason, "stopped by the median pruner at step 0 (value 50)");
  ASSERT_TRUE(pruned.objective);
  EXPECT_DOUBLE_EQ(*pruned.objective, 50.0);
  const auto best = study.best();
  ASSERT_TRUE(best);
  EXPECT_DOUBLE_EQ(*best->objective, 1.0);
}

TEST_F(AskTell, AProgramsOwnStopSaysWhereItStopped) {
  const auto study_ptr = parts_.study(store_);
  AskTellStudy& study = *study_ptr;
  const auto a = study.ask();
  EXPECT_EQ(study.tell(a->number, {.kind = TrialEnd::Kind::kPruned}).reason,
            "the program stopped it before its first report");
  const auto b = study.ask();
  study.report(b->number, 4, 1.0);
  EXPECT_EQ(study.tell(b->number, {.kind = TrialEnd::Kind::kPruned}).reason, "the program stopped it after step 4");
}

TEST_F(AskTell, ReportsAreChecked) {
  const auto study_ptr = parts_.study(store_);
  AskTellStudy& study = *study_ptr;
  const auto a = study.ask();
  EXPECT_TRUE(study.report(a->number, 3, 1.0));
  EXPECT_FALSE(study.report(a->number, 3, 2.0));  // reported again: ignored, as Optuna does
  EXPECT_TRUE(study.report(a->number, 1, 2.0));   // before the last: kept, as Optuna does
  EXPECT_FALSE(study.report(a->number, 1, 3.0));
  EXPECT_THROW(study.report(a->number, -1, 1.0), Error);
  EXPECT_THROW(study.report(a->number, 4, std::nan("")), Error);
  EXPECT_THROW(study.report(99, 0, 1.0), Error);
  EXPECT_THROW(study.report_metric(a->number, "value", 1.0), Error);  // the objective
  const store::StoredTrial failed = study.tell(a->number, {.kind = TrialEnd::Kind::kCompleted, .value = std::nan("")});
  EXPECT_EQ(failed.status, "failed");
  EXPECT_EQ(failed.reason, "its value nan is not a finite number");
  std::vector<std::pair<std::int64_t, double>> curve;
  for (const trial::MetricReport& m : failed.metrics)
    if (m.name == "value") curve.emplace_back(m.step.value_or(-1), m.value);
  EXPECT_EQ(curve, (std::vector<std::pair<std::int64_t, double>>{{1, 2.0}, {3, 1.0}}));  // in step order
  EXPECT_THROW(study.tell(a->number, {}), Error);  // told twice
}

TEST_F(AskTell, FailuresTeachTheSamplerAndRefusalsAreDeterministic) {
  const auto study_ptr = parts_.study(store_);
  AskTellStudy& study = *study_ptr;
  const auto a = study.ask();
  const store::StoredTrial refused =
      study.tell(a->number, {.kind = TrialEnd::Kind::kFailed, .reason = "ValueError: no"});
  EXPECT_EQ(refused.status, "failed");
  EXPECT_EQ(refused.reason, "ValueError: no");
  EXPECT_EQ(record_of(refused, "value").failure, trial::FailureKind::kRefused);
  const auto b = study.ask();
  study.report(b->number, 0, 1.0);
  const store::StoredTrial oom = study.tell(b->number, {.kind = TrialEnd::Kind::kOutOfMemory, .reason = "MemoryError"});
  EXPECT_EQ(oom.status, "oom");
  EXPECT_EQ(record_of(oom, "value").failure, trial::FailureKind::kOom);
}

TEST_F(AskTell, AStudyResumesInterruptedTrialsFirstAndRefusesAnotherIdentity) {
  Config left;
  {
    const auto first = parts_.study(store_);
    const auto a = first->ask();
    first->tell(a->number, {.kind = TrialEnd::Kind::kCompleted, .value = 2.0});
    const auto b = first->ask();  // never told: interrupted when the study closes
    left = b->config;
    // A controller (`paratune tune`) is refused while it lives; other ask/tell studies may join.
    EXPECT_THROW((void)store_.lock_controller("main"), Error);
  }
  EXPECT_EQ(store_.trials(store_.studies()[0].id)[1].status, "interrupted");
  Parts parts;
  const auto resumed = parts.study(store_);
  EXPECT_EQ(resumed->reused(), 1);
  EXPECT_EQ(resumed->requeued(), 1);
  const auto again = resumed->ask();
  EXPECT_EQ(again->number, 3);
  EXPECT_EQ(again->config, left);
  resumed->tell(again->number, {.kind = TrialEnd::Kind::kCompleted, .value = 1.0});

  Parts changed;
  changed.space = Space::parse("parameters:\n  x: {type: float, low: 0, high: 2}\n  n: [1, 2, 3]\n", "space.yaml");
  changed.sampler = make_sampler(SamplerKind::kRandom, changed.space, {});
  EXPECT_THROW(changed.study(store_, {.name = "main"}), Error);
}

// Optuna's distributed optimization: several processes run one study (here two stores on one file,
// as two processes hold them). The grid is shared: what one asks, the other does not ask again.
TEST_F(AskTell, TwoProcessesShareOneStudyTheirTrialsAndItsNumbers) {
  const Space grid_space = Space::parse("parameters:\n  n: [1, 2, 3, 4]\n", "space.yaml");
  store::SqliteStudyStore other_store(dir_ / "s.db");
  other_store.set_worker_name("other-host:1");
  const std::unique_ptr<Sampler> grid_a = make_sampler(SamplerKind::kGrid, grid_space, {});
  const std::unique_ptr<Sampler> grid_b = make_sampler(SamplerKind::kGrid, grid_space, {});
  const std::unique_ptr<Pruner> none = make_pruner(PrunerKind::kNone, {.max_resource = 10});
  AskTellStudy a(grid_space, {.name = "g"}, store_, *grid_a, *none, PrunerKind::kNone);
  AskTellStudy b(grid_space, {.name = "g"}, other_store, *grid_b, *none, PrunerKind::kNone);
  std::set<int> numbers;
  std::set<std::string> configs;
  for (AskTellStudy* s : {&a, &b, &a, &b}) {
    const auto asked = s->ask();
    ASSERT_TRUE(asked);
    numbers.insert(asked->number);
    configs.insert(asked->config.dump());
  }
  EXPECT_EQ(numbers, (std::set<int>{1, 2, 3, 4}));
  EXPECT_EQ(configs.size(), 4U) << "the two processes asked the same grid point";
  EXPECT_FALSE(a.ask()) << "every grid point is taken (running in one process or the other)";
  for (const int n : {1, 3}) a.tell(n, {.kind = TrialEnd::Kind::kCompleted, .value = 1.0 * n});
  for (const int n : {2, 4}) b.tell(n, {.kind = TrialEnd::Kind::kCompleted, .value = 1.0 * n});
  EXPECT_EQ(a.best()->number, 1);
  EXPECT_EQ(b.trials().size(), 4U);
}

// TPE in one process proposes from the trials the other finished.
TEST_F(AskTell, ASamplerLearnsFromTheOtherProcessesTrials) {
  store::SqliteStudyStore other_store(dir_ / "s.db");
  const std::unique_ptr<Pruner> none = make_pruner(PrunerKind::kNone, {.max_resource = 10});
  AskTellStudy a({.name = "d"}, store_, SamplerKind::kTpe, {.seed = 1, .startup_trials = 5}, *none, PrunerKind::kNone);
  AskTellStudy b({.name = "d"}, other_store, SamplerKind::kTpe, {.seed = 2, .startup_trials = 5}, *none,
                 PrunerKind::kNone);
  Distribution x;
  x.param = {.name = "x", .type = ParamType::kFloat, .low = 0, .high = 1};
  for (int i = 0; i < 6; ++i) {
    const auto asked = a.ask();
    const double v = a.suggest(asked->number, x).get<double>();
    a.tell(asked->number, {.kind = TrialEnd::Kind::kCompleted, .value = v});
  }
  const auto asked = b.ask();
  EXPECT_EQ(asked->number, 7);
  const nlohmann::json notes = nlohmann::json::parse(store_.trials(b.study_id()).back().prediction_json);
  EXPECT_EQ(notes.value("startup", true), false) << notes.dump();
  EXPECT_EQ(notes.value("observed", 0), 6) << notes.dump();
}

// A process that stops renewing its heartbeats (it died, or hangs) loses its running trial to the
// others: interrupted, and its configuration asked again first. Its late tell writes nothing.
TEST_F(AskTell, ATrialOfAProcessSilentPastTheTimeoutIsAskedAgain) {
  store::SqliteStudyStore other_store(dir_ / "s.db");
  other_store.set_worker_name("other-host:1");
  Parts parts_b;
  AskTellStudy a(parts_.space, {.name = "h", .heartbeat_s = 0.05, .heartbeat_timeout_s = 0.3}, store_,
                 *parts_.sampler, *parts_.pruner, parts_.pruner_kind);
  AskTellStudy silent(parts_b.space, {.name = "h", .heartbeat_s = 50, .heartbeat_timeout_s = 100}, other_store,
                      *parts_b.sampler, *parts_b.pruner, parts_b.pruner_kind);
  const auto lost = silent.ask();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  const auto again = a.ask();
  EXPECT_EQ(again->config, lost->config);
  const store::StoredTrial late = silent.tell(lost->number, {.kind = TrialEnd::Kind::kCompleted, .value = 1.0});
  EXPECT_EQ(late.status, "interrupted");
  EXPECT_NE(late.reason.find("other-host:1 sent no heartbeat"), std::string::npos) << late.reason;
  // A live process's trial is not taken: a's heartbeats keep its running trial.
  store::SqliteStudyStore third_store(dir_ / "s.db");
  third_store.set_worker_name("third-host:1");
  Parts parts_c;
  AskTellStudy c(parts_c.space, {.name = "h", .heartbeat_s = 0.05, .heartbeat_timeout_s = 0.3}, third_store,
                 *parts_c.sampler, *parts_c.pruner, parts_c.pruner_kind);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  (void)c.ask();
  EXPECT_EQ(store_.trial(store_.trials(a.study_id())[again->number - 1].id).status, "running");
}

// A define-by-run trial's parameters reach the store a second after they are asked for, long before
// the next heartbeat: a trial whose process dies keeps what it had asked for.
TEST_F(AskTell, ADefineByRunTrialsParametersAreStoredWhileItRuns) {
  const std::unique_ptr<Pruner> none = make_pruner(PrunerKind::kNone, {.max_resource = 10});
  AskTellStudy study({.name = "p", .heartbeat_s = 60, .heartbeat_timeout_s = 120}, store_, SamplerKind::kRandom,
                     {.seed = 3}, *none, PrunerKind::kNone);
  const auto t = study.ask();
  Distribution x;
  x.param = {.name = "x", .type = ParamType::kFloat, .low = 0, .high = 1};
  const nlohmann::json value = study.suggest(t->number, x);
  const auto stored = [&] { return nlohmann::json::parse(store_.trials(study.study_id()).front().params_json); };
  for (int i = 0; i < 250 && stored().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(stored(), (nlohmann::json{{"x", value}}));
  EXPECT_EQ(store_.trials(study.study_id()).front().status, "running");
}

// A define-by-run study has no space in its identity: reports take the one its trials revealed (each
// parameter's widest bounds; one asked as two types, or under a name a space cannot hold, left out).
TEST_F(AskTell, ADefineByRunStudysReportsUseTheSpaceItsTrialsRevealed) {
  const std::unique_ptr<Pruner> none = make_pruner(PrunerKind::kNone, {.max_resource = 10});
  AskTellStudy study({.name = "r"}, store_, SamplerKind::kRandom, {.seed = 3}, *none, PrunerKind::kNone);
  const auto ask_for = [](const std::string& name, ParamType type, double low, double high, bool log = false) {
    Distribution d;
    d.param = {.name = name, .type = type, .low = low, .high = high, .log = log};
    return checked_distribution(d, "suggest('" + name + "')");
  };
  Distribution kind;
  kind.param = {.name = "kind", .type = ParamType::kCategorical};
  for (int i = 0; i < 12; ++i) {
    const auto t = study.ask();
    const double x = study.suggest(t->number, ask_for("x", ParamType::kFloat, 0, i < 6 ? 1 : 2)).get<double>();
    if (i % 2 == 0) (void)study.suggest(t->number, ask_for("depth", ParamType::kInt, 1, 64, true));
    kind.param.choices = i < 6 ? std::vector<nlohmann::json>{"a", "b"} : std::vector<nlohmann::json>{"a", "c"};
    (void)study.suggest(t->number, kind);
    (void)study.suggest(t->number, ask_for("two types", ParamType::kFloat, 0, 1));
    (void)study.suggest(t->number, ask_for("w", i == 0 ? ParamType::kInt : ParamType::kFloat, 0, 1));
    (void)study.suggest(t->number, ask_for("fixed", ParamType::kFloat, 3, 3));  // one value: nothing to show
    study.tell(t->number, {.kind = TrialEnd::Kind::kCompleted, .value = x * x});
  }
  const std::vector<ParamSpec> space = revealed_parameters(store_.trials(study.study_id()));
  ASSERT_EQ(space.size(), 3U);
  EXPECT_EQ(space[0].name, "x");
  EXPECT_EQ(space[0].high, 2);
  EXPECT_EQ(space[1].name, "depth");
  EXPECT_TRUE(space[1].log);
  EXPECT_EQ(space[2].choices, (std::vector<nlohmann::json>{"a", "b", "c"}));
  const nlohmann::ordered_json data = study_data(store_, store_.studies()[0]);
  EXPECT_EQ(data["parameters"]["depth"]["log"], true) << data["parameters"].dump();
  ASSERT_FALSE(data["importance"].empty()) << data.dump();
  EXPECT_EQ(data["importance"][0]["parameter"], "x") << data["importance"].dump();
}

TEST_F(AskTell, PrunersThatRestTrialsAreRefused) {
  Parts parts(PrunerKind::kAsha);
  try {
    parts.study(store_);
    FAIL() << "asha was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pruner"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rests trials at rungs"), std::string::npos) << e.what();
  }
}

// OPPA's early termination judges step times paratune measures of a command's trials; an in-process
// objective has none, so the pruner would never stop anything: refused, not silently idle.
TEST_F(AskTell, TheOppaPrunerIsRefused) {
  Parts parts(PrunerKind::kOppa);
  try {
    parts.study(store_);
    FAIL() << "oppa was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("judges a trial's throughput from the step times"), std::string::npos)
        << e.what();
  }
}

// Define-by-run (Optuna's way): no space in advance.
Distribution distribution(const std::string& name, ParamType type, double low, double high, double step = 0,
                          bool log = false) {
  Distribution d;
  d.param.name = name;
  d.param.type = type;
  d.param.low = low;
  d.param.high = high;
  d.param.log = log;
  d.step = step;
  return checked_distribution(d, fmt::format("suggest('{}')", name));
}

Distribution categorical(const std::string& name, std::vector<nlohmann::json> choices) {
  Distribution d;
  d.param.name = name;
  d.param.type = ParamType::kCategorical;
  d.param.choices = std::move(choices);
  return checked_distribution(d, fmt::format("suggest('{}')", name));
}

std::unique_ptr<Pruner> median_pruner() {
  PrunerOptions po;
  po.max_resource = 10;
  return make_pruner(PrunerKind::kMedian, po);
}

// Parameters in a branch, and a bound set by an earlier value: each trial stores what it asked for,
// with its distributions, and a reopened study reads them back.
TEST_F(AskTell, DefineByRunStoresWhatEachTrialAskedFor) {
  const std::unique_ptr<Pruner> pruner = median_pruner();
  const auto run = [&](int trials) {
    AskTellStudy study({.name = "dbr"}, store_, SamplerKind::kTpe, {.seed = 3}, *pruner, PrunerKind::kMedian);
    EXPECT_TRUE(study.define_by_run());
    for (int t = 0; t < trials; ++t) {
      const auto a = study.ask();
      ASSERT_TRUE(a);
      EXPECT_TRUE(a->config.empty());  // nothing decided before it is asked for
      const std::string kind = study.suggest(a->number, categorical("kind", {"a", "b"})).get<std::string>();
      double x = 1;
      if (kind == "a") x = study.suggest(a->number, distribution("x", ParamType::kFloat, 0, 2)).get<double>();
      const double y = study.suggest(a->number, distribution("y", ParamType::kFloat, 0, x)).get<double>();
      EXPECT_LE(y, x);
      // Asked again in the trial: the value it got.
      EXPECT_EQ(study.suggest(a->number, distribution("y", ParamType::kFloat, 0, x)).get<double>(), y);
      EXPECT_THROW(study.suggest(a->number, distribution("y", ParamType::kInt, 0, 3)), Error);
      const std::int64_t n = study.suggest(a->number, distribution("n", ParamType::kInt, 0, 100, 25)).get<std::int64_t>();
      EXPECT_EQ(n % 25, 0);
      study.tell(a->number, {.value = x + y + static_cast<double>(n)});
    }
  };
  run(12);
  run(3);  // reopened: numbering and the stored distributions go on
  const std::vector<store::StoredTrial> all = store_.trials(store_.studies()[0].id);
  ASSERT_EQ(all.size(), 15u);
  std::set<std::string> kinds;
  for (const store::StoredTrial& t : all) {
    const auto params = nlohmann::json::parse(t.params_json);
    const auto state = nlohmann::json::parse(t.hpo_json);
    kinds.insert(params["kind"].get<std::string>());
    EXPECT_EQ(params.contains("x"), params["kind"] == "a") << t.params_json;
    EXPECT_EQ(state["distributions"].contains("x"), params.contains("x")) << t.hpo_json;
    EXPECT_DOUBLE_EQ(state["distributions"]["y"]["high"].get<double>(), params.value("x", 1.0)) << t.hpo_json;
    EXPECT_EQ(state["distributions"]["n"]["step"], 25);
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"a", "b"}));
  const auto identity = nlohmann::json::parse(store_.studies()[0].config_json);
  EXPECT_FALSE(identity.contains("space"));
  EXPECT_TRUE(identity.contains("space_by"));
}

TEST_F(AskTell, DistributionsAreCheckedAsOptunaChecksThem) {
  // high moves down onto the step grid.
  EXPECT_DOUBLE_EQ(distribution("b", ParamType::kFloat, 0.1, 1.05, 0.2).param.high, 0.9);
  EXPECT_EQ(distribution("i", ParamType::kInt, 1, 10).step, 1);
  const auto refused = [](const std::function<void()>& f, const std::string& part) {
    try {
      f();
      ADD_FAILURE() << "accepted: " << part;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  refused([] { distribution("x", ParamType::kFloat, 2, 1); }, "suggest('x'): low 2 must not be above high 1");
  refused([] { distribution("x", ParamType::kFloat, 0.1, 1, 0.1, true); }, "cannot be used together");
  refused([] { distribution("x", ParamType::kFloat, 0, 1, 0, true); }, "must be above 0 with log=True");
  refused([] { distribution("n", ParamType::kInt, 0, 4, 1.5); }, "step 1.5 must be a whole number");
  refused([] { categorical("c", {}); }, "choices must not be empty");
  const std::unique_ptr<Pruner> pruner = median_pruner();
  refused([&] { AskTellStudy({.name = "g"}, store_, SamplerKind::kGrid, {}, *pruner, PrunerKind::kMedian); },
          "needs the space in advance");
}

// enqueue (Optuna's enqueue_trial): the next trial takes the values that fit what it asks for.
TEST_F(AskTell, DefineByRunEnqueuedValuesAreTakenWhereTheyFit) {
  const std::unique_ptr<Pruner> pruner = median_pruner();
  AskTellStudy study({.name = "q"}, store_, SamplerKind::kTpe, {.seed = 2}, *pruner, PrunerKind::kMedian);
  study.enqueue({{"x", 0.25}, {"n", 40}, {"c", "b"}}, {{"why", "known good"}});
  study.enqueue({{"x", 7.0}, {"n", 41}});  // x out of bounds, n off the grid: drawn as usual
  const auto ask = [&](double& x, std::int64_t& n, std::string& c) {
    const auto a = study.ask();
    x = study.suggest(a->number, distribution("x", ParamType::kFloat, 0, 1)).get<double>();
    n = study.suggest(a->number, distribution("n", ParamType::kInt, 0, 100, 20)).get<std::int64_t>();
    c = study.suggest(a->number, categorical("c", {"a", "b"})).get<std::string>();
    return study.tell(a->number, {.value = x});
  };
  double x = 0;
  std::int64_t n = 0;
  std::string c;
  const store::StoredTrial first = ask(x, n, c);
  EXPECT_EQ(x, 0.25);
  EXPECT_EQ(n, 40);
  EXPECT_EQ(c, "b");
  EXPECT_EQ(nlohmann::json::parse(first.hpo_json)["user_attrs"]["why"], "known good");
  ask(x, n, c);
  EXPECT_NE(x, 7.0);
  EXPECT_EQ(n % 20, 0);
}

// ASHA in a define-by-run study: a trial is judged once at each rung it completes, Optuna's way.
TEST_F(AskTell, DefineByRunAshaStopsATrialOutsideTheTopAtItsRung) {
  PrunerOptions po;
  po.max_resource = 9;
  po.min_resource = 1;  // rungs 1, 3, 9
  const std::unique_ptr<Pruner> asha = make_pruner(PrunerKind::kAsha, po);
  EXPECT_THROW(AskTellStudy({.name = "a0"}, store_, SamplerKind::kRandom, {}, *asha, PrunerKind::kAsha), OptionError);
  AskTellStudy study({.name = "a", .steps = 9}, store_, SamplerKind::kRandom, {}, *asha, PrunerKind::kAsha);
  // Reports `level` at steps 0 .. steps - 1, asking should_prune after each; whether it said stop.
  const auto run = [&](double level, int steps) {
    const auto a = study.ask();
    study.suggest(a->number, distribution("x", ParamType::kFloat, 0, 1));
    bool pruned = false;
    for (int step = 0; step < steps && !pruned; ++step) {
      study.report(a->number, step, level);
      pruned = study.should_prune(a->number);
    }
    study.tell(a->number, {.kind = pruned ? TrialEnd::Kind::kPruned : TrialEnd::Kind::kCompleted});
    return pruned;
  };
  EXPECT_FALSE(run(1.0, 9));  // the first at every rung goes on
  EXPECT_FALSE(run(0.5, 9));  // better than it at each rung: among the best max(1, floor(2 / 3)) = 1
  EXPECT_TRUE(run(5.0, 9));   // third of 3 at rung 1: stopped at its first step
  const std::vector<store::StoredTrial> all = study.trials();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].status, "pruned");
  EXPECT_EQ(all[2].steps, 1);
}

// Several objectives (Optuna's directions): every value told at the end, stored as its objective's
// metric; the front of the study; no curve and no pruner; a wrong count or a value that is not finite
// fails the trial; the objectives are part of the identity.
TEST_F(AskTell, SeveralObjectivesAreToldAtTheEndAndFormAFront) {
  Parts parts(PrunerKind::kNone);
  parts.sampler = make_sampler(SamplerKind::kRandom, parts.space,
                               {.direction = Direction::kMinimize, .seed = 7,
                                .directions = {Direction::kMinimize, Direction::kMaximize}});
  const AskTellOptions options{.name = "mo", .objective = "loss", .objectives = {"loss", "accuracy"},
                               .directions = {Direction::kMinimize, Direction::kMaximize}};
  {
    const auto study = parts.study(store_, options);
    // (loss, accuracy): (1, 0.5) and (2, 0.9) are on the front, (3, 0.4) is dominated by the first.
    const std::vector<std::vector<double>> told{{1, 0.5}, {3, 0.4}, {2, 0.9}};
    for (const std::vector<double>& values : told) {
      const auto a = study->ask();
      ASSERT_TRUE(a);
      EXPECT_THROW(study->report(a->number, 0, values[0]), Error);
      EXPECT_THROW(study->should_prune(a->number), Error);
      EXPECT_THROW(study->report_metric(a->number, "accuracy", 1), Error);
      const store::StoredTrial t = study->tell(a->number, {.values = values});
      EXPECT_EQ(t.status, "completed");
      EXPECT_EQ(trial_values(t, options.objectives), values);
      EXPECT_EQ(t.objective, values[0]);
    }
    const auto wrong = study->ask();
    const store::StoredTrial three = study->tell(wrong->number, {.values = {1, 2, 3}});
    EXPECT_EQ(three.status, "failed");
    EXPECT_EQ(three.reason, "it gave 3 values for the study's 2 objectives");
    const auto nan = study->ask();
    EXPECT_EQ(study->tell(nan->number, {.values = {1, std::nan("")}}).reason,
              "its value of accuracy (nan) is not a finite number");
    EXPECT_FALSE(study->best());
    std::vector<int> front;
    for (const store::StoredTrial& t : study->front()) front.push_back(t.number);
    EXPECT_EQ(front, (std::vector<int>{1, 3}));
  }
  // Resumed with the same objectives: the trials are there; with others: refused.
  EXPECT_EQ(parts.study(store_, options)->reused(), 5);
  AskTellOptions other = options;
  other.directions = {Direction::kMinimize, Direction::kMinimize};
  EXPECT_THROW(parts.study(store_, other), Error);
  // A pruner needs one objective.
  Parts median(PrunerKind::kMedian);
  median.sampler = std::move(parts.sampler);
  AskTellOptions fresh = options;
  fresh.name = "mo2";
  EXPECT_THROW(median.study(store_, fresh), OptionError);
}

}  // namespace
}  // namespace paratune::hpo
