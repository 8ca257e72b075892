// `paratune profile` end to end on this machine's CPU (the measurer is real: PyTorch and Gloo), and
// `--profile` on estimate and plan (issue 45).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "../support/test_files.h"
#include "cli_util.h"
#include "../test_paths.h"

namespace paratune::profile_cli_test {

using paratune::testing::run;
using paratune::testing::Result;

// A small dense decoder the CPU measures in seconds.
constexpr const char* kTinyModel = R"(name: tiny-dense
num_layers: 4
hidden_size: 256
num_attention_heads: 4
num_kv_heads: 2
ffn_hidden_size: 512
gated_mlp: true
vocab_size: 1024
norm: rmsnorm
position_embedding: rope
)";

std::string setup_flags(const std::filesystem::path& dir) {
  paratune::testing::write_file(dir / "tiny.yaml", kTinyModel);
  return "--model " + (dir / "tiny.yaml").string() + " --cluster " + std::string(PARATUNE_SOURCE_DIR) +
         "/examples/cluster-cpu.yaml --seq-len 256 --global-batch 2";
}

TEST(ProfileCli, MeasuresTheCpuAndTheProfilePricesEstimates) {
  // The measurer is the Python package's: a sanitized tree builds no Python module (the Release
  // tree's run of this test measures).
  if (!std::filesystem::exists(std::filesystem::path(PARATUNE_BINARY).parent_path() / "python" / "paratune" / "profile.py"))
    GTEST_SKIP() << "no Python module in this build tree";
  const auto dir = paratune::testing::fresh_test_dir("ProfileCli", "measures");
  const std::string setup = setup_flags(dir);
  const std::string out = (dir / "profile.json").string();
  const Result measured = run("profile " + setup + " --config dp=2,mbs=1 --config tp=2,mbs=1 --quick --nproc 2 --warmup 0 " +
                              "--repetitions 2 --python /usr/bin/python3 --out " + out);
  ASSERT_EQ(measured.exit_code, 0) << measured.output;
  for (const char* kind : {"gemm", "attention forward", "attention backward", "all_reduce", "memory bandwidth", "training step of 1 layer"})
    EXPECT_NE(measured.output.find(kind), std::string::npos) << kind << " in\n" << measured.output;
  // The plan it measured lies next to the profile, with the model's QKV GEMM: 256 tokens x
  // (4 + 2·2)·64 x 256.
  const nlohmann::json plan = nlohmann::json::parse(paratune::testing::read_file(dir / "profile.plan.json"));
  bool qkv = false;
  for (const auto& g : plan["gemms"]) qkv = qkv || g["id"] == "gemm/256x512x256/bf16";
  EXPECT_TRUE(qkv) << plan["gemms"].dump();

  const std::string config = " --config dp=2,mbs=1 --json";
  const Result fitted = run("estimate " + setup + config);
  const Result profiled = run("estimate " + setup + config + " --profile " + out);
  ASSERT_EQ(fitted.exit_code, 0) << fitted.output;
  ASSERT_EQ(profiled.exit_code, 0) << profiled.output;
  const nlohmann::json a = nlohmann::json::parse(fitted.output), b = nlohmann::json::parse(profiled.output);
  EXPECT_NE(a["iteration_time_s"], b["iteration_time_s"]) << "the CPU is not the nominal device of cluster-cpu.yaml";
  EXPECT_EQ(b["predicted_by"]["profile"]["file"], out);
  EXPECT_FALSE(a["predicted_by"].contains("profile"));

  // The planner prices with it too, and says so.
  const Result plan_run = run("plan " + setup + " --profile " + out);
  ASSERT_EQ(plan_run.exit_code, 0) << plan_run.output;
  EXPECT_NE(plan_run.output.find("hardware profile " + out), std::string::npos) << plan_run.output;

  // Comparing again from the file gives the same table.
  const Result again = run("profile " + setup + " --from " + out + " --json");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  const nlohmann::json table = nlohmann::json::parse(again.output);
  EXPECT_GT(table["rows"].size(), 5U);
  EXPECT_GT(table["step"]["measured_s"].get<double>(), 0);
}

TEST(ProfileCli, AProfileOfAnotherModelOrABrokenFileIsRefusedWithTheReason) {
  const auto dir = paratune::testing::fresh_test_dir("ProfileCli", "refused");
  const std::string setup = setup_flags(dir);
  const Result missing = run("estimate " + setup + " --config dp=2 --profile " + (dir / "none.json").string());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("--profile"), std::string::npos) << missing.output;
  paratune::testing::write_file(dir / "other.json", R"({"format": "paratune-hardware-profile", "version": 1,
    "plan": {"model": "llama3-8b", "model_fingerprint": "0123456789abcdef", "gpu": "cpu", "precision": "bf16"},
    "device": {"backend": "cpu", "name": "x"}})");
  const Result other = run("estimate " + setup + " --config dp=2 --profile " + (dir / "other.json").string());
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.output.find("measured for model 'llama3-8b'"), std::string::npos) << other.output;
  const Result plan_only = run("profile " + setup + " --plan-only --out " + (dir / "p.json").string());
  ASSERT_EQ(plan_only.exit_code, 0) << plan_only.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "p.plan.json"));
  const Result bad_python = run("profile " + setup + " --python /nonexistent/python3 --out " + (dir / "q.json").string());
  EXPECT_NE(bad_python.exit_code, 0);
  EXPECT_NE(bad_python.output.find("/nonexistent/python3"), std::string::npos) << bad_python.output;
}

}  // namespace paratune::profile_cli_test
