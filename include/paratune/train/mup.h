// The Maximal Update Parametrization (muP; Yang et al. 2021, "Tensor Programs V: Tuning Large
// Neural Networks via Zero-Shot Hyperparameter Transfer", Table 3 and the `mup` library's MuReadout,
// MuSGD and MuAdam): how each weight's initialization, learning rate, weight decay and forward
// multiplier change with width, so that hyperparameters tuned on a narrow model transfer to a wide
// one (Hydro's surrogate models, data/papers/README.md#hydro-surrogate-tuning-slides, "Parametrize").
//
// Widths are measured against a base model: a dimension's multiplier m is its size over the base's
// (1 for a dimension that does not grow with width: input pixels, bytes, classes). paratune-train's
// base is the model its options describe; --surrogate-ratio S trains it with every width / S, so
// m = 1/S. Each weight falls in one of four roles by which of its dimensions grow:
//
//   role    | grows    | init std                | SGD lr       | Adam lr | weight decay | forward
//   --------|----------|-------------------------|--------------|---------|--------------|----------
//   input   | fan-out  | x 1                     | x m_out      | x 1     | / (lr factor)| x 1
//   hidden  | both     | x 1/sqrt(m_in)          | x m_out/m_in | / m_in  | / (lr factor)| x 1
//   output  | fan-in   | x 1 (stored weight)     | x m_in       | x 1     | / (lr factor)| x 1/m_in
//   vector  | length   | x 1 (biases 0, gains 1) | x m          | x 1     | / (lr factor)| x 1
//
// "init std" multiplies the std the model's own initialization gives the weight at the *base*
// width. For fan-in initializations (He: sqrt(2/fan_in)) the hidden rule is the standard
// parametrization's (SP) std at this width; for constant ones (GPT-2's 0.02) it is not. The output
// layer keeps the base's std and divides its input by m_in (MuReadout with mup's default
// readout_zero_init=False, whose _rescale_parameters multiplies SP's std by sqrt(m_in)): effective
// variance ~ 1/fan_in^2. Weight decay is divided by the rate's factor so that lr x wd, the decay
// per step of SGD and AdamW, stays the same (mup's default decoupled_wd=False). Attention scores
// are scaled by sqrt(d_head_base)/d_head instead of 1/sqrt(d_head): 1/d, equal to SP at the base.
//
// At the base width (m = 1) every factor is 1: muP *is* SP there, so the hyperparameters tuned on
// a surrogate under muP apply unchanged to the target trained as the standard model.
//
// Where Hydro's slide differs, we follow mup (whose rules the Tensor Programs V paper derives and
// tests). Hydro writes the rules from the target to a surrogate S = 1/m times narrower. It
//   - zero-initializes the output layer (mup's readout_zero_init=True option; we keep mup's default,
//     so that muP at the base width is exactly the standard model the user would train),
//   - multiplies the *input* layer's init variance by S (mup keeps it: the input layer's fan-in
//     does not change with width, so neither does its variance) and
//   - multiplies the *hidden* layers' SGD rate by S (mup's MuSGD keeps it for square hidden
//     weights, m_out/m_in = 1).
// Its other rules are mup's: the hidden init variance x S (1/fan_in), the output layer's input x S
// and SGD rate / S, the input layer's SGD rate / S, the hidden Adam rate x S.
#pragma once

#include <string>

#include "paratune/train/options.h"

namespace paratune::train {

enum class WeightRole { kInput, kHidden, kOutput, kVector };

struct MupScaling {
  double init_std = 1;            // multiplies the std of the model's initialization at the base width
  double learning_rate = 1;       // multiplies the optimizer's learning rate for this weight
  double weight_decay = 1;        // multiplies its weight decay (1 / learning_rate)
  double forward_multiplier = 1;  // multiplies the layer's input (the output layer's; 1 elsewhere)
};

// The muP scaling of a weight of `role` with fan-in and fan-out width multipliers (size / base size;
// 1 for a dimension that does not grow), for `optimizer` (SGD, or Adam and AdamW alike). A vector's
// multiplier is its fan_out_multiplier. Throws Error when a multiplier is not a finite number > 0.
MupScaling mup_scaling(WeightRole role, Optimizer optimizer, double fan_in_multiplier, double fan_out_multiplier);

// The attention scores' scale under muP: sqrt(base_head_dim) / head_dim.
double mup_attention_scale(int head_dim, int base_head_dim);

const char* to_string(WeightRole role);

}  // namespace paratune::train
