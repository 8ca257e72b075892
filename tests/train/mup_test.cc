// muP's rule table (train/mup.h) against Tensor Programs V's Table 3 and the mup library's MuSGD,
// MuAdam and MuReadout, worked by hand for a model twice and four times its base width.
#include "paratune/train/mup.h"

#include <gtest/gtest.h>

#include <cmath>

#include "paratune/spec/error.h"

namespace paratune::train {
namespace {

TEST(Mup, AtTheBaseWidthEveryFactorIsOneSoMupIsTheStandardParametrization) {
  for (Optimizer o : {Optimizer::kSgd, Optimizer::kAdam, Optimizer::kAdamW})
    for (WeightRole r : {WeightRole::kInput, WeightRole::kHidden, WeightRole::kOutput, WeightRole::kVector}) {
      const MupScaling s = mup_scaling(r, o, 1, 1);
      EXPECT_EQ(s.init_std, 1) << to_string(r);
      EXPECT_EQ(s.learning_rate, 1) << to_string(r);
      EXPECT_EQ(s.weight_decay, 1) << to_string(r);
      EXPECT_EQ(s.forward_multiplier, 1) << to_string(r);
    }
  EXPECT_DOUBLE_EQ(mup_attention_scale(32, 32), 1 / std::sqrt(32.0));
}

// Four times wider: input weights 784 x 4n, hidden 4n x 4n, output 4n x 10, biases of 4n.
TEST(Mup, FourTimesWiderUnderSgdAndAdam) {
  // SGD (MuSGD): vector-like weights' rate x their growing dimension's multiplier; hidden x m_out/m_in.
  EXPECT_DOUBLE_EQ(mup_scaling(WeightRole::kInput, Optimizer::kSgd, 1, 4).learning_rate, 4);
  EXPECT_DOUBLE_EQ(mup_scaling(WeightRole::kHidden, Optimizer::kSgd, 4, 4).learning_rate, 1);
  EXPECT_DOUBLE_EQ(mup_scaling(WeightRole::kHidden, Optimizer::kSgd, 4, 2).learning_rate, 0.5);  // a narrowing layer
  EXPECT_DOUBLE_EQ(mup_scaling(WeightRole::kOutput, Optimizer::kSgd, 4, 1).learning_rate, 4);
  EXPECT_DOUBLE_EQ(mup_scaling(WeightRole::kVector, Optimizer::kSgd, 1, 4).learning_rate, 4);
  // Adam (MuAdam): only matrix-like (hidden) weights' rate changes, / m_in.
  EXPECT_DOUBLE_EQ(mup_scaling(WeightRole::kInput, Optimizer::kAdam, 1, 4).learning_rate, 1);
  EXPECT_DOUBLE_EQ(mup_scaling(WeightRole::kHidden, Optimizer::kAdamW, 4, 4).learning_rate, 0.25);
  EXPECT_DOUBLE_EQ(mup_scaling(WeightRole::kOutput, Optimizer::kAdam, 4, 1).learning_rate, 1);
  // Weight decay follows the rate inversely: lr x wd per step unchanged.
  EXPECT_DOUBLE_EQ(mup_scaling(WeightRole::kHidden, Optimizer::kAdamW, 4, 4).weight_decay, 4);
  EXPECT_DOUBLE_EQ(mup_scaling(WeightRole::kOutput, Optimizer::kSgd, 4, 1).weight_decay, 0.25);
  // Initialization: hidden variance 1/fan_in (std / sqrt(m_in) from the base's); input kept.
  EXPECT_DOUBLE_EQ(mup_scaling(WeightRole::kHidden, Optimizer::kSgd, 4, 4).init_std, 0.5);
  EXPECT_DOUBLE_EQ(mup_scaling(WeightRole::kInput, Optimizer::kSgd, 1, 4).init_std, 1);
  // The readout (MuReadout): the base's std, its input scaled by 1/m_in.
  const MupScaling readout = mup_scaling(WeightRole::kOutput, Optimizer::kSgd, 4, 1);
  EXPECT_EQ(readout.init_std, 1);
  EXPECT_DOUBLE_EQ(readout.forward_multiplier, 0.25);
  // Attention: 1/d scaling, equal to SP's 1/sqrt(d) at the base head size.
  EXPECT_DOUBLE_EQ(mup_attention_scale(128, 32), std::sqrt(32.0) / 128);
}

// Hydro's surrogate S = 4 times narrower than its target is m = 1/4 against the target as base: its
// output rules (input x S, SGD rate / S), hidden variance x S and Adam hidden rule (rate x S) are mup's.
TEST(Mup, HydrosSurrogateRulesWhereTheyAgreeWithMup) {
  const double s = 4, m = 1 / s;
  EXPECT_DOUBLE_EQ(mup_scaling(WeightRole::kOutput, Optimizer::kSgd, m, 1).forward_multiplier, s);
  EXPECT_DOUBLE_EQ(mup_scaling(WeightRole::kOutput, Optimizer::kSgd, m, 1).learning_rate, 1 / s);
  EXPECT_DOUBLE_EQ(mup_scaling(WeightRole::kHidden, Optimizer::kAdam, m, m).learning_rate, s);
  EXPECT_DOUBLE_EQ(mup_scaling(WeightRole::kInput, Optimizer::kSgd, 1, m).learning_rate, 1 / s);
  const double hidden_std = mup_scaling(WeightRole::kHidden, Optimizer::kSgd, m, m).init_std;
  EXPECT_DOUBLE_EQ(hidden_std * hidden_std, s);
}

TEST(Mup, AMultiplierThatIsNotPositiveIsAnError) {
  EXPECT_THROW((void)mup_scaling(WeightRole::kHidden, Optimizer::kSgd, 0, 1), Error);
  EXPECT_THROW((void)mup_scaling(WeightRole::kHidden, Optimizer::kSgd, 1, -2), Error);
  EXPECT_THROW((void)mup_scaling(WeightRole::kHidden, Optimizer::kSgd, std::nan(""), 1), Error);
  EXPECT_THROW((void)mup_attention_scale(0, 32), Error);
}

}  // namespace
}  // namespace paratune::train
