// Level 2 of the planner: which decoder layers each pipeline stage holds and how many of them it
// recomputes, chosen exactly for a pipeline-time model under each stage's memory limit. The same
// code splits paratune-train's models across its pipeline ranks (trainer/stage_split.h), through the
// StageCosts interface below.
#pragma once

#include <cstdint>

#include <limits>
#include <span>
#include <vector>

#include "paratune/cost/stage_model.h"

namespace paratune::plan {

// What the stage assignment needs to know about a model and a pipeline: the transformer cost model
// (StageCostModel, the planner) and a trainer's per-layer costs (paratune-train) both answer it.
class StageCosts {
 public:
  virtual ~StageCosts() = default;
  [[nodiscard]] virtual int pipeline_stages() const = 0;  // pp
  [[nodiscard]] virtual int virtual_stages() const = 0;   // vpp: model chunks per rank
  [[nodiscard]] virtual int layers() const = 0;           // the model's layers (vpp divides it)
  [[nodiscard]] virtual double num_microbatches() const = 0;
  [[nodiscard]] virtual double memory_limit_bytes() const = 0;
  // Stage `rank` holding layers [first_layer, first_layer + layers), `recomputed` of them fully
  // recomputed, `in_flight` micro-batches' activations at its peak; one micro-batch.
  [[nodiscard]] virtual StageWork stage_work(int rank, int first_layer, int layers, int recomputed,
                                             double in_flight) const = 0;
  // Whether a stage's cost depends on its layers' count only, never falls as it grows, and is the
  // same for every first layer: the assignment then stops early (see below).
  [[nodiscard]] virtual bool layers_alike() const = 0;
  // A lower bound on what each block of vpp layers adds to a stage's time, wherever it is: a
  // stage of k blocks takes at least k times this. Default 0 (no bound).
  [[nodiscard]] virtual double least_block_time_s() const { return 0; }
  // Two ranges [first_layer, first_layer + layers) of one length with the same signature cost the
  // same on every rank (their costs are computed once). Default: the range itself, nothing shared.
  [[nodiscard]] virtual std::uint64_t range_signature(int first_layer, int /*layers*/) const {
    return static_cast<std::uint64_t>(first_layer);
  }
  // A lower bound on the sum over ranks of stage_work(...).time_s, for every assignment.
  [[nodiscard]] virtual double model_work_s() const = 0;
};

struct StageAssignment {
  bool feasible = false;         // some assignment fits every stage's memory
  std::vector<int> stage_layers;  // decoder layers per stage (contiguous, in order)
  std::vector<int> recomputed;    // fully recomputed layers per stage
  double objective_s = 0;         // pipeline-time model below, at the optimum
  double bottleneck_s = 0;        // max_s w_s
};

// Minimises, over contiguous assignments of the model's layers to the configuration's pp stages
// (each a multiple of vpp layers, >= vpp) and the number of fully recomputed layers per stage,
//     J = (m - 1/v) · max_s w_s + (1/v) · sum_s w_s
// where w_s is stage s's forward + backward (+ recompute) time for one micro-batch
// (StageCostModel::stage_work). With v = 1 this is the 1F1B time of unequal stages, m micro-batches
// on the bottleneck plus one pass through all the others; with interleaving the fill and drain
// shrink to 1/v. Subject to: each stage's peak memory, with `in_flight[s]` micro-batches' activations,
// within the limit. Recompute is only used where memory needs it (it only adds time), so each
// (stage, layers) pair has one best recompute count: the smallest that fits.
//
// Exact method: for a cap C on max_s w_s, a dynamic programme over (stage, layers placed) finds the
// least sum_s w_s; J is minimised by trying the caps that occur as stage costs in increasing order,
// from the smallest feasible one, until (m - 1/v)·C + (the model's work)/v cannot improve J. With
// alike layers a stage's cost rises with its size, so each rank's sizes under a cap are a prefix:
// the caps are walked as a merge of the ranks' increasing costs and the programme stops at the
// first size over the cap, O(p·B·k) for B blocks and k blocks per stage instead of O(p·B²).
// `allow_recompute`: recompute=full (per-stage counts are chosen); otherwise every count is 0.
// `bottleneck_limit_s`: when every assignment that fits has max_s w_s above it, say infeasible
// without solving (a search that needs iterations faster than T passes (T - overhead) / m: a rank
// runs its m micro-batches one after another).
// `recompute_per_chunk` (with allow_recompute): -1, each stage its smallest count that fits; n >= 0,
// every stage recomputes min(n·vpp, its layers) -- one count n for every model chunk of every rank,
// Megatron's --recompute-method block n (kAllLayers: every layer) -- and a stage that does not fit
// with it is not an option. A stage's time and memory still never fall as it grows (it holds more
// layers and recomputes at least as many), so the method stays exact.
inline constexpr int kAllLayers = std::numeric_limits<int>::max() / 1024;
StageAssignment assign_stages(const StageCosts& costs, std::span<const double> in_flight, bool allow_recompute,
                              double bottleneck_limit_s = std::numeric_limits<double>::infinity(),
                              int recompute_per_chunk = -1);
// The planner's form: the stages of the transformer cost model's configuration.
StageAssignment assign_stages(const StageCostModel& costs, std::span<const double> in_flight, bool allow_recompute,
                              double bottleneck_limit_s = std::numeric_limits<double>::infinity(),
                              int recompute_per_chunk = -1);

}  // namespace paratune::plan
