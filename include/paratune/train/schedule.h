// The learning rate of each optimizer step (paratune-train's --schedule and --warmup-steps).
#pragma once

#include <cstdint>

#include "paratune/train/options.h"

namespace paratune::train {

// Optimizer steps of a trial: --steps, or ceil(--epochs x steps per epoch).
std::int64_t total_steps(const TrainOptions& options, std::int64_t steps_per_epoch);

// The rate for 0-based `step` of `total` steps:
//   warm-up (step < w):  lr x (step + 1) / w                       (Goyal et al. 2017)
//   constant:            lr
//   step:                lr x gamma^floor((step - w) / step_size)  (PyTorch's StepLR after warm-up;
//                        with step_epochs, step_size = step_epochs x steps_per_epoch)
//   cosine:              lr x (r + (1 - r) x (1 + cos(pi x (step - w) / (total - w))) / 2)
//                        (Loshchilov & Hutter 2017, no restarts; r = min_lr_ratio)
// `steps_per_epoch` is needed (> 0) only with step_epochs.
double learning_rate(const TrainOptions& options, std::int64_t step, std::int64_t total, std::int64_t steps_per_epoch = 0);

}  // namespace paratune::train
