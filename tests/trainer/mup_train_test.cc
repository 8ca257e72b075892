// muP in paratune-train (train/mup.h applied by models.cc and the optimizer's groups): each weight's
// role, rate and initialization in built models, muP equal to the standard model at the base width,
// and mup's coordinate check -- layer outputs flat across widths under muP, growing under SP.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <tuple>

#include "coord_check.h"
#include "models.h"
#include "paratune/train/corpus.h"
#include "paratune/train/idx.h"
#include "paratune/train/options.h"
#include "trainer.h"

namespace paratune::train {
namespace {

bool mup_data_present() {
  return std::filesystem::exists(kDebianFashionMnist) && std::filesystem::exists(kDebianFortunes);
}

TrainOptions options_of(const std::string& args) {
  std::vector<std::string> words;
  std::istringstream in(args);
  for (std::string w; in >> w;) words.push_back(w);
  return parse_train_options(words, "", "");
}

double sample_std(const torch::Tensor& t) { return t.to(torch::kFloat64).std().item<double>(); }

// MLP 784 -> 256 -> 128 -> 10 trained 4 times narrower (64, 32): the rates of Tensor Programs V's
// Table 3 per weight, the initialization stds, and the readout's input multiplier.
TEST(MupTrainer, EachWeightOfANarrowedMlpGetsItsRolesRateAndInit) {
  for (const char* optimizer : {"sgd", "adam"}) {
    const TrainOptions o =
        options_of(std::string("--model mlp --mlp-hidden 256,128 --surrogate-ratio 4 --parametrization mup --optimizer ") +
                   optimizer);
    const Model model = build_model(o);
    ASSERT_EQ(model.units.size(), 3u);
    const auto params = unique_parameters(model, 0, 3);  // w1 b1 w2 b2 w3 b3
    ASSERT_EQ(params.size(), 6u);
    EXPECT_EQ(params[0].sizes(), (std::vector<std::int64_t>{64, 784}));
    EXPECT_EQ(params[2].sizes(), (std::vector<std::int64_t>{32, 64}));
    const bool sgd = std::string(optimizer) == "sgd";
    const double m = 0.25;
    // input: SGD x m_out; hidden: SGD x m_out/m_in = 1, Adam / m_in; output: SGD x m_in, Adam 1.
    EXPECT_DOUBLE_EQ(model.rate_scaling_of(params[0]).learning_rate, sgd ? m : 1) << optimizer;
    EXPECT_DOUBLE_EQ(model.rate_scaling_of(params[1]).learning_rate, sgd ? m : 1) << optimizer;  // growing bias
    EXPECT_DOUBLE_EQ(model.rate_scaling_of(params[2]).learning_rate, sgd ? 1 : 1 / m) << optimizer;
    EXPECT_DOUBLE_EQ(model.rate_scaling_of(params[4]).learning_rate, sgd ? m : 1) << optimizer;
    EXPECT_DOUBLE_EQ(model.rate_scaling_of(params[5]).learning_rate, 1) << optimizer;  // the 10 classes' bias
    for (const auto& p : params)
      EXPECT_DOUBLE_EQ(model.rate_scaling_of(p).learning_rate * model.rate_scaling_of(p).weight_decay, 1);
    // Init: input He at fan-in 784; hidden He at its own fan-in 64 (= the base's 256 x 1/sqrt(m));
    // output the base's sqrt(1/128), not the narrow model's sqrt(1/32).
    EXPECT_NEAR(sample_std(params[0]), std::sqrt(2.0 / 784), 0.03 * std::sqrt(2.0 / 784));
    EXPECT_NEAR(sample_std(params[2]), std::sqrt(2.0 / 64), 0.05 * std::sqrt(2.0 / 64));
    EXPECT_NEAR(sample_std(params[4]), std::sqrt(1.0 / 128), 0.15 * std::sqrt(1.0 / 128));
  }
  // The readout divides its input by m: the output of a ones-input equals 4 x the plain product.
  const TrainOptions o = options_of("--model mlp --mlp-hidden 8 --surrogate-ratio 4 --parametrization mup");
  const Model model = build_model(o);
  torch::NoGradGuard no_grad;
  const torch::Tensor hidden = torch::ones({1, 2});
  const auto params = unique_parameters(model, 1, 2);
  const torch::Tensor expected = torch::matmul(hidden * 4, params[0].t()) + params[1];
  EXPECT_TRUE(torch::allclose(model.units[1]->forward(hidden), expected));
}

// A GPT surrogate whose ratio divides its heads has fewer heads of the base's dimension, and its
// attention scale is the base's 1/sqrt(64); one whose ratio does not keeps 4 narrower heads, scaled
// sqrt(64)/8 = 1 (muP's 1/d_head against the base).
TEST(MupTrainer, AGptSurrogateKeepsTheHeadDimensionWhereTheRatioDividesTheHeads) {
  for (const auto& [ratio, heads, scale] : {std::tuple{4, 1, 0.125}, std::tuple{8, 4, 1.0}, std::tuple{1, 4, 0.125}}) {
    const Model model = build_model(options_of("--model gpt --layers 1 --d-model 256 --heads 4 --seq-len 8 "
                                               "--parametrization mup --surrogate-ratio " + std::to_string(ratio)));
    const UnitSpec block = model.units[1]->spec();
    EXPECT_EQ(block.heads, heads) << "ratio " << ratio;
    EXPECT_EQ(block.in, 256 / ratio) << "ratio " << ratio;
    EXPECT_DOUBLE_EQ(block.attention_scale, scale) << "ratio " << ratio;
  }
}

// The optimizer gets one group per rate scaling, its rate and weight decay scaled: SP one group.
TEST(MupTrainer, TheOptimizerHasAGroupPerRateScaling) {
  TrainOptions o = options_of("--model gpt --layers 1 --d-model 64 --heads 2 --seq-len 8 --optimizer adamw "
                              "--lr 0.01 --weight-decay 0.1 --surrogate-ratio 4 --parametrization mup");
  Model model = build_model(o);
  ScaledOptimizer mup = make_optimizer(o, model, unique_parameters(model, 0, 3));
  // Adam: input and vectors x1, hidden (qkv, out, up, down) x 1/m = 4.
  ASSERT_EQ(mup.rate_multipliers.size(), 2u);
  EXPECT_EQ(mup.rate_multipliers[0], 1);
  EXPECT_EQ(mup.rate_multipliers[1], 4);
  mup.set_learning_rate(0.02);
  auto& hidden = static_cast<torch::optim::AdamWOptions&>(mup.optimizer->param_groups()[1].options());
  EXPECT_DOUBLE_EQ(hidden.lr(), 0.08);
  EXPECT_DOUBLE_EQ(hidden.weight_decay(), 0.1 / 4);
  EXPECT_EQ(mup.optimizer->param_groups()[1].params().size(), 4u);  // qkv, out, up, down; their biases are vectors
  o.parametrization = Parametrization::kStandard;
  Model sp_model = build_model(o);
  EXPECT_EQ(make_optimizer(o, sp_model, unique_parameters(sp_model, 0, 3)).rate_multipliers.size(), 1u);
}

// At the base width every muP factor is 1: the same training, bit for bit.
TEST(MupTrainer, AtTheBaseWidthMupTrainsTheStandardModelBitForBit) {
  if (!mup_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  for (const std::string model : {"--model mlp --mlp-hidden 64,32 --batch-size 32 --optimizer sgd --lr 0.1",
                                  "--model gpt --layers 1 --d-model 32 --heads 2 --seq-len 16 --batch-size 4"}) {
    const std::string common = model + " --steps 3 --threads 1";
    const CoordinateScales sp = coordinate_check(options_of(common), 3);
    const CoordinateScales mup = coordinate_check(options_of(common + " --parametrization mup"), 3);
    EXPECT_EQ(sp.l1, mup.l1) << model;
  }
}

// The mean |x| of `unit`'s output at `step` for the model narrowed by each ratio.
std::vector<double> scales_over_widths(const std::string& args, const std::vector<int>& ratios, int step, int unit) {
  std::vector<double> out;
  for (int s : ratios) {
    const CoordinateScales c = coordinate_check(options_of(args + " --surrogate-ratio " + std::to_string(s)), step + 1);
    out.push_back(c.l1[static_cast<std::size_t>(step)][static_cast<std::size_t>(unit)]);
  }
  return out;
}

// mup's coordinate check over 8x in width (ratios 8, 4, 2, 1 of the base): after three steps the
// logits grow about with width under SP (measured: 1.1 -> 4.8 with Adam, 1.1 -> 4.8 with SGD) and
// stay within a factor 1.5 under muP (3.7 .. 4.9; 4.8 .. 6.9).
TEST(MupTrainer, CoordinateCheckMlpLogitsStayFlatUnderMupAndGrowUnderSp) {
  if (!mup_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  const std::vector<int> ratios{8, 4, 2, 1};
  for (const std::string optimizer : {"--optimizer adam --lr 0.002", "--optimizer sgd --lr 0.05"}) {
    const std::string base = "--model mlp --mlp-hidden 1024,1024 --batch-size 64 --steps 4 --threads 2 " + optimizer;
    const std::vector<double> sp = scales_over_widths(base + " --parametrization sp", ratios, 3, 2);
    const std::vector<double> mup = scales_over_widths(base + " --parametrization mup", ratios, 3, 2);
    EXPECT_GT(sp.back() / sp.front(), 3) << optimizer;
    for (double v : mup) {
      EXPECT_LT(v / mup.back(), 1.5) << optimizer;
      EXPECT_GT(v / mup.back(), 1 / 1.5) << optimizer;
    }
  }
}

// The GPT's blocks: the second block's output after three Adam steps grows 15x over 8x width under
// SP (measured 0.16 -> 2.4) and stays within 1.5x under muP (2.4 .. 2.9).
TEST(MupTrainer, CoordinateCheckGptBlocksStayFlatUnderMupAndGrowUnderSp) {
  if (!mup_data_present()) GTEST_SKIP() << "dataset-fashion-mnist or fortunes not installed";
  const std::vector<int> ratios{8, 4, 2, 1};
  const std::string base = "--model gpt --layers 2 --d-model 256 --heads 4 --seq-len 64 --batch-size 16 --steps 4 "
                           "--optimizer adam --lr 0.003 --threads 2";
  const std::vector<double> sp = scales_over_widths(base + " --parametrization sp", ratios, 3, 2);
  const std::vector<double> mup = scales_over_widths(base + " --parametrization mup", ratios, 3, 2);
  EXPECT_GT(sp.back() / sp.front(), 5);
  for (double v : mup) {
    EXPECT_LT(v / mup.back(), 1.5);
    EXPECT_GT(v / mup.back(), 1 / 1.5);
  }
}

}  // namespace
}  // namespace paratune::train
