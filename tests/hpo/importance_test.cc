// Parameter importance (hpo/importance.h): shares a reader can take at their word -- none from too
// few trials, none that merely count groups, and an irrelevant parameter near 0.
#include "paratune/hpo/importance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace paratune::hpo {
namespace {

Space two_floats() {
  return Space::parse("parameters:\n  x1: {type: float, low: 0, high: 1}\n  x2: {type: float, low: 0, high: 1}\n",
                      "test");
}

TrialRecord completed(int number, double x1, double x2, double value) {
  TrialRecord t;
  t.number = number;
  t.config = Config{{"x1", x1}, {"x2", x2}};
  t.state = TrialRecord::State::kCompleted;
  t.value = value;
  return t;
}

// The study of issue 39: 4 completed trials, each alone in its bin, made every parameter explain
// 100% of the variance (shares summing to 200% here, 337% there). Now: too few trials to say.
TEST(Importance, FourTrialsAreTooFewToSayAnything) {
  const std::vector<TrialRecord> trials{completed(1, 0.1, 0.9, 3), completed(2, 0.4, 0.2, 1), completed(3, 0.6, 0.5, 4),
                                        completed(4, 0.9, 0.7, 2)};
  EXPECT_TRUE(parameter_importance(two_floats(), trials).empty());
}

TEST(Importance, OneTrialPerGroupExplainsNothingMeasurable) {
  EXPECT_FALSE(explained_share({0, 1, 2, 3}, {3, 1, 4, 2}).has_value());
  EXPECT_FALSE(explained_share({0, 1, 2, 3, 3}, {3, 1, 4, 2, 2}).has_value());  // 5 trials, 4 groups
  ASSERT_TRUE(explained_share({0, 0, 1, 1}, {1, 1, 5, 5}).has_value());
  EXPECT_DOUBLE_EQ(*explained_share({0, 0, 1, 1}, {1, 1, 5, 5}), 1.0);  // the groups explain it all
  EXPECT_DOUBLE_EQ(*explained_share({0, 1, 0, 1}, {2, 2, 2, 2}), 0.0);  // nothing to explain
}

// The share does not depend on the objective's scale: values of 1e200 (whose squares overflow a
// double) give the same share as the same values near 1, not NaN.
TEST(Importance, TheShareOfHugeValuesIsTheShareOfTheirScaledDownCopies) {
  const std::vector<int> group{0, 0, 0, 1, 1, 1};
  const std::vector<double> small{1.0, 1.5, 1.2, 3.0, 2.5, 3.4};
  std::vector<double> huge;
  for (double v : small) huge.push_back(v * 1e200);
  ASSERT_TRUE(explained_share(group, huge).has_value());
  EXPECT_NEAR(*explained_share(group, huge), *explained_share(group, small), 1e-12);
  EXPECT_GT(*explained_share(group, small), 0.8);
}

// 40 trials whose objective is x1 alone: x1 explains almost all of it, x2 (sampled independently)
// almost none, and the shares do not add up to more than the whole.
TEST(Importance, AnIrrelevantParameterGetsAboutNothing) {
  std::vector<TrialRecord> trials;
  for (int i = 0; i < 40; ++i) {
    const double x1 = (i + 0.5) / 40;
    const double x2 = std::fmod(0.37 + 0.618034 * i, 1.0);  // spread evenly, unrelated to x1
    trials.push_back(completed(i + 1, x1, x2, 10 * x1 + 0.3 * std::sin(7.0 * i)));
  }
  const std::vector<Importance> importance = parameter_importance(two_floats(), trials);
  ASSERT_EQ(importance.size(), 2U);
  EXPECT_EQ(importance[0].parameter, "x1");
  EXPECT_GT(importance[0].share, 0.85);
  EXPECT_EQ(importance[1].parameter, "x2");
  EXPECT_LT(importance[1].share, 0.05);
  EXPECT_LE(importance[0].share + importance[1].share, 1.0);
  EXPECT_EQ(importance[0].trials, 40);
  EXPECT_EQ(importance[0].groups, 4);
}

// A parameter of 8 values, each tried twice, on an objective it has nothing to do with: eta^2 gives
// it 49% (8 groups of 2 fit any data half-way), epsilon^2 about 5%.
TEST(Importance, ManyValuesDoNotMakeNoiseAnEffect) {
  const Space space = Space::parse("parameters:\n  c: [0, 1, 2, 3, 4, 5, 6, 7]\n", "test");
  const std::vector<double> noise{0.0,   0.922, 0.057, 0.558, 0.374, 0.453, 0.626, 0.166,
                                  0.329, 0.540, 0.972, 0.821, 0.179, 0.995, 0.816, 0.442};
  std::vector<TrialRecord> trials;
  for (int i = 0; i < 16; ++i) {
    TrialRecord t;
    t.number = i + 1;
    t.config = Config{{"c", i % 8}};
    t.state = TrialRecord::State::kCompleted;
    t.value = noise[static_cast<std::size_t>(i)];
    trials.push_back(t);
  }
  const std::vector<Importance> importance = parameter_importance(space, trials);
  ASSERT_EQ(importance.size(), 1U);
  EXPECT_EQ(importance[0].groups, 8);
  EXPECT_LT(importance[0].share, 0.1);
}

}  // namespace
}  // namespace paratune::hpo
