// paratune-train's models as a sequence of layers ("units"), the granularity at which a pipeline
// splits them: Fashion-MNIST MLP and ResNet-style CNN, and a GPT-style byte-level decoder.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "paratune/train/options.h"

namespace paratune::train {

// One layer of a model: a module with one input and one output tensor.
class Unit : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& input) = 0;
  // Forward FLOPs for one sample (a multiply-add is 2), counted from the shapes: the pipeline split
  // balances them (train/stage_split.h).
  [[nodiscard]] virtual double forward_flops_per_sample() const = 0;
  [[nodiscard]] virtual std::string describe() const = 0;
};

struct Model {
  std::vector<std::shared_ptr<Unit>> units;
  // GPT with tied embeddings: the first unit's token embedding is also the last unit's output
  // projection (one tensor). When a pipeline puts them on different ranks, each rank holds a copy
  // and their gradients are summed (Megatron-LM's embedding-group all-reduce).
  torch::Tensor tied_weight;
  bool sequence_targets = false;  // logits [B, T, V] against targets [B, T] (GPT) or [B, C] vs [B]
  int classes = 0;

  [[nodiscard]] std::vector<double> unit_flops() const;
  [[nodiscard]] std::int64_t parameter_count() const;  // each tensor once (a tied weight counts once)
};

// Builds the model of `options` with torch's generator seeded by options.seed, so every rank of a
// trial builds the same weights (each then keeps its own stage's units). Weights: normal with
// standard deviation init_scale x sqrt(2 / fan_in) before ReLU (He et al. 2015), init_scale x
// sqrt(1 / fan_in) for the classifier; GPT: init_scale x 0.02, the residual output projections
// divided by sqrt(2 x layers) (GPT-2, Radford et al. 2019). Biases 0; norms' scales 1.
Model build_model(const TrainOptions& options);

// The parameters of units [first, last), each tensor once, in a fixed order.
std::vector<torch::Tensor> unique_parameters(const Model& model, int first, int last);

}  // namespace paratune::train
