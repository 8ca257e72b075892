#include "paratune/train/mup.h"

#include <fmt/format.h>

#include <cmath>

#include "paratune/spec/error.h"

namespace paratune::train {

MupScaling mup_scaling(WeightRole role, Optimizer optimizer, double fan_in_multiplier, double fan_out_multiplier) {
  for (const double m : {fan_in_multiplier, fan_out_multiplier})
    if (!std::isfinite(m) || m <= 0)
      throw Error(fmt::format("muP: a width multiplier (width / base width) must be a finite number > 0, not {}", m));
  const bool sgd = optimizer == Optimizer::kSgd;
  MupScaling s;
  switch (role) {
    case WeightRole::kInput:  // fan-in fixed (pixels, bytes): SP's variance already right
      s.learning_rate = sgd ? fan_out_multiplier : 1;
      break;
    case WeightRole::kHidden:  // variance 1/fan_in; MuSGD: / (m_in / m_out); MuAdam: / m_in
      s.init_std = 1 / std::sqrt(fan_in_multiplier);
      s.learning_rate = sgd ? fan_out_multiplier / fan_in_multiplier : 1 / fan_in_multiplier;
      break;
    case WeightRole::kOutput:  // MuReadout: the base's std, input / m_in; vector-like in MuSGD
      s.forward_multiplier = 1 / fan_in_multiplier;
      s.learning_rate = sgd ? fan_in_multiplier : 1;
      break;
    case WeightRole::kVector:  // one growing dimension, its length's multiplier (fan_out here)
      s.learning_rate = sgd ? fan_out_multiplier : 1;
      break;
  }
  s.weight_decay = 1 / s.learning_rate;  // lr x wd unchanged (mup's decoupled_wd=False)
  return s;
}

double mup_attention_scale(int head_dim, int base_head_dim) {
  if (head_dim < 1 || base_head_dim < 1)
    throw Error(fmt::format("muP: head dimensions must be >= 1 (head {}, base {})", head_dim, base_head_dim));
  return std::sqrt(static_cast<double>(base_head_dim)) / head_dim;
}

const char* to_string(WeightRole role) {
  switch (role) {
    case WeightRole::kInput: return "input";
    case WeightRole::kHidden: return "hidden";
    case WeightRole::kOutput: return "output";
    case WeightRole::kVector: return "vector";
  }
  return "?";
}

}  // namespace paratune::train
