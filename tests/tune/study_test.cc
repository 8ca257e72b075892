// Configuration studies in the one study loop with real trial processes (tests/trial/fake_trial.cc):
// grid and random orders, misbehaving trials recorded while the search goes on, limits, stopping,
// resuming without re-running finished trials, and hostile parameter values passed through as
// literal arguments.
#include "paratune/tune/study.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "paratune/hpo/pruner.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/study.h"
#include "paratune/spec/error.h"
#include "paratune/store/sqlite_store.h"
#include "paratune/tune/bayes.h"

namespace paratune::tune {
namespace {

struct Paths {
  std::filesystem::path dir, db, runs;
};

Paths fresh(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "paratune_study" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return {dir, dir / "study.db", dir / "runs.txt"};
}

hpo::HpoOptions options_for(const Paths& p, const std::string& extra_args = "") {
  hpo::HpoOptions o;
  o.command = std::string(PARATUNE_FAKE_TRIAL) + " --step-time {st} --log-run " + p.runs.string() + extra_args;
  o.steps = 4;
  o.limits.grace_s = 0.5;
  o.limits.hang_s = 1;
  o.trials_dir = p.dir / "trials";
  return o;
}

// A space file's text as a study reads it, and its configurations as the searches index them.
struct Spaces {
  hpo::Space study;
  SearchSpace view;
};
Spaces spaces(const std::string& text, const std::string& source) {
  hpo::Space study = hpo::Space::parse(text, source);
  SearchSpace view = SearchSpace::of(study);
  return {std::move(study), std::move(view)};
}

std::unique_ptr<hpo::Sampler> sampler_for(const Spaces& s, Algorithm algo, std::uint64_t seed, std::size_t max_trials = 0) {
  BayesOptions o;
  o.algorithm = algo;
  o.seed = seed;
  return make_configuration_sampler(s.study, s.view, std::nullopt, o, max_trials);
}

// The configurations a sampler proposes one after the other, each completed before the next.
std::vector<hpo::Config> proposals(hpo::Sampler& sampler, std::size_t most = 1000) {
  std::vector<hpo::TrialRecord> done;
  std::vector<hpo::Config> out;
  while (out.size() < most) {
    const std::optional<hpo::Config> c = sampler.propose(done);
    if (!c) break;
    out.push_back(*c);
    hpo::TrialRecord r;
    r.number = static_cast<int>(done.size()) + 1;
    r.config = *c;
    r.state = hpo::TrialRecord::State::kCompleted;
    done.push_back(r);
  }
  return out;
}

// Every run the fake trial logged: its PARATUNE_PARAMS, in start order.
std::vector<std::string> runs(const Paths& p) {
  std::ifstream in(p.runs);
  std::vector<std::string> out;
  std::string id, params;
  while (in >> id >> params) out.push_back(params);
  return out;
}

class Recorder final : public StudyObserver {
 public:
  void trial_started(const store::StoredTrial& t) override { started.push_back(t.number); }
  void trial_finished(const store::StoredTrial& t) override { finished.push_back(t.status); }
  std::vector<int> started;
  std::vector<std::string> finished;
};

hpo::HpoSummary run(const Spaces& space, const hpo::HpoOptions& o, Algorithm algo = Algorithm::kGrid,
                 std::uint64_t seed = 0, int parallel = 1) {
  store::SqliteStudyStore store(std::filesystem::path(o.trials_dir).parent_path() / "study.db");
  trial::LocalBackend backend(parallel);
  const auto sampler = sampler_for(space, algo, seed);
  hpo::PrunerOptions none;
  none.max_resource = o.steps;
  const auto pruner = hpo::make_pruner(hpo::PrunerKind::kNone, none);
  Recorder recorder;
  const std::atomic<int> no_stop{0};
  return run_configuration_study(space.study, space.view, o, store, backend, *sampler, *pruner, nullptr, recorder,
                                 no_stop);
}

const char* kSpeeds = R"(
parameters:
  st: [0.03, 0.01, 0.02]
  k: [1, 2]
constraints:
  - k == 1 or st < 0.025
)";

TEST(Study, GridRunsEveryValidPointOnceInOrderAndFindsTheFastest) {
  const Paths p = fresh("grid");
  const Spaces space = spaces(kSpeeds, "speeds.yaml");
  const hpo::HpoSummary s = run(space, options_for(p));
  EXPECT_EQ(s.space.value().valid_points, 5u);
  EXPECT_EQ(s.started, 5);
  EXPECT_EQ(s.stop, StopReason::kExhausted);
  std::vector<std::string> expected;
  for (const Point& point : space.view.enumerate()) expected.push_back(space.view.to_json(point).dump());
  EXPECT_EQ(runs(p), expected);
  ASSERT_TRUE(s.best.has_value());
  const store::StoredTrial& best = s.trials[*s.best];
  EXPECT_EQ(nlohmann::json::parse(best.params_json)["st"], 0.01);
  EXPECT_NEAR(*best.throughput, 100, 15);  // 10 ms sleeps
  EXPECT_LE(best.throughput_ci_low, *best.throughput);
  EXPECT_GE(best.throughput_ci_high, *best.throughput);
  for (const store::StoredTrial& t : s.trials) {
    EXPECT_EQ(t.status, "completed") << t.reason;
    EXPECT_EQ(t.steps, 4);
    EXPECT_NE(t.command.find("PARATUNE_MAX_STEPS=4"), std::string::npos) << t.command;
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(t.dir) / "stdout.log"));
  }
}

TEST(Study, RandomIsASeededPermutationOfTheValidPoints) {
  const Spaces space = spaces("parameters:\n  a: [1, 2, 3, 4, 5, 6, 7, 8]\n  b: [x, y]\n", "s.yaml");
  auto order = [&](std::uint64_t seed) { return proposals(*sampler_for(space, Algorithm::kRandom, seed)); };
  const std::vector<hpo::Config> a = order(7), b = order(7), c = order(8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, space.study.enumerate());
  std::set<std::string> sorted;
  for (const hpo::Config& config : a) sorted.insert(config.dump());
  std::set<std::string> all;
  for (const hpo::Config& config : space.study.enumerate()) all.insert(config.dump());
  EXPECT_EQ(a.size(), all.size());
  EXPECT_EQ(sorted, all);  // every point exactly once
}

TEST(Study, ProposalsSkipRunningAndFinishedPoints) {
  const Spaces space = spaces("parameters:\n  a: [1, 2, 3]\n", "s.yaml");
  const auto grid = sampler_for(space, Algorithm::kGrid, 0);
  const auto record = [](int number, int a, hpo::TrialRecord::State state) {
    hpo::TrialRecord r;
    r.number = number;
    r.config = hpo::Config{{"a", a}};
    r.state = state;
    return r;
  };
  using State = hpo::TrialRecord::State;
  EXPECT_EQ(grid->propose({record(1, 1, State::kRunning)}), (hpo::Config{{"a", 2}}));
  EXPECT_EQ(grid->propose({record(1, 1, State::kRunning), record(2, 2, State::kFailed)}), (hpo::Config{{"a", 3}}));
  EXPECT_EQ(grid->propose({record(1, 1, State::kRunning), record(2, 2, State::kFailed), record(3, 3, State::kRunning)}),
            std::nullopt);
}

// Issue 21: a grid cut short by --max-trials covered one corner of it. It is sampled evenly.
TEST(Study, AGridLargerThanMaxTrialsIsSampledEvenly) {
  EXPECT_EQ(grid_order(5, 0), (std::vector<std::size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(grid_order(5, 5), (std::vector<std::size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(grid_order(10, 2), (std::vector<std::size_t>{2, 7, 0, 1, 3, 4, 5, 6, 8, 9}));
  for (std::size_t n : {7u, 100u, 168u, 1000u})
    for (std::size_t k = 1; k < n; k += 7) {
      std::vector<std::size_t> order = grid_order(n, k);
      std::vector<std::size_t> first(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
      // The first k each lie in their own k-th of the grid: floor(i n / k) <= index < ceil((i + 1) n / k).
      for (std::size_t i = 0; i < k; ++i) {
        EXPECT_GE(first[i], i * n / k) << n << " " << k;
        EXPECT_LT(first[i], ((i + 1) * n + k - 1) / k) << n << " " << k;
      }
      std::sort(order.begin(), order.end());
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(order[i], i) << "not a permutation: n " << n << " k " << k;
    }
  // 4 x 4 grid, 4 trials: the first parameter takes every value (odometer order: it varies slowest),
  // and the second is not stuck at one value (it was, with every pick in the middle of its part).
  const Spaces space = spaces("parameters:\n  a: [1, 2, 3, 4]\n  b: [1, 2, 3, 4]\n", "s.yaml");
  std::set<std::int64_t> first_values, second_values;
  const std::vector<hpo::Config> four = proposals(*sampler_for(space, Algorithm::kGrid, 0, 4), 4);
  ASSERT_EQ(four.size(), 4u);
  for (const hpo::Config& p : four) {
    first_values.insert(p["a"].get<std::int64_t>());
    second_values.insert(p["b"].get<std::int64_t>());
  }
  EXPECT_EQ(first_values.size(), 4u);
  EXPECT_GE(second_values.size(), 3u);
  // The shipped example (168 valid points), cut to 12 and to 2 trials: both values of its last
  // parameter are tried (every 14th point had the same one), and with 12 every value of each.
  hpo::Space example_study = hpo::Space::load(std::string(PARATUNE_SOURCE_DIR) + "/examples/tune/space.yaml");
  SearchSpace example_view = SearchSpace::of(example_study);
  const Spaces example{std::move(example_study), std::move(example_view)};
  for (const std::size_t budget : {12u, 2u}) {
    std::map<std::string, std::set<std::string>> values;
    const std::vector<hpo::Config> picked = proposals(*sampler_for(example, Algorithm::kGrid, 0, budget), budget);
    ASSERT_EQ(picked.size(), budget);
    for (const hpo::Config& point : picked)
      for (const auto& [name, value] : point.items()) values[name].insert(value.dump());
    EXPECT_EQ(values["ckpt"].size(), 2u) << budget << " trials";
    if (budget == 12)  // every value of every parameter (4 of dp, pp, zero; 3 of mbs; 2 of tp, ckpt)
      for (const auto& [name, seen] : values)
        EXPECT_EQ(seen.size(), name == "mbs" ? 3u : name == "tp" || name == "ckpt" ? 2u : 4u) << name;
  }
}

TEST(Study, MisbehavingTrialsAreRecordedAndTheSearchGoesOn) {
  const Paths p = fresh("misbehave");
  const Spaces space = spaces(
      "parameters:\n  st: [0.01]\n  behave: [crash, hang, oom, garbage, no-steps, ok]\n", "behave.yaml");
  hpo::HpoOptions o = options_for(p, " --behave {behave}");
  const hpo::HpoSummary s = run(space, o, Algorithm::kGrid, 0, /*parallel=*/3);
  ASSERT_EQ(s.trials.size(), 6u);
  std::map<std::string, std::string> status;
  for (const store::StoredTrial& t : s.trials) status[nlohmann::json::parse(t.params_json)["behave"]] = t.status;
  EXPECT_EQ(status["crash"], "failed");
  EXPECT_EQ(status["hang"], "timeout");
  EXPECT_EQ(status["oom"], "oom");
  EXPECT_EQ(status["garbage"], "completed");
  EXPECT_EQ(status["no-steps"], "failed");
  EXPECT_EQ(status["ok"], "completed");
  for (const store::StoredTrial& t : s.trials)
    if (t.status != "completed") EXPECT_FALSE(t.reason.empty()) << t.params_json;
  ASSERT_TRUE(s.best.has_value());
}

TEST(Study, MemoryLimitMakesATrialInfeasible) {
  const Paths p = fresh("memory");
  const Spaces space = spaces("parameters:\n  st: [0.01]\n  mem: [1000, 5000]\n", "m.yaml");
  hpo::HpoOptions o = options_for(p, " --peak-memory {mem}");
  o.limits.memory_limit_bytes = 2000;
  const hpo::HpoSummary s = run(space, o);
  ASSERT_EQ(s.trials.size(), 2u);
  EXPECT_EQ(s.trials[0].status, "completed");
  EXPECT_EQ(s.trials[1].status, "infeasible");
  EXPECT_EQ(s.trials[1].peak_memory_bytes, 5000);
  ASSERT_TRUE(s.best.has_value());
  EXPECT_EQ(*s.best, 0u);
}

TEST(Study, MaxTrialsCountsReusedTrialsAndResumeNeverRerunsFinishedOnes) {
  const Paths p = fresh("resume");
  const Spaces space = spaces(kSpeeds, "speeds.yaml");
  hpo::HpoOptions o = options_for(p);
  o.max_trials = 2;
  hpo::HpoSummary s = run(space, o, Algorithm::kRandom, 5);
  EXPECT_EQ(s.started, 2);
  EXPECT_EQ(s.stop, StopReason::kMaxTrials);
  s = run(space, o, Algorithm::kRandom, 5);  // nothing more to do: 2 trials already
  EXPECT_EQ(s.started, 0);
  EXPECT_EQ(s.reused, 2);
  o.max_trials = 0;
  s = run(space, o, Algorithm::kRandom, 5);
  EXPECT_EQ(s.started, 3);
  EXPECT_EQ(s.reused, 2);
  const std::vector<std::string> r = runs(p);
  EXPECT_EQ(r.size(), 5u);
  EXPECT_EQ(std::set<std::string>(r.begin(), r.end()).size(), 5u);  // no point ran twice
}

TEST(Study, StopRequestInterruptsRunningTrialsAndResumeRunsThemAgain) {
  const Paths p = fresh("interrupt");
  const Spaces space = spaces("parameters:\n  st: [0.05, 0.06]\n", "s.yaml");
  hpo::HpoOptions o = options_for(p, " --ignore-sigterm --grandchild");
  o.steps = 40;
  // Asks the study to stop once both trials have reported a step.
  class StopWhenRunning final : public StudyObserver {
   public:
    explicit StopWhenRunning(std::atomic<int>& stop) : stop_(stop) {}
    void progress(const std::vector<TrialProgress>& running, int, const store::StoredTrial*) override {
      if (running.size() == 2 && running[0].steps > 0 && running[1].steps > 0) stop_ = 2;
    }

   private:
    std::atomic<int>& stop_;
  };
  {
    store::SqliteStudyStore store(p.db);
    trial::LocalBackend backend(2);
    const auto sampler = sampler_for(space, Algorithm::kGrid, 0);
    hpo::PrunerOptions none;
    none.max_resource = o.steps;
    const auto pruner = hpo::make_pruner(hpo::PrunerKind::kNone, none);
    std::atomic<int> stop{0};
    StopWhenRunning observer(stop);
    const hpo::HpoSummary s =
        run_configuration_study(space.study, space.view, o, store, backend, *sampler, *pruner, nullptr, observer, stop);
    EXPECT_EQ(s.stop, StopReason::kInterrupted);
    ASSERT_EQ(s.trials.size(), 2u);
    for (const store::StoredTrial& t : s.trials) {
      EXPECT_EQ(t.status, "interrupted");
      EXPECT_EQ(trial::kill_trial_processes(t.dir), 0) << "a process of trial " << t.number << " was left";
    }
  }
  o.steps = 3;  // another identity: refused
  EXPECT_THROW(run(space, o), Error);
  o.steps = 40;
  const hpo::HpoSummary s = run(space, o, Algorithm::kGrid, 0, 2);
  EXPECT_EQ(s.requeued, 2);
  EXPECT_EQ(s.reused, 0);
  EXPECT_EQ(s.started, 2);
  ASSERT_EQ(s.trials.size(), 4u);
  EXPECT_EQ(s.trials[2].status, "completed");
  EXPECT_EQ(s.trials[3].status, "completed");
  EXPECT_EQ(runs(p).size(), 4u);
}

TEST(Study, HostileValuesArriveAsLiteralArguments) {
  const Paths p = fresh("hostile");
  const std::filesystem::path record = p.dir / "record.txt";
  const Spaces space = spaces(
      "parameters:\n  st: [0.01]\n  name: [\"a b; rm -rf /tmp/x\", \"$(touch /tmp/pwned)\", \"'\\\"`id`\"]\n",
      "hostile.yaml");
  hpo::HpoOptions o = options_for(p, " --record " + record.string() + " --name={name}");
  o.max_trials = 1;
  for (int i = 0; i < 3; ++i) {
    o.max_trials = i + 1;
    const hpo::HpoSummary s = run(space, o);
    const store::StoredTrial& t = s.trials.back();
    EXPECT_EQ(t.status, "completed") << t.reason;
    std::ifstream in(record);
    std::stringstream text;
    text << in.rdbuf();
    const std::string value = space.view.parameters()[1].values[static_cast<std::size_t>(i)].get<std::string>();
    EXPECT_NE(text.str().find("arg=--name=" + value + "\n"), std::string::npos) << text.str();
  }
  EXPECT_FALSE(std::filesystem::exists("/tmp/pwned"));
}

TEST(Study, BadOptionsAndTemplatesFailBeforeAnythingRuns) {
  const Paths p = fresh("bad");
  const Spaces space = spaces(kSpeeds, "speeds.yaml");
  hpo::HpoOptions o = options_for(p, " --tp {tp}");
  try {
    run(space, o);
    FAIL() << "unknown placeholder accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tp"), std::string::npos) << e.what();
  }
  o = options_for(p);
  o.steps = 1;
  EXPECT_THROW(run(space, o), Error);
  o = options_for(p);
  o.step_time_regex = "no group";
  EXPECT_THROW(run(space, o), Error);
  EXPECT_FALSE(std::filesystem::exists(p.runs));
}

TEST(Study, BuiltinPlaceholders) {
  const Paths p = fresh("builtins");
  const std::filesystem::path record = p.dir / "record.txt";
  const Spaces space = spaces("parameters:\n  st: [0.01]\n  dp: [2]\n  tp: [4]\n  ckpt: [true]\n", "b.yaml");
  hpo::HpoOptions o = options_for(p, " --record " + record.string() + " {gpus} {config} {steps} {trial_id} {trial_dir}");
  const hpo::HpoSummary s = run(space, o);
  ASSERT_EQ(s.trials.size(), 1u);
  std::ifstream in(record);
  std::stringstream text;
  text << in.rdbuf();
  const std::string dir = std::filesystem::absolute(p.dir / "trials" / "trial-0001").string();
  for (const std::string& expected : std::vector<std::string>{"arg=8\n", "arg=st=0.01,dp=2,tp=4,ckpt=true\n", "arg=4\n", "arg=main-0001\n",
                                      "arg=" + dir + "\n", "PARATUNE_TRIAL_DIR=" + dir + "\n",
                                      "PARATUNE_TRIAL_ID=main-0001\n"})
    EXPECT_NE(text.str().find(expected), std::string::npos) << expected << " in\n" << text.str();
}

}  // namespace
}  // namespace paratune::tune
