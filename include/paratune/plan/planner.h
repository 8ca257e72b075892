// `paratune plan`: the fastest parallel configuration that fits, searched jointly over every axis
// in two levels (H2O, data/papers/README.md#h2o-holistic-hyperparameter-optimization).
//
// Level 1 bounds the search space (plan/space.h) group by group: candidates that share a layer
// shape get bounds that hold for every member (cost/stage_model.h `group_bounds`); a group whose
// memory bound exceeds the GPU is dropped whole, and a group's members are enumerated and each
// bounded with even stages (`planning_bounds`) only when the search reaches the group's time bound.
// Candidates whose memory bound exceeds the GPU are pruned; the rest are costed with estimate() in
// increasing order of their time bound until the bound reaches the K-th best time found ("kept").
// Level 2 refines
// each kept candidate: the exact stage assignment and per-stage recompute (plan/stage_assignment.h),
// timed by the pipeline replay under each gradient-sync placement. Because the time bound holds for
// every refinement, refining every candidate whose bound is below the N-th best refined time
// makes the top N exact: the same as refining every candidate of the space (tested). Replays that
// cannot beat the threshold are skipped on an O(p·v) bound of the layout's pipeline
// (sim::iteration_time_lower_bound_s), which does not change the answer.
//
// Plans are ranked by plan/ranking.h: predicted time, then simpler configuration first among
// times equal within 1e-9 relative. Only what one of PlanOptions::frameworks can run is searched
// (launch/framework_support.h; by default any of the three): level 1 skips the candidates none of them
// runs, level 2 chooses only layouts and recompute counts one of them can express.
#pragma once

#include <atomic>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "paratune/cost/calibration.h"
#include "paratune/cost/estimate.h"
#include "paratune/launch/framework_support.h"
#include "paratune/plan/space.h"

namespace paratune::plan {

// The most worker threads plan() starts.
inline constexpr int kMaxPlanThreads = 1024;

// How far a search is, read on another thread while plan() runs (`paratune plan` shows it on a
// terminal, report/plan_report.h format_plan_progress). plan() only adds to these counters (relaxed
// atomic adds: once per 1,024 groups bounded, once per group expanded, once per candidate estimated
// or refined), so
// watching costs the search nothing measurable and changes nothing in its result. The searches the
// advice runs when nothing fits do not count here (stage kAdvice).
struct PlanProgress {
  enum Stage : int { kStarting, kBounds, kLevel1, kLevel2, kBaselines, kAdvice, kDone };
  std::atomic<int> stage{kStarting};
  std::atomic<long long> meshes{0};       // mesh shapes to bound (set when kBounds begins)
  std::atomic<long long> meshes_done{0};  // of them, bounded
  std::atomic<long long> groups_bounded{0};  // layer-shape groups bounded so far (kBounds)
  std::atomic<long long> groups{0};       // of them, those whose memory bound fits (set when kLevel1 begins)
  std::atomic<long long> bounded{0};      // level-1 candidates enumerated and bounded so far (groups expanded)
  std::atomic<long long> estimated{0};    // level 1: costed with even stages (SearchStats::level1_evaluated)
  std::atomic<long long> refined{0};      // level 2 (SearchStats::level2_evaluated)

  // The counters at one moment, as plain numbers.
  struct Snapshot {
    int stage = kStarting;
    long long meshes = 0, meshes_done = 0, groups_bounded = 0, groups = 0, bounded = 0, estimated = 0, refined = 0;
    // What the stage advances: groups_bounded (kBounds), estimated (kLevel1), refined (kLevel2); 0 otherwise.
    [[nodiscard]] long long stage_count() const;
  };
  // The stage is read first (it is stored with release once a stage's totals are set), so the
  // snapshot has the totals of its stage.
  [[nodiscard]] Snapshot snapshot() const;
};

struct PlanOptions {
  SearchSpace space;
  ParallelConfig base;  // flags that are not searched (overlap flags); axes are overwritten
  int top = 5;          // plans reported (exact top N), >= 1
  int keep = 16;        // level-1 survivors refined first (K), >= 1
  int threads = 1;      // 1 .. kMaxPlanThreads; result identical for every count
  EstimateOptions estimate;
  bool baselines = true;  // cost the expert and 3-axis baselines too
  bool advise = true;     // when nothing fits, search variants (more GPUs, FP8, ...) for what would
  // Search only what one of these frameworks can run as planned (`plan --framework`; the default,
  // all three, is `--framework any`; `--emit X` is {X}): candidates none of them runs are skipped at
  // level 1; level 2 refines within what each of those that run the candidate can express (e.g. one
  // recompute count per model chunk for Megatron-LM, even stages for DeepSpeed's pipeline). With one
  // framework, the baselines take its nearest expression of their rule. Empty (`--framework none`):
  // the model's whole space; every plan still says which frameworks run it (perhaps none).
  std::vector<launch::Framework> frameworks{launch::kFrameworks.begin(), launch::kFrameworks.end()};
  // Where plan() counts its progress for a display on another thread; null: nowhere. Not owned: it
  // must outlive the call.
  PlanProgress* progress = nullptr;
};

struct SearchStats {
  // Level 1 bounds groups of candidates that share a layer shape first (plan/space.h
  // enumerate_groups) and enumerates a group's members only when the search reaches its bound.
  long long groups = 0;                // layer-shape groups of the space
  long long groups_pruned_memory = 0;  // dropped whole: no member can fit
  long long groups_expanded = 0;       // whose members were enumerated and bounded (the others:
                                       // their bound was at or above what the search needed)
  long long candidates_level1 = 0;  // members of expanded groups that a searched framework runs
  long long unsupported = 0;        // members of expanded groups no framework of PlanOptions::frameworks runs
  long long pruned_memory = 0;      // of candidates_level1, those whose memory bound is above the limit
  long long pruned_time = 0;        // of candidates_level1, those never costed nor refined: their time
                                    // bound was at or above what the search needed
  long long level1_evaluated = 0;   // costed with even stages (replayed unless their pipeline bound
                                    // already reaches the K-th best time)
  long long kept = 0;               // refined as level-1 survivors
  long long level2_evaluated = 0;   // refined in all (survivors + candidates whose bound could still win)
  double bounds_s = 0;  // enumerating and bounding every level-1 candidate (part of level1_s)
  double level1_s = 0, level2_s = 0, elapsed_s = 0;  // wall-clock
};

// What level 1 knew of a plan's candidate (with even stages and its level-1 recompute).
enum class Level1 {
  kTimed,        // costed and replayed: Plan::level1_time_s
  kDidNotFit,    // costed: even stages do not fit; level 2's layout or recompute does
  kNotReplayed,  // costed: its pipeline bound showed even stages could not make the K best
  kNotCosted,    // found in level 2's exact sweep: its time bound was below the N-th best plan
};

struct Plan {
  Estimate estimate;  // config: every axis incl. stage_layers, per-stage recompute, grad_sync
  // The same candidate with even stages (and its level-1 recompute); infinity unless level1 is kTimed.
  double level1_time_s = std::numeric_limits<double>::infinity();
  Level1 level1 = Level1::kTimed;
  double lower_bound_s = 0;
  std::vector<launch::FrameworkVerdict> frameworks;  // which frameworks can run it, and why not (all three)
};

struct Baseline {
  std::string rule;                 // how it was chosen, in words
  std::optional<Estimate> estimate; // none: no configuration of the rule fits
  std::vector<launch::FrameworkVerdict> frameworks;  // for the estimate's configuration
};

struct PlanResult {
  std::vector<launch::Framework> searched_within;  // PlanOptions::frameworks (empty: the whole space) that
                                           // can build the model
  std::vector<launch::FrameworkVerdict> not_searched;  // of PlanOptions::frameworks, those that cannot (why)
  std::vector<Plan> plans;  // fitting, best first, at most `top`
  Baseline expert, three_axis;
  SearchStats stats;
  // When nothing fits: the candidate closest to fitting (smallest peak memory) and what would help.
  std::optional<Estimate> closest;
  std::vector<std::string> advice;
  // When nothing within searched_within fits but candidates were skipped because none of those
  // frameworks runs them: the best plan of the whole space, which therefore no searched framework
  // runs as planned (its verdicts say why). It tells a constraint that meets a framework's limits
  // (e.g. --fix schedule=zb-h1) from a model that does not fit.
  std::optional<Plan> best_unrunnable;
};

// Throws Error naming the field, the value and the rule (top, keep, threads, space.max_mbs,
// estimate.memory_margin). plan() checks its options with it before searching.
void validate(const PlanOptions& options);

PlanResult plan(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                const PlanOptions& requested, const Calibration& calibration = default_calibration());

// Level 2 for one candidate: the best fitting refinement (stage assignment, per-stage recompute,
// gradient-sync placement among those the space allows; even stages are one of the choices), or
// none. Refinements that cannot beat `faster_than_s` are not replayed, so the answer is exact
// whenever it is faster than that (the search passes its N-th best time). Exposed for tests
// (brute force) and benchmarks.
std::optional<Estimate> refine(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                               const Candidate& candidate, const PlanOptions& options,
                               const Calibration& calibration = default_calibration(),
                               double faster_than_s = std::numeric_limits<double>::infinity());

// The baselines (rules documented in src/plan/baselines.cc and the README).
Baseline expert_baseline(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                         const PlanOptions& options, const Calibration& calibration = default_calibration());
Baseline three_axis_baseline(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                             const PlanOptions& options, const Calibration& calibration = default_calibration());

}  // namespace paratune::plan
