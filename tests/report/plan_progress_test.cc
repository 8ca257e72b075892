// `plan`'s progress line (report/plan_report.h format_plan_progress): each stage's text, counts and
// rate; PlanProgress::Snapshot::stage_count, the count the rate is of.
#include <gtest/gtest.h>

#include "paratune/report/plan_report.h"

namespace paratune {
namespace {

using plan::PlanProgress;

TEST(PlanProgressLine, EachStageSaysWhatItCountsAndItsRate) {
  PlanProgress::Snapshot p;
  EXPECT_EQ(format_plan_progress(p, 0.04, std::nullopt), "plan: finding the mesh shapes | 0.0 s");
  EXPECT_EQ(p.stage_count(), 0);
  p.stage = PlanProgress::kBounds;
  p.meshes = 40;
  p.meshes_done = 14;
  p.groups_bounded = 812345;
  EXPECT_EQ(p.stage_count(), 812345);
  EXPECT_EQ(format_plan_progress(p, 1.5, 541563.0),
            "plan: bounding groups of candidates: 812.3K, mesh shape 14 of 40 | 1.5 s | 541.6K/s");
  p.stage = PlanProgress::kLevel1;
  p.meshes_done = 40;
  p.bounded = 1500000;
  p.groups = 120411;
  p.estimated = 2304;
  EXPECT_EQ(p.stage_count(), 2304);
  EXPECT_EQ(format_plan_progress(p, 2.0, 4608.0),
            "plan: level 1: estimated 2.3K (1.5M candidates bounded, in 120.4K groups that may fit) | 2.0 s | 4.6K/s");
  EXPECT_EQ(format_plan_progress(p, 2.0, std::nullopt),  // the stage just seen: no rate yet
            "plan: level 1: estimated 2.3K (1.5M candidates bounded, in 120.4K groups that may fit) | 2.0 s");
  p.stage = PlanProgress::kLevel2;
  p.refined = 48;
  EXPECT_EQ(p.stage_count(), 48);
  EXPECT_EQ(format_plan_progress(p, 3.0, 24.0), "plan: level 2: refined 48 (of 2.3K estimated, 1.5M bounded) | 3.0 s | 24/s");
  p.stage = PlanProgress::kBaselines;
  EXPECT_EQ(p.stage_count(), 0);
  EXPECT_EQ(format_plan_progress(p, 3.1, std::nullopt),
            "plan: costing the baselines (1.5M bounded, 2.3K estimated, 48 refined) | 3.1 s");
  p.stage = PlanProgress::kAdvice;
  EXPECT_EQ(format_plan_progress(p, 3.2, std::nullopt),
            "plan: nothing fits; searching what would (more GPUs, FP8, shorter sequences, no memory margin) | 3.2 s");
  p.stage = PlanProgress::kDone;
  EXPECT_EQ(format_plan_progress(p, 3.3, std::nullopt), "");
}

TEST(PlanProgressLine, ASnapshotHasEveryCounter) {
  PlanProgress progress;
  progress.stage = PlanProgress::kLevel2;
  progress.meshes = 1;
  progress.meshes_done = 2;
  progress.groups_bounded = 3;
  progress.groups = 4;
  progress.bounded = 5;
  progress.estimated = 6;
  progress.refined = 7;
  const PlanProgress::Snapshot s = progress.snapshot();
  EXPECT_EQ(s.stage, PlanProgress::kLevel2);
  EXPECT_EQ(std::vector<long long>({s.meshes, s.meshes_done, s.groups_bounded, s.groups, s.bounded, s.estimated,
                                    s.refined}),
            std::vector<long long>({1, 2, 3, 4, 5, 6, 7}));
}

}  // namespace
}  // namespace paratune
