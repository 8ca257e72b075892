// paratune-train's models as a sequence of layers ("units"), the granularity at which a pipeline
// splits them: Fashion-MNIST MLP and ResNet-style CNN, and a GPT-style byte-level decoder.
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "paratune/train/options.h"

namespace paratune::train {

// One layer of a model: a module with one input and one output tensor.
// What a unit is and how it computes, beyond its weights (fused_models.h rebuilds the computation
// for B models at once from it and the members' named parameters).
struct UnitSpec {
  enum class Kind { kDense, kStem, kResidual, kPoolClassifier, kEmbedding, kDecoderBlock, kOutput };
  Kind kind = Kind::kDense;
  int in = 0, out = 0;        // dense: features; stem, residual, pool: channels; GPT: d_model
  int stride = 1;             // residual
  bool relu = false, flatten = false;  // dense
  bool tied = false;          // output: the embedding's token weight
  double dropout = 0;
  double input_multiplier = 1;  // muP's readout multiplier (dense, pool classifier, output)
  double attention_scale = 0;   // decoder block
  int heads = 0, mlp_ratio = 0; // decoder block
};

class Unit : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& input) = 0;
  [[nodiscard]] virtual UnitSpec spec() const = 0;
  // Forward FLOPs for one sample (a multiply-add is 2), counted from the shapes: the pipeline split
  // balances them (train/stage_split.h).
  [[nodiscard]] virtual double forward_flops_per_sample() const = 0;
  [[nodiscard]] virtual std::string describe() const = 0;
};

// What the optimizer multiplies a weight's learning rate and weight decay by: muP's factors
// (train/mup.h), 1 and 1 under the standard parametrization.
struct RateScaling {
  double learning_rate = 1, weight_decay = 1;
  bool operator<(const RateScaling& o) const {
    return learning_rate != o.learning_rate ? learning_rate < o.learning_rate : weight_decay < o.weight_decay;
  }
};

struct Model {
  std::vector<std::shared_ptr<Unit>> units;
  // GPT with tied embeddings: the first unit's token embedding is also the last unit's output
  // projection (one tensor). When a pipeline puts them on different ranks, each rank holds a copy
  // and their gradients are summed (Megatron-LM's embedding-group all-reduce).
  torch::Tensor tied_weight;
  bool sequence_targets = false;  // logits [B, T, V] against targets [B, T] (GPT) or [B, C] vs [B]
  int classes = 0;
  std::map<const void*, RateScaling> rate_scaling;  // by tensor (TensorImpl*); every parameter has one

  [[nodiscard]] std::vector<double> unit_flops() const;
  [[nodiscard]] RateScaling rate_scaling_of(const torch::Tensor& parameter) const;
  [[nodiscard]] std::int64_t parameter_count() const;  // each tensor once (a tied weight counts once)
};

// Builds the model of `options` with torch's generator seeded by options.seed, so every rank of a
// trial builds the same weights (each then keeps its own stage's units), with every width divided
// by options.surrogate_ratio (narrowed()). Weights: normal with standard deviation init_scale x
// sqrt(2 / fan_in) before ReLU (He et al. 2015), init_scale x sqrt(1 / fan_in) for the classifier;
// GPT: init_scale x 0.02, the residual output projections divided by sqrt(2 x layers) (GPT-2,
// Radford et al. 2019). Biases 0; norms' scales 1. Under muP (options.parametrization) the stds,
// the output layer's input multiplier, the attention scale and each weight's rate scaling follow
// train/mup.h against the model of the options' own widths (the base).
Model build_model(const TrainOptions& options);

// The parameters of units [first, last), each tensor once, in a fixed order.
std::vector<torch::Tensor> unique_parameters(const Model& model, int first, int last);

}  // namespace paratune::train
