// One decoder layer's costs for one micro-batch on one GPU: GEMMs, core attention, element-wise
// kernels and FP8 casts, the exposed tensor-, context- and expert-parallel communication, the
// layer's parameters and activations. Internal to the cost module.
#pragma once

#include <unordered_map>

#include "device.h"
#include "fp8.h"
#include "paratune/cost/calibration.h"
#include "paratune/cost/collectives.h"
#include "paratune/spec/hardware.h"
#include "paratune/spec/model.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/training.h"

namespace paratune::cost_detail {

// Everything one layer costs for one micro-batch on one GPU.
struct LayerCost {
  double forward_compute_s = 0;
  double backward_compute_s = 0;
  double weight_grad_s = 0;          // the part of backward_compute_s that computes weight gradients
  // recompute=selective: the forward of the recomputed modules (recompute_modules) re-run in the
  // backward, its FLOPs, and the TP / EP communication it re-runs (exposed).
  double selective_recompute_s = 0;
  double selective_recompute_flops = 0;
  double selective_recompute_tp_s = 0, selective_recompute_ep_s = 0;
  double forward_flops = 0;          // executed on this GPU, forward
  double attention_forward_s = 0;
  double tp_forward_s = 0, tp_backward_s = 0;  // exposed
  double cp_forward_s = 0, cp_backward_s = 0;  // exposed
  double ep_forward_s = 0, ep_backward_s = 0;  // exposed
  // The forward's share of the interference (compute slowed by hidden communication), so that a
  // recompute re-runs it; the backward's share is in backward_compute_s.
  double interference_forward_s = 0;
  double params_dense = 0;   // non-expert parameters on this GPU
  double params_expert = 0;  // expert parameters on this GPU
  double activation_bytes = 0;
  double input_bytes = 0;  // the layer input kept under full recompute
  // recompute=selective: what the layer's backward recomputes and holds on top of the saved
  // outputs (torchtitan's per-op SAC: its full activations less those; Megatron's modules: what
  // they dropped), one layer at a time.
  double selective_working_bytes = 0;
  double cp_buffer_bytes = 0;  // ring attention's K/V send/receive buffers (a working set)
  // Activation offload (offload_modules): the host-link copies the layer's compute does not hide,
  // forward (to the host) and backward (back), included in forward/backward_compute_s; the bytes
  // the layer keeps in host memory instead of activation_bytes; and what the backward holds of them
  // on the GPU, one layer at a time (the layer's reloaded tensors and the next one's, prefetched).
  double offload_forward_s = 0, offload_backward_s = 0;
  double offloaded_bytes = 0;
  double offload_working_bytes = 0;
};

struct Context {
  const ModelSpec& model;
  const ClusterSpec& cluster;
  const TrainingSpec& training;
  const ParallelConfig& config;
  const Calibration& calibration;
  Device device;
  Fabric fabric;
  Fp8Costs fp8;
  double tokens;  // tokens of one micro-batch on one GPU's sequence shard: mbs * seq / cp
  double moe_load;  // busiest expert-parallel rank's tokens / the mean (cost/moe.h)
};

// One layer under `c`: an MoE layer when `moe_layer`, else a dense one.
LayerCost layer_cost(const Context& c, bool moe_layer);

// Dense layers' costs, layer_cost(c, false), kept by the axes of the configuration they read: tp,
// cp, mbs, sequence parallelism, recompute mode and modules, offload modules and TP overlap (no
// expert axis: ep, etp, the all-to-all's overlap and dispatcher change only MoE layers). For callers
// that cost many configurations of one model, cluster, training and calibration (the planner's
// group bounds): the expert variants of a layer shape share one dense layer. One thread at a time.
class DenseLayerCosts {
 public:
  // layer_cost(c, false), computed the first time its axes are met.
  const LayerCost& get(const Context& c);

 private:
  struct Axes {
    int tp, cp, mbs;
    bool sequence_parallel, tp_comm_overlap;
    RecomputeMode recompute;
    unsigned recompute_modules, offload_modules;
    bool operator==(const Axes&) const = default;
  };
  struct AxesHash {
    std::size_t operator()(const Axes& a) const;
  };
  std::unordered_map<Axes, LayerCost, AxesHash> known_;
};

// Number of MoE layers among decoder layers [0, end).
int moe_layers_below(const ModelSpec& m, int end);

}  // namespace paratune::cost_detail
