// A hyperparameter trial as samplers and pruners see it, and the objective's direction.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "paratune/hpo/space.h"
#include "paratune/trial/failure.h"
#include "paratune/trial/measurement.h"

namespace paratune::hpo {

enum class Direction { kMinimize, kMaximize };
const char* to_string(Direction direction);          // "minimize" | "maximize"
Direction parse_direction(std::string_view name);    // throws Error listing the names

// A value in the form every sampler and pruner works in: smaller is better.
inline double as_loss(Direction direction, double value) { return direction == Direction::kMinimize ? value : -value; }

// The objective as the trial reported it at one step (its learning curve).
struct IntermediateValue {
  std::int64_t step = 0;  // the step it was measured after (0-based: after r steps, step r - 1)
  double value = 0;
};

struct TrialRecord {
  // kRunning: a run of it is in progress (a pending proposal). kCompleted: trained for the full
  // resource. kPruned: stopped early by a pruner, or resting at an ASHA rung (it may be promoted
  // later). kFailed: failed, out of memory, infeasible or timed out: no objective, but information
  // (samplers steer away from it).
  enum class State { kRunning, kCompleted, kPruned, kFailed };

  int number = 0;                         // 1, 2, ... in start order
  Config config;                          // the active parameters
  State state = State::kRunning;
  std::optional<double> value;            // kCompleted: the objective's last reported value
  std::vector<IntermediateValue> curve;   // every reported value of the objective, in step order
  std::int64_t resource = 0;              // steps trained so far (over every run of the trial)
  int rung = -1;                          // ASHA / Hyperband: the highest rung it completed; -1 none
  int bracket = 0;                        // Hyperband: its bracket (0 for everything else)
  // kFailed: how (trial/failure.h). The samplers' feasibility model learns from every failure and
  // never proposes again a configuration whose failure is deterministic. kNone otherwise.
  trial::FailureKind failure = trial::FailureKind::kNone;
  // What its steps measured, whatever the objective: the throughput estimate of its steps so far
  // (the run in progress, else its last run; trial/measurement.h: warm-up and outliers dropped) and
  // the largest memory it reported. The model-based samplers (tune/bayes.h) learn throughput and
  // memory from them; OPPA's early termination (pruner oppa) judges a running trial by them.
  trial::ThroughputEstimate measured;
  std::optional<double> peak_memory_bytes;
  // kCompleted in a study of several objectives (SamplerOptions::directions): each objective's value
  // in the study's order, all finite (a trial missing one is failed); `value` is then the first.
  // Empty in a study of one objective.
  std::vector<double> values;
};
const char* to_string(TrialRecord::State state);

// The throughput objective's learning curve: after r steps, the estimate over those r (the
// objective a full trial ends with, over fewer steps), at step r - 1 (0-based, as the resource
// counts, whatever numbers the program gave its steps), from the first r that leaves a usable
// estimate (the first step is warm-up); past 256 steps at every (steps / 256)-th r and the last. It
// lets every pruner (median, percentile, ASHA, Hyperband) judge throughput trials as it judges a
// metric's.
std::vector<IntermediateValue> throughput_curve(std::span<const double> step_times_s);

// The objective after `resource` steps: the last intermediate value with step < resource; nullopt
// when there is none.
std::optional<double> value_at(const TrialRecord& trial, std::int64_t resource);

}  // namespace paratune::hpo
