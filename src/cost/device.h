// What one GPU achieves under the calibration: the rates every per-layer cost is priced at.
// Internal to the cost module.
#pragma once

#include <algorithm>

#include "paratune/cost/hardware_profile.h"

namespace paratune::cost_detail {

class MeasuredRates;  // measured_rates.h
struct KernelLog;     // measured_rates.h

// Bytes of a BF16/FP16 activation element (FP8 recipes keep activations BF16 between GEMMs).
inline constexpr double kActivationBytes = 2;

struct Device {
  double linear_peak_flops_per_s;  // peak for the linear layers' GEMMs (FP8 peak under an FP8 recipe)
  double linear_efficiency_max;    // their large-GEMM efficiency (cost/fp8.h)
  double bf16_peak_flops_per_s;    // peak for the GEMMs that stay BF16/FP16: output layer, unfused attention
  double bf16_efficiency_max;
  double half_dim;                 // GEMM roll-off: f(d) = d / (d + half_dim)
  double attention_flops_per_s;    // flash attention on long key blocks (always BF16)
  double attention_half_kv_tokens;
  double hbm_bytes_per_s;
  GemmDtype linear_dtype = GemmDtype::kBF16;  // the linear layers' GEMMs (fp8 under an FP8 recipe)
  GemmDtype high_dtype = GemmDtype::kBF16;    // the GEMMs that stay BF16/FP16
  // A hardware profile's factors (measured_rates.h): nullptr prices every kernel by the fitted model.
  const MeasuredRates* measured = nullptr;
  // Records every GEMM and attention shape priced (for `paratune profile`'s plan); nullptr: none.
  KernelLog* log = nullptr;
};

// A GEMM's fitted time `model_s` as the profile prices it (measured_rates.cc), and logged.
double measured_gemm_s(const Device& d, GemmDtype dtype, double model_s, double m, double n, double k);

// GEMM of (m x k) · (k x n) at `peak` x eff_max: 2mnk FLOPs (Kaplan et al. 2020) at
// peak x eff_max x f(m)f(n)f(k), f(d) = d/(d + d_half), or at HBM speed for the 2(mk + kn + mn)
// bytes it touches, whichever is slower (roofline; Williams et al. 2009).
inline double gemm_at_s(double peak, double efficiency_max, double half_dim, double hbm_bytes_per_s, double m,
                        double n, double k) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  const double f = (m / (m + half_dim)) * (n / (n + half_dim)) * (k / (k + half_dim));
  const double compute = 2 * m * n * k / (peak * efficiency_max * f);
  const double memory = kActivationBytes * (m * k + k * n + m * n) / hbm_bytes_per_s;
  return std::max(compute, memory);
}

// A linear layer's GEMM (QKV, projection, MLP, experts, router): FP8 under an FP8 recipe.
inline double gemm_s(const Device& d, double m, double n, double k) {
  const double t = gemm_at_s(d.linear_peak_flops_per_s, d.linear_efficiency_max, d.half_dim, d.hbm_bytes_per_s, m, n, k);
  return (d.measured || d.log) ? measured_gemm_s(d, d.linear_dtype, t, m, n, k) : t;
}
// A GEMM that stays BF16 under every FP8 recipe (the output layer; Transformer Engine recipes keep
// it in higher precision).
inline double bf16_gemm_s(const Device& d, double m, double n, double k) {
  const double t = gemm_at_s(d.bf16_peak_flops_per_s, d.bf16_efficiency_max, d.half_dim, d.hbm_bytes_per_s, m, n, k);
  return (d.measured || d.log) ? measured_gemm_s(d, d.high_dtype, t, m, n, k) : t;
}

// Flash attention's rate for kernels whose key/value block holds `kv_tokens` tokens.
inline double attention_rate_flops_per_s(const Device& d, double kv_tokens) {
  if (d.attention_half_kv_tokens <= 0) return d.attention_flops_per_s;
  return d.attention_flops_per_s * kv_tokens / (kv_tokens + d.attention_half_kv_tokens);
}

// The fitted flash-attention forward time of one micro-batch's core attention: `tokens` query tokens
// against `seq_len` keys, `heads` heads of qk_dim / v_dim: 2·tokens·seq·(qk + v)·heads FLOPs, the
// masked half skipped when causal (Dao 2023, FlashAttention-2 Sec. 3.1.1), at the rate for key
// blocks of `kv_block_tokens` (context parallelism shortens them: cost/context_parallel.h).
inline double flash_attention_forward_s(const Device& d, double tokens, double seq_len, double qk_dim, double v_dim,
                                        double heads, bool causal, double kv_block_tokens) {
  const double flops = 2 * tokens * seq_len * (qk_dim + v_dim) * heads * (causal ? 0.5 : 1.0);
  return flops / attention_rate_flops_per_s(d, kv_block_tokens);
}
// Flash backward runs 5 matmuls against the forward's 2 (it recomputes the scores): 2.5x.
inline constexpr double kFlashBackwardOverForward = 2.5;

}  // namespace paratune::cost_detail
