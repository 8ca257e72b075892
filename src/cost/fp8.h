// FP8 training: which operations run in FP8 under each recipe, and what FP8 costs besides the
// GEMMs (casts, scaling, extra weight copies). Internal to the cost module.
//
// Transformer Engine's recipes (and torchao's float8 training) put the *linear layers* in FP8:
// QKV, attention output projection, MLP / expert GEMMs, forward (E4M3) and both backward GEMMs
// (E5M2 gradients with the hybrid format). Core attention (dot-product attention) stays BF16
// unless FP8 DPA is switched on (TrainingSpec::fp8_attention: Megatron-Bridge's MXFP8 MoE recipes
// do); so do norms, softmax, the router and the output layer (Megatron-LM keeps the output layer
// in BF16; torchao's converters skip it). Sources: Transformer Engine docs, "Using FP8 with Transformer Engine"; Megatron-LM
// R20 (data/frameworks/megatron-lm-rules.md); torchao float8 README.
#pragma once

#include "paratune/cost/calibration.h"
#include "paratune/spec/hardware.h"
#include "paratune/spec/training.h"

namespace paratune::cost_detail {

struct Fp8Costs {
  bool linear_in_fp8 = false;
  double linear_peak_flops_per_s = 0;  // the linear layers' GEMM peak (FP8 or BF16/FP16)
  double linear_efficiency_factor = 1;  // x the GPU's GEMM efficiency (Calibration::fp8_*)
  // HBM bytes moved per element of a linear layer's GEMM input (activation forward, output
  // gradient backward) to quantize it: read BF16 (2) + write the row-wise FP8 copy (1) + the
  // column-wise/transposed copy the other GEMM needs (1); per-tensor current scaling first reads
  // the tensor once more for its amax (+2). 0 without FP8.
  double cast_bytes_per_element = 0;
  // Transformer Engine writes the FP8 copies of a dense layer's norm-fed and activation-fed GEMM
  // inputs from the norm and activation kernels themselves (LayerNormLinear for QKV, LayerNormMLP
  // for FC1 and, with its activation, FC2), and FC1's output gradient from the activation's
  // backward (dact + cast-transpose): those casts cost no pass of their own. The attention
  // output, the output gradients that arrive from the residual stream or attention, and experts'
  // inputs (permuted tokens; grouped GEMMs have no fused norm) are cast in their own pass.
  // torchao's Float8Linear casts inside the linear layer: no fusion.
  bool casts_fused_into_norm_and_activation = false;
  // Bytes per element of a linear layer's input kept for the backward: FP8 recipes keep the
  // quantized copy the weight-gradient GEMM needs (1 byte), BF16 keeps 2.
  double saved_input_bytes = kSavedBf16;
  // Bytes per parameter held as weights: BF16 (2); with FP8, plus the FP8 copies cached across
  // micro-batches (row-wise, and the transpose on Hopper whose FP8 tensor cores take only the TN
  // layout); with fp8_param_gather the FP8 copies replace the BF16 weights.
  double weight_bytes = 2;
  // Bytes per parameter moved by the sharded optimizer's / FSDP's parameter all-gather.
  double param_gather_bytes = 2;

  static constexpr double kSavedBf16 = 2;
};

// Whether the GPU's tensor cores scale FP8 blocks natively (Blackwell: MXFP8), by preset name.
bool native_block_scaled_fp8(const GpuSpec& gpu);

Fp8Costs fp8_costs(const GpuSpec& gpu, const TrainingSpec& training, const Calibration& calibration);

}  // namespace paratune::cost_detail
