#include "paratune/cost/model_stats.h"

#include <gtest/gtest.h>

#include <cmath>

#include "paratune/spec/presets.h"

namespace paratune {
namespace {

// Every preset's total parameter count within 1% of its published figure.
TEST(ModelStats, PresetTotalsMatchPublishedWithinOnePercent) {
  for (const auto& preset : model_presets()) {
    const ParamCounts c = count_parameters(preset.spec);
    EXPECT_NEAR(c.total / preset.published_total_params, 1.0, 0.01) << preset.spec.name << ": " << c.total;
  }
}

// The released checkpoints' exact counts (Hugging Face, summed over the state dict): GPT-2 and BERT
// put a bias on every linear layer, q/k/v included (missing them was 12 x 2,304 parameters short).
TEST(ModelStats, Gpt2AndBertPresetsCountEveryBiasExactly) {
  EXPECT_EQ(count_parameters(find_model_preset("gpt2").spec).total, 124439808.0);
  EXPECT_EQ(count_parameters(find_model_preset("gpt2-xl").spec).total, 1557611200.0);
  EXPECT_EQ(count_parameters(find_model_preset("bert-base").spec).total, 110106428.0);  // BertForPreTraining
}

TEST(ModelStats, NamedFiguresFromTheIssue) {
  EXPECT_NEAR(count_parameters(find_model_preset("llama2-7b").spec).total, 6.74e9, 0.01 * 6.74e9);
  const ParamCounts mixtral = count_parameters(find_model_preset("mixtral-8x22b").spec);
  EXPECT_NEAR(mixtral.total, 141e9, 0.01 * 141e9);
  EXPECT_NEAR(mixtral.active, 39e9, 0.01 * 39e9);
  EXPECT_NEAR(count_parameters(find_model_preset("deepseek-v3").spec).total, 671e9, 0.01 * 671e9);
  EXPECT_NEAR(count_parameters(find_model_preset("mixtral-8x7b").spec).active, 12.9e9, 0.01 * 12.9e9);
}

// DeepSeek-V3 "37B activated" and Qwen3 "3.3B activated" are the exact counts (37.55B, 3.35B,
// embeddings and output layer included) truncated to two significant digits.
TEST(ModelStats, ActiveCountsOfTruncatedPublishedFigures) {
  const double deepseek = count_parameters(find_model_preset("deepseek-v3").spec).active;
  EXPECT_GE(deepseek, 37e9);
  EXPECT_LT(deepseek, 38e9);
  const double qwen = count_parameters(find_model_preset("qwen3-30b-a3b").spec).active;
  EXPECT_GE(qwen, 3.3e9);
  EXPECT_LT(qwen, 3.4e9);
}

TEST(ModelStats, DenseActiveEqualsTotal) {
  const ParamCounts c = count_parameters(find_model_preset("llama3-70b").spec);
  EXPECT_DOUBLE_EQ(c.active, c.total);
}

// Kaplan et al. 2020: forward FLOPs/token ~ 2N + 2·L·s·d_attn (causal-halved here).
TEST(ModelStats, ForwardFlopsPerTokenFollowsTwoNPlusAttention) {
  const ModelSpec m = find_model_preset("llama2-7b").spec;
  const ParamCounts c = count_parameters(m);
  const double seq = 4096;
  const double expected = 2 * (c.total - c.embedding) + 2.0 * seq * (128 + 128) * 32 * 0.5 * 32;
  EXPECT_DOUBLE_EQ(forward_flops_per_token(m, 4096), expected);
  EXPECT_DOUBLE_EQ(training_flops_per_token(m, 4096), 3 * expected);
}

}  // namespace
}  // namespace paratune
