// The TPE sampler (hpo/tpe.h): the Parzen estimator's density against hand computations, the
// good / bad split, conditional spaces, the constant liar, failed trials, determinism, and a
// search on smooth functions against random search (studies simulated in process).
#include "paratune/hpo/tpe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "paratune/spec/error.h"

namespace paratune::hpo {
namespace {

using State = TrialRecord::State;

// The density of N(mu, sigma^2) truncated to [0, 1], written out independently of tpe.cc.
double truncated_normal_pdf(double x, double mu, double sigma) {
  const auto cdf = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  const double z = (x - mu) / sigma;
  const double density = std::exp(-0.5 * z * z) / (sigma * std::sqrt(2.0 * std::numbers::pi));
  return density / (cdf((1.0 - mu) / sigma) - cdf(-mu / sigma));
}

TrialRecord record(int number, Config config, State state, std::optional<double> value = std::nullopt) {
  TrialRecord t;
  t.number = number;
  t.config = std::move(config);
  t.state = state;
  t.value = value;
  t.resource = state == State::kRunning ? 0 : 100;
  if (value) t.curve.push_back({t.resource - 1, *value});
  return t;
}

// The objective of a simulated trial: its value, or nullopt when the trial fails.
using Objective = std::function<std::optional<double>(const Config&)>;

// Runs `evaluations` trials one after the other, each recorded before the next proposal.
std::vector<TrialRecord> simulate(Sampler& sampler, int evaluations, const Objective& objective,
                                  std::vector<TrialRecord> trials = {}) {
  for (int k = 0; k < evaluations; ++k) {
    const std::optional<Config> config = sampler.propose(trials);
    EXPECT_TRUE(config.has_value());
    if (!config) break;
    const std::optional<double> value = objective(*config);
    const int number = static_cast<int>(trials.size()) + 1;
    trials.push_back(record(number, *config, value ? State::kCompleted : State::kFailed, value));
  }
  return trials;
}

double best_loss(const std::vector<TrialRecord>& trials) {
  double best = INFINITY;
  for (const TrialRecord& t : trials)
    if (t.value) best = std::min(best, *t.value);
  return best;
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// ---- the Parzen estimator -------------------------------------------------------------------

TEST(TpeParzen, GammaAndBandwidthFollowOptunasRules) {
  EXPECT_EQ(tpe::good_count(0), 0u);
  EXPECT_EQ(tpe::good_count(1), 1u);
  EXPECT_EQ(tpe::good_count(10), 1u);
  EXPECT_EQ(tpe::good_count(11), 2u);
  EXPECT_EQ(tpe::good_count(250), 25u);
  EXPECT_EQ(tpe::good_count(1000), 25u);  // the cap
  // sigma = 0.2 n^(-1/(d+4)) clipped to [1 / min(100, n + 2), 1].
  EXPECT_DOUBLE_EQ(tpe::bandwidth(0, 1), 0.5);                       // 0.2 < 1/2: the clip
  EXPECT_DOUBLE_EQ(tpe::bandwidth(1, 1), 1.0 / 3);                   // 0.2 < 1/3: the clip
  EXPECT_DOUBLE_EQ(tpe::bandwidth(30, 3), 0.2 * std::pow(30.0, -1.0 / 7));  // 0.123 > 1/32
  EXPECT_DOUBLE_EQ(tpe::bandwidth(1000, 1), 0.2 * std::pow(1000.0, -1.0 / 5));  // 0.050 > 1/100
  EXPECT_DOUBLE_EQ(tpe::bandwidth(100000000, 1), 0.01);              // 0.005 < 1/100: the clip
}

TEST(TpeParzen, OneNumericalObservationIsHalfItsKernelHalfThePrior) {
  const tpe::ParzenEstimator estimator({tpe::Dimension{0}}, {{0.2}});
  ASSERT_DOUBLE_EQ(estimator.sigma(), 1.0 / 3);
  for (double x : {0.0, 0.3, 0.95}) {
    const double expected = std::log(0.5 * truncated_normal_pdf(x, 0.2, 1.0 / 3) + 0.5 * truncated_normal_pdf(x, 0.5, 1.0));
    EXPECT_NEAR(estimator.log_pdf({x}), expected, 1e-12) << "x = " << x;
  }
}

TEST(TpeParzen, NoObservationIsThePriorAlone) {
  const tpe::ParzenEstimator numerical({tpe::Dimension{0}}, {});
  EXPECT_NEAR(numerical.log_pdf({0.1}), std::log(truncated_normal_pdf(0.1, 0.5, 1.0)), 1e-12);
  const tpe::ParzenEstimator categorical({tpe::Dimension{4}}, {});
  EXPECT_NEAR(categorical.log_pdf({3}), std::log(0.25), 1e-12);
}

TEST(TpeParzen, OneCategoricalObservationAddsPriorWeightOverNPlusOneToEveryChoice) {
  // Observation component: (1 on choice 1) + 1/2 on each of 3 choices, normalised: 0.2 0.6 0.2.
  const tpe::ParzenEstimator estimator({tpe::Dimension{3}}, {{1}});
  EXPECT_NEAR(estimator.log_pdf({1}), std::log(0.5 * 0.6 + 0.5 / 3), 1e-12);
  EXPECT_NEAR(estimator.log_pdf({0}), std::log(0.5 * 0.2 + 0.5 / 3), 1e-12);
  EXPECT_NEAR(estimator.log_pdf({2}), std::log(0.5 * 0.2 + 0.5 / 3), 1e-12);
}

TEST(TpeParzen, TwoObservationsOnTwoDimensionsMultiplyInsideEachComponent) {
  // n = 2, d = 2: sigma = max(0.2 2^(-1/6), 1/4) = 1/4. Categorical: 1/3 on each of 3 choices plus
  // 1 on the observed one, normalised by 2: 2/3 observed, 1/6 each other. Weights 1/3 each.
  const tpe::ParzenEstimator estimator({tpe::Dimension{0}, tpe::Dimension{3}}, {{0.2, 0}, {0.7, 2}});
  ASSERT_DOUBLE_EQ(estimator.sigma(), 0.25);
  const double x = 0.4;
  const double by_hand = (truncated_normal_pdf(x, 0.2, 0.25) * (2.0 / 3) + truncated_normal_pdf(x, 0.7, 0.25) * (1.0 / 6) +
                          truncated_normal_pdf(x, 0.5, 1.0) * (1.0 / 3)) /
                         3;
  EXPECT_NEAR(estimator.log_pdf({x, 0}), std::log(by_hand), 1e-12);
}

TEST(TpeParzen, DrawsFollowTheDensity) {
  // The share of draws in [0.1, 0.3] against the density integrated there (midpoint rule).
  const tpe::ParzenEstimator estimator({tpe::Dimension{0}, tpe::Dimension{2}}, {{0.2, 0}, {0.9, 1}, {0.25, 0}});
  std::mt19937_64 rng(3);
  const int draws = 40000;
  int inside = 0, choice0 = 0;
  for (int i = 0; i < draws; ++i) {
    const tpe::Point x = estimator.sample(rng);
    ASSERT_GE(x[0], 0.0);
    ASSERT_LE(x[0], 1.0);
    inside += x[0] >= 0.1 && x[0] <= 0.3;
    choice0 += x[1] == 0;
  }
  double mass = 0, mass0 = 0;
  const int steps = 2000;
  for (int s = 0; s < steps; ++s) {
    const double u = 0.1 + 0.2 * (s + 0.5) / steps;
    mass += (std::exp(estimator.log_pdf({u, 0})) + std::exp(estimator.log_pdf({u, 1}))) * 0.2 / steps;
  }
  for (int s = 0; s < steps; ++s) mass0 += std::exp(estimator.log_pdf({(s + 0.5) / steps, 0})) / steps;
  EXPECT_NEAR(static_cast<double>(inside) / draws, mass, 0.01);
  EXPECT_NEAR(static_cast<double>(choice0) / draws, mass0, 0.01);
}

// ---- the split ---------------------------------------------------------------------------------

TEST(TpeSplit, RanksCompletedThenPrunedAndPutsFailedAndRunningInTheBadGroup) {
  std::vector<TrialRecord> trials;
  const Config none = Config::object();
  for (int k = 0; k < 8; ++k) trials.push_back(record(k + 1, none, State::kCompleted, 10.0 - k));  // values 10 .. 3
  TrialRecord short_pruned = record(9, none, State::kPruned, 0.0);  // best value, least resource
  short_pruned.resource = 20;
  short_pruned.curve = {{9, 5.0}, {19, 0.0}};
  TrialRecord long_pruned = record(10, none, State::kPruned);
  long_pruned.resource = 60;
  long_pruned.curve = {{29, 7.0}, {59, 6.0}};
  TrialRecord long_pruned_better = long_pruned;
  long_pruned_better.number = 11;
  long_pruned_better.curve = {{29, 7.0}, {59, 5.5}};
  trials.push_back(short_pruned);
  trials.push_back(long_pruned);
  trials.push_back(long_pruned_better);
  trials.push_back(record(12, none, State::kFailed));
  trials.push_back(record(13, none, State::kRunning));
  trials.push_back(record(14, none, State::kCompleted));  // no value: as failed

  const tpe::Split split = tpe::split_trials(trials, Direction::kMinimize);
  EXPECT_EQ(split.ranked, 11u);
  EXPECT_EQ(split.finished, 13u);
  // gamma(11) = 2: the two smallest completed values (3 and 4), however good a pruned value is.
  EXPECT_EQ(split.good, (std::vector<std::size_t>{7, 6}));
  // Then completed by loss, pruned by resource (more first) then value, failed, running.
  EXPECT_EQ(split.bad, (std::vector<std::size_t>{5, 4, 3, 2, 1, 0, 10, 9, 8, 11, 13, 12}));

  const tpe::Split maximize = tpe::split_trials(trials, Direction::kMaximize);
  EXPECT_EQ(maximize.good, (std::vector<std::size_t>{0, 1}));  // values 10 and 9
}

// ---- the sampler -------------------------------------------------------------------------------

const char* const kConditionalSpace = R"(
parameters:
  lr: {type: float, low: 1.0e-5, high: 1.0e-1, log: true}
  optimizer: [sgd, adam]
  momentum: {type: float, low: 0.5, high: 0.99, when: "optimizer == 'sgd'"}
  nesterov: {type: int, low: 0, high: 1, when: "momentum > 0.9"}
  layers: {type: int, low: 1, high: 8}
)";

TEST(TpeConditional, ProposalsHoldEveryActiveParameterAndNoInactiveOne) {
  const Space space = Space::parse(kConditionalSpace, "test.yaml");
  // sgd with momentum near 0.95 and nesterov is best; every 7th trial fails; one stays running.
  const Objective objective = [](const Config& c) -> std::optional<double> {
    const double lr = c["lr"].get<double>();
    double loss = std::pow(std::log10(lr) + 2.5, 2) + 0.1 * std::abs(c["layers"].get<int>() - 4);
    if (c["optimizer"] == "sgd") {
      loss += 10 * std::pow(c["momentum"].get<double>() - 0.95, 2);
      if (c.contains("nesterov")) loss -= 0.2 * c["nesterov"].get<int>();
    } else {
      loss += 0.3;
    }
    return loss;
  };
  auto sampler = make_tpe_sampler(space, SamplerOptions{Direction::kMinimize, 11, -1});
  std::vector<TrialRecord> trials;
  int with_momentum = 0, with_nesterov = 0, model_based = 0;
  for (int k = 1; k <= 80; ++k) {
    const std::optional<Config> config = sampler->propose(trials);
    ASSERT_TRUE(config);
    const Config& c = *config;
    ASSERT_EQ(space.check(c), "") << c.dump();
    ASSERT_TRUE(c.contains("lr") && c.contains("optimizer") && c.contains("layers")) << c.dump();
    const bool sgd = c["optimizer"] == "sgd";
    ASSERT_EQ(c.contains("momentum"), sgd) << c.dump();
    ASSERT_EQ(c.contains("nesterov"), sgd && c["momentum"].get<double>() > 0.9) << c.dump();
    with_momentum += sgd;
    with_nesterov += c.contains("nesterov");
    model_based += !sampler->proposal_notes()["startup"].get<bool>();
    const std::optional<double> value = k % 7 == 0 ? std::nullopt : objective(c);
    trials.push_back(record(k, c, value ? State::kCompleted : State::kFailed, value));
    if (k == 30) trials.push_back(record(++k, c, State::kRunning));  // a pending proposal stays in the history
  }
  EXPECT_EQ(model_based, 79 - 10);
  EXPECT_GT(with_momentum, 20);  // every tier was exercised
  EXPECT_GT(with_nesterov, 5);
  // The notes name each tier's parameters: lr/optimizer/layers, then momentum, then nesterov.
  const nlohmann::ordered_json notes = sampler->proposal_notes();
  EXPECT_EQ(notes["sampler"], "tpe");
  EXPECT_EQ(notes["tiers"][0]["parameters"], nlohmann::ordered_json({"lr", "optimizer", "layers"}));
}

TEST(TpeConstantLiar, ARunningTrialPushesTheNextProposalAway) {
  // Continuous: the next proposal differs from the pending one.
  const Space space = Space::parse("parameters:\n  x: {type: float, low: 0, high: 1}\n", "test.yaml");
  std::vector<TrialRecord> trials;
  for (int k = 0; k < 10; ++k) trials.push_back(record(k + 1, {{"x", 0.05 + 0.1 * k}}, State::kCompleted, std::abs(0.3 - 0.1 * k)));
  auto sampler = make_tpe_sampler(space, SamplerOptions{});
  const Config first = *sampler->propose(trials);
  trials.push_back(record(11, first, State::kRunning));
  EXPECT_NE(*sampler->propose(trials), first);
}

TEST(TpeConstantLiar, PendingProposalsSpreadOverChoicesThatOtherwiseNeverWin) {
  // 'a' is the one good trial: without pending trials every proposal is 'a'; with each proposal
  // kept as a running trial (bad), g(a) grows until another choice scores higher.
  const Space space = Space::parse("parameters:\n  c: [a, b, c, d]\n", "test.yaml");
  std::vector<TrialRecord> history{record(1, {{"c", "a"}}, State::kCompleted, 0.0)};
  for (int k = 0; k < 9; ++k) history.push_back(record(k + 2, {{"c", std::string(1, "bcd"[k % 3])}}, State::kCompleted, 1.0));

  auto without_liar = make_tpe_sampler(space, SamplerOptions{Direction::kMinimize, 5, -1});
  for (int k = 0; k < 12; ++k) EXPECT_EQ((*without_liar->propose(history))["c"], "a");

  auto with_liar = make_tpe_sampler(space, SamplerOptions{Direction::kMinimize, 5, -1});
  std::vector<TrialRecord> trials = history;
  std::set<std::string> proposed;
  for (int k = 0; k < 12; ++k) {
    const Config c = *with_liar->propose(trials);
    proposed.insert(c["c"].get<std::string>());
    trials.push_back(record(static_cast<int>(trials.size()) + 1, c, State::kRunning));
  }
  EXPECT_EQ((*make_tpe_sampler(space, SamplerOptions{})->propose(history))["c"], "a");
  EXPECT_GE(proposed.size(), 2u);
}

TEST(TpeSearch, BeatsRandomSearchOnASmoothFunction) {
  // A shifted sphere in 3-D over [-5, 5]^3 (minimum 0 at (1, -2, 0.5)); 40 evaluations, 11 seeds.
  // Measured medians: TPE 0.24-0.44, random 1.6-3.2 over six sets of seeds.
  const Space space = Space::parse(
      "parameters:\n  x: {type: float, low: -5, high: 5}\n  y: {type: float, low: -5, high: 5}\n"
      "  z: {type: float, low: -5, high: 5}\n",
      "test.yaml");
  const Objective sphere = [](const Config& c) -> std::optional<double> {
    return std::pow(c["x"].get<double>() - 1, 2) + std::pow(c["y"].get<double>() + 2, 2) +
           std::pow(c["z"].get<double>() - 0.5, 2);
  };
  std::vector<double> tpe_best, random_best;
  for (std::uint64_t seed = 0; seed < 11; ++seed) {
    auto sampler = make_tpe_sampler(space, SamplerOptions{Direction::kMinimize, seed, -1});
    tpe_best.push_back(best_loss(simulate(*sampler, 40, sphere)));
    std::mt19937_64 rng(seed);
    double best = INFINITY;
    for (int k = 0; k < 40; ++k) best = std::min(best, *sphere(space.sample(rng)));
    random_best.push_back(best);
  }
  const double tpe_median = median_of(tpe_best), random_median = median_of(random_best);
  RecordProperty("tpe_median", std::to_string(tpe_median));
  RecordProperty("random_median", std::to_string(random_median));
  EXPECT_LT(tpe_median, 0.5 * random_median) << "tpe " << tpe_median << " random " << random_median;
}

TEST(TpeSearch, MaximizeIsMinimizeOfTheNegation) {
  const Space space = Space::parse("parameters:\n  x: {type: float, low: 0, high: 1}\n", "test.yaml");
  const Objective peak = [](const Config& c) -> std::optional<double> { return -std::pow(c["x"].get<double>() - 0.7, 2); };
  const Objective bowl = [&](const Config& c) -> std::optional<double> { return -*peak(c); };
  auto maximizer = make_tpe_sampler(space, SamplerOptions{Direction::kMaximize, 3, -1});
  auto minimizer = make_tpe_sampler(space, SamplerOptions{Direction::kMinimize, 3, -1});
  const std::vector<TrialRecord> up = simulate(*maximizer, 30, peak), down = simulate(*minimizer, 30, bowl);
  for (std::size_t k = 0; k < up.size(); ++k) EXPECT_EQ(up[k].config, down[k].config) << "trial " << k + 1;
}

TEST(TpeFailures, ARegionThatAlwaysFailsIsProposedLessOftenThanByRandom) {
  // x < 0.5 always fails (think: out of memory); elsewhere the value is noise, independent of the
  // parameters. Random search would put half its proposals in the failing region; TPE put 12-19 %
  // there over six sets of five seeds.
  const Space space = Space::parse(
      "parameters:\n  x: {type: float, low: 0, high: 1}\n  y: {type: float, low: 0, high: 1}\n", "test.yaml");
  int failing = 0, proposals = 0;
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    std::mt19937_64 noise(100 + seed);
    const Objective objective = [&](const Config& c) -> std::optional<double> {
      if (c["x"].get<double>() < 0.5) return std::nullopt;
      return tpe::uniform01(noise);
    };
    auto sampler = make_tpe_sampler(space, SamplerOptions{Direction::kMinimize, seed, -1});
    const std::vector<TrialRecord> trials = simulate(*sampler, 60, objective);
    for (std::size_t k = 10; k < trials.size(); ++k) {  // after startup
      ++proposals;
      failing += trials[k].state == State::kFailed;
    }
  }
  const double share = static_cast<double>(failing) / proposals;
  EXPECT_LT(share, 0.3) << failing << " of " << proposals << " proposals in the failing region";
}

TEST(TpeFailures, FailedTrialsInTheBadGroupKeepProposalsOffTheFailingEdge) {
  // Loss x: the best values crowd the edge x = 0.2 below which every trial fails. Without the
  // failures, l's kernels spill over the edge and g has nothing there; with them, g does
  // (measured: about 100 failed proposals of 250 seeing the failures, 240 blind to them).
  const Space space = Space::parse("parameters:\n  x: {type: float, low: 0, high: 1}\n", "test.yaml");
  const Objective edge = [](const Config& c) -> std::optional<double> {
    const double x = c["x"].get<double>();
    return x < 0.2 ? std::nullopt : std::optional<double>(x);
  };
  int failing_seen = 0, failing_hidden = 0;
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    auto sampler = make_tpe_sampler(space, SamplerOptions{Direction::kMinimize, seed, -1});
    const std::vector<TrialRecord> seen = simulate(*sampler, 60, edge);
    for (std::size_t k = 10; k < seen.size(); ++k) failing_seen += seen[k].state == State::kFailed;
    // The same study with the failures dropped from what the sampler sees.
    auto blind = make_tpe_sampler(space, SamplerOptions{Direction::kMinimize, seed, -1});
    std::vector<TrialRecord> visible, all;
    while (all.size() < 60) {
      const Config c = *blind->propose(visible);
      const std::optional<double> value = edge(c);
      all.push_back(record(static_cast<int>(all.size()) + 1, c, value ? State::kCompleted : State::kFailed, value));
      if (value) visible.push_back(all.back());
    }
    for (std::size_t k = 10; k < all.size(); ++k) failing_hidden += all[k].state == State::kFailed;
  }
  EXPECT_LT(failing_seen, failing_hidden) << "failed proposals: " << failing_seen << " seeing failures, "
                                          << failing_hidden << " blind to them";
}

TEST(TpeDeterminism, SameSeedSameProposalsAndAResumedStudyGoesOnTheSame) {
  const Space space = Space::parse(kConditionalSpace, "test.yaml");
  const Objective objective = [](const Config& c) -> std::optional<double> {
    return std::abs(std::log10(c["lr"].get<double>()) + 3) + (c["optimizer"] == "adam" ? 0.0 : 0.5);
  };
  const auto run = [&](std::uint64_t seed) {
    auto sampler = make_tpe_sampler(space, SamplerOptions{Direction::kMinimize, seed, -1});
    return simulate(*sampler, 30, objective);
  };
  const std::vector<TrialRecord> a = run(7), b = run(7), c = run(8);
  bool differs = false;
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].config.dump(), b[k].config.dump()) << "trial " << k + 1;
    differs = differs || a[k].config != c[k].config;
  }
  EXPECT_TRUE(differs);
  // A fresh sampler given the first 20 trials proposes what the uninterrupted one did next.
  auto resumed = make_tpe_sampler(space, SamplerOptions{Direction::kMinimize, 7, -1});
  const std::vector<TrialRecord> head(a.begin(), a.begin() + 20);
  const std::vector<TrialRecord> continued = simulate(*resumed, 10, objective, head);
  for (std::size_t k = 20; k < 30; ++k) EXPECT_EQ(continued[k].config.dump(), a[k].config.dump()) << "trial " << k + 1;
}

TEST(TpeSampler, ConstraintsHoldAndStartupIsThePrior) {
  const Space space = Space::parse(
      "parameters:\n  x: {type: float, low: 0, high: 1}\n  y: {type: float, low: 0, high: 1}\n"
      "constraints:\n  - x + y <= 1\n",
      "test.yaml");
  // The optimum (1, 0) region sits on the constraint's edge.
  const Objective objective = [](const Config& c) -> std::optional<double> {
    return std::pow(c["x"].get<double>() - 1, 2) + std::pow(c["y"].get<double>(), 2);
  };
  auto sampler = make_tpe_sampler(space, SamplerOptions{Direction::kMinimize, 1, 4});
  std::vector<TrialRecord> trials;
  for (int k = 1; k <= 40; ++k) {
    const Config c = *sampler->propose(trials);
    ASSERT_EQ(space.check(c), "") << c.dump();
    EXPECT_EQ(sampler->proposal_notes()["startup"].get<bool>(), k <= 4);
    trials.push_back(record(k, c, State::kCompleted, objective(c)));
  }
  EXPECT_LT(best_loss(trials), 0.05);
}

TEST(TpeSampler, RejectsAStartupCountBelowMinusOne) {
  const Space space = Space::parse("parameters:\n  x: {type: float, low: 0, high: 1}\n", "test.yaml");
  try {
    (void)make_tpe_sampler(space, SamplerOptions{Direction::kMinimize, 0, -2});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("startup_trials: -2"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW((void)make_tpe_sampler(space, SamplerOptions{Direction::kMinimize, 0, 0}));
}

}  // namespace
}  // namespace paratune::hpo
