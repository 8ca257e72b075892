// The CMA-ES sampler (src/hpo/cmaes_sampler.cc): it converges on a smooth high-dimensional function
// where random search cannot, stays inside the bounds (log-scaled and integer parameters included),
// finds integer optima (the margin), restarts with a doubled population once converged (IPOP),
// draws categorical parameters from their prior, steers away from a failing region, goes on from the
// stored trials when resumed, is deterministic per seed, and refuses a space it cannot search.
// Studies are simulated in process: the test builds the TrialRecords.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "paratune/hpo/sampler.h"
#include "paratune/spec/error.h"

namespace paratune::hpo {
namespace {
namespace cmaes_test {  // the unity build puts other sampler tests' helpers beside these

using State = TrialRecord::State;

std::string box_space(int dimensions, double low, double high) {
  std::string text = "parameters:\n";
  for (int d = 1; d <= dimensions; ++d) text += "  x" + std::to_string(d) + ": {type: float, low: " +
                                               std::to_string(low) + ", high: " + std::to_string(high) + "}\n";
  return text;
}

// Sum of (x_d - 1)^2: minimum 0 at (1, ..., 1), off the centre of the box.
double shifted_sphere(const Config& c) {
  double sum = 0;
  for (const auto& [name, value] : c.items())
    if (name[0] == 'x') sum += (value.get<double>() - 1) * (value.get<double>() - 1);
  return sum;
}

// Runs `evaluations` sequential trials of `loss` (nullopt: the trial fails); returns every trial.
template <class Loss>
std::vector<TrialRecord> simulate(Sampler& sampler, int evaluations, Loss loss) {
  std::vector<TrialRecord> trials;
  for (int i = 0; i < evaluations; ++i) {
    const std::optional<Config> config = sampler.propose(trials);
    if (!config) break;
    const std::optional<double> value = loss(*config);
    TrialRecord& t = trials.emplace_back();
    t.number = i + 1;
    t.config = *config;
    t.state = value ? State::kCompleted : State::kFailed;
    t.value = value;
    if (!value) t.failure = trial::FailureKind::kRefused;
  }
  return trials;
}

double best_value(const std::vector<TrialRecord>& trials) {
  double best = INFINITY;
  for (const TrialRecord& t : trials)
    if (t.value) best = std::min(best, *t.value);
  return best;
}

TEST(CmaEs, ConvergesOnATenDimensionalFunctionWhereRandomSearchCannot) {
  const Space space = Space::parse(box_space(10, -5, 5), "sphere.yaml");
  for (std::uint64_t seed : {1, 2, 3}) {
    SamplerOptions options;
    options.seed = seed;
    auto cmaes = make_sampler(SamplerKind::kCmaes, space, options);
    auto random = make_sampler(SamplerKind::kRandom, space, options);
    const double cma_best = best_value(simulate(*cmaes, 300, shifted_sphere));
    const double random_best = best_value(simulate(*random, 300, shifted_sphere));
    // Random search over [-5, 5]^10 stays near 20 after 300 draws; CMA-ES (lambda = 10, 30
    // generations) shrinks its step size around the optimum.
    EXPECT_LT(cma_best, 0.5) << "seed " << seed;
    EXPECT_GT(random_best, 5 * cma_best) << "seed " << seed;
    EXPECT_GT(cmaes->model_summary()["generations"].get<int>(), 25) << cmaes->model_summary().dump();
  }
}

TEST(CmaEs, StaysInBoundsWithLogIntegerAndCategoricalParameters) {
  const Space space = Space::parse(
      "parameters:\n"
      "  lr: {type: float, low: 1e-5, high: 1e-1, log: true}\n"
      "  width: {type: int, low: 16, high: 1024, log: true}\n"
      "  depth: {type: int, low: 1, high: 8}\n"
      "  act: [relu, gelu, silu]\n",
      "mixed.yaml");
  SamplerOptions options;
  options.seed = 7;
  auto sampler = make_sampler(SamplerKind::kCmaes, space, options);
  std::set<std::string> activations;
  // The best is at lr 1e-3, width 256, depth 3 (in log units for lr and width).
  const auto trials = simulate(*sampler, 120, [&](const Config& c) {
    activations.insert(c["act"].get<std::string>());
    return std::pow(std::log10(c["lr"].get<double>()) + 3, 2) + std::pow(std::log2(c["width"].get<double>()) - 8, 2) +
           std::pow(c["depth"].get<double>() - 3, 2);
  });
  for (const TrialRecord& t : trials) {
    ASSERT_TRUE(space.satisfies(t.config)) << t.config.dump();
    EXPECT_TRUE(t.config["width"].is_number_integer() && t.config["depth"].is_number_integer()) << t.config.dump();
    EXPECT_GE(t.config["lr"].get<double>(), 1e-5);
    EXPECT_LE(t.config["lr"].get<double>(), 1e-1);
  }
  EXPECT_EQ(activations.size(), 3u);  // drawn from the prior
  EXPECT_LT(best_value(trials), 0.3);
}

TEST(CmaEs, IntegerParametersReachTheirOptimumThanksToTheMargin) {
  // On integers alone the loss is flat inside each cell: without the margin the spread collapses
  // onto whichever integers the mean sits in.
  const Space space = Space::parse("parameters:\n  a: {type: int, low: 0, high: 30}\n  b: {type: int, low: 0, high: 30}\n"
                                   "  c: {type: int, low: 1, high: 1000, log: true}\n",
                                   "ints.yaml");
  for (std::uint64_t seed : {1, 2, 3}) {
    SamplerOptions options;
    options.seed = seed;
    auto sampler = make_sampler(SamplerKind::kCmaes, space, options);
    const auto trials = simulate(*sampler, 200, [](const Config& c) {
      const double a = c["a"].get<double>() - 17, b = c["b"].get<double>() - 4, l = std::log2(c["c"].get<double>()) - 5;
      return a * a + b * b + l * l;  // 0 at (17, 4, 32)
    });
    EXPECT_EQ(best_value(trials), 0) << "seed " << seed << ": " << sampler->model_summary().dump();
  }
}

TEST(CmaEs, RestartsWithTwiceThePopulationOnceConverged) {
  // A flat function: every generation's values are equal, so each search has converged at once.
  const Space space = Space::parse(box_space(2, 0, 1), "flat.yaml");  // lambda = 4 + floor(3 ln 2) = 6
  auto sampler = make_sampler(SamplerKind::kCmaes, space, SamplerOptions{});
  const auto trials = simulate(*sampler, 6 + 12, [](const Config&) { return 1.0; });
  ASSERT_TRUE(sampler->propose(trials));  // takes in the last one
  EXPECT_EQ(sampler->model_summary()["restarts"], 2) << sampler->model_summary().dump();
  EXPECT_EQ(sampler->model_summary()["lambda"], 24);
}

TEST(CmaEs, SteersAwayFromARegionThatFails) {
  // Everything with x1 > 2 is refused; the optimum (1, ..., 1) is next to that region.
  const Space space = Space::parse(box_space(4, -5, 5), "fail.yaml");
  SamplerOptions options;
  options.seed = 11;
  auto sampler = make_sampler(SamplerKind::kCmaes, space, options);
  const auto trials = simulate(*sampler, 80, [](const Config& c) -> std::optional<double> {
    if (c["x1"].get<double>() > 2) return std::nullopt;
    return shifted_sphere(c);
  });
  const auto failed = std::count_if(trials.begin(), trials.end(), [](const TrialRecord& t) { return t.state == State::kFailed; });
  // Random search would fail 30% of the time (24 of 80).
  EXPECT_LT(failed, 12);
  EXPECT_LT(best_value(trials), 1.0);
}

TEST(CmaEs, AResumedSamplerGoesOnFromTheStoredTrialsAndASeedRepeatsItsDraws) {
  const Space space = Space::parse(box_space(5, -5, 5), "resume.yaml");
  SamplerOptions options;
  options.seed = 3;
  auto first = make_sampler(SamplerKind::kCmaes, space, options);
  const auto trials = simulate(*first, 64, shifted_sphere);
  // A fresh sampler over the same trials has taken in the same generations (lambda = 8 for n = 5).
  auto resumed = make_sampler(SamplerKind::kCmaes, space, options);
  ASSERT_TRUE(resumed->propose(trials));
  ASSERT_TRUE(first->propose(trials));  // takes in the last trial too
  EXPECT_EQ(resumed->proposal_notes()["generation"], 8) << resumed->proposal_notes().dump();
  EXPECT_EQ(resumed->model_summary()["mean"], first->model_summary()["mean"]);
  // The same seed, the same study.
  auto again = make_sampler(SamplerKind::kCmaes, space, options);
  const auto repeated = simulate(*again, 64, shifted_sphere);
  for (std::size_t i = 0; i < trials.size(); ++i) EXPECT_EQ(trials[i].config, repeated[i].config) << i;
}

TEST(CmaEs, RefusesASpaceWithoutAContinuousParameter) {
  const Space space = Space::parse("parameters:\n  act: [relu, gelu]\n", "cat.yaml");
  try {
    (void)make_sampler(SamplerKind::kCmaes, space, SamplerOptions{});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cat.yaml: cmaes searches float and int parameters"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_sampler("cmaes"), SamplerKind::kCmaes);
}

}  // namespace cmaes_test
}  // namespace
}  // namespace paratune::hpo
