// Inter-trial fusion (HFTA: Wang et al., MLSys 2021, "Horizontally Fused Training Array"; Hydro's
// "Model Fusion", data/papers/README.md#hydro-surrogate-tuning-slides): B models of one architecture
// trained as one model whose every weight has a leading member dimension, so one process runs B
// trials through one set of larger kernels instead of B sets of small ones:
//   linear layers   -> batched matrix products over the members (baddbmm)
//   convolutions    -> grouped convolutions, the members' channels side by side (groups = B)
//   normalization   -> per member: BatchNorm over B x C channels (its statistics are per channel,
//                      hence per member); LayerNorm without affine, then each member's gain, shift
//   embeddings      -> each member's table looked up with the shared tokens
// The members share the input batch (the same data and seed) and differ in their weights (each
// built by build_model with its own options: init_scale, muP factors) and in their optimizer's
// hyperparameters (fused_optimizer.h). Nothing flows between members: member b's loss depends on
// member b's weights only, so the sum of the members' losses gives each its own gradient.
//
// Activations between units: MLP [B, n, features]; CNN [n, B x C, H, W] (the grouped
// convolutions' layout); GPT [B, n, T, d]. The logits: [B, n, classes] or [B, n, T, 256].
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "models.h"

namespace paratune::train {

class FusedUnit : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& input) = 0;
};

struct FusedModel {
  int members = 0;
  std::vector<std::shared_ptr<FusedUnit>> units;
  std::vector<torch::Tensor> parameters;  // each fused tensor once (a tied weight once), [B, ...]
  std::vector<RateScaling> rate_scaling;  // per parameter: the members' (muP's factors; equal)
  bool sequence_targets = false;
  int classes = 0;

  // The shared batch's inputs through every unit: the logits [B, n, ...].
  torch::Tensor forward(torch::Tensor inputs);
  void train(bool on);
};

// Fuses `members`, models of one architecture (build_model of options that differ only in what
// fusion allows, options.h fusion_key): each fused weight and BatchNorm statistic stacks copies of
// the members' along a new leading dimension. Throws Error when the architectures differ.
FusedModel fuse_models(const std::vector<Model>& members);

// Each member's mean cross-entropy of its logits [B, n, C] or [B, n, T, C] against the shared
// targets [n] or [n, T]: [B].
torch::Tensor member_losses(const torch::Tensor& logits, const torch::Tensor& targets, int classes);

}  // namespace paratune::train
