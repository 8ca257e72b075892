// Host-side issue time: the CPU work of launching a layer's kernels, and how much of it the GPU's
// own work does not hide. Internal to the cost module.
//
// PyTorch runs eagerly: every operator is dispatched from the CPU (Python, the dispatcher,
// autograd's bookkeeping, cudaLaunchKernel), some microseconds each, while the GPU works through
// the queue. The CPU runs ahead, so a layer costs max(GPU time, CPU issue time): a large layer
// hides its launches entirely, a small one -- a 2048-wide MoE layer with 128 experts of FFN 768 --
// waits for the CPU. A host synchronisation drains the queue: dropless MoE with the all-to-all
// dispatcher copies the per-expert token counts to the host to size the all-to-all
// (Megatron-Core MoEAlltoAllTokenDispatcher: tokens_per_expert .to("cpu")), so everything after
// it is issued onto an idle GPU.
#pragma once

#include "paratune/cost/calibration.h"
#include "paratune/spec/model.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/training.h"

namespace paratune::cost_detail {

// Operators (kernels and collectives) one layer's forward issues, counted on Megatron-Core's fused
// transformer layer: two norms, the QKV GEMM, RoPE on q and k, fused attention, the output
// projection, two bias-dropout-add fusions, the MLP's two GEMMs and its activation, plus layout
// copies: about 16 (our count of megatron/core/transformer/transformer_layer.py and
// mlp.py with the default fusions).
inline constexpr int kDenseLayerOps = 16;
// Each tensor-parallel collective of the forward (2 all-reduces, or 2 all-gather + 2
// reduce-scatter with sequence parallelism).
inline constexpr int kTpCollectiveOps = 2;
// An MoE layer's routing and dispatch, forward, on Megatron-Core's alltoall dispatcher
// (megatron/core/transformer/moe/router.py, token_dispatcher.py, moe_utils.py): router GEMM,
// softmax, top-k, the auxiliary loss's reductions (~8); permutation: counts, sort, gather (~6);
// before the host sync. After it: the dispatch all-to-all and its split bookkeeping (~4), the
// experts' activation (1), the combine all-to-all (~2) and un-permutation (~4); plus the expert
// GEMMs, kExpertGemmOps per local expert.
inline constexpr int kMoeOpsBeforeSync = 14;
inline constexpr int kMoeOpsAfterSync = 11;
// Megatron-Core's grouped expert MLP (TEGroupedMLP) runs Transformer Engine's GroupedLinear, whose
// grouped GEMM issues one cuBLAS GEMM per expert (spread over several streams): fc1 and fc2, 2
// launches per local expert forward (transformer_engine/pytorch/module/grouped_linear.py,
// general_grouped_gemm).
inline constexpr int kExpertGemmOps = 2;
// A shared expert: two GEMMs and its activation.
inline constexpr int kSharedExpertOps = 3;
// cudaStreamSynchronize plus the small device-to-host copy: ~10-30 us (CUDA runtime latency).
inline constexpr double kHostSyncS = 20e-6;
// The backward issues about twice the forward's kernels (input and weight gradients) from
// autograd's C++ engine, about half as costly per operator as the Python-dispatched forward: about
// the forward's issue time in all (our reading of PyTorch profiler traces, not measured here).
inline constexpr double kBackwardIssueRatio = 1.0;

// The GPU time of a layer's forward, split at the MoE host sync (all of it in `before` for a
// dense layer or an MoE layer without the sync), and of its backward.
struct LayerGpuTime {
  double forward_before_sync_s = 0;
  double forward_after_sync_s = 0;
  double backward_s = 0;
};

// The host issue time the GPU does not hide, per pass.
struct HostIssueExposure {
  double forward_s = 0;
  double backward_s = 0;
};

// Whether an MoE layer under `training` synchronises with the host each forward: dropless routing
// (no capacity factor) with expert parallelism needs the token counts on the host.
bool moe_host_sync(const ParallelConfig& p, const TrainingSpec& training);

HostIssueExposure host_issue_exposure(const ModelSpec& m, const ParallelConfig& p, const TrainingSpec& training,
                                      bool moe_layer, const LayerGpuTime& gpu, const Calibration& calibration);

}  // namespace paratune::cost_detail
