#include "fused_optimizer.h"

#include <cmath>

namespace paratune::train {

FusedOptimizer::FusedOptimizer(std::vector<torch::Tensor> parameters, std::vector<RateScaling> scaling,
                               const std::vector<TrainOptions>& members)
    : parameters_(std::move(parameters)), scaling_(std::move(scaling)), optimizer_(members.front().optimizer) {
  for (const TrainOptions& o : members) {
    momentum_.push_back(o.momentum);
    beta1_.push_back(o.beta1);
    beta2_.push_back(o.beta2);
    eps_.push_back(o.eps);
    weight_decay_.push_back(o.weight_decay);
    clip_norm_.push_back(o.clip_norm);
  }
  first_moment_.resize(parameters_.size());
  second_moment_.resize(parameters_.size());
}

torch::Tensor FusedOptimizer::per_member(const std::vector<double>& values, const torch::Tensor& like) const {
  std::vector<std::int64_t> shape(static_cast<std::size_t>(like.dim()), 1);
  shape.front() = static_cast<std::int64_t>(values.size());
  std::vector<float> as_float(values.begin(), values.end());  // as libtorch casts a double scalar for a float op
  return torch::tensor(as_float, torch::kFloat32).view(shape);
}

void FusedOptimizer::zero_grad() {
  for (auto& p : parameters_) p.mutable_grad() = torch::Tensor();
}

void FusedOptimizer::clip_gradients() {
  torch::NoGradGuard no_grad;
  const std::size_t members = clip_norm_.size();
  // Member b's squares summed over every parameter's slice, in float64 (as the trainer does).
  torch::Tensor squares = torch::zeros({static_cast<std::int64_t>(members)}, torch::kFloat64);
  for (const auto& p : parameters_)
    if (p.grad().defined()) squares += p.grad().to(torch::kFloat64).pow(2).reshape({p.size(0), -1}).sum(1);
  std::vector<double> coefficients(members, 1.0);
  bool any = false;
  for (std::size_t b = 0; b < members; ++b) {
    if (clip_norm_[b] <= 0) continue;
    const double coefficient = clip_norm_[b] / (std::sqrt(squares[static_cast<std::int64_t>(b)].item<double>()) + 1e-6);
    if (coefficient < 1) coefficients[b] = coefficient, any = true;
  }
  if (!any) return;
  for (auto& p : parameters_)
    if (p.grad().defined()) p.mutable_grad().mul_(per_member(coefficients, p));
}

void FusedOptimizer::step(const std::vector<double>& learning_rates) {
  torch::NoGradGuard no_grad;
  ++steps_;
  const std::size_t members = learning_rates.size();
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    torch::Tensor& p = parameters_[i];
    if (!p.grad().defined()) continue;
    const torch::Tensor grad = p.grad();
    // The member's rate and decay with muP's factors for this weight (make_optimizer's groups).
    std::vector<double> lr(members), wd(members);
    for (std::size_t b = 0; b < members; ++b) {
      lr[b] = learning_rates[b] * scaling_[i].learning_rate;
      wd[b] = weight_decay_[b] * scaling_[i].weight_decay;
    }
    switch (optimizer_) {
      case Optimizer::kSgd: {
        // libtorch SGD: d_p = g + wd p; buf = d_p (first step), else momentum buf + d_p; p -= lr buf.
        torch::Tensor d_p = grad.add(p.mul(per_member(wd, p)));
        torch::Tensor& buf = first_moment_[i];
        if (!buf.defined()) buf = d_p.clone();
        else buf.mul_(per_member(momentum_, p)).add_(d_p);
        std::vector<double> minus_lr(members);
        for (std::size_t b = 0; b < members; ++b) minus_lr[b] = -lr[b];
        p.addcmul_(buf, per_member(minus_lr, p));
        break;
      }
      case Optimizer::kAdam:
      case Optimizer::kAdamW: {
        // libtorch Adam: g += wd p; AdamW: p *= 1 - lr wd. Then
        //   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
        //   p -= lr / (1 - b1^t) x m / (sqrt(v) / sqrt(1 - b2^t) + eps)
        torch::Tensor g = grad;
        if (optimizer_ == Optimizer::kAdam) {
          g = grad.add(p.mul(per_member(wd, p)));
        } else {
          std::vector<double> keep(members);
          for (std::size_t b = 0; b < members; ++b) keep[b] = 1 - lr[b] * wd[b];
          p.mul_(per_member(keep, p));
        }
        if (!first_moment_[i].defined()) {
          first_moment_[i] = torch::zeros_like(p);
          second_moment_[i] = torch::zeros_like(p);
        }
        std::vector<double> one_minus_b1(members), one_minus_b2(members), sqrt_correction2(members), minus_step(members);
        for (std::size_t b = 0; b < members; ++b) {
          const double t = static_cast<double>(steps_);
          one_minus_b1[b] = 1 - beta1_[b];
          one_minus_b2[b] = 1 - beta2_[b];
          sqrt_correction2[b] = std::sqrt(1 - std::pow(beta2_[b], t));
          minus_step[b] = -(lr[b] / (1 - std::pow(beta1_[b], t)));
        }
        first_moment_[i].mul_(per_member(beta1_, p)).addcmul_(g, per_member(one_minus_b1, p));
        second_moment_[i].mul_(per_member(beta2_, p)).addcmul_(g.mul(per_member(one_minus_b2, p)), g);
        const torch::Tensor denominator =
            second_moment_[i].sqrt().div_(per_member(sqrt_correction2, p)).add_(per_member(eps_, p));
        p.addcdiv_(first_moment_[i].mul(per_member(minus_step, p)), denominator);
        break;
      }
    }
  }
}

}  // namespace paratune::train
