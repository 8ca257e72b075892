// The optimizer of a fused model (fused_models.h): libtorch's SGD, Adam or AdamW step applied to
// every member's slice of each fused weight with that member's own learning rate, momentum, betas,
// eps and weight decay (HFTA's fused optimizers), as per-member tensors broadcast along the leading
// member dimension. Each operation is the one libtorch 1.13's optimizer performs, in its order, so
// a member follows the curve it would follow alone (tested: fused_train_test.cc).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "models.h"
#include "paratune/train/options.h"

namespace paratune::train {

class FusedOptimizer {
 public:
  // `members`: each member's options (the optimizer is the same for all: fusion_key). `scaling`:
  // each parameter's muP factors, multiplying every member's rate and weight decay.
  FusedOptimizer(std::vector<torch::Tensor> parameters, std::vector<RateScaling> scaling,
                 const std::vector<TrainOptions>& members);

  // One step; `learning_rates[b]` is member b's scheduled rate this step.
  void step(const std::vector<double>& learning_rates);

  // torch.nn.utils.clip_grad_norm_ per member: each member whose clip_norm is > 0 has its
  // gradients' global norm (every parameter's slice) clipped to it.
  void clip_gradients();

  void zero_grad();

 private:
  // A per-member value as a float tensor shaped to broadcast over a parameter [B, ...].
  torch::Tensor per_member(const std::vector<double>& values, const torch::Tensor& like) const;

  std::vector<torch::Tensor> parameters_;
  std::vector<RateScaling> scaling_;
  Optimizer optimizer_;
  std::vector<double> momentum_, beta1_, beta2_, eps_, weight_decay_, clip_norm_;
  std::vector<torch::Tensor> first_moment_, second_moment_;  // SGD's momentum buffer; Adam's exp_avg, exp_avg_sq
  std::int64_t steps_ = 0;
};

}  // namespace paratune::train
