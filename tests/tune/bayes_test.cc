// The model-based searches (tune/bayes.h, tune/surrogate.h): OPPA's early-termination rule, the
// embedding, the priors' closed forms, designs, batches, OOM exploration and a search on the
// simulated cluster's ground truth (in process, no trial processes).
#include "paratune/tune/bayes.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <map>
#include <span>

#include "paratune/cost/estimate.h"
#include "paratune/hpo/pruner.h"
#include "paratune/hpo/sampler.h"
#include "paratune/spec/error.h"
#include "paratune/trial/measurement.h"
#include "simcluster.h"

namespace paratune::tune {
namespace {

// The study loop's side, in process: the searches see every trial as a record, finished ones with
// what they measured, running ones as pending proposals.
class Trials {
 public:
  Trials(const SearchSpace& space, std::unique_ptr<hpo::Sampler> search) : space_(space), search_(std::move(search)) {}
  hpo::Sampler* operator->() { return search_.get(); }
  std::optional<Point> propose() {
    const std::optional<hpo::Config> config = search_->propose(records_);
    if (!config) return std::nullopt;
    std::optional<Point> point = space_.point_of(*config);
    EXPECT_TRUE(point) << config->dump();
    return point;
  }
  hpo::TrialRecord& run(const Point& p) {
    hpo::TrialRecord& r = records_.emplace_back();
    r.number = static_cast<int>(records_.size());
    r.config = hpo::Config(space_.to_json(p));
    return r;
  }
  // Completed with this throughput (standard error 1%) and peak memory.
  void completed(const Point& p, double throughput, std::optional<double> memory = std::nullopt) {
    hpo::TrialRecord& r = run(p);
    r.state = hpo::TrialRecord::State::kCompleted;
    r.measured.steps_per_s = throughput;
    r.measured.standard_error = 0.01 * throughput;
    r.measured.steps_used = 19;
    r.peak_memory_bytes = memory;
  }
  void failed(const Point& p, trial::FailureKind kind) {
    hpo::TrialRecord& r = run(p);
    r.state = hpo::TrialRecord::State::kFailed;
    r.failure = kind;
  }

 private:
  const SearchSpace& space_;
  std::unique_ptr<hpo::Sampler> search_;
  std::vector<hpo::TrialRecord> records_;
};

// OPPA's early termination is the pruner oppa (hpo/pruner.h; the pruner's own test:
// ConfigStudy.TheOppaPrunerStopsATrialWhoseUpperBoundIsBelowTheBest).
TEST(StopEarly, IsEquationFiveWithTauMinusZTimesTheStandardError) {
  const std::vector<double> steps{2.0, 1.0, 1.2, 0.8, 1.1, 0.9};
  const trial::ThroughputEstimate e = trial::estimate_throughput(steps);
  ASSERT_GT(e.standard_error, 0);
  const double bound = e.steps_per_s + 1.96 * e.standard_error;
  const auto stop_early = [](std::span<const double> times, std::optional<double> best, int min_steps, double z) {
    return hpo::stop_early(trial::estimate_throughput(times), static_cast<std::int64_t>(times.size()), best, min_steps, z);
  };
  EXPECT_TRUE(stop_early(steps, bound + 1e-9, 5, 1.96));   // upper bound below the best: stop
  EXPECT_FALSE(stop_early(steps, bound - 1e-9, 5, 1.96));  // could still beat it: go on
  EXPECT_FALSE(stop_early(steps, bound + 1, 7, 1.96));     // fewer than q_min steps
  EXPECT_FALSE(stop_early(steps, std::nullopt, 5, 1.96));  // no completed trial yet
  EXPECT_FALSE(stop_early(std::vector<double>{1.0, 1.0}, 100.0, 1, 1.96));  // one usable step: no spread
}

TEST(Embedding, ScalesEachParameterToTheUnitInterval) {
  const SearchSpace space = SearchSpace::parse(
      "parameters:\n  dp: [1, 2, 4, 8]\n  x: [0, 0.5, 2]\n  flag: [true, false]\n  s: [a, b, c]\n  one: [7]\n", "test");
  const Embedding e(space);
  ASSERT_EQ(e.dimensions(), 5);
  const Eigen::VectorXd v = e(Point{2, 1, 0, 2, 0});
  EXPECT_NEAR(v(0), 2.0 / 3, 1e-12);  // log2 scale: 1 2 4 8 evenly spaced
  EXPECT_NEAR(v(1), 0.25, 1e-12);     // linear (the range starts at 0)
  EXPECT_EQ(v(2), 1);                 // true
  EXPECT_EQ(v(3), 1);                 // the last of three strings
  EXPECT_EQ(v(4), 0.5);               // a single value
}

TEST(Priors, ParallelConfigTranslatesOppaNames) {
  const SearchSpace space = SearchSpace::parse(
      "parameters:\n  dp: [4]\n  tp: [2]\n  pp: [2]\n  mb: [3, 8]\n  mc: [2]\n  ckpt: [true]\n  bucket_mb: [25]\n", "test");
  TrainingSpec training;
  training.seq_len = 1024;
  training.global_batch = 64;
  const ParallelConfig c = parallel_config_of(space, Point{0, 0, 0, 1, 0, 0, 0}, training);
  EXPECT_EQ(c.dp, 4);
  EXPECT_EQ(c.mbs, 2);  // 64 / 4 = 16 sequences per replica in 8 micro-batches
  EXPECT_EQ(c.vpp, 2);
  EXPECT_EQ(c.recompute, RecomputeMode::kFull);
  try {
    (void)parallel_config_of(space, Point{0, 0, 0, 0, 0, 0, 0}, training);
    FAIL() << "mb=3 does not divide 16";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mb=3"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(is_config_parameter("bucket_mb"));
}

TEST(Priors, SimplePriorFeaturesAreOppaAppendixD) {
  const SearchSpace space = SearchSpace::parse(
      "parameters:\n  dp: [2]\n  tp: [2]\n  pp: [2]\n  mb: [4]\n  mc: [2]\n  zero: [0]\n  ckpt: [false]\n", "test");
  const Prior p = simple_prior(space);
  ASSERT_EQ(p.time.features.rows(), 1);
  // Eq. 10: (mb + (pp-1)/mc) / n; Eq. 11-12: (dp-1)/dp / (tp pp); Eq. 16: (tp-1)/tp x mb; Eq. 18: 2 mb (pp-1).
  EXPECT_DOUBLE_EQ(p.time.features(0, 0), 4.5 / 8);
  EXPECT_DOUBLE_EQ(p.time.features(0, 1), 0.5 / 4);
  EXPECT_DOUBLE_EQ(p.time.features(0, 2), 0.5 * 4);
  EXPECT_DOUBLE_EQ(p.time.features(0, 3), 8);
  EXPECT_DOUBLE_EQ(p.time.features(0, 4), 1);
  // Eq. 21: 1/(pp tp), 1/(n mb), 1.
  EXPECT_DOUBLE_EQ(p.memory.features(0, 0), 0.25);
  EXPECT_DOUBLE_EQ(p.memory.features(0, 1), 1.0 / 32);
  EXPECT_DOUBLE_EQ(p.memory.features(0, 2), 1);
}

TEST(Priors, CostModelPriorAtThetaOneIsTheCostModel) {
  const simcluster::World w = simcluster::load_world(simcluster::scenario(PARATUNE_SIMCLUSTER_DIR, "llama3-1b-3080"));
  const Prior p = cost_model_prior(w.space, w.model, w.nominal, w.scenario.training, default_calibration());
  EXPECT_EQ(p.unmapped_points, 0);
  EXPECT_EQ(p.kernel_only, (std::vector<std::string>{"dp_bucket_mb", "zero_bucket_mb"}));
  const std::vector<Point>& points = w.space.enumerate();
  for (std::size_t i = 0; i < points.size(); i += 997) {
    const Estimate e = estimate(w.model, w.nominal, w.scenario.training, parallel_config_of(w.space, points[i], w.scenario.training));
    const auto row = static_cast<Eigen::Index>(i);
    EXPECT_NEAR(p.time.value(row, p.time.initial), e.iteration_time_s, 1e-9 * e.iteration_time_s);
    EXPECT_NEAR(p.memory.value(row, p.memory.initial), e.peak_memory_bytes, 1e-6 * e.peak_memory_bytes);
  }
}

BayesOptions options_for(Algorithm a, std::uint64_t seed) {
  BayesOptions o;
  o.algorithm = a;
  o.steps = 20;
  o.seed = seed;
  o.initial_points = 3;
  return o;
}

TEST(ModelSearch, NeverRepeatsAPointAndStopsWhenAllWereTried) {
  const SearchSpace space = SearchSpace::parse("parameters:\n  dp: [1, 2, 4]\n  x: [0, 1]\n", "test");
  for (Algorithm a : {Algorithm::kOppa, Algorithm::kBo, Algorithm::kCostModel, Algorithm::kXgboost}) {
    Trials search(space, make_model_search(space, std::nullopt, options_for(a, 1)));
    std::set<Point> seen;
    while (const auto p = search.propose()) {
      EXPECT_TRUE(seen.insert(*p).second) << to_string(a);
      const double dp = space.parameters()[0].values[static_cast<std::size_t>((*p)[0])].get<double>();
      search.completed(*p, dp + (*p)[1], 1e9);
    }
    EXPECT_EQ(seen.size(), 6u) << to_string(a);
  }
}

TEST(ModelSearch, RandomDesignsWeighParallelDegreeGroupsEqually) {
  // dp=1 has ten points, dp=2 one: E.1 picks each group half of the time.
  const SearchSpace space =
      SearchSpace::parse("parameters:\n  dp: [1, 2]\n  x: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\nconstraints:\n  - dp == 1 or x == 0\n", "t");
  int dp2 = 0;
  for (std::uint64_t seed = 0; seed < 400; ++seed) {
    Trials search(space, make_model_search(space, std::nullopt, options_for(Algorithm::kBo, seed)));
    dp2 += (*search.propose())[0] == 1;
  }
  EXPECT_GT(dp2, 160);  // binomial(400, 0.5): 200 +- 10; uniform over points would give ~36
  EXPECT_LT(dp2, 240);
}

TEST(ModelSearch, ExploresAtRandomAfterAStreakOfOoms) {
  const SearchSpace space = SearchSpace::parse("parameters:\n  dp: [1, 2, 4, 8]\n  x: [0, 1, 2, 3]\n", "test");
  BayesOptions o = options_for(Algorithm::kOppa, 3);
  o.memory_limit_bytes = 1e9;
  Trials search(space, make_model_search(space, std::nullopt, o));
  for (int i = 0; i < 3; ++i) search.completed(*search.propose(), 1.0 + i, 5e8);
  for (int i = 0; i < 3; ++i) search.failed(*search.propose(), trial::FailureKind::kOom);
  ASSERT_TRUE(search.propose());
  EXPECT_NE(search->proposal_notes()["source"].get<std::string>().find("random exploration after 3"), std::string::npos)
      << search->proposal_notes().dump();
}

TEST(ModelSearch, BatchesUseTheKrigingBelieverAndDoNotRepeat) {
  const SearchSpace space = SearchSpace::parse("parameters:\n  dp: [1, 2, 4, 8]\n  x: [0, 1, 2, 3, 4, 5]\n", "test");
  Trials search(space, make_model_search(space, std::nullopt, options_for(Algorithm::kBo, 5)));
  for (int i = 0; i < 5; ++i) {
    const Point p = *search.propose();
    search.completed(p, 1.0 + p[0] + 0.1 * p[1], 1e9);
  }
  std::vector<Point> running;
  for (int k = 0; k < 3; ++k) {
    const Point p = *search.propose();
    EXPECT_EQ(std::count(running.begin(), running.end(), p), 0);
    if (k > 0) EXPECT_NE(search->proposal_notes()["source"].get<std::string>().find("kriging believer"), std::string::npos);
    running.push_back(p);
    search.run(p);
  }
  EXPECT_TRUE(search->model_summary().contains("throughput"));
}

TEST(ModelSearch, OppaFindsTheSimulatedOptimumQuickly) {
  // In process on the ground truth (noise-free, no trial processes): the best of 20 trials.
  const simcluster::World w = simcluster::load_world(simcluster::scenario(PARATUNE_SIMCLUSTER_DIR, "llama3-1b-3080"));
  const simcluster::Optimum best = simcluster::optimum(w);
  const Prior prior = cost_model_prior(w.space, w.model, w.nominal, w.scenario.training, default_calibration());
  // Every seed gets within 10% of the optimum in 20 trials and most within 5%. (Seed 0 stays at
  // 90%: its prior-seeded start sits in a region UCB keeps exploiting while the optimum is at 95%
  // of GPU memory, where the memory model's spread lowers its chance to fit; known, docs/tune.md.)
  std::vector<double> shares;
  for (std::uint64_t seed : {0, 1, 2}) {
    BayesOptions o = options_for(Algorithm::kOppa, seed);
    o.memory_limit_bytes = w.nominal.gpu.memory_bytes;
    o.seed_from_prior = true;
    Trials search(w.space, make_model_search(w.space, prior, o));
    double found = 0;
    for (int i = 0; i < 20; ++i) {
      const Point p = *search.propose();
      const simcluster::Truth t = simcluster::ground_truth(w, p);
      if (t.oom)
        search.failed(p, trial::FailureKind::kOom);
      else
        search.completed(p, t.throughput(), t.peak_memory_bytes);
      found = std::max(found, t.throughput());
    }
    EXPECT_GE(found, 0.90 * best.throughput) << "seed " << seed;
    shares.push_back(found / best.throughput);
  }
  std::sort(shares.begin(), shares.end());
  EXPECT_GE(shares[1], 0.95) << "median seed";
}

TEST(ModelSearch, LearnsWhereConfigurationsAreRefused) {
  // Issue 21 item 17 in process: every configuration with a >= 4 is refused at start-up (exit 3
  // before a step); elsewhere throughput a / (1 + (log2 b - 1)^2 + (c - 2)^2 / 4) rises with a.
  // Random search puts half its trials there; the model-based searches must learn to stay out.
  const SearchSpace space =
      SearchSpace::parse("parameters:\n  a: [1, 2, 4, 8]\n  b: [1, 2, 4, 8]\n  c: [0, 1, 2, 3]\n", "test");
  const auto value = [&](const Point& p, std::size_t d) { return space.parameters()[d].values[static_cast<std::size_t>(p[d])].get<double>(); };
  for (Algorithm a : {Algorithm::kBo, Algorithm::kOppa, Algorithm::kCostModel, Algorithm::kXgboost}) {
    for (std::uint64_t seed : {1, 2, 3}) {
      BayesOptions o = options_for(a, seed);
      o.initial_points = 4;
      Trials search(space, make_model_search(space, std::nullopt, o));
      int refused = 0;
      for (int i = 0; i < 30; ++i) {
        const Point p = *search.propose();
        if (value(p, 0) >= 4) {
          ++refused;
          search.failed(p, trial::FailureKind::kRefused);
        } else {
          const double b = std::log2(value(p, 1)) - 1, c = value(p, 2) - 2;
          search.completed(p, value(p, 0) / (1 + b * b + c * c / 4));
        }
      }
      EXPECT_LE(refused, 5) << to_string(a) << " seed " << seed;
      EXPECT_EQ(search->model_summary()["feasibility"]["failures"]["refused"], refused)
          << to_string(a) << " seed " << seed << ": " << search->model_summary().dump();
    }
  }
}

TEST(Xgboost, FitsAndPredicts) {
  Eigen::MatrixXd x(20, 2);
  Eigen::VectorXd y(20);
  for (int i = 0; i < 20; ++i) {
    x(i, 0) = i / 19.0;
    x(i, 1) = (i % 3) / 2.0;
    y(i) = 1 + 2 * x(i, 0);
  }
  const Eigen::VectorXd p = xgboost_fit_predict(x, y, x, 7);
  ASSERT_EQ(p.size(), 20);
  for (int i = 0; i < 20; ++i) EXPECT_NEAR(p(i), y(i), 0.15) << i;
}

TEST(ModelSearch, RejectsBadOptions) {
  const SearchSpace space = SearchSpace::parse("parameters:\n  dp: [1, 2]\n", "test");
  BayesOptions o = options_for(Algorithm::kOppa, 0);
  o.initial_points = 0;
  EXPECT_THROW((void)make_model_search(space, std::nullopt, o), Error);
  o = options_for(Algorithm::kGrid, 0);
  EXPECT_THROW((void)make_model_search(space, std::nullopt, o), Error);
}

}  // namespace
}  // namespace paratune::tune
