#include "paratune/train/schedule.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numbers>

namespace paratune::train {

std::int64_t total_steps(const TrainOptions& o, std::int64_t steps_per_epoch) {
  if (o.steps > 0) return o.steps;
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(o.epochs * static_cast<double>(steps_per_epoch))));
}

double learning_rate(const TrainOptions& o, std::int64_t step, std::int64_t total, std::int64_t steps_per_epoch) {
  const std::int64_t warmup = o.warmup_steps;
  if (step < warmup) return o.lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  const auto after = static_cast<double>(step - warmup);
  switch (o.schedule) {
    case Schedule::kConstant:
      return o.lr;
    case Schedule::kStep:
    {
      assert(o.step_epochs == 0 || steps_per_epoch > 0);
      const double interval = o.step_epochs > 0 ? o.step_epochs * static_cast<double>(steps_per_epoch) : o.step_size;
      return o.lr * std::pow(o.gamma, std::floor(after / interval));
    }
    case Schedule::kCosine: {
      const double span = static_cast<double>(std::max<std::int64_t>(1, total - warmup));
      const double progress = std::min(1.0, after / span);
      return o.lr * (o.min_lr_ratio + (1 - o.min_lr_ratio) * 0.5 * (1 + std::cos(std::numbers::pi * progress)));
    }
  }
  return o.lr;
}

}  // namespace paratune::train
