// Failure kinds (trial/failure.h): which failures are deterministic.
#include "paratune/trial/failure.h"

#include <gtest/gtest.h>

namespace paratune::trial {
namespace {

TEST(FailureKind, RefusedIsAnErrorExitBeforeTheFirstStep) {
  // exit 3 at once ("invalid configuration"), an argparse error (2), an assertion (1): refused.
  EXPECT_EQ(classify_failure(TrialStatus::kFailed, 3, 0, 0), FailureKind::kRefused);
  EXPECT_EQ(classify_failure(TrialStatus::kFailed, 1, 0, 0), FailureKind::kRefused);
  // After a step, by a signal, or exiting 0 without a usable measurement: crashed.
  EXPECT_EQ(classify_failure(TrialStatus::kFailed, 3, 0, 2), FailureKind::kCrashed);
  EXPECT_EQ(classify_failure(TrialStatus::kFailed, -1, 11, 0), FailureKind::kCrashed);
  EXPECT_EQ(classify_failure(TrialStatus::kFailed, 0, 0, 0), FailureKind::kCrashed);
  EXPECT_EQ(classify_failure(TrialStatus::kOom, 1, 0, 3), FailureKind::kOom);
  EXPECT_EQ(classify_failure(TrialStatus::kInfeasible, 0, 0, 5), FailureKind::kOverMemory);
  EXPECT_EQ(classify_failure(TrialStatus::kTimeout, -1, 9, 5), FailureKind::kTimeout);
  for (TrialStatus s : {TrialStatus::kCompleted, TrialStatus::kEarlyStopped, TrialStatus::kInterrupted})
    EXPECT_EQ(classify_failure(s, 0, 0, 5), FailureKind::kNone) << to_string(s);
}

TEST(FailureKind, OnlyRefusalsAndMemoryFailuresRepeat) {
  EXPECT_TRUE(is_deterministic(FailureKind::kRefused));
  EXPECT_TRUE(is_deterministic(FailureKind::kOom));
  EXPECT_TRUE(is_deterministic(FailureKind::kOverMemory));
  EXPECT_FALSE(is_deterministic(FailureKind::kCrashed));
  EXPECT_FALSE(is_deterministic(FailureKind::kTimeout));
  EXPECT_FALSE(is_deterministic(FailureKind::kNone));
  EXPECT_STREQ(to_string(FailureKind::kOverMemory), "over-memory");
}

}  // namespace
}  // namespace paratune::trial
