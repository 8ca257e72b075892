// Issue 21 (items 3, 5, 13): numbers out of range are bad input (exit 2, a message naming the flag
// or field, the value and the rule), never a wrapped count or a silently different run; a step time
// that is no measurement never makes the best trial.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../test_util.h"
#include "cli_util.h"

namespace {

using paratune::testing::Result;
using paratune::testing::run;


// `paratune ARGS` exits 2 and says `message`.
void expect_bad_input(const std::string& args, const std::string& message) {
  const Result r = run(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
}

const std::string kEstimate = "estimate --model llama3-8b --seq-len 4096 --global-batch 64 ";

TEST(RangesCli, GpuCountsAndDegreesNeverWrap) {
  // Was taken as 8 GPUs.
  expect_bad_input(kEstimate + "--cluster dgx-h100:536870913 --config dp=8",
                   "cluster 'dgx-h100:536870913': node count '536870913' must be an integer from 1 to 16777216");
  expect_bad_input(kEstimate + "--cluster dgx-h100:3000000 --config dp=8",
                   "nodes: 3000000 nodes x 8 GPUs per node = 24000000 GPUs; paratune models at most 16777216 GPUs");
  // Printed MFU 92,423%.
  expect_bad_input(kEstimate + "--cluster dgx-h100:1 --config dp=536870913,tp=8",
                   "--config: dp=536870913 exceeds the cluster's 8 GPUs (1 node x 8)");
  expect_bad_input(kEstimate + "--cluster dgx-h100:1 --config dp=8,mbs=2147483647",
                   "mbs=2147483647 exceeds global_batch=64");
  // 2^31 - 1 micro-batches: std::bad_alloc in the replay (exit 1, "internal error").
  expect_bad_input("estimate --model llama3-8b --cluster h100x1 --seq-len 4096 --global-batch 2147483647 --config dp=1",
                   "pp*vpp*micro-batches = 1*1*2147483647 = 2147483647 pipeline slots; at most 16777216");
  expect_bad_input(kEstimate + "--cluster dgx-h100:1 --config dp=8,tp=99999999999",
                   "--config: tp: '99999999999' is out of range (a 32-bit integer, at most 2147483647)");
}

TEST(RangesCli, EveryNumericFlagIsCheckedBeforeAnythingRuns) {
  const std::string plan = "plan --model llama3-8b --cluster dgx-h100:1 --seq-len 4096 --global-batch 64 ";
  // --memory-margin -1 doubled the usable memory; nan, inf and 2 made nothing fit after a search.
  for (const char* margin : {"-1", "nan", "inf", "2", "1", "-0.5"})
    expect_bad_input(plan + "--memory-margin " + margin,
                     std::string("--memory-margin: ") + margin +
                         " must be a finite number >= 0 and < 1 (the fraction of GPU memory kept free)");
  const std::vector<std::pair<std::string, std::string>> cases{
      {plan + "--threads 0", "--threads: 0 must be an integer from 1 to 1024"},
      {plan + "--threads 100000", "--threads: 100000 must be an integer from 1 to 1024"},
      {plan + "--top -1", "--top: -1 must be an integer from 1 to 2147483647"},
      {plan + "--keep 0x10", "--keep: 0x10 must be an integer from 1 to 2147483647"},  // no hex, no octal
      {plan + "--moe-capacity-factor 0.5", "--moe-capacity-factor: 0.5 must be 0 (dropless) or a finite number >= 1"},
      {plan + "--moe-capacity-factor nan", "--moe-capacity-factor: nan must be 0 (dropless)"},
      {"plan --model llama3-8b --cluster dgx-h100:1 --global-batch 64 --seq-len 0",
       "--seq-len: 0 must be an integer from 1 to 2147483647"},
      {"plan --model llama3-8b --cluster dgx-h100:1 --seq-len 4096 --global-batch 99999999999",
       "--global-batch: 99999999999 must be an integer from 1 to 2147483647"},
      {"model llama3-8b --seq-len -4096", "--seq-len: -4096 must be an integer from 1 to 2147483647"},
      {"simulate --model gpt2 --cluster dgx-h100:1 --seq-len 1024 --global-batch 32 --config dp=2,pp=4 "
       "--harvest-ratio -2",
       "--harvest-ratio: -2 must be an integer from 0 to 2147483647 (0: no harvest)"},
      {"simulate --model gpt2 --cluster dgx-h100:1 --seq-len 1024 --global-batch 32 --config dp=2,pp=4 "
       "--harvest-ratio 2 --harvest-switch 1e308h",
       "--harvest-switch: '1e308h' is not a valid duration: it must be finite"},
      {"calibrate --runs x.csv -o y.json --max-evaluations 0",
       "--max-evaluations: 0 must be an integer from 1 to 2147483647"},
      {"harvest --job j --trial t --trial-params p --timeline-steps -1",
       "--timeline-steps: -1 must be an integer >= 1"},
      {"harvest --job j --trial t --trial-params p --ranks 5000", "--ranks: 5000 must be an integer from 1 to 4096"}};
  for (const auto& [args, message] : cases) expect_bad_input(args, message);

  const paratune::testing::TempDir dir;
  const std::string space = dir.write("space.yaml", "parameters:\n  x: [1, 2]\n");
  const std::string tune = "tune --space " + space + " --study " + dir.path("s.db") + " --command 'true {x}' ";
  for (const auto& [flags, message] : std::vector<std::pair<std::string, std::string>>{
           {"--seed -1", "--seed: -1 must be an integer from 0 to 18446744073709551615"},
           {"--steps 0", "--steps: 0 must be an integer from 1 to 2147483647"},
           {"--max-trials -3", "--max-trials: -3 must be an integer from 0 to 2147483647 (0: no limit)"},
           {"--parallel 0", "--parallel: 0 must be an integer from 1 to 4096"},
           {"--slots 1000000", "--slots: 1000000 must be an integer from 1 to 4096"},
           {"--min-steps 0", "--min-steps: 0 must be an integer from 1 to 2147483647"},
           {"--initial -1", "--initial: -1 must be an integer from 0 to 2147483647"},
           {"--pruner asha --eta 1", "--eta: 1 must be a finite number > 1 (each rung keeps the best 1/eta)"},
           {"--pruner asha --eta inf", "--eta: inf must be a finite number > 1"},
           {"--pruner percentile --percentile 100", "--percentile: 100 must be a finite number > 0 and < 100"},
           {"--pruner median --pruner-warmup -5", "--pruner-warmup: -5 must be an integer >= 0"},
           {"--surrogate-ratio nan", "--surrogate-ratio: nan must be a finite number >= 1"},
           {"--budget inf", "--budget: 'inf' is not a valid duration"}})
    expect_bad_input(tune + flags, message);
  EXPECT_FALSE(std::filesystem::exists(dir.path("s.db")));  // nothing ran
}

// Item 13: --schedule 1f1b with vpp > 1 ran the interleaved schedule; now refused.
TEST(RangesCli, SimulateRefusesPlainOneFOneBWithVirtualStages) {
  const std::string setup = "simulate --model gpt2 --cluster dgx-h100:1 --seq-len 1024 --global-batch 32 ";
  expect_bad_input(setup + "--config dp=2,pp=4,vpp=3 --schedule 1f1b",
                   "--schedule 1f1b: --config has vpp=3, and 1F1B with virtual stages is the interleaved schedule; "
                   "give --schedule interleaved-1f1b, or vpp=1 for plain 1F1B");
  Result r = run(setup + "--config dp=2,pp=4,vpp=3 --schedule interleaved-1f1b --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["config"]["schedule"], "interleaved-1f1b");
  r = run(setup + "--config dp=2,pp=4 --schedule 1f1b --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["config"]["schedule"], "1f1b");
}

// Item 5: a trial reporting 1e-320 s per step had an infinite throughput and was chosen as best.
TEST(RangesCli, AnImplausibleStepTimeNeverMakesTheBestTrial) {
  const paratune::testing::TempDir dir;
  const std::string space = dir.write("space.yaml", "parameters:\n  t: [1e-320, 0.5]\n");
  const std::string trial = dir.write(
      "trial.sh", "for i in 0 1 2 3; do echo \"@paratune {\\\"step\\\": $i, \\\"step_time_s\\\": $1}\"; done\n");
  const Result r = run("tune --space " + space + " --study " + dir.path("s.db") + " --command 'sh " + trial +
                       " {t}' --steps 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find("\n{") + 1));
  EXPECT_EQ(j["best"]["params"]["t"], 0.5) << j.dump(2);
  EXPECT_DOUBLE_EQ(j["best"]["throughput"].get<double>(), 2.0);
  for (const auto& t : j["trials"])
    if (t["params"]["t"] != 0.5) EXPECT_NE(t["status"], "completed") << t.dump();
}

}  // namespace
