// The samplers' feasibility model (src/hpo/feasibility.h): tpe and gp never propose again a
// configuration refused at start-up, stay out of a region where every configuration fails, and
// say what their feasibility model learned. Studies are simulated in-process.
#include <gtest/gtest.h>

#include <string>

#include "paratune/hpo/sampler.h"

namespace paratune::hpo {
namespace {

using State = TrialRecord::State;

// A sequential study of `n` proposals: loss -a b (the largest product is best), refused whenever
// `refused(config)`.
template <class Refused>
std::vector<TrialRecord> simulate_refusals(Sampler& sampler, int n, Refused refused) {
  std::vector<TrialRecord> trials;
  for (int i = 0; i < n; ++i) {
    const std::optional<Config> config = sampler.propose(trials);
    if (!config) break;
    TrialRecord t;
    t.number = i + 1;
    t.config = *config;
    if (refused(*config)) {
      t.state = State::kFailed;
      t.failure = trial::FailureKind::kRefused;
    } else {
      t.state = State::kCompleted;
      t.value = -(*config)["a"].get<double>() * (*config)["b"].get<double>();
    }
    trials.push_back(std::move(t));
  }
  return trials;
}

TEST(SamplerFeasibility, ARefusedConfigurationIsNeverProposedAgain) {
  // Six configurations; the one that would be best, (2, 3), is refused.
  const Space space = Space::parse("parameters:\n  a: [1, 2]\n  b: [1, 2, 3]\n", "test");
  for (SamplerKind kind : {SamplerKind::kTpe, SamplerKind::kGp}) {
    SamplerOptions o;
    o.seed = 3;
    o.startup_trials = 3;
    auto sampler = make_sampler(kind, space, o);
    const auto is_best = [](const Config& c) { return c["a"] == 2 && c["b"] == 3; };
    const std::vector<TrialRecord> trials = simulate_refusals(*sampler, 40, is_best);
    int refused = 0;
    for (const TrialRecord& t : trials) refused += is_best(t.config);
    EXPECT_LE(refused, 1) << to_string(kind);
    if (refused == 1) {
      EXPECT_EQ(sampler->model_summary()["feasibility"]["failures"]["refused"], 1) << sampler->model_summary().dump();
      EXPECT_EQ(sampler->model_summary()["feasibility"]["never_again"], 1) << to_string(kind);
    }
  }
}

TEST(SamplerFeasibility, StaysOutOfARegionThatIsRefused) {
  // a in [0, 1]: everything with a > 0.6 is refused, and the loss -a b pulls towards it.
  const Space space = Space::parse("parameters:\n  a: {type: float, low: 0, high: 1}\n  b: {type: float, low: 1, high: 2}\n",
                                   "test");
  for (SamplerKind kind : {SamplerKind::kTpe, SamplerKind::kGp}) {
    int refused_after_startup = 0;
    for (std::uint64_t seed : {1, 2}) {
      SamplerOptions o;
      o.seed = seed;
      o.startup_trials = 8;
      auto sampler = make_sampler(kind, space, o);
      const std::vector<TrialRecord> trials = simulate_refusals(*sampler, 40, [](const Config& c) { return c["a"].get<double>() > 0.6; });
      for (std::size_t i = 8; i < trials.size(); ++i) refused_after_startup += trials[i].state == State::kFailed;
    }
    // Random proposals would put 40% of the 64 model proposals (about 26) in the refused region.
    EXPECT_LE(refused_after_startup, 10) << to_string(kind);
  }
}

}  // namespace
}  // namespace paratune::hpo
