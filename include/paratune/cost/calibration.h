// Calibration: the few coefficients the analytic model cannot know from datasheets.
//
// Everything else in the cost model is derived from the specs. The defaults below are the values
// fitted by `paratune calibrate` on data/published-runs/published_runs.csv (see README,
// "Calibration"); `data/calibration.json` holds the same values as a file.
//
// Each scalar coefficient is declared once, in the struct, and described once, in
// calibration_fields(): JSON reading and writing, validation, the fit and the docs all walk that
// table.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace paratune {

struct Calibration {
  // --- Compute -------------------------------------------------------------------------------
  // Achieved GEMM throughput = peak x efficiency_max(gpu) x f(m) f(n) f(k), f(d) = d / (d + d_half):
  // large square GEMMs approach efficiency_max; a dimension shrunk by TP, a small micro-batch or
  // few tokens per expert loses throughput as on real GPUs (tile quantization, wave tails).
  double gemm_efficiency_max = 0.80;
  // Per-GPU overrides of gemm_efficiency_max, keyed by GPU preset name (e.g. "h100-sxm").
  std::map<std::string, double> gemm_efficiency_by_gpu;
  double gemm_half_efficiency_dim = 64;
  // Fused (flash) attention achieved fraction of the BF16 peak for long sequences, forward; the
  // backward runs at the same rate. Core attention stays BF16 under every FP8 recipe.
  double attention_efficiency = 0.55;
  // Per-GPU overrides of attention_efficiency: attention kernels mature per architecture
  // (FlashAttention-2 reaches ~70% of an A100's peak but ~35-50% of an H100's; FlashAttention-3 /
  // cuDNN's fused attention use Hopper's asynchrony: Shah et al. 2024, FlashAttention-3, Fig. 5).
  std::map<std::string, double> attention_efficiency_by_gpu;
  // FlashAttention-2's rate relative to the fused attention above, per GPU
  // (TrainingSpec::flash_attention_2). Only Hopper has an entry: there cuDNN's fused attention and
  // FlashAttention-3 use its asynchronous tensor cores and FA2 does not (TE's attention docs: cuDNN
  // 1.35-1.59x faster than flash-attn 2 on an H100); on Ampere FA2 is the fastest kernel, and on
  // Blackwell torchtitan's SDPA puts cuDNN first. A GPU without an entry: 1.
  std::map<std::string, double> flash_attention_2_speed_by_gpu;
  // Flash attention's rate falls for short key/value blocks (fewer tiles per query block to
  // amortise the softmax rescaling and the launch): rate x kv / (kv + attention_half_kv_tokens),
  // kv = the keys one kernel call sees (seq, or seq/cp per context-parallel ring step).
  double attention_half_kv_tokens = 0;
  // A GPU run below its board power (GpuSpec::power_limit_w) clocks its tensor cores down: compute
  // peaks x (limit / board power)^power_clock_exponent. Dynamic power ~ f·V² with V rising with f
  // in the DVFS range gives f ~ P^(1/3) where the cap binds throughout.
  double power_clock_exponent = 1.0 / 3;
  // Memory-bound kernels (norms, activations, residuals, optimizer): fraction of HBM bandwidth.
  double hbm_efficiency = 0.75;
  // Host (CPU) time to issue one operator of a layer: Python, PyTorch's dispatcher, autograd
  // bookkeeping and the kernel launch. A layer costs max(GPU time, operators x op_issue_s)
  // (cost/host_issue.h): small layers wait for the CPU.
  double op_issue_s = 8e-6;
  // Fixed time per iteration (data loading, logging, optimizer bookkeeping).
  double iteration_overhead_s = 5e-3;
  // Per model chunk, per micro-batch, per pass (forward or backward): scheduling a chunk and
  // launching its pipeline send/receive. Very fine interleaving (one layer per chunk) pays it often.
  double pipeline_chunk_overhead_s = 0;

  // --- FP8 (cost/fp8.h) ---------------------------------------------------------------------------
  // FP8 GEMMs reach this fraction of the GPU's GEMM efficiency against the FP8 peak (FP8 GEMMs run
  // closer to the memory and epilogue limits than BF16 ones: ~1.3-1.6x BF16 speed on H100, not 2x).
  double fp8_gemm_efficiency = 0.8;
  // Per-row / block-scaled FP8 GEMMs without native block-scaling tensor cores (Hopper: blockwise,
  // torchao rowwise) run at this fraction of the per-tensor-scaled rate. MXFP8 on Blackwell is native.
  double fp8_block_scaled_gemm_efficiency = 0.85;

  // FP8 fused attention (TrainingSpec::fp8_attention) over the BF16 fused attention, forward and
  // backward: between 1 (no gain) and 2 (the FP8 tensor-core ceiling); the softmax and the
  // rescaling do not speed up.
  double fp8_attention_speed = 1.3;

  // --- Mixture of experts (cost/moe.h) -------------------------------------------------------------
  // Tokens on the busiest expert-parallel rank / the mean, with auxiliary-loss balancing. It sets the
  // expert GEMM time, the all-to-all volume and the activation memory of that rank; aux-loss-free
  // balancing keeps half the excess, forced balancing none, a capacity factor caps it.
  double moe_load_imbalance = 1.2;
  // Fraction of one micro-batch's all-to-all that another micro-batch's compute can hide under
  // ep_overlap (Megatron-Core's 1F1B A2A overlap). Fitted only on rows that ran with the overlap.
  double ep_overlap = 0.5;

  // --- Communication ------------------------------------------------------------------------------
  double intra_node_bandwidth_efficiency = 0.80;  // achieved / datasheet NVLink bandwidth
  double inter_node_bandwidth_efficiency = 0.80;  // achieved / datasheet NIC bandwidth
  double tp_overlap = 0.6;   // fraction of TP communication hidden when tp_comm_overlap is on
  double dp_overlap = 0.9;   // fraction of the overlap window (backward/forward compute) usable by DP comm
  // Hidden communication is not free: NCCL kernels take SMs and HBM bandwidth from the compute they
  // overlap. Compute slows by this fraction of the communication time it hides.
  double overlap_interference = 0.1;
  // Per-step time variation of one GPU (coefficient of variation: clocks, kernels, network). Every
  // synchronising collective waits for the slowest of N GPUs: E[max of N normal] ~ sigma sqrt(2 ln N).
  double step_jitter_cv = 0;

  // --- Memory -----------------------------------------------------------------------------------
  double cuda_context_bytes = 1.0 * 1024 * 1024 * 1024;  // CUDA context, cuBLAS/cuDNN workspaces
  double comm_buffer_bytes = 0.5 * 1024 * 1024 * 1024;   // DP buckets, P2P and TP staging buffers
  // NCCL's buffers for each communicator a rank uses (tp, cp, dp, ep, expert-dp, pipeline peers, ...):
  // channels x (SIMPLE 4 MiB + LL128 ~4.6 MiB + LL 0.25 MiB) per peer connection: 16 channels
  // (NVLink rings on H100-class nodes) x ~9 MiB for the ring's receive connection = 144 MiB (NCCL
  // environment docs: NCCL_BUFFSIZE default 4 MiB; NCCL_MIN/MAX_NCHANNELS). Not fitted: the
  // published runs report no memory, so the data cannot pin it.
  double nccl_bytes_per_communicator = 144.0 * 1024 * 1024;
  double fragmentation = 0.10;  // allocator fragmentation as a fraction of activation memory

  [[nodiscard]] double gemm_efficiency_for(const std::string& gpu_name) const {
    const auto it = gemm_efficiency_by_gpu.find(gpu_name);
    return it != gemm_efficiency_by_gpu.end() ? it->second : gemm_efficiency_max;
  }
  [[nodiscard]] double attention_efficiency_for(const std::string& gpu_name) const {
    const auto it = attention_efficiency_by_gpu.find(gpu_name);
    return it != attention_efficiency_by_gpu.end() ? it->second : attention_efficiency;
  }
  [[nodiscard]] double flash_attention_2_speed_for(const std::string& gpu_name) const {
    const auto it = flash_attention_2_speed_by_gpu.find(gpu_name);
    return it != flash_attention_2_speed_by_gpu.end() ? it->second : 1.0;
  }
};

// The allowed range of a coefficient.
enum class CalibrationRange { kFraction /* (0, 1] */, kUnitInterval /* [0, 1] */, kNonNegative, kAtLeastOne };

// A scalar coefficient: its JSON key, where it lives, its range and its unit.
struct CalibrationField {
  const char* name;
  double Calibration::*member;
  CalibrationRange range;
  const char* unit;  // "", "s", "bytes", "tokens"
};
// Every scalar field of Calibration, in a fixed order.
const std::vector<CalibrationField>& calibration_fields();

// The per-GPU maps of Calibration: JSON key and member. A GPU without an entry takes the scalar
// the map overrides (gemm_efficiency_max, attention_efficiency), or 1 (flash_attention_2_speed).
struct CalibrationGpuMap {
  const char* name;
  std::map<std::string, double> Calibration::*member;
};
const std::vector<CalibrationGpuMap>& calibration_gpu_maps();

// The fitted default (identical to data/calibration.json).
const Calibration& default_calibration();

nlohmann::json to_json(const Calibration& calibration);
// Strict: unknown keys are rejected (naming `source` and suggesting the closest key); missing keys
// keep their default.
Calibration calibration_from_json(const nlohmann::json& doc, const std::string& source);
Calibration load_calibration(const std::string& path);
void validate(const Calibration& calibration);

}  // namespace paratune
