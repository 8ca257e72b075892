// StageCostModel: what one pipeline stage costs as a function of the layers it holds.
//
// estimate() builds every stage of a configuration from this model, and the planner (module plan)
// asks it about stages that do not exist yet: "stage 2 holding layers 30..47 with 6 of them fully
// recomputed". Both go through the same per-layer costs, so a plan's predicted time is exactly what
// `paratune estimate` says for it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "paratune/cost/calibration.h"
#include "paratune/cost/collectives.h"
#include "paratune/cost/hardware_profile.h"
#include "paratune/spec/hardware.h"
#include "paratune/spec/model.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/training.h"

namespace paratune {

struct EstimateOptions {
  // Fraction of GPU memory kept free when judging `fits`: the limit is memory x (1 - margin).
  // A finite number, 0 <= margin < 1.
  double memory_margin = 0.05;
  // Kernels measured on the user's GPUs (`paratune profile`; cost/hardware_profile.h): they price
  // the GEMMs, attention, collectives and memory-bound kernels they cover. nullptr: the fitted
  // model prices everything. Checked against the model, GPU and precision by the caller
  // (check_profile_applies); it must outlive the estimate or planner that uses it.
  const HardwareProfile* profile = nullptr;
  // Internal (src/cost/measured_rates.h): records the kernel shapes priced, for `paratune profile`.
  cost_detail::KernelLog* kernel_log = nullptr;
};
// Throws Error naming the field, the value and the rule. StageCostModel (and so estimate(),
// pipeline_problem() and the planner) checks its options with it.
void validate(const EstimateOptions& options);
// The memory a GPU of `cluster` may use: its memory x (1 - margin).
double memory_limit_bytes(const ClusterSpec& cluster, const EstimateOptions& options);

// One pipeline rank, one micro-batch.
struct StageWork {
  double time_s = 0;        // forward + backward (+ recompute) passes incl. exposed TP/CP/EP/ZeRO-3
                            // communication, all of the rank's model chunks
  double memory_bytes = 0;  // peak: weights, grads, optimizer state, other, and `in_flight`
                            // micro-batches' activations (+ the working set of a recomputed layer)
};

// Lower bounds over every stage assignment and per-stage recompute of one configuration (the
// planner prunes with them; see planning_bounds()).
struct PlanningBounds {
  double iteration_time_s = 0;
  double memory_bytes = 0;  // of the fullest stage
};

class StageCostModel {
 public:
  // Throws Error when the configuration is invalid (see spec/parallel.h `resolve`). The specs and the
  // calibration are referenced, not copied: they must outlive the model.
  StageCostModel(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                 const ParallelConfig& config, const Calibration& calibration, const EstimateOptions& options = {});
  ~StageCostModel();
  StageCostModel(const StageCostModel&) = delete;
  StageCostModel& operator=(const StageCostModel&) = delete;

  [[nodiscard]] const ParallelConfig& config() const;  // resolved
  [[nodiscard]] int num_microbatches() const;
  [[nodiscard]] double memory_limit_bytes() const;  // GPU memory x (1 - margin)

  // Pipeline rank `rank` holding decoder layers [first_layer, first_layer + layers), `recomputed` of
  // them fully recomputed (recompute=full), with `in_flight` micro-batches' activations at its peak
  // (e.g. from a replay: StageEstimate::in_flight_microbatches). With vpp > 1 the layers are split
  // into vpp equal chunks whose layer kinds (dense/MoE) are counted as if they were consecutive:
  // exact for models whose layers are all alike.
  [[nodiscard]] StageWork stage_work(int rank, int first_layer, int layers, int recomputed, double in_flight) const;

  // The least a decoder layer adds to a stage's stage_work().time_s: the passes and
  // communication of the lightest layer kind (a stage's time is their sum plus non-negative extras).
  [[nodiscard]] double lightest_layer_s() const;

  // What stage_work() depends on of the layers [first_layer, first_layer + layers) besides their
  // count: how many MoE layers each of the rank's vpp chunks holds. Two ranges of one length with
  // the same signature cost the same on every rank (the stage assignment shares their costs).
  [[nodiscard]] std::uint64_t range_signature(int first_layer, int layers) const;

  // Whether the layer kinds differ along the model (MoE every k-th layer or dense first layers).
  // When they do not, stage_work(...).time_s never falls as a stage gets more layers.
  [[nodiscard]] bool layers_alike() const;

  // The whole model's passes for one micro-batch without recompute or ZeRO-3 traffic: every stage
  // assignment's sum over ranks of stage_work(...).time_s is at least this.
  [[nodiscard]] double model_work_s() const;

  struct Impl;
  [[nodiscard]] const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Lower bounds for the candidate `q`, using per-layer costs from `layers`, whose configuration must agree
// with the candidate on every axis that changes a layer's cost (tp, cp, ep, etp, mbs, sequence
// parallelism, recompute mode, overlap flags); dp, pp, vpp, schedule, ZeRO stage and op may differ,
// so one model serves every candidate with the same layer shape. Valid for every stage assignment,
// per-stage count of fully recomputed layers and gradient-sync placement (time: for those that fit):
//   memory: the fullest stage holds at least (1) the mean stage: 1/p of all weights, gradients and
//           optimizer state under the candidate's ZeRO sharding, of the last stage's logits, and of
//           the activations its schedule keeps, in their smallest form: rank s holds e_s
//           micro-batches of each of its L_s >= vpp layers, sum_s e_s·L_s at least
//           sum_s vpp·e_s + (L - p·vpp)·min_s e_s; and (2) with stage s
//           holding L_s layers and its schedule's e_s micro-batches in flight
//           (sim::PipelineSchedule::peak_in_flight), M_s >= fixed + a_s·L_s, a_s = per-layer state +
//           e_s x per-layer activations: all equal at best, M = fixed + L / sum_s 1/a_s; and (3)
//           every rank holds at least vpp layers: M >= fixed + vpp·max_s a_s.
//   time:   iteration >= max over ranks s of (rho·sum_{j<s} w_j + m·w_s) + overhead, the rank's own m
//           micro-batches plus the fill it must wait for (1F1B, GPipe: rho = 1, the first forward
//           and the last backward pass through every earlier rank; interleaved: rho = 1/v, one
//           chunk; ZB-H1: the smaller of rho = the forward's share of the work, and rho = 1 over the
//           forward and input-gradient work only). Minimised over w_s >= 0 with sum w_s = W the
//           terms are equal: W·rho / (1 - (1 - rho/m)^p) (-> m·W/p as rho -> 0). W, the sum of all
//           ranks' passes for one micro-batch, is at least the model's compute and TP/CP/EP
//           communication, plus ZeRO-3 traffic that no prefetch hides (bandwidth terms only, which
//           add up over ranks), plus the recompute memory forces with recompute=full: stage s
//           keeps its layers' full activations only up to (limit - fixed)/a_s layers (with two
//           layer kinds, each term from the kind that makes it smallest). And
//           iteration >= m x the least bottleneck over assignments of whole blocks of vpp layers,
//           each layer costing at least the lightest kind's (dense or MoE), the last rank also
//           running the output layer, the loss and the multi-token-prediction layers.
// The whole-model sums behind both are computed on the first call and kept in `layers`, so calls
// on one model must not run concurrently (the planner gives each thread its own models).
PlanningBounds planning_bounds(const StageCostModel& layers, const ParallelConfig& q);

// Lower bounds for every candidate of a group that shares the layer shape of `layers` and its dp,
// pp and micro-batch count, whatever its ZeRO stage, sharding degree, schedule and vpp (plan/space.h
// enumerate_groups): planning_bounds() of each member is at least these.
//   memory: the mean-stage bound (1) of planning_bounds() under the most sharding a member may have,
//           the least over `most_sharded` (one configuration per ZeRO stage the group has, with its
//           largest op; sharding more never needs more memory);
//   time:   every schedule's relaxation is at least m·W/p (the rho -> 0 limit; it grows with rho),
//           W the compute and TP/CP/EP communication without ZeRO-3 traffic or forced recompute;
//           and at least m x the least bottleneck over assignments of single layers each costing
//           the lightest kind's (blocks of vpp layers are a coarser assignment), the embedding and
//           head counted as nothing when a member may shard with ZeRO-3 (its prefetch may hide them).
PlanningBounds group_bounds(const StageCostModel& layers, std::span<const ParallelConfig> most_sharded);

// group_bounds() for many groups: what they need of their layers' costs is kept per layer shape (the
// axes that change a layer's cost, cost/layer_cost.h, and whether a tied embedding is held twice),
// so the layers' costs are computed only for the first group of each shape (without the pipeline
// parts a StageCostModel adds); groups of other dp, pp, micro-batch counts or sharding reuse them.
// The bounds are those of group_bounds(StageCostModel(first), most_sharded), bit for bit. One
// thread at a time; the specs must outlive it. Throws Error for invalid options (validate).
class GroupBounder {
 public:
  GroupBounder(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
               const Calibration& calibration, const EstimateOptions& options = {});
  ~GroupBounder();
  GroupBounder(const GroupBounder&) = delete;
  GroupBounder& operator=(const GroupBounder&) = delete;

  // The bounds of the group whose first member has configuration `first` (valid: resolve accepts it).
  [[nodiscard]] PlanningBounds bounds(const ParallelConfig& first, std::span<const ParallelConfig> most_sharded);
  [[nodiscard]] double memory_limit_bytes() const;

 private:
  struct LayerShape;
  struct LayerShapeHash;
  struct Bases;
  const ModelSpec& model_;
  const ClusterSpec& cluster_;
  const TrainingSpec& training_;
  const Calibration& calibration_;
  EstimateOptions options_;
  std::unique_ptr<Bases> bases_;
};

}  // namespace paratune
