// The pruners (hpo/pruner.h): the name table and option validation (pruner.cc), ASHA and Hyperband's
// rungs, promotions and bracket shares (asha.cc), the median and percentile rules (median_pruner.cc).
// Promotion orders are checked against hand computations written next to each assertion.
#include "paratune/hpo/pruner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "paratune/spec/error.h"

namespace paratune::hpo {
namespace {

using State = TrialRecord::State;

// A trial as the controller records it: TrialBuilder(3).value_after(1, 0.3).resting_at(0).
class TrialBuilder {
 public:
  explicit TrialBuilder(int number) { trial_.number = number; }
  // The objective reported after `steps` steps (0-based step steps - 1); the trial has trained
  // that far.
  TrialBuilder& value_after(std::int64_t steps, double value) {
    trial_.curve.push_back({steps - 1, value});
    trial_.resource = std::max(trial_.resource, steps);
    return *this;
  }
  TrialBuilder& trained(std::int64_t steps) {
    trial_.resource = steps;
    return *this;
  }
  TrialBuilder& bracket(int b) {
    trial_.bracket = b;
    return *this;
  }
  TrialBuilder& resting_at(int rung) { return with(State::kPruned, rung); }
  TrialBuilder& running_from(int rung) { return with(State::kRunning, rung); }
  TrialBuilder& completed(int rung = -1) { return with(State::kCompleted, rung); }
  TrialBuilder& failed() { return with(State::kFailed, trial_.rung); }
  TrialBuilder& running() { return with(State::kRunning, trial_.rung); }
  operator TrialRecord() const { return trial_; }  // NOLINT: a builder converts implicitly

 private:
  TrialBuilder& with(State state, int rung) {
    trial_.state = state;
    trial_.rung = rung;
    return *this;
  }
  TrialRecord trial_;
};

PrunerOptions options_for(std::int64_t min_resource, std::int64_t max_resource, double eta = 3) {
  PrunerOptions o;
  o.min_resource = min_resource;
  o.max_resource = max_resource;
  o.eta = eta;
  return o;
}

TrialRecord& find(std::vector<TrialRecord>& trials, int number) {
  return *std::find_if(trials.begin(), trials.end(), [&](const TrialRecord& t) { return t.number == number; });
}

std::string error_of(const auto& action) {
  try {
    action();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// --- names and options ---------------------------------------------------------------------------

TEST(PrunerNames, RoundTripThroughTheOneTable) {
  for (PrunerKind kind :
       {PrunerKind::kNone, PrunerKind::kMedian, PrunerKind::kPercentile, PrunerKind::kAsha, PrunerKind::kHyperband})
    EXPECT_EQ(parse_pruner(to_string(kind)), kind);
  EXPECT_STREQ(to_string(PrunerKind::kHyperband), "hyperband");
}

TEST(PrunerNames, UnknownNameNamesTheValueAndTheValidNames) {
  const std::string message = error_of([] { parse_pruner("ashaa"); });
  EXPECT_EQ(message.find("--"), std::string::npos) << message;  // the program adds its flag
  EXPECT_NE(message.find("'ashaa'"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'asha'"), std::string::npos) << message;
  EXPECT_NE(message.find("none, median, percentile, asha, hyperband"), std::string::npos) << message;
}

TEST(PrunerOptionsValidate, DefaultsWithStepsAreValid) { EXPECT_NO_THROW(validate(options_for(0, 100))); }

TEST(PrunerOptionsValidate, EachRuleNamesItsFieldAndValue) {
  struct Case {
    PrunerOptions options;
    std::string expected;  // field and value, as the message starts
    std::string rule;
  };
  PrunerOptions o = options_for(0, 100);
  std::vector<Case> cases;
  auto add = [&](auto edit, std::string expected, std::string rule) {
    PrunerOptions bad = o;
    edit(bad);
    cases.push_back({bad, std::move(expected), std::move(rule)});
  };
  add([](PrunerOptions& p) { p.max_resource = 0; }, "option max_resource = 0:", ">= 1");
  add([](PrunerOptions& p) { p.eta = 1; }, "option eta = 1:", "> 1");
  add([](PrunerOptions& p) { p.eta = std::nan(""); }, "option eta = nan:", "> 1");
  add([](PrunerOptions& p) { p.min_resource = -2; }, "option min_resource = -2:", ">= 0");
  add([](PrunerOptions& p) { p.min_resource = 100; }, "option min_resource = 100:", "below max_resource (100)");
  add([](PrunerOptions& p) { p.percentile = 100; }, "option percentile = 100:", "(0, 100)");
  add([](PrunerOptions& p) { p.percentile = 0; }, "option percentile = 0:", "(0, 100)");
  add([](PrunerOptions& p) { p.startup_trials = -1; }, "option startup_trials = -1:", ">= 0");
  add([](PrunerOptions& p) { p.warmup_steps = -5; }, "option warmup_steps = -5:", ">= 0");
  for (const Case& c : cases) {
    const std::string message = error_of([&] { validate(c.options); });
    EXPECT_EQ(message.rfind(c.expected, 0), 0u) << message;
    EXPECT_NE(message.find(c.rule), std::string::npos) << message;
  }
}

TEST(PrunerFactory, ValidatesTheOptions) {
  EXPECT_THROW(make_pruner(PrunerKind::kAsha, options_for(0, 0)), Error);
}

TEST(PrunerNone, RunsEveryTrialToTheFullResource) {
  auto pruner = make_pruner(PrunerKind::kNone, options_for(0, 50));
  EXPECT_EQ(pruner->name(), "none");
  const std::vector<TrialRecord> trials{TrialBuilder(1).value_after(50, 1).completed()};
  const Assignment a = pruner->assign_new_trial(trials);
  EXPECT_EQ(a.bracket, 0);
  EXPECT_EQ(a.resource, 50);
  EXPECT_FALSE(pruner->promotion(trials));
  EXPECT_TRUE(pruner->keep_running(TrialBuilder(2).value_after(1, 1e9).running(), trials));
  EXPECT_EQ(pruner->rung_of(50, 0), -1);
  EXPECT_EQ(pruner->describe().dump(), R"({"pruner":"none"})");
}

// --- ASHA ------------------------------------------------------------------------------------------

std::vector<std::int64_t> asha_rungs(std::int64_t min_resource, std::int64_t max_resource, double eta) {
  return make_pruner(PrunerKind::kAsha, options_for(min_resource, max_resource, eta))
      ->describe()["brackets"][0]
      .get<std::vector<std::int64_t>>();
}

TEST(AshaRungs, AreMinTimesEtaToTheKRoundedDownThenTheMaximum) {
  using R = std::vector<std::int64_t>;
  EXPECT_EQ(asha_rungs(1, 9, 3), (R{1, 3, 9}));
  EXPECT_EQ(asha_rungs(2, 20, 2), (R{2, 4, 8, 16, 20}));
  EXPECT_EQ(asha_rungs(5, 6, 3), (R{5, 6}));
  EXPECT_EQ(asha_rungs(1, 81, 3), (R{1, 3, 9, 27, 81}));  // 81 = 3^4 is the final rung, not also a rung below it
  // eta 2.5 from 2: 2, 5, 12.5 -> 12, 31.25 -> 31, 78.125 -> 78.
  EXPECT_EQ(asha_rungs(2, 100, 2.5), (R{2, 5, 12, 31, 78, 100}));
  // eta 1.5 from 1: 1, 1.5 -> 1 (repeated: dropped), 2.25 -> 2, 3.375 -> 3, 5.06 -> 5, 7.59 -> 7, 11.4 >= 10.
  EXPECT_EQ(asha_rungs(1, 10, 1.5), (R{1, 2, 3, 5, 7, 10}));
}

TEST(AshaRungs, DefaultMinimumIsMaxOverEtaCubedAtLeastOne) {
  using R = std::vector<std::int64_t>;
  EXPECT_EQ(asha_rungs(0, 100, 3), (R{3, 9, 27, 81, 100}));         // floor(100 / 27) = 3
  EXPECT_EQ(asha_rungs(0, 1000, 4), (R{15, 60, 240, 960, 1000}));   // floor(1000 / 64) = 15
  EXPECT_EQ(asha_rungs(0, 9, 3), (R{1, 3, 9}));                     // floor(9 / 27) = 0 -> 1
  EXPECT_EQ(asha_rungs(0, 1, 3), (R{1}));                           // a full trial is one step: no early rung
}

TEST(AshaRungs, RungOfIsTheHighestRungReached) {
  auto asha = make_pruner(PrunerKind::kAsha, options_for(0, 100));  // 3, 9, 27, 81, 100
  EXPECT_EQ(asha->rung_of(0, 0), -1);
  EXPECT_EQ(asha->rung_of(2, 0), -1);
  EXPECT_EQ(asha->rung_of(3, 0), 0);
  EXPECT_EQ(asha->rung_of(26, 0), 1);
  EXPECT_EQ(asha->rung_of(81, 0), 3);
  EXPECT_EQ(asha->rung_of(100, 0), 4);
  EXPECT_EQ(asha->rung_of(27, 1), -1);  // ASHA has bracket 0 only
  EXPECT_EQ(asha->describe().dump(), R"({"pruner":"asha","eta":3,"brackets":[[3,9,27,81,100]]})");
}

TEST(AshaAssign, StartsEveryNewTrialAtTheFirstRung) {
  auto asha = make_pruner(PrunerKind::kAsha, options_for(0, 100));
  const Assignment a = asha->assign_new_trial({});
  EXPECT_EQ(a.bracket, 0);
  EXPECT_EQ(a.resource, 3);
}

// eta 3, rungs r_0 = 1, r_1 = 3, r_2 = 9 (final). A slot promotes from rung k when a trial resting at
// k is among the top floor(n_k / 3) of the n_k trials that completed k; rung 1 is checked before 0.
// Losses are the values after r_k steps.
TEST(AshaPromotion, FollowsTheHandWorkedOrder) {
  auto asha = make_pruner(PrunerKind::kAsha, options_for(1, 9));
  std::vector<TrialRecord> trials;
  auto rest_at_rung0 = [&](int number, double loss) {
    trials.push_back(TrialBuilder(number).value_after(1, loss).resting_at(0));
  };
  // The controller's side: the promoted trial runs, then rests at (or completes) its new rung.
  auto start = [&](int number) { find(trials, number).state = State::kRunning; };
  auto finish = [&](int number, std::int64_t steps, double loss, int rung) {
    TrialRecord& t = find(trials, number);
    t.curve.push_back({steps - 1, loss});
    t.resource = steps;
    t.rung = rung;
    t.state = steps == 9 ? State::kCompleted : State::kPruned;
  };

  // A: t1 .5, t2 .9 at rung 0: n_0 = 2, floor(2/3) = 0 -> none promotable -> a new trial, at 1 step.
  rest_at_rung0(1, 0.5);
  rest_at_rung0(2, 0.9);
  EXPECT_FALSE(asha->promotion(trials));
  EXPECT_EQ(asha->assign_new_trial(trials).resource, 1);

  // B: + t3 .3: n_0 = 3, top 1 = {t3} -> t3 to rung 1 (3 steps).
  rest_at_rung0(3, 0.3);
  std::optional<Promotion> p = asha->promotion(trials);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->trial_number, 3);
  EXPECT_EQ(p->resource, 3);
  EXPECT_EQ(p->rung, 1);

  // C: t3 running: rung 1 empty; rung 0 top 1 = {t3}, already promoted -> none.
  start(3);
  EXPECT_FALSE(asha->promotion(trials));

  // D: t3 rests at rung 1 (.25); + t4 .4, t5 .1, t6 .8 at rung 0.
  //    rung 1: n_1 = 1 -> top 0. rung 0: n_0 = 6 (t3 counts: it completed rung 0), ranked
  //    t5 .1, t3 .3, t4 .4, t1 .5, t6 .8, t2 .9; top 2 = {t5, t3}; t3 is past rung 0 -> t5.
  finish(3, 3, 0.25, 1);
  rest_at_rung0(4, 0.4);
  rest_at_rung0(5, 0.1);
  rest_at_rung0(6, 0.8);
  p = asha->promotion(trials);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->trial_number, 5);
  EXPECT_EQ(p->rung, 1);

  // E: t5 rests at rung 1 (.35): n_1 = 2 -> top 0; rung 0 top 2 = {t5, t3}, both past -> none.
  start(5);
  finish(5, 3, 0.35, 1);
  EXPECT_FALSE(asha->promotion(trials));

  // F: + t7 .2 at rung 0: n_0 = 7, top 2 = {t5 .1, t7 .2} -> t7 (t3 .3 has dropped out of the top 2;
  //    a promotion is never undone).
  rest_at_rung0(7, 0.2);
  p = asha->promotion(trials);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->trial_number, 7);
  EXPECT_EQ(p->rung, 1);

  // G: t7 rests at rung 1 (.05); + t8 .01 at rung 0. Rung 1: n_1 = 3 (t7 .05, t3 .25, t5 .35),
  //    top 1 = {t7} -> t7 to rung 2 = 9 steps, before rung 0's candidate t8 (top 2 of 8 = {t8, t5}).
  start(7);
  finish(7, 3, 0.05, 1);
  rest_at_rung0(8, 0.01);
  p = asha->promotion(trials);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->trial_number, 7);
  EXPECT_EQ(p->resource, 9);
  EXPECT_EQ(p->rung, 2);

  // H: t7 running: rung 1 top 1 = {t7}, running -> nothing there; rung 0 -> t8.
  start(7);
  p = asha->promotion(trials);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->trial_number, 8);
  EXPECT_EQ(p->rung, 1);

  // I: t8 running, t7 complete (9 steps, .02): rung 1 top 1 = {t7}, past; rung 0 top 2 = {t8, t5},
  //    both past -> none -> a new trial.
  start(8);
  finish(7, 9, 0.02, 2);
  EXPECT_FALSE(asha->promotion(trials));
}

TEST(AshaPromotion, TiesGoToTheLowerTrialNumberAndAMissingValueIsWorst) {
  auto asha = make_pruner(PrunerKind::kAsha, options_for(1, 9));
  std::vector<TrialRecord> tied{TrialBuilder(4).value_after(1, 0.5).resting_at(0),
                                TrialBuilder(2).value_after(1, 0.5).resting_at(0),
                                TrialBuilder(3).value_after(1, 0.5).resting_at(0)};
  EXPECT_EQ(asha->promotion(tied)->trial_number, 2);

  // t1 trained to rung 0 but reported nothing before step 1: worst, so t3 (.8) leads.
  std::vector<TrialRecord> missing{TrialBuilder(1).trained(1).resting_at(0),
                                   TrialBuilder(2).value_after(1, 0.9).resting_at(0),
                                   TrialBuilder(3).value_after(1, 0.8).resting_at(0)};
  EXPECT_EQ(asha->promotion(missing)->trial_number, 3);

  // A NaN is the worst too.
  std::vector<TrialRecord> nan{TrialBuilder(1).value_after(1, std::nan("")).resting_at(0),
                               TrialBuilder(2).value_after(1, 0.9).resting_at(0),
                               TrialBuilder(3).value_after(1, 0.95).resting_at(0)};
  EXPECT_EQ(asha->promotion(nan)->trial_number, 2);
}

TEST(AshaPromotion, RanksByTheValueAtTheRungsResourceInTheStudysDirection) {
  PrunerOptions o = options_for(1, 9);
  o.direction = Direction::kMaximize;
  auto asha = make_pruner(PrunerKind::kAsha, o);
  // The values after r_0 = 1 step decide, not later ones: t2's 0.95 at step 1 is past r_0.
  std::vector<TrialRecord> trials{TrialBuilder(1).value_after(1, 0.7).resting_at(0),
                                  TrialBuilder(2).value_after(1, 0.6).value_after(2, 0.95).resting_at(0),
                                  TrialBuilder(3).value_after(1, 0.3).resting_at(0)};
  EXPECT_EQ(asha->promotion(trials)->trial_number, 1);
}

TEST(AshaPromotion, FailedTrialsKeepTheirPlaceButAreNotPromoted) {
  auto asha = make_pruner(PrunerKind::kAsha, options_for(1, 9));
  // t1 was promoted from rung 0 and failed on its way to rung 1: it still completed rung 0, so the
  // top 1 of three is t1 and nothing is promoted; a trial that failed before rung 0 does not count.
  std::vector<TrialRecord> trials{TrialBuilder(1).value_after(1, 0.1).value_after(2, 0.1).resting_at(0).failed(),
                                  TrialBuilder(2).value_after(1, 0.5).resting_at(0),
                                  TrialBuilder(3).value_after(1, 0.6).resting_at(0),
                                  TrialBuilder(4).failed()};
  EXPECT_FALSE(asha->promotion(trials));
}

// --- Hyperband ---------------------------------------------------------------------------------

TEST(HyperbandBrackets, StartAtMinTimesEtaToTheSAndIncludeTheFullBracketOnAPowerOfEta) {
  auto hb = make_pruner(PrunerKind::kHyperband, options_for(1, 9));
  // s_max = floor(log_3(9 / 1)) = 2; weights w_b = ceil(3 * 3^s / (s + 1)), s = 2 - b: 9, 5, 3.
  EXPECT_EQ(hb->describe().dump(),
            R"({"pruner":"hyperband","eta":3,"brackets":[[1,3,9],[3,9],[9]],"weights":[9,5,3]})");
  // max 100, default min 3: s_max = floor(log_3(100 / 3)) = 3; w = ceil(4 * 3^s / (s + 1)), s = 3..0:
  // 27, 12, 6, 4 (Hyperband's table for s_max = 4 reads 81, 34, 15, 8, 5 by the same formula).
  auto hb100 = make_pruner(PrunerKind::kHyperband, options_for(0, 100));
  EXPECT_EQ(hb100->describe()["brackets"].dump(), "[[3,9,27,81,100],[9,27,81,100],[27,81,100],[81,100]]");
  EXPECT_EQ(hb100->describe()["weights"].dump(), "[27,12,6,4]");
  EXPECT_EQ(hb100->rung_of(27, 2), 0);
  EXPECT_EQ(hb100->rung_of(26, 2), -1);
  EXPECT_EQ(hb100->rung_of(100, 3), 1);
  EXPECT_EQ(hb100->rung_of(100, 4), -1);
}

TEST(HyperbandAssign, FillsBracketsInProportionToTheirShares) {
  auto hb = make_pruner(PrunerKind::kHyperband, options_for(1, 9));  // w = 9, 5, 3; W = 17
  // The bracket with the largest w_b (N + 1) - 17 c_b (N assigned, c_b to bracket b), by hand:
  //   N=0: 9 5 3 -> 0     N=1: 1 10 6 -> 1     N=2: 10 -2 9 -> 0    N=3: 2 3 12 -> 2
  //   N=4: 11 8 -2 -> 0   N=5: 3 13 1 -> 1     N=6: 12 1 4 -> 0     N=7: 4 6 7 -> 2
  //   N=8: 13 11 -7 -> 0  N=9: 5 16 -4 -> 1    N=10: 14 4 -1 -> 0   N=11: 6 9 2 -> 1
  //   N=12: 15 -3 5 -> 0  N=13: 7 2 8 -> 2     N=14: 16 7 -6 -> 0   N=15: 8 12 -3 -> 1
  //   N=16: 17 0 0 -> 0 (then the cycle repeats)
  const std::vector<int> expected{0, 1, 0, 2, 0, 1, 0, 2, 0, 1, 0, 1, 0, 2, 0, 1, 0};
  const std::vector<std::int64_t> first_rung{1, 3, 9};
  std::vector<TrialRecord> trials;
  std::vector<int> counts(3, 0);
  for (int n = 0; n < 34; ++n) {
    const Assignment a = hb->assign_new_trial(trials);
    EXPECT_EQ(a.bracket, expected[static_cast<std::size_t>(n % 17)]) << "trial " << n + 1;
    EXPECT_EQ(a.resource, first_rung[static_cast<std::size_t>(a.bracket)]);
    trials.push_back(TrialBuilder(n + 1).bracket(a.bracket).running());
    ++counts[static_cast<std::size_t>(a.bracket)];
    if (n + 1 == 17) EXPECT_EQ(counts, (std::vector<int>{9, 5, 3}));
  }
  EXPECT_EQ(counts, (std::vector<int>{18, 10, 6}));
}

TEST(HyperbandPromotion, PromotesWithinABracketOnlyAndChecksTheLowerBracketFirst) {
  auto hb = make_pruner(PrunerKind::kHyperband, options_for(1, 9));  // [1, 3, 9], [3, 9], [9]
  // Bracket 0 has t1 .5, t2 .6 at rung 0 (1 step); bracket 1 has t3 .1 at its rung 0 (3 steps).
  // Pooled there would be three; per bracket n_0 = 2 and 1 -> none.
  std::vector<TrialRecord> trials{TrialBuilder(1).value_after(1, 0.5).resting_at(0),
                                  TrialBuilder(2).value_after(1, 0.6).resting_at(0),
                                  TrialBuilder(3).bracket(1).value_after(3, 0.1).resting_at(0)};
  EXPECT_FALSE(hb->promotion(trials));

  // + t4 .4, t5 .2 in bracket 1: its n_0 = 3, top 1 = {t3} -> t3 to bracket 1's rung 1 = 9 steps.
  trials.push_back(TrialBuilder(4).bracket(1).value_after(3, 0.4).resting_at(0));
  trials.push_back(TrialBuilder(5).bracket(1).value_after(3, 0.2).resting_at(0));
  std::optional<Promotion> p = hb->promotion(trials);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->trial_number, 3);
  EXPECT_EQ(p->resource, 9);
  EXPECT_EQ(p->rung, 1);

  // + t6 .05 in bracket 0: its n_0 = 3, top 1 = {t6}; bracket 0 is checked first -> t6 to 3 steps.
  trials.push_back(TrialBuilder(6).value_after(1, 0.05).resting_at(0));
  p = hb->promotion(trials);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->trial_number, 6);
  EXPECT_EQ(p->resource, 3);
  EXPECT_EQ(p->rung, 1);
}

// --- median and percentile ---------------------------------------------------------------------

PrunerOptions median_options(int startup_trials = 0, std::int64_t warmup_steps = 0) {
  PrunerOptions o = options_for(0, 10);
  o.startup_trials = startup_trials;
  o.warmup_steps = warmup_steps;
  return o;
}

// Three completed trials that reported 1, 2 and 3 after 5 steps (step 4), and the running trial 9
// with `value` at step 4 (it is in `trials` too, as the controller passes it).
struct MedianCase {
  std::vector<TrialRecord> trials;
  TrialRecord running;
};
MedianCase median_case(double value, std::vector<double> others = {1, 2, 3}) {
  MedianCase c;
  int number = 1;
  for (double v : others) c.trials.push_back(TrialBuilder(number++).value_after(1, 5).value_after(5, v).completed());
  c.running = TrialBuilder(9).value_after(1, 5).value_after(5, value).running();
  c.trials.push_back(c.running);
  return c;
}

bool keeps(PrunerKind kind, const PrunerOptions& o, const MedianCase& c) {
  return make_pruner(kind, o)->keep_running(c.running, c.trials);
}

TEST(PrunerMedian, StopsAWorseTrialAndKeepsABetterOrEqualOne) {
  const PrunerOptions o = median_options();
  // Others at step 4: 1, 2, 3 -> median 2 (the running trial itself does not count).
  EXPECT_FALSE(keeps(PrunerKind::kMedian, o, median_case(2.5)));
  EXPECT_TRUE(keeps(PrunerKind::kMedian, o, median_case(1.5)));
  EXPECT_TRUE(keeps(PrunerKind::kMedian, o, median_case(2.0)));  // strictly worse stops; a tie runs on
  auto median = make_pruner(PrunerKind::kMedian, o);
  EXPECT_EQ(median->name(), "median");
  EXPECT_EQ(median->assign_new_trial({}).resource, 10);
  // Its rule, part of the study's identity: a resumed study cannot switch to another percentile.
  EXPECT_EQ(median->describe()["pruner"], "median");
  EXPECT_EQ(median->describe()["percentile"], 50.0);
}

TEST(PrunerMedian, InterpolatesLinearlyBetweenTheMiddleTwo) {
  // Others 1, 2, 3, 4: h = 3 x 0.5 = 1.5 -> 2 + 0.5 x (3 - 2) = 2.5.
  EXPECT_TRUE(keeps(PrunerKind::kMedian, median_options(), median_case(2.5, {4, 1, 3, 2})));
  EXPECT_FALSE(keeps(PrunerKind::kMedian, median_options(), median_case(2.51, {4, 1, 3, 2})));
}

TEST(PrunerMedian, WaitsForTheStartupTrials) {
  EXPECT_TRUE(keeps(PrunerKind::kMedian, median_options(4), median_case(2.5)));   // 3 completed < 4
  EXPECT_FALSE(keeps(PrunerKind::kMedian, median_options(3), median_case(2.5)));  // 3 completed
}

TEST(PrunerMedian, NeverStopsBeforeTheWarmupSteps) {
  EXPECT_TRUE(keeps(PrunerKind::kMedian, median_options(0, 5), median_case(2.5)));   // step 4 < 5
  EXPECT_FALSE(keeps(PrunerKind::kMedian, median_options(0, 4), median_case(2.5)));  // step 4 >= 4
}

TEST(PrunerMedian, KeepsATrialNoOtherReachedTheStepOf) {
  MedianCase c = median_case(2.5);
  c.running.curve.back().step = 5;  // the others reported at steps 0 and 4 only
  c.trials.back() = c.running;
  EXPECT_TRUE(keeps(PrunerKind::kMedian, median_options(), c));
}

TEST(PrunerMedian, ComparesWithRunningAndStoppedTrialsButNotFailedOnes) {
  // Others at step 4: completed 1, 2, 3; a running 0.1 and a stopped 0.2 lower the median to 1;
  // a failed 0.0 does not count.
  MedianCase c = median_case(1.5);
  c.trials.push_back(TrialBuilder(10).value_after(5, 0.1).running());
  c.trials.push_back(TrialBuilder(11).value_after(5, 0.2).resting_at(-1));
  c.trials.push_back(TrialBuilder(12).value_after(5, 0.0).failed());
  EXPECT_FALSE(keeps(PrunerKind::kMedian, median_options(), c));  // 1.5 > median(0.1, 0.2, 1, 2, 3) = 1
}

TEST(PrunerPercentile, TwentyFiveIsStricterThanTheMedian) {
  PrunerOptions o = median_options();
  o.percentile = 25;
  // Others 1, 2, 3: P_25 at h = 2 x 0.25 = 0.5 -> 1.5; the median is 2. A 1.7 passes the median only.
  EXPECT_TRUE(keeps(PrunerKind::kMedian, o, median_case(1.7)));
  EXPECT_FALSE(keeps(PrunerKind::kPercentile, o, median_case(1.7)));
  EXPECT_TRUE(keeps(PrunerKind::kPercentile, o, median_case(1.5)));
  EXPECT_EQ(make_pruner(PrunerKind::kPercentile, o)->name(), "percentile");
}

TEST(PrunerMedian, WorksOnLossesWhenMaximizing) {
  PrunerOptions o = median_options();
  o.direction = Direction::kMaximize;
  // Accuracies 1, 2, 3 -> losses -1, -2, -3, median -2. 1.5 (loss -1.5) is worse; 2.5 better.
  EXPECT_FALSE(keeps(PrunerKind::kMedian, o, median_case(1.5)));
  EXPECT_TRUE(keeps(PrunerKind::kMedian, o, median_case(2.5)));
  // Percentile 25 of losses keeps the best quarter: -3 + 0.5 x (-2 - -3) = -2.5: 2.6 stays, 2.4 stops.
  o.percentile = 25;
  EXPECT_TRUE(keeps(PrunerKind::kPercentile, o, median_case(2.6)));
  EXPECT_FALSE(keeps(PrunerKind::kPercentile, o, median_case(2.4)));
}

TEST(PrunerMedian, NonFiniteValuesAreTheWorst) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(keeps(PrunerKind::kMedian, median_options(), median_case(nan)));
  EXPECT_FALSE(keeps(PrunerKind::kMedian, median_options(), median_case(-inf)));  // minimizing: -inf diverged
  // Others 1, NaN, inf -> 1, worst, worst: the median is the worst, so anything runs on.
  EXPECT_TRUE(keeps(PrunerKind::kMedian, median_options(), median_case(100, {1, nan, inf})));
  EXPECT_TRUE(keeps(PrunerKind::kMedian, median_options(), median_case(nan, {1, nan, inf})));  // tie
}

}  // namespace
}  // namespace paratune::hpo
