// The Maximal Update Parametrization (muP; Yang et al. 2021, "Tensor Programs V: Tuning Large
// Neural Networks via Zero-Shot Hyperparameter Transfer", Table 3 and the `mup` library's MuReadout,
// MuSGD and MuAdam): how each weight's initialization, learning rate and forward multiplier change
// with width, so that hyperparameters tuned on a narrow model transfer to a wide one (Hydro's
// surrogate models, ../shared/papers/hydro-surrogate-tuning-slides.txt, "Parametrize").
//
// Widths are measured against a base model: a dimension's multiplier is its size over the base's
// (1 for a dimension that does not grow with width, such as the input pixels or the classes). Each
// weight falls in one of four roles by which of its dimensions grow:
//
//   role    | grows      | init std (x the SP std) | SGD lr    | Adam lr | forward
//   --------|------------|-------------------------|-----------|---------|-------------------------
//   input   | fan-out    | 1                       | x m_out   | x 1     | x 1
//   hidden  | both       | 1 (SP's 1/sqrt(fan_in)) | x m_out/m_in | / m_in | x 1
//   output  | fan-in     | 0 (zero init)           | x m_in    | x 1     | x 1/m_in (MuReadout)
//   vector  | its length | 1                       | x m       | x 1     | x 1   (biases, norm gains)
//
// and attention scores are scaled by sqrt(d_head_base)/d_head instead of 1/sqrt(d_head) (1/d, equal
// to SP's scale at the base width). "SP std" is the standard parametrization's initialization the
// models already use (He/fan-in), which for a hidden weight already shrinks as 1/sqrt(fan_in).
//
// Where Hydro's slide differs, we follow mup (whose rules the Tensor Programs V paper derives and
// tests): Hydro writes the rules from the target to a surrogate S times narrower (so its S is 1/m);
// it scales the *input* layer's init variance by S where mup keeps it (the input layer's fan-in does
// not change with width, so neither does its SP variance), and the *hidden* layers' SGD rate by S
// where mup's MuSGD keeps it for square hidden weights (m_out/m_in = 1). Its output rules (zero init,
// input multiplied by S = 1/m, SGD rate divided by S) and its Adam hidden rule (rate x S = / m) are
// mup's.
#pragma once

#include <string>

#include "paratune/train/options.h"

namespace paratune::train {

enum class WeightRole { kInput, kHidden, kOutput, kVector };

struct MupScaling {
  double init_std = 1;           // multiplies the standard parametrization's initial std (0: zeros)
  double learning_rate = 1;      // multiplies the optimizer's learning rate for this weight
  double forward_multiplier = 1; // multiplies the layer's output (the output layer's input, equally)
};

// The muP scaling of a weight of `role` with fan-in and fan-out width multipliers (size / base size;
// 1 for a dimension that does not grow), for `optimizer` (SGD, or Adam and AdamW alike). Throws Error
// when a multiplier is not a finite number > 0.
MupScaling mup_scaling(WeightRole role, Optimizer optimizer, double fan_in_multiplier, double fan_out_multiplier);

// The attention scores' scale under muP: sqrt(base_head_dim) / head_dim.
double mup_attention_scale(int head_dim, int base_head_dim);

const char* to_string(WeightRole role);

}  // namespace paratune::train
