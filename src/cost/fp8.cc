#include "fp8.h"

#include <fmt/format.h>

#include "device.h"
#include "paratune/spec/error.h"

namespace paratune::cost_detail {

bool native_block_scaled_fp8(const GpuSpec& gpu) {
  // Blackwell (B200, GB200, B300, GB300) has block-scaled FP8 (MXFP8) tensor cores and FP8 GEMMs in
  // every layout; Hopper has neither (NVIDIA Blackwell architecture technical brief, 2024).
  return gpu_generation(gpu) == "blackwell";
}

Fp8Costs fp8_costs(const GpuSpec& gpu, const TrainingSpec& training, const Calibration& cal) {
  Fp8Costs out;
  out.param_gather_bytes = training.fp32_param_gather ? 4 : 2;
  if (training.precision != Precision::kFP8) {
    out.linear_peak_flops_per_s = gpu.peak_flops_per_s(training.precision);
    return out;
  }
  const bool blackwell = native_block_scaled_fp8(gpu);
  out.linear_in_fp8 = true;
  out.linear_peak_flops_per_s = gpu.peak_flops_per_s(Precision::kFP8);
  out.linear_efficiency_factor = cal.fp8_gemm_efficiency;
  // Transformer Engine keeps the quantized FP8 input for the weight-gradient GEMM (1 byte).
  // torchao's Float8Linear (float8_linear.py, matmul_with_hp_or_float8_args.forward:
  // ctx.save_for_backward(input_hp, weight_hp_t)) keeps the BF16 input and casts it again in the
  // backward: 2 bytes, as in BF16 training.
  out.saved_input_bytes = training.fp8_saves_bf16_inputs ? Fp8Costs::kSavedBf16 : 1;
  // Cast: read BF16 (2) + row-wise FP8 (1) + column-wise FP8 (1).
  out.cast_bytes_per_element = 4;
  out.casts_fused_into_norm_and_activation = !training.fp8_saves_bf16_inputs;
  // FP8 weight copies: row-wise, and the transposed copy on Hopper.
  double fp8_copies = blackwell ? 1 : 2;
  switch (training.fp8_recipe) {
    case Fp8Recipe::kDelayed:
      break;  // scale from the amax history: amax is taken in the cast kernel itself
    case Fp8Recipe::kTensorwise:
      out.cast_bytes_per_element += 2;  // an amax pass over the tensor before casting it
      break;
    case Fp8Recipe::kBlockwise:
      // Scales per row / 1x128 block computed in the cast pass; Hopper runs the block-scaled GEMM
      // in software (scale multiply in the epilogue / main loop): slower than per-tensor FP8.
      if (!blackwell) out.linear_efficiency_factor *= cal.fp8_block_scaled_gemm_efficiency;
      break;
    case Fp8Recipe::kMxfp8:
      if (!blackwell)
        throw Error(fmt::format("fp8_recipe: mxfp8 needs block-scaled FP8 tensor cores (Blackwell: b200, gb200); "
                                "GPU '{}' has none",
                                gpu.name));
      // Row- and column-scaled copies (blocks of 32 along different axes), one E8M0 scale per 32.
      fp8_copies = 2 + 1.0 / 16;
      break;
  }
  // torchao casts the weights inside each forward (the cast is part of the linear's autograd
  // function) and caches no FP8 copy across micro-batches.
  if (training.fp8_saves_bf16_inputs && !training.fp8_param_gather) fp8_copies = 0;
  if (training.fp8_param_gather) {
    out.weight_bytes = fp8_copies;  // the FP8 parameters are the weights: no BF16 copy
    out.param_gather_bytes = 1;
  } else {
    out.weight_bytes = 2 + fp8_copies;
  }
  return out;
}

}  // namespace paratune::cost_detail
