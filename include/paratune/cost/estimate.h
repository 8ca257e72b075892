// The analytic cost model of one training iteration: compute, communication and memory.
//
// `estimate()` is a pure function of the specs and a Calibration; it sits in the planner's inner
// loop, so it allocates only the per-stage vectors and loops over stages, never over layers.
// Every formula is written next to the code that computes it (src/cost/: layer_cost.cc, memory.cc,
// estimate.cc, ...) with its source; the README's "Cost model" section is the overview.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "paratune/cost/calibration.h"
#include "paratune/cost/stage_model.h"
#include "paratune/sim/pipeline.h"
#include "paratune/spec/hardware.h"
#include "paratune/spec/model.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/training.h"

namespace paratune {

// Where the iteration's time goes. The parts add up to iteration_time_s. Communication entries are
// the *exposed* part (not hidden behind compute).
struct TimeBreakdown {
  double compute_s = 0;      // bottleneck stage: m micro-batches of forward + backward (+ recompute)
  double bubble_s = 0;       // idle before the pipeline flush on the bottleneck stage (fill, drain,
                             // waiting for P2P transfers)
  double tp_comm_s = 0;      // tensor-parallel all-reduce / reduce-scatter + all-gather
  double cp_comm_s = 0;      // context-parallel ring exchange of K/V (incl. re-run by full recompute)
  double ep_comm_s = 0;      // expert-parallel all-to-all (dispatch + combine; incl. re-run by recompute)
  double pp_comm_s = 0;      // blocking pipeline sends (overlap_p2p off); overlapped ones that delay
                             // a stage show up as bubble
  double dp_comm_s = 0;      // gradient reduction (+ ZeRO-1/2 parameter all-gather) exposed after the
                             // bottleneck stage's last pass, incl. waiting for slower stages' updates
  double zero3_comm_s = 0;   // ZeRO-3 per-layer parameter gathers, ZeRO-2/3 per-micro-batch gradient
                             // reduce-scatters (and the compute they slow while hidden)
  double optimizer_s = 0;    // optimizer step (memory-bound)
  double overhead_s = 0;     // fixed per-iteration overhead
};

struct MemoryBreakdown {
  double weights_bytes = 0;
  double grads_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
  double other_bytes = 0;  // CUDA context, communication buffers, fragmentation, logits
  [[nodiscard]] double total_bytes() const {
    return weights_bytes + grads_bytes + optimizer_bytes + activations_bytes + other_bytes;
  }
};

// One pipeline stage, per micro-batch (times) and at its peak (memory).
struct StageEstimate {
  int layers = 0;
  int recomputed_layers = 0;  // fully recomputed layers (recompute=full)
  double forward_s = 0;       // one micro-batch, incl. exposed TP/CP/EP/ZeRO-3 communication
  double backward_s = 0;      // one micro-batch, incl. recompute and exposed communication
  double compute_s = 0;       // forward_s + backward_s without the communication part
  double in_flight_microbatches = 0;  // micro-batches' activations held at the peak (1F1B: p - stage),
                                      // from the pipeline replay
  double host_activation_bytes = 0;  // activation offload: what one GPU keeps in host memory at its peak
  double params = 0;          // parameters held by one GPU of this stage (before ZeRO sharding)
  MemoryBreakdown memory;
};

struct Estimate {
  ParallelConfig config;  // resolved (stage_layers, op, schedule filled in)
  int num_microbatches = 0;
  double iteration_time_s = 0;
  double bubble_fraction = 0;  // pipeline idle / busy before the flush, all stages (sim::SimulationResult)
  double tokens_per_s = 0;
  double model_flops = 0;     // per iteration, all GPUs: 3 x forward (no recompute)
  double hardware_flops = 0;  // model_flops + recompute
  double mfu = 0;             // model_flops / (time x GPUs x peak)
  double hfu = 0;             // hardware_flops / (time x GPUs x peak)
  double tflops_per_gpu = 0;  // model FLOP/s per GPU / 1e12
  TimeBreakdown breakdown;
  std::vector<StageEstimate> stages;
  double peak_memory_bytes = 0;
  double memory_limit_bytes = 0;  // GPU memory x (1 - margin)
  bool fits = true;
  std::string reason;  // why it does not fit (empty when it fits)
};

// Throws Error when the configuration is invalid for the specs (see spec/parallel.h `resolve`).
// The pipeline part (fill, drain, P2P, where gradient reduction runs, peak activations) comes from
// replaying the schedule with sim::simulate on pipeline_problem(...), so `estimate` and
// `simulate` always agree.
Estimate estimate(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                  const ParallelConfig& config, const Calibration& calibration = default_calibration(),
                  const EstimateOptions& options = {});

// estimate(), unless the configuration cannot take less than `faster_than_s` per iteration
// (sim::iteration_time_lower_bound_s of its pipeline problem): then std::nullopt, without the replay.
// For searches that only need configurations faster than the best so far.
std::optional<Estimate> estimate_if_faster(const ModelSpec& model, const ClusterSpec& cluster,
                                           const TrainingSpec& training, const ParallelConfig& config,
                                           double faster_than_s, const Calibration& calibration = default_calibration(),
                                           const EstimateOptions& options = {});

// What each pipeline rank's operations cost for this configuration, ready for sim::simulate:
// per chunk forward / B / W times, activation bytes, gradient reduction; per rank optimizer step,
// exposed parameter gather, P2P link time and static memory.
sim::PipelineProblem pipeline_problem(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                                      const ParallelConfig& config,
                                      const Calibration& calibration = default_calibration(),
                                      const EstimateOptions& options = {});

// The same with a device mesh of its own per stage (Alpa-style, e.g. the Comm-Shift poster's GPT-J-6B
// on (8x1),(4x2),(4x2),(4x2)). `config` gives pp, the micro-batch (config.dp x config.mbs sequences)
// and every other axis; stage i is costed as `config` with dp = dp_i, tp = tp_i and
// mbs = config.dp * config.mbs / dp_i on its own dp_i * tp_i GPUs, whose count must fill whole
// nodes. Not modelled: re-sharding activations between stages whose meshes differ.
sim::PipelineProblem pipeline_problem_with_stage_meshes(const ModelSpec& model, const ClusterSpec& cluster,
                                                        const TrainingSpec& training, const ParallelConfig& config,
                                                        const std::vector<StageMesh>& meshes,
                                                        const Calibration& calibration = default_calibration(),
                                                        const EstimateOptions& options = {});

// Megatron-Core's default --min-offloaded-tensor-size: smaller saved tensors stay on the GPU.
inline constexpr double kMinOffloadedTensorElements = 1024.0 * 1024.0;

// What activation offload (ParallelConfig::offload_modules) takes off one layer's GPU memory for one
// micro-batch (`freed`, bytes) and what it moves over the host link each way (`moved`, bytes; more
// than freed where the offload keeps an unquantized copy). cost/memory.cc lists the tensors.
struct OffloadBytes {
  double freed = 0;
  double moved = 0;
};
OffloadBytes layer_offload_bytes(const ModelSpec& m, const TrainingSpec& training, const ParallelConfig& p,
                                 bool moe_layer, double linear_input_bytes, double moe_load);

// Activation bytes of one transformer layer for one micro-batch on one GPU (Korthikanti et al.
// 2022, "Reducing Activation Recomputation in Large Transformer Models", Sec. 4, generalised to
// GQA, gated MLPs, MoE, MLA and flash attention). With MHA, a 4h GeLU MLP, dropout, no flash
// attention and sequence parallelism this is exactly s·b·h/t·(34 + 5·a·s/h). `linear_input_bytes`:
// bytes per element of the linear layers' saved inputs (2; 1 under FP8); `moe_load`: the busiest
// expert-parallel rank's routed tokens / the mean (cost/moe.h). Offloaded tensors are not counted.
double layer_activation_bytes(const ModelSpec& m, const TrainingSpec& training, const ParallelConfig& p,
                              bool moe_layer, double linear_input_bytes = 2, double moe_load = 1);

}  // namespace paratune
