// How the study loop (controller.cc) reads a run's output into its trial's record -- the objective's
// curve, the throughput estimate, peak memory -- as the run goes and when it ends, and judges a run
// that ended by itself: completed, resting at a rung, pruned or failed, with the reason stored. It
// touches only the record and the run's LiveRun: what is stored, and when, is the loop's.
#pragma once

#include "paratune/hpo/pruner.h"
#include "paratune/hpo/study.h"
#include "paratune/store/study_store.h"
#include "study_trials.h"

namespace paratune::hpo {

class TrialJudge {
 public:
  TrialJudge(const HpoOptions& options, const Pruner& pruner);

  // New intermediate values into the trial's curve; true when there was one.
  bool take_metrics(LiveRun& live, TrialRecord& r, const trial::TrialOutput& output) const;
  // A run's end into its record (what came after the last step line, not judged; the estimate over
  // all its steps). Returns the result as it is stored: each metric with its step, inferred ones
  // included.
  trial::TrialResult take_end(LiveRun& live, TrialRecord& r, const trial::TrialResult& ended) const;
  // How a run that was not interrupted ended: completed, resting at a rung, pruned or failed.
  store::TrialOutcome judge(const LiveRun& live, TrialRecord& r, const trial::TrialResult& result) const;

 private:
  bool take_measurement(LiveRun& live, TrialRecord& r, const trial::TrialOutput& output) const;
  void take_final_measurement(const LiveRun& live, TrialRecord& r, const trial::TrialResult& ended) const;
  store::TrialOutcome judge_completed(const LiveRun& live, TrialRecord& r, const trial::TrialResult& result,
                                      const std::optional<double>& last) const;

  const HpoOptions& options_;
  const Pruner& pruner_;
  const bool throughput_objective_;
};

}  // namespace paratune::hpo
