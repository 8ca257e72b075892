// End-to-end: the real paratune binary, its output and exit codes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_util.h"
#include "../support/test_files.h"
#include "paratune/version.h"

namespace {

using paratune::testing::run;
using paratune::testing::Result;

// --version names the release and the commit the program was built from: the checkout's HEAD here.
TEST(Cli, VersionNamesTheReleaseAndTheCommit) {
  const Result r = run("--version");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Result head = paratune::testing::run_command(std::string("git -C ") + PARATUNE_SOURCE_DIR + " rev-parse --short=12 HEAD");
  ASSERT_EQ(head.exit_code, 0) << "the tests run in a git checkout: " << head.output;
  const std::string commit = head.output.substr(0, head.output.find('\n'));
  EXPECT_NE(r.output.find(std::string("paratune ") + paratune::version() + " "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(commit " + commit), std::string::npos) << r.output << " (HEAD " << commit << ")";
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
  const std::string runs = std::string(PARATUNE_SOURCE_DIR) + "/data/published-runs/published_runs.csv";
  const Result r = run("validate --runs " + runs + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output.substr(0, 500);
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_FALSE(j["rows"].empty());
  for (const char* key : {"row_id", "metric", "published", "predicted", "abs_pct_error"})
    EXPECT_TRUE(j["rows"][0].contains(key)) << key;
  EXPECT_TRUE(j.contains("mean_abs_pct_error"));
  EXPECT_TRUE(j.contains("skipped"));
}

// A validation over no row is no validation: exit 2 (after the report), never "mean |error| 0.00%"
// with exit 0.
TEST(Cli, ValidateWithNoEstimatedRowIsAnError) {
  const auto dir = paratune::testing::fresh_test_dir("paratune_cli", "validate_empty");
  // The columns of published_runs.csv, and no row.
  const std::string header =
      "row_id,source_id,source,table_or_figure,source_url,model,num_layers,hidden_size,"
      "num_attention_heads,num_kv_heads,ffn_hidden_size,vocab_size,seq_length,moe_num_experts,"
      "moe_top_k,moe_expert_ffn_size,moe_shared_experts,total_params,gpu_type,total_gpus,"
      "gpus_per_node,interconnect,model_parallel_total,tp,pp,dp,ep,cp,vpp,micro_batch_size,"
      "global_batch_size,global_batch_tokens,activation_recompute,sequence_parallel,"
      "zero_or_distributed_optimizer,precision,framework,iteration_time_s,tflops_per_gpu,tflops_basis,"
      "mfu_pct,hfu_pct,tokens_per_s_per_gpu,tokens_per_s_total,aggregate_pflops,other_result,notes\n";
  std::ofstream(dir / "header_only.csv") << header;
  const Result r = run("validate --runs " + (dir / "header_only.csv").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("header_only.csv: no row could be estimated (0 rows, 0 skipped)"), std::string::npos) << r.output;
}

TEST(Cli, ValidateMemoryRunsTextJsonAndBothFiles) {
  const std::string dir = std::string(PARATUNE_SOURCE_DIR) + "/data/published-runs/";
  const Result text = run("validate --memory-runs " + dir + "memory_runs.csv");
  ASSERT_EQ(text.exit_code, 0) << text.output.substr(0, 500);
  EXPECT_NE(text.output.find("35 measured rows: mean |error|"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("20 fits-bound rows, 0 violations; 5 skipped"), std::string::npos) << text.output;
  const Result both = run("validate --runs " + dir + "published_runs.csv --memory-runs " + dir + "memory_runs.csv --json");
  ASSERT_EQ(both.exit_code, 0) << both.output.substr(0, 500);
  const auto j = nlohmann::json::parse(both.output);
  EXPECT_TRUE(j["time"].contains("mean_abs_pct_error"));
  for (const char* key : {"row_id", "metric", "rank", "predicted_gib", "breakdown_gib"})
    EXPECT_TRUE(j["memory"]["rows"][0].contains(key)) << key;
  const Result neither = run("validate");
  EXPECT_EQ(neither.exit_code, 2) << neither.output;
  EXPECT_NE(neither.output.find("needs --runs FILE, --memory-runs FILE or both"), std::string::npos) << neither.output;
}

// What a command prints must reach its reader: a full device behind the standard output is an
// error, not a lost result with exit 0.
TEST(Cli, AStandardOutputThatCannotBeWrittenIsAnError) {
  const Result r = paratune::testing::run_command("{ " + std::string(PARATUNE_BINARY) +
                                                  " estimate --model gpt2 --cluster dgx-h100:1 --seq-len 1024 "
                                                  "--global-batch 32 --config dp=8,mbs=4 > /dev/full; }");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("paratune: cannot write the standard output (No space left on device)"), std::string::npos)
      << r.output;
}

}  // namespace

namespace {

TEST(Cli, SimulateJsonTraceAndSvg) {
  const std::string dir = ::testing::TempDir();
  const Result r = run("simulate --model gpt2 --cluster dgx-h100:1 --seq-len 1024 --global-batch 32 "
                       "--config dp=2,pp=4,mbs=2 --schedule zb-h1 --compare-grad-sync --json --trace " + dir +
                       "/t.json --svg " + dir + "/t.svg");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  for (const char* key : {"iteration_time_s", "bubble_fraction", "stages", "tokens_per_s", "grad_sync_comparison"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["schedule"], "zb-h1");
  EXPECT_EQ(j["grad_sync_comparison"].size(), 3u);
  for (const char* key : {"busy_s", "idle_s", "peak_activation_bytes", "idle_intervals"})
    EXPECT_TRUE(j["stages"][0].contains(key)) << key;
  std::ifstream trace(dir + "/t.json");
  EXPECT_TRUE(nlohmann::json::parse(trace).contains("traceEvents"));
  std::ifstream svg(dir + "/t.svg");
  std::string head(4, ' ');
  svg.read(head.data(), 4);
  EXPECT_EQ(head, "<svg");
}

// Each stage's timeline in `simulate --json` adds up: busy + idle is the iteration, the stage ends
// by then and computes before its update, its idle intervals (those after its end included) are
// ordered, disjoint, inside the iteration and sum to idle_s. (This replaced a test that compared
// `simulate` with `estimate`, which share the computation and could not disagree.)
TEST(Cli, SimulateTimelineAddsUp) {
  const Result s = run("simulate --model llama3.1-70b --cluster dgx-h100:8 --seq-len 4096 --global-batch 64 "
                       "--config dp=2,tp=8,pp=4,mbs=1,zero=1,sp=true,recompute=full,stage_layers=18/21/21/20 --json");
  ASSERT_EQ(s.exit_code, 0) << s.output;
  const auto j = nlohmann::json::parse(s.output);
  ASSERT_EQ(j["stages"].size(), 4u);
  const double iteration = j["iteration_time_s"].get<double>();
  for (const auto& stage : j["stages"]) {
    const double end = stage["end_s"].get<double>();
    EXPECT_NEAR(stage["busy_s"].get<double>() + stage["idle_s"].get<double>(), iteration, 1e-9 * iteration);
    EXPECT_LE(end, iteration + 1e-12);
    EXPECT_LE(stage["compute_end_s"].get<double>(), stage["update_start_s"].get<double>() + 1e-12);
    double idle = 0, previous_end = 0;
    for (const auto& interval : stage["idle_intervals"]) {
      const double start = interval["start_s"].get<double>(), stop = interval["end_s"].get<double>();
      EXPECT_GE(start, previous_end - 1e-12);
      EXPECT_GT(stop, start);
      EXPECT_LE(stop, iteration + 1e-12);
      idle += stop - start;
      previous_end = stop;
    }
    EXPECT_NEAR(idle, stage["idle_s"].get<double>(), 1e-9 * iteration);
  }
  EXPECT_LE(j["pipeline_time_s"].get<double>(), iteration);
  EXPECT_EQ(j["fits"], true);
}

// The replay says whether the configuration fits, as estimate does (GPipe holds all 16 micro-batches'
// activations: 224 GiB a stage on 80 GB GPUs).
TEST(Cli, SimulateSaysWhenTheConfigurationDoesNotFit) {
  const std::string args = "--model llama3-8b --cluster dgx-h100:2 --seq-len 8192 --global-batch 64 --config "
                           "dp=4,tp=2,pp=2,mbs=1,schedule=gpipe";
  const Result text = run("simulate " + args);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("(stage 1) of 75.7 GiB usable: DOES NOT FIT (the times above assume it ran)"),
            std::string::npos)
      << text.output;
  const Result json = run("simulate " + args + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_EQ(nlohmann::json::parse(json.output)["fits"], false);
  const Result estimate = run("estimate " + args + " --json");
  ASSERT_EQ(estimate.exit_code, 0) << estimate.output;
  EXPECT_EQ(nlohmann::json::parse(estimate.output)["fits"], false);
}

TEST(Cli, SimulateBadInputExitsTwo) {
  const std::string setup = "simulate --model gpt2 --cluster dgx-h100:1 --seq-len 1024 --global-batch 32 --config dp=2,pp=4 ";
  Result r = run(setup + "--grad-sync sideways");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown grad_sync 'sideways'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("in-backward"), std::string::npos) << r.output;
  r = run(setup + "--stage-mesh 2x1,2x1,2x1,2y1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--stage-mesh"), std::string::npos) << r.output;
  r = run(setup + "--schedule zb-h1 --config dp=2,pp=4,vpp=3");
  EXPECT_EQ(r.exit_code, 2);
  r = run(setup + "--svg /nonexistent-dir/x.svg");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("/nonexistent-dir/x.svg: cannot write file"), std::string::npos) << r.output;
  // Bubble-trial settings without --harvest-ratio would be ignored.
  r = run(setup + "--harvest-switch 5ms");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("only --harvest-ratio packs any; give --harvest-ratio too"), std::string::npos) << r.output;
  // A timeline of two million events is refused before it is built (it took GBs); the totals still run.
  const std::string huge = "simulate --model llama3-8b --cluster dgx-h100:1 --seq-len 1024 --global-batch 65536 "
                           "--config dp=1,pp=8,mbs=1 ";
  const std::filesystem::path trace = std::filesystem::path(::testing::TempDir()) / "huge-trace.json";
  r = run(huge + "--trace " + trace.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--trace/--svg/--html: the replay has 1966298 events (65536 micro-batches x 8 stages), "
                          "more than the 1000000"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(trace));
  EXPECT_EQ(run(huge + "--json").exit_code, 0);
}

// Commands and flags that do not exist are named, with what was probably meant.
TEST(Cli, UnknownCommandsAndFlagsGetSuggestions) {
  Result r = run("plann --model x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("paratune: error: unknown command 'plann' (did you mean 'plan'?); valid: presets,"),
            std::string::npos)
      << r.output;
  r = run("plan --model llama3-8b --cluster dgx-h100:1 --seq-lenn 4096 --global-batch 8");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("paratune: error: plan: unknown flag '--seq-lenn' (did you mean '--seq-len'?); `paratune "
                          "plan --help` lists them"),
            std::string::npos)
      << r.output;
  r = run("study shwo x.db");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("paratune: error: study: unknown command 'shwo' (did you mean 'show'?)"), std::string::npos)
      << r.output;
  const std::filesystem::path cluster = std::filesystem::path(::testing::TempDir()) / "short-gpu-name.json";
  std::ofstream(cluster) << R"({"gpu": "h100", "nodes": 1})";
  r = run("estimate --model llama3-8b --cluster " + cluster.string() + " --seq-len 4096 --global-batch 8 --config dp=8");
  EXPECT_EQ(r.exit_code, 2);  // a GPU's short name suggests the presets it starts
  EXPECT_NE(r.output.find("unknown GPU preset 'h100' (did you mean 'h100-sxm'?)"), std::string::npos) << r.output;
}

TEST(Cli, PlanJsonHasTheDocumentedFields) {
  const Result r = run("plan --model llama3-8b --cluster dgx-h100:1 --seq-len 4096 --global-batch 16 --top 3 --json "
                       "--emit megatron");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["plans"].size(), 3u);
  for (const auto& plan : {j["plans"][0], j["baselines"]["expert"], j["baselines"]["three_axis"]}) {
    for (const char* key : {"config", "iteration_time_s", "tokens_per_s", "mfu", "peak_memory_bytes",
                            "memory_bytes_per_stage", "fits"})
      EXPECT_TRUE(plan.contains(key)) << key;
    for (const char* key : {"dp", "tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "sequence_parallel", "zero", "op",
                            "recompute", "recompute_layers", "stage_layers", "schedule", "grad_sync"})
      EXPECT_TRUE(plan["config"].contains(key)) << key;
    EXPECT_EQ(plan["config"]["recompute_layers"].size(), plan["config"]["stage_layers"].size());
  }
  for (const char* key : {"candidates_level1", "pruned", "level2_evaluated", "elapsed_s"})
    EXPECT_TRUE(j["search"].contains(key)) << key;
  EXPECT_LE(j["plans"][0]["iteration_time_s"].get<double>(), j["plans"][1]["iteration_time_s"].get<double>());
  EXPECT_NE(j["launch"]["text"].get<std::string>().find("--tensor-model-parallel-size"), std::string::npos);

  // The winner's configuration text, given to estimate, predicts the same time.
  const Result e = run("estimate --model llama3-8b --cluster dgx-h100:1 --seq-len 4096 --global-batch 16 --json "
                       "--config " + j["plans"][0]["config"]["text"].get<std::string>());
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(e.output)["iteration_time_s"].get<double>(),
                   j["plans"][0]["iteration_time_s"].get<double>());
}

// How sure: the winner's interval from the shipped held-out errors of its class, the plans whose
// intervals overlap it, and the one to prefer among them; none with a calibration of one's own.
TEST(Cli, PlanAndEstimateSayHowSure) {
  const std::string setup = "--model llama3-8b --cluster dgx-h100:1 --seq-len 4096 --global-batch 16 ";
  const Result r = run("plan " + setup + "--top 5 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  const double winner = j["plans"][0]["iteration_time_s"].get<double>();
  const auto& interval = j["interval"];
  ASSERT_TRUE(interval.is_object()) << r.output;
  EXPECT_EQ(interval["class"], "dense hopper bf16");
  EXPECT_LT(interval["low_s"].get<double>(), winner);
  EXPECT_GT(interval["high_s"].get<double>(), winner);
  const double limit = winner * (1 + interval["high_pct"].get<double>() / 100) / (1 + interval["low_pct"].get<double>() / 100);
  std::vector<int> tied;
  for (std::size_t i = 1; i < j["plans"].size(); ++i)
    if (j["plans"][i]["iteration_time_s"].get<double>() <= limit) tied.push_back(static_cast<int>(i) + 1);
  EXPECT_EQ(j["tied_with_winner"].get<std::vector<int>>(), tied);
  const int preferred = j["preferred_among_tied"].get<int>();
  EXPECT_TRUE(preferred == 1 || std::find(tied.begin(), tied.end(), preferred) != tied.end());

  const Result text = run("estimate " + setup + "--config dp=8,zero=1");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("how sure: 90% interval"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("held-out errors of"), std::string::npos) << text.output;
  const Result own = run("estimate " + setup + "--config dp=8,zero=1 --json --calibration " + std::string(PARATUNE_SOURCE_DIR) +
                         "/data/calibration.json");
  ASSERT_EQ(own.exit_code, 0) << own.output;
  EXPECT_TRUE(nlohmann::json::parse(own.output)["interval"].is_null());
}

TEST(Cli, PlanRejectsBadOrUnsatisfiableConstraintsAndSaysWhenNothingFits) {
  const std::string setup = "plan --model llama3-8b --cluster dgx-h100:1 --seq-len 4096 --global-batch 16 ";
  Result r = run(setup + "--fix tp=3x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--fix tp: '3x' is not an integer"), std::string::npos) << r.output;
  r = run(setup + "--allow shedule=1f1b");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("did you mean 'schedule'"), std::string::npos) << r.output;
  r = run(setup + "--emit megatorn");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--emit"), std::string::npos) << r.output;
  // Constraints no configuration satisfies: an input error naming them, not "nothing fits".
  const std::string sixteen = "plan --model llama3-8b --cluster dgx-h100:2 --seq-len 4096 --global-batch 64 ";
  r = run(sixteen + "--fix tp=3");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("satisfies tp=3: tp takes 1, 2, 4, 8, 16 here"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("NO CONFIGURATION FITS"), std::string::npos) << r.output;
  r = run(sixteen + "--fix ep=2");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("ep=2: ep takes 1 here (the model has no experts)"), std::string::npos) << r.output;
  r = run(sixteen + "--max vpp=1 --allow schedule=interleaved-1f1b");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("but together none: vpp<=1, schedule=interleaved-1f1b"), std::string::npos) << r.output;
  // A searched axis in --base would be overwritten: an error pointing at --fix.
  r = run(sixteen + "--base tp=2,tp_comm_overlap=true");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("base: tp=2 is searched by the planner, which would overwrite it: constrain the "
                          "search instead (fix tp=2)"),
            std::string::npos)
      << r.output;
  r = run("plan --model llama3-8b --cluster h100x1 --seq-len 4096 --global-batch 8");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("NO CONFIGURATION FITS"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("what would fit"), std::string::npos) << r.output;
}

}  // namespace
