// The fitted coefficients' physical ranges and priors (paratune/calib/coefficients.h).
//
// Each range is what the hardware and published kernel measurements allow; each prior is the
// typical value of those measurements. The fit may move a coefficient anywhere in its range, at a
// price of kPriorWeight per prior standard deviation squared.
#include "paratune/calib/coefficients.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace paratune {

const std::vector<FittedCoefficient>& fitted_coefficients() {
  using C = Calibration;
  // GEMM efficiency is the achieved fraction of the dense tensor-core peak on large GEMMs, before
  // the shape factor f(m)f(n)f(k) (~0.93 at 4096-wide dimensions) lowers it for smaller ones.
  const char* gemm_why =
      "cuBLAS on large BF16/FP16 GEMMs reaches 70-90% of the dense tensor-core peak (V100 ~85-90%, A100 ~85-90%, "
      "H100 SXM ~70-80%: NVIDIA cuBLAS and Transformer Engine benchmarks); below 40% or above 95% no vendor library "
      "has been measured";
  const char* blackwell_gemm_why =
      "Blackwell BF16 GEMMs in 2025 software reach 55-80% of the 2.25-2.5 PFLOP/s dense peak (NVIDIA cuBLAS 12.8 "
      "release figures); early stacks run lower";
  const char* attention_why =
      "fused attention forward reaches 50-73% of the peak on A100 (FlashAttention-2, Dao 2023, Fig. 4) and "
      "35-75% on H100 (FlashAttention-2 to FlashAttention-3, Shah et al. 2024, Fig. 5)";
  auto range = [](const char* name, double lower, double upper, double prior, double prior_sd, const char* why) {
    FittedCoefficient k;
    k.name = name;
    k.lower = lower;
    k.upper = upper;
    k.prior = prior;
    k.prior_sd = prior_sd;
    k.why = why;
    return k;
  };
  // A scalar of Calibration; a GPU class (entries of a per-GPU map); a scalar fitted on its log.
  auto scalar = [&](const char* name, double lower, double upper, double prior, double prior_sd, const char* why,
                   double C::*field, double least_memory_value = std::numeric_limits<double>::quiet_NaN()) {
    FittedCoefficient k = range(name, lower, upper, prior, prior_sd, why);
    k.field = field;
    k.least_memory_value = least_memory_value;
    return k;
  };
  auto gpu_class = [&](const char* name, double lower, double upper, double prior, double prior_sd, const char* why,
                      std::vector<std::string> gpus,
                      std::map<std::string, double> C::*by_gpu = &C::gemm_efficiency_by_gpu) {
    FittedCoefficient k = range(name, lower, upper, prior, prior_sd, why);
    k.gpus = std::move(gpus);
    k.by_gpu = by_gpu;
    return k;
  };
  auto log_scalar = [&](const char* name, double lower, double upper, double typical, const char* why,
                        double C::*field) {
    FittedCoefficient k = scalar(name, lower, upper, std::log(typical), 1.0, why, field);  // sd: a factor e
    k.log_scale = true;
    return k;
  };
  static const std::vector<FittedCoefficient> coefficients{
      gpu_class("gemm_efficiency[v100]", 0.4, 0.95, 0.85, 0.1, gemm_why, {"v100-32gb"}),
      gpu_class("gemm_efficiency[a100]", 0.4, 0.95, 0.85, 0.1, gemm_why, {"a100-40gb", "a100-80gb"}),
      gpu_class("gemm_efficiency[hopper]", 0.4, 0.95, 0.75, 0.1, gemm_why, {"h100-sxm", "h800", "h200"}),
      // B200 (1000 W) and GB200 (1200 W, Grace host) sustain different shares of their peaks, and so
      // does GB300 (up to 1,400 W) with the GB200's dense peaks (dgxc-benchmarking README @841f5466):
      // its rows run 10-25% faster than GB200's class predicts (S32). B300 has no row: it takes the
      // B200's class, the x86 DGX it refreshes with the same dense peaks.
      gpu_class("gemm_efficiency[b200]", 0.4, 0.95, 0.65, 0.12, blackwell_gemm_why, {"b200", "b300"}),
      gpu_class("gemm_efficiency[gb200]", 0.4, 0.95, 0.65, 0.12, blackwell_gemm_why, {"gb200"}),
      gpu_class("gemm_efficiency[gb300]", 0.4, 0.95, 0.65, 0.12, blackwell_gemm_why, {"gb300"}),
      scalar("gemm_half_efficiency_dim", 16, 512, 96, 64,
       "the dimension at which a GEMM runs at half its large-shape rate: tile sizes of 64-256 (CUTLASS/cuBLAS "
       "kernels) put it between one small tile and a few large ones",
       &C::gemm_half_efficiency_dim),
      scalar("attention_efficiency", 0.2, 0.8, 0.55, 0.12, attention_why, &C::attention_efficiency),
      // Attention kernels per architecture (Calibration::attention_efficiency_by_gpu): A100 and
      // older use attention_efficiency.
      gpu_class("attention_efficiency[hopper]", 0.2, 0.8, 0.45, 0.12, attention_why, {"h100-sxm", "h800", "h200"}, &C::attention_efficiency_by_gpu),
      gpu_class("attention_efficiency[blackwell]", 0.2, 0.8, 0.45, 0.12, attention_why, {"b200", "gb200", "b300", "gb300"}, &C::attention_efficiency_by_gpu),
      gpu_class("flash_attention_2_speed[hopper]", 0.5, 0.9, 0.7, 0.08,
       "FlashAttention-2 against the fused attention Transformer Engine selects on Hopper (cuDNN): TE's attention "
       "docs measure cuDNN 1.35x, 1.38x and 1.59x faster than flash-attn 2 on an H100 (512-8K tokens, head size "
       "64-128) and state 20-50%; FlashAttention-3 is 1.5-2.0x FA2 (Shah et al. 2024)",
       {"h100-sxm", "h800", "h200"}, &C::flash_attention_2_speed_by_gpu),
      scalar("attention_half_kv_tokens", 0, 4096, 1024, 1024,
       "flash attention's rate falls for key blocks shorter than a few of its 64-128-token tiles per query block "
       "(FlashAttention-2 Fig. 4: rate rises from 512 to 4K-16K sequence length)",
       &C::attention_half_kv_tokens),
      scalar("power_clock_exponent", 0, 1, 1.0 / 3, 0.15,
       "compute clocks under a power limit, f ~ (limit / board power)^x: dynamic power ~ f V^2 with V rising with "
       "f gives x = 1/3 where the limit binds throughout; 0 = the limit never binds, 1 = clocks fall as fast as "
       "power; fitted only on rows that state a limit",
       &C::power_clock_exponent),
      scalar("hbm_efficiency", 0.5, 0.95, 0.8, 0.1,
       "element-wise kernels stream at 60-90% of HBM bandwidth (STREAM-like copies reach ~90% on A100/H100; "
       "framework norm and activation kernels less)",
       &C::hbm_efficiency),
      scalar("inter_node_bandwidth_efficiency", 0.5, 0.95, 0.85, 0.08,
       "NCCL bus bandwidth over InfiniBand/RoCE reaches 80-95% of the NIC line rate (nccl-tests all_reduce_perf "
       "on 400 Gb/s NDR: ~45-48 of 50 GB/s per GPU)",
       &C::inter_node_bandwidth_efficiency),
      scalar("intra_node_bandwidth_efficiency", 0.3, 0.95, 0.75, 0.12,
       "NCCL bus bandwidth inside an NVLink/NVSwitch node reaches 65-90% of the per-direction datasheet figure "
       "(nccl-tests all_reduce_perf on DGX A100 ~230 of 300 GB/s, DGX H100 ~360-480 of 450 GB/s with NVLS)",
       &C::intra_node_bandwidth_efficiency),
      log_scalar("op_issue_s", 2e-6, 5e-5, 8e-6,
       "host time per operator in eager PyTorch: the CUDA launch alone is 2-5 us, the dispatcher and autograd "
       "add a few more; 5-20 us per op in profiler traces (He 2022, 'Making Deep Learning Go Brrrr')",
       &C::op_issue_s),
      scalar("ep_overlap", 0, 0.9, 0.5, 0.25,
       "the share of a micro-batch's forward+backward compute under which Megatron-Core's 1F1B expert all-to-all "
       "overlap can run another micro-batch's dispatch and combine: below 1 (the overlap needs the SMs it "
       "shares); fitted only on rows that state it (S30's off/on pair: 36.55% of communication hidden in its "
       "Nsight profile)",
       &C::ep_overlap),
      scalar("dp_overlap", 0, 0.95, 0.8, 0.15,
       "the share of the backward that gradient reduce-scatter/all-reduce buckets can run under: the first bucket "
       "waits for the last layers' gradients and the last one runs after the backward (Megatron-LM / PyTorch DDP "
       "bucketing), so it is below 1",
       &C::dp_overlap),
      scalar("fp8_gemm_efficiency", 0.55, 1.0, 0.85, 0.08,
       "FP8 GEMMs against twice the BF16 peak (their casts are priced apart): torch._scaled_mm (per-tensor e4m3, "
       "BF16 out) ran 1.74-1.93x cuBLAS BF16 on Llama 3 8B's 8K-16K-token GEMMs on one H200 (0.87-0.97 of 2x; "
       "data/profiles/h200-llama3-8b-fp8-2026-11-28.json); Transformer Engine and torchao report 1.1-1.7x on "
       "training shapes with their casts; 2x is the tensor-core ceiling",
       &C::fp8_gemm_efficiency),
      scalar("fp8_block_scaled_gemm_efficiency", 0.6, 1.0, 0.85, 0.1,
       "per-block / per-row scaled FP8 without native block-scaling tensor cores (Hopper) against per-tensor "
       "scaling: DeepGEMM reaches 1,350-1,550 TFLOP/s on H800 against cuBLAS per-tensor ~1,500 (DeepSeek-AI 2025)",
       &C::fp8_block_scaled_gemm_efficiency),
      scalar("fp8_attention_speed", 1.0, 2.0, 1.3, 0.2,
       "FP8 fused attention (cuDNN, Transformer Engine's fp8_dot_product_attention) over BF16: its two matmuls "
       "can run at up to twice the rate, the softmax and rescaling not at all; FlashAttention-3 reaches "
       "close to 1.2 PFLOP/s in FP8 against 740 TFLOP/s in BF16 on an H100 (Shah et al. 2024, abstract), 1.6x at "
       "best; "
       "fitted only on rows that state FP8 attention",
       &C::fp8_attention_speed),
      scalar("moe_load_imbalance", 1.0, 2.0, 1.2, 0.2,
       "tokens on the busiest expert over the mean with auxiliary-loss balancing: 1.1-1.5 in published router "
       "statistics (Switch Transformer, Fedus et al. 2021; DeepSeek-V3 report); 1 is perfect balance",
       &C::moe_load_imbalance, /*least_memory_value=*/1.0),
      scalar("overlap_interference", 0, 0.5, 0.1, 0.1,
       "compute slowed by the communication it hides: NCCL kernels take 8-32 SMs of 108-132 and HBM bandwidth "
       "(Megatron-LM's tp_comm_overlap SM settings), 5-25% of the hidden time",
       &C::overlap_interference),
      // Scale effects the weak-scaling pairs (the same step from 8 to 2,048 GPUs) can pin down.
      scalar("step_jitter_cv", 0, 0.05, 0.01, 0.01,
       "per-step time variation of one GPU (clocks, kernel timing, network): ~0.5-2% in large-run step-time "
       "traces (Llama 3 report, Sec. 3.3.4)",
       &C::step_jitter_cv),
      log_scalar("pipeline_chunk_overhead_s", 5e-6, 1e-3, 50e-6,
       "per model chunk, micro-batch and pass: a pipeline send/receive launch and the schedule's bookkeeping, "
       "tens of microseconds (NCCL point-to-point latency ~5-20 us plus Python scheduling)",
       &C::pipeline_chunk_overhead_s),
  };
  return coefficients;
}

double coefficient_variable(const FittedCoefficient& coefficient, double value) {
  return coefficient.log_scale ? std::log(value) : value;
}
double coefficient_from_variable(const FittedCoefficient& coefficient, double variable) {
  return coefficient.log_scale ? std::exp(variable) : variable;
}

double prior_penalty(const std::vector<FittedCoefficient>& coefficients, const std::vector<double>& x) {
  double sum = 0;
  for (std::size_t i = 0; i < coefficients.size(); ++i) {
    const double z = (x[i] - coefficients[i].prior) / coefficients[i].prior_sd;
    sum += z * z;
  }
  return kPriorWeight * sum;
}

Calibration with_coefficients(const Calibration& base, const std::vector<FittedCoefficient>& coefficients,
                              const std::vector<double>& x) {
  Calibration c = base;
  for (std::size_t i = 0; i < coefficients.size(); ++i) {
    const double value = coefficient_from_variable(coefficients[i], x[i]);
    if (coefficients[i].field) c.*(coefficients[i].field) = value;
    for (const auto& gpu : coefficients[i].gpus) (c.*(coefficients[i].by_gpu))[gpu] = value;
  }
  return c;
}

double coefficient_value(const Calibration& calibration, const FittedCoefficient& coefficient) {
  if (coefficient.field) return calibration.*(coefficient.field);
  const auto& by_gpu = calibration.*(coefficient.by_gpu);
  const auto it = by_gpu.find(coefficient.gpus.front());
  if (it != by_gpu.end()) return it->second;
  if (coefficient.by_gpu == &Calibration::gemm_efficiency_by_gpu) return calibration.gemm_efficiency_max;
  if (coefficient.by_gpu == &Calibration::flash_attention_2_speed_by_gpu) return 1.0;
  return calibration.attention_efficiency;
}

std::vector<CoefficientAtBound> coefficients_at_bounds(const Calibration& calibration) {
  std::vector<CoefficientAtBound> hits;
  for (const FittedCoefficient& k : fitted_coefficients()) {
    const double value = coefficient_value(calibration, k);
    // Judged on the coefficient's own scale: 1% of log(upper/lower) for overheads spanning decades.
    auto scaled = [&](double v) { return k.log_scale ? std::log(v) : v; };
    const double tolerance = 0.01 * (scaled(k.upper) - scaled(k.lower));
    const double v = scaled(std::max(value, k.log_scale ? 1e-300 : value));
    if (v <= scaled(k.lower) + tolerance) hits.push_back({k.name, value, k.lower, false, k.why});
    else if (v >= scaled(k.upper) - tolerance) hits.push_back({k.name, value, k.upper, true, k.why});
  }
  return hits;
}

std::string describe(const CoefficientAtBound& hit) {
  return fmt::format("{} = {:.4g} sits at the {} bound {:.4g} of its physical range ({})", hit.name, hit.value,
                     hit.upper ? "upper" : "lower", hit.bound, hit.why);
}

CoefficientVariables coefficient_variables(const Calibration& start,
                                           const std::vector<FittedCoefficient>& coefficients) {
  CoefficientVariables v;
  for (const FittedCoefficient& c : coefficients) {
    v.start.push_back(coefficient_variable(c, std::clamp(coefficient_value(start, c), c.lower, c.upper)));
    v.lower.push_back(coefficient_variable(c, c.lower));
    v.upper.push_back(coefficient_variable(c, c.upper));
  }
  return v;
}

}  // namespace paratune
