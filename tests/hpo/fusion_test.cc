// Inter-trial fusion's pieces that need no trainer: which values fused trials share, a member's
// view of its group's output, and --fuse auto's rule from probe measurements. (Fused studies of the
// real trainer: tests/trainer/trainer_test.cc, TrainTune.Fused*.)
#include "paratune/hpo/fusion.h"
#include "paratune/hpo/trainer_program.h"

#include <gtest/gtest.h>

namespace paratune::hpo {
namespace {

FusionProbeRun run_of(int size, double step_time_s, std::optional<double> memory = std::nullopt,
                      const std::string& status = "completed") {
  FusionProbeRun r;
  r.size = size;
  r.status = status;
  r.step_time_s = step_time_s;
  r.trial_steps_per_s = step_time_s > 0 ? size / step_time_s : 0;
  r.peak_memory_bytes = memory;
  return r;
}

TEST(Fusion, SharedKeyIgnoresOnlyFusableOptions) {
  const Config a = Config::parse(R"({"lr": 0.1, "momentum": 0.9, "batch_size": 64, "d_model": 128})");
  const Config b = Config::parse(R"({"lr": 0.01, "momentum": 0.5, "batch_size": 64, "d_model": 128})");
  const Config c = Config::parse(R"({"lr": 0.1, "momentum": 0.9, "batch_size": 32, "d_model": 128})");
  EXPECT_EQ(shared_key(a, paratune_train()), shared_key(b, paratune_train()));
  EXPECT_NE(shared_key(a, paratune_train()), shared_key(c, paratune_train()));
  EXPECT_EQ(shared_key(a, paratune_train()), R"({"batch_size":64,"d_model":128})");
}

TEST(Fusion, MemberOutputKeepsItsOwnMetricsAndTheGroupsSteps) {
  trial::OutputParser parser;
  for (const char* line : {R"(@paratune {"member": 0, "metric": "loss", "value": 1.0, "step": 0})",
                           R"(@paratune {"member": 1, "metric": "loss", "value": 2.0, "step": 0})",
                           R"(@paratune {"step": 0, "step_time_s": 0.5})",
                           R"(@paratune {"member": 1, "diverged": "nan at step 1"})",
                           R"(@paratune {"member": 0, "metric": "loss", "value": 0.5, "step": 1})",
                           R"(@paratune {"step": 1, "step_time_s": 0.5})", R"(@paratune {"peak_memory_bytes": 1000})"})
    parser.feed(line);
  const trial::TrialOutput zero = member_output(parser.output(), 0), one = member_output(parser.output(), 1);
  ASSERT_EQ(zero.metrics.size(), 2u);
  EXPECT_DOUBLE_EQ(zero.metrics[1].value, 0.5);
  EXPECT_FALSE(zero.metrics[1].member.has_value());
  EXPECT_EQ(zero.steps.size(), 2u);
  EXPECT_EQ(zero.peak_memory_bytes, 1000);
  EXPECT_TRUE(zero.diverged.empty());
  ASSERT_EQ(one.metrics.size(), 1u);
  EXPECT_EQ(member_divergence(parser.output(), 1), "nan at step 1");
  EXPECT_EQ(member_divergence(parser.output(), 0), std::nullopt);
}

TEST(Fusion, AutoKeepsTheLargestSizeThatGainsAndLooksPastOneBadDoubling) {
  std::vector<FusionProbeRun> runs;
  FusionDecision d = decide_fusion(runs, 0, 64);
  EXPECT_EQ(d.next, 1);
  runs.push_back(run_of(1, 0.010));  // 100 trial-steps/s
  EXPECT_EQ(decide_fusion(runs, 0, 64).next, 2);
  runs.push_back(run_of(2, 0.025));  // 80: worse, but one bad doubling does not end the probe
  d = decide_fusion(runs, 0, 64);
  EXPECT_EQ(d.next, 4);
  EXPECT_EQ(d.chosen, 1);
  runs.push_back(run_of(4, 0.030));  // 133: +33% over B = 1
  EXPECT_EQ(decide_fusion(runs, 0, 64).next, 8);
  runs.push_back(run_of(8, 0.059));  // 135.6: +1.7%, not enough
  EXPECT_EQ(decide_fusion(runs, 0, 64).next, 16);
  runs.push_back(run_of(16, 0.118));  // 135.6 again: two sizes in a row without a gain
  d = decide_fusion(runs, 0, 64);
  EXPECT_FALSE(d.next.has_value());
  EXPECT_EQ(d.chosen, 4);
  EXPECT_NE(d.reason.find("B = 8 and 16 gain less than 5% over B = 4"), std::string::npos) << d.reason;
}

TEST(Fusion, TheRateOfAFullTrialAmortizesTheStartUp) {
  // 2 s of start-up and 10 ms steps: alone, a 300-step trial runs 300 / 5 s = 60 steps/s; four fused
  // at 30 ms a step (slower per member than alone) still do 1200 / 11 s = 109 trial-steps/s.
  EXPECT_DOUBLE_EQ(full_trial_rate(1, 0.010, 2, 300), 60);
  EXPECT_NEAR(full_trial_rate(4, 0.030, 2, 300), 1200.0 / 11, 1e-9);
}

TEST(Fusion, AutoStopsAtTheCapAFailureOrTheMemoryBudget) {
  // The cap (--fuse N with auto, or --max-trials).
  FusionDecision d = decide_fusion({run_of(1, 0.01), run_of(2, 0.01)}, 0, 2);
  EXPECT_FALSE(d.next.has_value());
  EXPECT_EQ(d.chosen, 2);
  // A run that failed: the last good size.
  d = decide_fusion({run_of(1, 0.01), run_of(2, 0.01), run_of(4, 0, std::nullopt, "oom")}, 0, 64);
  EXPECT_EQ(d.chosen, 2);
  EXPECT_NE(d.reason.find("B = 4 ended oom"), std::string::npos) << d.reason;
  // Memory extrapolated from B = 1 and 2: 1 GiB + 0.5 GiB per member more; B = 8 would need 4.5 GiB.
  const double gib = 1024.0 * 1024 * 1024;
  const std::vector<FusionProbeRun> runs{run_of(1, 0.01, gib), run_of(2, 0.01, 1.5 * gib), run_of(4, 0.015, 2.5 * gib)};
  EXPECT_DOUBLE_EQ(*extrapolated_memory(runs, 8), 4.5 * gib);
  d = decide_fusion(runs, 4 * gib, 64);
  EXPECT_FALSE(d.next.has_value());
  EXPECT_EQ(d.chosen, 4);
  EXPECT_NE(d.reason.find("B = 8 would need about 4.50 GiB"), std::string::npos) << d.reason;
  EXPECT_EQ(decide_fusion(runs, 5 * gib, 64).next, 8);
  // A measured peak over the budget is not chosen.
  d = decide_fusion(runs, 2 * gib, 64);
  EXPECT_EQ(d.chosen, 2);
  // B = 1 itself failed: trials run alone (and fail as trials do).
  d = decide_fusion({run_of(1, 0, std::nullopt, "failed")}, 0, 64);
  EXPECT_EQ(d.chosen, 1);
  EXPECT_FALSE(d.next.has_value());
}

}  // namespace
}  // namespace paratune::hpo
