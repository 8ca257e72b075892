// `paratune plan --emit X` end to end: every plan it prints is one X can run
// (launch/framework_support.h); without --emit each plan lists the frameworks that can.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../cli/cli_util.h"
#include "paratune/launch/framework_support.h"
#include "paratune/spec/io.h"

namespace paratune::plan {
namespace {

using launch::Framework;
using paratune::testing::Result;
using paratune::testing::run;

const char* kSetup = "plan --model llama3-8b --cluster dgx-h100:1 --seq-len 16384 --global-batch 16 --top 6 --json ";

TEST(PlanCli, EmitTorchtitanPrintsOnlyPlansTorchtitanRuns) {
  const Result r = run(std::string(kSetup) + "--emit torchtitan");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["framework"], "torchtitan");
  EXPECT_GT(j["search"]["unsupported_by_framework"].get<long long>(), 0);
  ASSERT_FALSE(j["plans"].empty());
  TrainingSpec training;
  training.seq_len = 16384;
  training.global_batch = 16;
  const ModelSpec model = load_model("llama3-8b");
  const ClusterSpec cluster = load_cluster("dgx-h100:1");
  for (const auto& p : j["plans"]) {
    const std::string text = p["config"]["text"].get<std::string>();
    const ParallelConfig config = resolve(parse_parallel_config(text), model, cluster, training);
    EXPECT_TRUE(unsupported_reasons(Framework::kTorchtitan, config, model, training).empty()) << text;
    const auto& runs = p["frameworks"];
    EXPECT_NE(std::find(runs.begin(), runs.end(), "torchtitan"), runs.end()) << text;
  }
  for (const char* b : {"expert", "three_axis"})
    if (j["baselines"][b].contains("frameworks")) {
      const auto& runs = j["baselines"][b]["frameworks"];
      EXPECT_NE(std::find(runs.begin(), runs.end(), "torchtitan"), runs.end()) << b;
    }
  // The winner's TOML is complete: nothing it cannot express, no key this torchtitan lacks (T0.3).
  EXPECT_TRUE(j["launch"]["cannot_express"].empty()) << j["launch"].dump(2);
  const std::string toml = j["launch"]["text"].get<std::string>();
  EXPECT_NE(toml.find("[parallelism]"), std::string::npos);
  EXPECT_EQ(toml.find("split_points"), std::string::npos);
  EXPECT_EQ(toml.find("[float8]"), std::string::npos);
}

// By default (--framework any) every plan runs on some framework; --framework none ranks the whole
// space. Either way each plan lists the frameworks that run it.
TEST(PlanCli, WithoutEmitEachPlanListsItsFrameworks) {
  for (const char* framework : {"", "--framework any", "--framework none"}) {
    const Result r = run(std::string(kSetup) + framework);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto j = nlohmann::json::parse(r.output);
    EXPECT_FALSE(j.contains("framework"));
    const bool whole_space = std::string(framework) == "--framework none";
    EXPECT_EQ(j["searched_within"].size(), whole_space ? 0u : 3u) << framework;
    if (whole_space) EXPECT_EQ(j["search"]["unsupported_by_framework"], 0);
    for (const auto& p : j["plans"]) {
      ASSERT_TRUE(p.contains("frameworks")) << p.dump();
      ASSERT_TRUE(p.contains("unsupported_by")) << p.dump();
      EXPECT_EQ(p["frameworks"].size() + p["unsupported_by"].size(), 3u);
      if (!whole_space) EXPECT_FALSE(p["frameworks"].empty()) << framework << p.dump();
    }
  }
  const Result text = run("plan --model llama3-8b --cluster dgx-h100:1 --seq-len 16384 --global-batch 16");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("runs on: M = Megatron-LM"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("  runs on: "), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("the winner's launch settings: the same command with --emit "), std::string::npos)
      << text.output;
}

// --framework with a value that is not one, or that contradicts --emit: an error naming the flag.
TEST(PlanCli, BadFrameworkIsAnError) {
  const Result bad = run(std::string(kSetup) + "--framework jax");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--framework"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("'jax'"), std::string::npos) << bad.output;
  const Result version = run(std::string(kSetup) + "--framework megatron@9.9");
  EXPECT_NE(version.exit_code, 0);
  EXPECT_NE(version.output.find("9.9"), std::string::npos) << version.output;
  const Result clash = run(std::string(kSetup) + "--framework torchtitan --emit megatron");
  EXPECT_NE(clash.exit_code, 0);
  EXPECT_NE(clash.output.find("--framework torchtitan with --emit megatron"), std::string::npos) << clash.output;
  const Result same = run(std::string(kSetup) + "--framework megatron --emit megatron");
  EXPECT_EQ(same.exit_code, 0) << same.output;
}

}  // namespace
}  // namespace paratune::plan
