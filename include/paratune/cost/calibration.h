// Calibration: the few coefficients the analytic model cannot know from datasheets.
//
// Everything else in the cost model is derived from the specs. The defaults below are the values
// fitted by `paratune calibrate` on ../shared/calibration/published_runs.csv (see README,
// "Calibration"); `data/calibration.json` holds the same values as a file.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>

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
  // Fused (flash) attention achieved fraction of peak, forward; backward runs at the same rate.
  double attention_efficiency = 0.55;
  // Memory-bound kernels (norms, activations, residuals, optimizer): fraction of HBM bandwidth.
  double hbm_efficiency = 0.75;
  // Fixed time per layer per micro-batch (kernel launches, framework overhead), forward; the
  // backward pays twice that.
  double layer_overhead_s = 20e-6;
  // Fixed time per iteration (data loading, logging, optimizer bookkeeping).
  double iteration_overhead_s = 5e-3;

  // --- Communication ------------------------------------------------------------------------------
  double intra_node_bandwidth_efficiency = 0.80;  // achieved / datasheet NVLink bandwidth
  double inter_node_bandwidth_efficiency = 0.80;  // achieved / datasheet NIC bandwidth
  double tp_overlap = 0.6;   // fraction of TP communication hidden when tp_comm_overlap is on
  double dp_overlap = 0.9;   // fraction of the overlap window (backward/forward compute) usable by DP comm

  // --- Memory -----------------------------------------------------------------------------------
  double cuda_context_bytes = 1.0 * 1024 * 1024 * 1024;  // CUDA context, cuBLAS/NCCL workspaces
  double comm_buffer_bytes = 0.5 * 1024 * 1024 * 1024;   // DP buckets, P2P and TP buffers
  double fragmentation = 0.10;  // allocator fragmentation as a fraction of activation memory

  [[nodiscard]] double gemm_efficiency_for(const std::string& gpu_name) const {
    const auto it = gemm_efficiency_by_gpu.find(gpu_name);
    return it != gemm_efficiency_by_gpu.end() ? it->second : gemm_efficiency_max;
  }
};

// The fitted default (identical to data/calibration.json).
const Calibration& default_calibration();

nlohmann::json to_json(const Calibration& calibration);
// Strict: unknown keys are rejected (naming `source` and suggesting the closest key); missing keys
// keep their default.
Calibration calibration_from_json(const nlohmann::json& doc, const std::string& source);
Calibration load_calibration(const std::string& path);
void validate(const Calibration& calibration);

}  // namespace paratune
