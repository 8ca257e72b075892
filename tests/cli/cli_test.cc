// End-to-end: the real paratune binary, its output and exit codes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <string>

namespace {

struct Result {
  int exit_code;
  std::string output;
};

Result run(const std::string& args) {
  const std::string command = std::string(PARATUNE_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) output += buffer.data();
  const int status = pclose(pipe);
  return {WEXITSTATUS(status), output};
}

TEST(Cli, EstimateJsonHasTheDocumentedFields) {
  const Result r = run("estimate --model llama3.1-70b --cluster dgx-h100:8 --seq-len 8192 --global-batch 128 "
                       "--config dp=2,tp=8,pp=4,vpp=5,mbs=1,zero=1,sp=true,recompute=full --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  for (const char* key : {"iteration_time_s", "tokens_per_s", "mfu", "hfu", "tflops_per_gpu", "breakdown_s",
                          "memory_bytes_per_stage", "peak_memory_bytes", "fits"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["memory_bytes_per_stage"].size(), 4u);
  for (const char* key : {"weights", "grads", "optimizer", "activations", "other"})
    EXPECT_TRUE(j["memory_bytes_per_stage"][0].contains(key)) << key;
  EXPECT_TRUE(j["breakdown_s"].contains("bubble"));
}

TEST(Cli, EstimateTextShowsBreakdowns) {
  const Result r = run("estimate --model llama3-8b --cluster h100x8 --seq-len 4096 --global-batch 64 --config dp=8,zero=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("time breakdown"), std::string::npos);
  EXPECT_NE(r.output.find("memory per stage"), std::string::npos);
}

TEST(Cli, BadInputExitsTwoWithAClearMessage) {
  Result r = run("estimate --model llama3-8b --cluster h100x8 --seq-len 4096 --global-batch 64 --config dp=8,mbs=3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("does not split into whole micro-batches"), std::string::npos) << r.output;
  r = run("model no-such-model");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown model preset 'no-such-model'"), std::string::npos) << r.output;
  r = run("estimate --model llama3-8b --cluster h100x8 --seq-len 4096 --global-batch 64 --config dp=8 --precision fp7");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown precision 'fp7'"), std::string::npos) << r.output;
  r = run("estimate --model llama3-8b");
  EXPECT_EQ(r.exit_code, 2);
}

TEST(Cli, ModelAndPresets) {
  Result r = run("model mixtral-8x22b --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_NEAR(j["total_params"].get<double>(), 141e9, 1.41e9);
  EXPECT_NEAR(j["active_params"].get<double>(), 39e9, 0.39e9);
  r = run("presets");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* name : {"h100-sxm", "rtx-3080", "dgx-a100", "deepseek-v3"})
    EXPECT_NE(r.output.find(name), std::string::npos) << name;
}

TEST(Cli, ValidateJson) {
  const std::string runs = std::string(PARATUNE_SOURCE_DIR) + "/../shared/calibration/published_runs.csv";
  const Result r = run("validate --runs " + runs + " --json");
  if (r.output.find("cannot open") != std::string::npos) GTEST_SKIP();
  ASSERT_EQ(r.exit_code, 0) << r.output.substr(0, 500);
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_FALSE(j["rows"].empty());
  for (const char* key : {"row_id", "metric", "published", "predicted", "abs_pct_error"})
    EXPECT_TRUE(j["rows"][0].contains(key)) << key;
  EXPECT_TRUE(j.contains("mean_abs_pct_error"));
  EXPECT_TRUE(j.contains("skipped"));
}

}  // namespace
