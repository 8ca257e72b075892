#include "paratune/calib/published_runs.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "../test_util.h"

namespace paratune {
namespace {

const std::string kRuns = std::string(PARATUNE_SOURCE_DIR) + "/../shared/calibration/published_runs.csv";

TEST(Csv, QuotedFieldsEscapesAndNewlines) {
  const auto path = testing::write_temp("q.csv", "a,b,c\n1,\"x, \"\"y\"\"\",\"two\nlines\"\r\n2,,z\n");
  const auto rows = read_csv(path);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("b"), "x, \"y\"");
  EXPECT_EQ(rows[0].at("c"), "two\nlines");
  EXPECT_EQ(rows[1].at("b"), "");
}

TEST(Csv, RaggedRowAndUnterminatedQuoteAreErrors) {
  EXPECT_THROW(read_csv(testing::write_temp("r.csv", "a,b\n1,2,3\n")), Error);
  EXPECT_THROW(read_csv(testing::write_temp("u.csv", "a,b\n1,\"2\n")), Error);
  EXPECT_THROW(read_published_runs(testing::write_temp("m.csv", "row_id,model\n1,x\n")), Error);
}

TEST(PublishedFlops, MegatronSc21ReproducesThePublishedS1Figure) {
  // Row 1: 1.2B GPT, batch 8, seq 1024, 1.121 s on one V100, 71.9 TFLOP/s.
  ModelSpec m;
  m.num_layers = 24;
  m.hidden_size = 1920;
  m.num_attention_heads = 15;
  m.vocab_size = 51200;
  EXPECT_NEAR(megatron_sc21_flops(m, 8, 1024) / 1.121 / 1e12, 71.9, 0.1);
}

// The acceptance figures of the cost model: on the shipped published runs, with the shipped
// calibration, every row is estimated, mean |error| <= 8% and max <= 20%.
TEST(Validation, PublishedRunsWithinTargets) {
  if (!std::filesystem::exists(kRuns)) GTEST_SKIP() << kRuns << " not present";
  const auto runs = read_published_runs(kRuns);
  const ValidationReport report = validate_runs(runs, default_calibration());
  EXPECT_EQ(report.rows.size(), runs.size());
  EXPECT_TRUE(report.skipped.empty());
  EXPECT_LE(report.mean_abs_pct_error, 8.0);
  EXPECT_LE(report.max_abs_pct_error, 20.0);
}

TEST(Validation, UnestimableRowIsSkippedWithReason) {
  const auto header =
      "row_id,source_id,model,num_layers,hidden_size,num_attention_heads,num_kv_heads,ffn_hidden_size,vocab_size,"
      "seq_length,gpu_type,total_gpus,gpus_per_node,interconnect,model_parallel_total,tp,pp,dp,vpp,micro_batch_size,"
      "global_batch_size,activation_recompute,sequence_parallel,zero_or_distributed_optimizer,precision,framework,"
      "iteration_time_s,tflops_per_gpu,tflops_basis,mfu_pct,tokens_per_s_per_gpu\n";
  const auto path = testing::write_temp(
      "one.csv", std::string(header) + "7,S9,GPT 1B,24,2048,16,,,51200,2048,TPU v4,8,,,,1,1,8,,1,64,,,,bf16,jax,1.0,,,,\n");
  const ValidationReport report = validate_runs(read_published_runs(path), default_calibration());
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_NE(report.skipped[0].second.find("gpu_type: 'TPU v4' matches no GPU preset"), std::string::npos)
      << report.skipped[0].second;
}

}  // namespace
}  // namespace paratune
