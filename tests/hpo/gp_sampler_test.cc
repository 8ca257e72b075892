// The GP sampler: it beats random search on a smooth function (Branin), respects conditional
// parameters, does not repeat a pending proposal, steers away from a region that fails, is
// deterministic per seed, and its log EI is accurate where the naive formula is and finite where
// the naive one underflows. Studies are simulated in-process: the test builds the TrialRecords.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

#include "paratune/hpo/sampler.h"
#include "paratune/spec/error.h"

namespace paratune::hpo {

// Defined in src/hpo/gp_sampler.cc (no public header: an implementation detail under test).
namespace gp_detail {
double log_h(double z);
double log_expected_improvement(double mean, double sd, double best);
}  // namespace gp_detail

namespace {

using State = TrialRecord::State;

const char* kBraninSpace = R"(
parameters:
  x1: {type: float, low: -5, high: 10}
  x2: {type: float, low: 0, high: 15}
)";

// Branin-Hoo (Dixon & Szegö 1978; the usual constants): minimum 0.397887 at (-pi, 12.275),
// (pi, 2.275) and (9.42478, 2.475).
double branin(const Config& c) {
  const double x1 = c["x1"].get<double>(), x2 = c["x2"].get<double>();
  const double pi = std::numbers::pi;
  const double b = 5.1 / (4 * pi * pi), cc = 5 / pi, t = 1 / (8 * pi);
  return std::pow(x2 - b * x1 * x1 + cc * x1 - 6, 2) + 10 * (1 - t) * std::cos(x1) + 10;
}

void add_trial(std::vector<TrialRecord>& trials, Config config, State state, std::optional<double> value = {}) {
  TrialRecord t;
  t.number = static_cast<int>(trials.size()) + 1;
  t.config = std::move(config);
  t.state = state;
  t.value = value;
  trials.push_back(std::move(t));
}

// Runs `evaluations` sequential trials of `loss` (nullopt: the trial fails) proposed by `sampler`.
template <class Loss>
std::vector<TrialRecord> simulate_gp(Sampler& sampler, int evaluations, Loss loss) {
  std::vector<TrialRecord> trials;
  for (int i = 0; i < evaluations; ++i) {
    const std::optional<Config> config = sampler.propose(trials);
    if (!config) break;
    const std::optional<double> value = loss(*config);
    add_trial(trials, *config, value ? State::kCompleted : State::kFailed, value);
  }
  return trials;
}

double best_value(const std::vector<TrialRecord>& trials) {
  double best = HUGE_VAL;
  for (const TrialRecord& t : trials)
    if (t.value) best = std::min(best, *t.value);
  return best;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::unique_ptr<Sampler> gp_sampler(const Space& space, std::uint64_t seed, int startup = -1,
                                    Direction direction = Direction::kMinimize) {
  SamplerOptions o;
  o.seed = seed;
  o.startup_trials = startup;
  o.direction = direction;
  return make_gp_sampler(space, o);
}

TEST(GpSampler, BeatsRandomSearchOnBranin) {
  const Space space = Space::parse(kBraninSpace, "branin.yaml");
  const int evaluations = 30;
  std::vector<double> gp_best, random_best;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const auto sampler = gp_sampler(space, seed);
    gp_best.push_back(best_value(simulate_gp(*sampler, evaluations, [](const Config& c) { return std::optional(branin(c)); })));
    std::mt19937_64 rng(seed);
    double best = HUGE_VAL;
    for (int i = 0; i < evaluations; ++i) best = std::min(best, branin(space.sample(rng)));
    random_best.push_back(best);
  }
  const double gp = median(gp_best), random = median(random_best);
  EXPECT_LT(gp, random);
  EXPECT_LT(gp, 0.6) << "median best after 30 (optimum 0.397887); random: " << random;
}

TEST(GpSampler, MaximizesWhenAskedTo) {
  const Space space = Space::parse(kBraninSpace, "branin.yaml");
  const auto sampler = gp_sampler(space, 3, -1, Direction::kMaximize);
  const auto trials = simulate_gp(*sampler, 25, [](const Config& c) { return std::optional(-branin(c)); });
  double best = -HUGE_VAL;
  for (const TrialRecord& t : trials) best = std::max(best, *t.value);
  EXPECT_GT(best, -1.0);
  // Notes and summary in the objective's units (negative here).
  EXPECT_LT(sampler->proposal_notes()["mean"].get<double>(), 0);
}

TEST(GpSampler, ConditionalSpacesYieldExactlyTheActiveParameters) {
  const Space space = Space::parse(R"(
parameters:
  optimizer: [sgd, adam]
  lr: {type: float, low: 1.0e-4, high: 1, log: true}
  momentum: {type: float, low: 0.5, high: 0.99, when: "optimizer == 'sgd'"}
  schedule: {type: categorical, choices: [cosine, step], when: "optimizer == 'adam'"}
  warmup: {type: int, low: 0, high: 10, when: "schedule == 'step'"}
)",
                                   "conditional.yaml");
  auto loss = [](const Config& c) {
    double l = std::pow(std::log10(c["lr"].get<double>()) + 2, 2);
    if (c.contains("momentum")) l += 10 * std::pow(c["momentum"].get<double>() - 0.9, 2);
    if (c.contains("schedule")) l += c["schedule"] == "step" ? 0.05 * c["warmup"].get<int>() : 0.3;
    return std::optional(l);
  };
  const auto sampler = gp_sampler(space, 5);
  const auto trials = simulate_gp(*sampler, 25, loss);
  ASSERT_EQ(trials.size(), 25u);
  bool saw_sgd = false, saw_step = false;
  for (const TrialRecord& t : trials) {
    EXPECT_EQ(space.check(t.config), "") << t.config.dump();
    Config partial = Config::object();
    for (std::size_t i = 0; i < space.size(); ++i) {
      const std::string& name = space.parameters()[i].name;
      ASSERT_EQ(t.config.contains(name), space.is_active(i, partial)) << name << " in " << t.config.dump();
      if (t.config.contains(name)) partial[name] = t.config[name];
    }
    saw_sgd |= t.config["optimizer"] == "sgd";
    saw_step |= t.config.contains("warmup");
  }
  EXPECT_TRUE(saw_sgd && saw_step);  // both branches explored
  EXPECT_FALSE(sampler->proposal_notes()["startup"].get<bool>());
  // One lengthscale per float/int parameter, one per choice for a categorical.
  const auto lengthscales = sampler->model_summary()["lengthscales"];
  EXPECT_EQ(lengthscales["optimizer"].size(), 2u);
  EXPECT_TRUE(lengthscales["warmup"].is_number());
}

TEST(GpSampler, DoesNotProposeAPendingConfigurationAgain) {
  // A finite space: the two untried integers are 3 (the optimum) and 4.
  const Space space = Space::parse("parameters:\n  x: {type: int, low: 0, high: 9}\n", "int.yaml");
  std::vector<TrialRecord> trials;
  for (int x : {0, 1, 2, 5, 6, 7, 8, 9}) add_trial(trials, Config{{"x", x}}, State::kCompleted, (x - 3.0) * (x - 3.0));
  const auto sampler = gp_sampler(space, 1);
  const Config first = *sampler->propose(trials);
  ASSERT_TRUE(first["x"] == 3 || first["x"] == 4) << first.dump();
  add_trial(trials, first, State::kRunning);
  const Config second = *sampler->propose(trials);
  EXPECT_TRUE(second["x"] == 3 || second["x"] == 4) << second.dump();
  EXPECT_NE(second, first);
  EXPECT_EQ(sampler->proposal_notes()["pending"], 1);
}

TEST(GpSampler, KrigingBelieverMovesAwayFromAPendingPoint) {
  const Space space = Space::parse(kBraninSpace, "branin.yaml");
  const auto sampler = gp_sampler(space, 2);
  std::vector<TrialRecord> trials = simulate_gp(*sampler, 12, [](const Config& c) { return std::optional(branin(c)); });
  const Config first = *sampler->propose(trials);
  add_trial(trials, first, State::kRunning);
  const Config second = *sampler->propose(trials);
  const double dx = (first["x1"].get<double>() - second["x1"].get<double>()) / 15;
  const double dy = (first["x2"].get<double>() - second["x2"].get<double>()) / 15;
  EXPECT_GT(std::hypot(dx, dy), 1e-3) << first.dump() << " then " << second.dump();
}

TEST(GpSampler, AvoidsARegionThatFails) {
  // Everything with x1 > 2.5 crashes: half the domain, two of Branin's three minima.
  const Space space = Space::parse(kBraninSpace, "branin.yaml");
  auto loss = [](const Config& c) -> std::optional<double> {
    if (c["x1"].get<double>() > 2.5) return std::nullopt;
    return branin(c);
  };
  const int evaluations = 30, startup = 5;
  int gp_failures = 0, random_failures = 0;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const auto sampler = gp_sampler(space, seed, startup);
    const auto trials = simulate_gp(*sampler, evaluations, loss);
    for (std::size_t i = startup; i < trials.size(); ++i) gp_failures += trials[i].state == State::kFailed;
    std::mt19937_64 rng(seed);
    for (int i = startup; i < evaluations; ++i) random_failures += !loss(space.sample(rng));
  }
  EXPECT_LT(gp_failures, random_failures / 3) << "gp " << gp_failures << ", random " << random_failures;
}

TEST(GpSampler, FallsBackToThePriorWithoutTwoCompletedTrials) {
  const Space space = Space::parse(kBraninSpace, "branin.yaml");
  std::vector<TrialRecord> trials;
  std::mt19937_64 rng(4);
  for (int i = 0; i < 6; ++i) add_trial(trials, space.sample(rng), i % 2 ? State::kFailed : State::kPruned);
  add_trial(trials, space.sample(rng), State::kCompleted, 3.0);
  const auto sampler = gp_sampler(space, 1);
  const Config c = *sampler->propose(trials);
  EXPECT_EQ(space.check(c), "");
  EXPECT_TRUE(sampler->proposal_notes()["startup"].get<bool>());
  // No model of the objective; the feasibility model of the three failures (given without their
  // kind: crashed).
  const nlohmann::ordered_json summary = sampler->model_summary();
  EXPECT_FALSE(summary.contains("lengthscales")) << summary.dump();
  EXPECT_EQ(summary["feasibility"]["failures"]["crashed"], 3) << summary.dump();
}

TEST(GpSampler, SameSeedSameProposals) {
  const Space space = Space::parse(kBraninSpace, "branin.yaml");
  auto loss = [](const Config& c) { return std::optional(branin(c)); };
  const auto a = gp_sampler(space, 11), b = gp_sampler(space, 11), other = gp_sampler(space, 12);
  const auto ta = simulate_gp(*a, 14, loss), tb = simulate_gp(*b, 14, loss), tother = simulate_gp(*other, 14, loss);
  ASSERT_EQ(ta.size(), tb.size());
  for (std::size_t i = 0; i < ta.size(); ++i) EXPECT_EQ(ta[i].config.dump(), tb[i].config.dump()) << i;
  EXPECT_EQ(a->proposal_notes().dump(), b->proposal_notes().dump());
  EXPECT_EQ(a->model_summary().dump(), b->model_summary().dump());
  EXPECT_NE(ta.back().config.dump(), tother.back().config.dump());
  // A proposal depends on the seed and the trials only, not on the sampler's past calls.
  const auto fresh = gp_sampler(space, 11);
  const std::vector<TrialRecord> history(ta.begin(), ta.end() - 1);
  EXPECT_EQ(fresh->propose(history)->dump(), ta.back().config.dump());
}

TEST(GpSampler, RejectsABadStartupCount) {
  const Space space = Space::parse(kBraninSpace, "branin.yaml");
  try {
    gp_sampler(space, 0, -2);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("startup_trials -2"), std::string::npos) << e.what();
  }
}

// h(z) = phi(z) + z Phi(z), naively, in long double where the platform has more precision.
long double naive_h(long double z) {
  const long double pi = std::numbers::pi_v<long double>;
  return std::exp(-z * z / 2) / std::sqrt(2 * pi) + z * 0.5L * std::erfc(-z / std::sqrt(2.0L));
}

TEST(GpSampler, LogEiAgreesWithTheNaiveFormulaWhereItIsAccurate) {
  for (double z = -6; z <= 6; z += 0.125) {
    const double naive = static_cast<double>(std::log(naive_h(z)));
    EXPECT_NEAR(gp_detail::log_h(z), naive, 1e-11 * std::max(1.0, std::abs(naive))) << z;
  }
  // The branches meet: z = -1 (direct / erfcx) and z = -4 (erfcx / continued fraction).
  for (double z : {-1.0, -4.0})
    EXPECT_NEAR(gp_detail::log_h(std::nextafter(z, 0.0)), gp_detail::log_h(std::nextafter(z, -10.0)), 1e-12) << z;
  // log EI = log(sd h((best - mean) / sd)) against EI computed directly.
  const double mean = 1.3, sd = 0.4, best = 1.0, z = (best - mean) / sd;
  const double ei = sd * (std::exp(-z * z / 2) / std::sqrt(2 * std::numbers::pi) + z * 0.5 * std::erfc(-z / std::numbers::sqrt2));
  EXPECT_NEAR(gp_detail::log_expected_improvement(mean, sd, best), std::log(ei), 1e-12);
}

TEST(GpSampler, LogEiStaysFiniteAndAccurateFarBelowTheIncumbent) {
  // In double the naive h underflows: phi(-40) ~ e^-800.
  const double naive = std::exp(-800.0) / std::sqrt(2 * std::numbers::pi) + -40.0 * 0.5 * std::erfc(40 / std::numbers::sqrt2);
  EXPECT_FALSE(std::isfinite(std::log(naive)));
  // h(z) = phi(z) / z^2 (1 - 3/z^2 + 15/z^4 - 105/z^6 + 945/z^8 - ...) (the Mills ratio's asymptotic
  // series, Abramowitz & Stegun 26.2.12), accurate to ~1e-12 at |z| = 40.
  for (double z : {-40.0, -100.0, -1e4}) {
    const double u = 1 / (z * z);
    const double series = -z * z / 2 - 0.5 * std::log(2 * std::numbers::pi) + std::log(u) +
                          std::log1p(u * (-3 + u * (15 + u * (-105 + u * 945))));
    EXPECT_TRUE(std::isfinite(gp_detail::log_h(z))) << z;
    EXPECT_NEAR(gp_detail::log_h(z), series, 1e-10 * std::abs(series)) << z;
  }
  EXPECT_TRUE(std::isfinite(gp_detail::log_h(-1e9)));
  // Increasing in z everywhere (a better mean never lowers EI).
  double previous = -HUGE_VAL;
  for (double z = -60; z <= 8; z += 0.01) {
    const double v = gp_detail::log_h(z);
    ASSERT_GT(v, previous) << z;
    previous = v;
  }
}

}  // namespace
}  // namespace paratune::hpo
