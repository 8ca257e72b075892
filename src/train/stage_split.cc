#include "paratune/train/stage_split.h"

#include <fmt/format.h>

#include <limits>
#include <numeric>

#include "paratune/plan/stage_assignment.h"
#include "paratune/spec/error.h"

namespace paratune::train {
namespace {

// A model's layers as the stage assignment sees them: work in FLOPs (its unit does not matter, the
// objective is compared only with itself), no memory limit, no recompute.
class LayerFlopsStages final : public plan::StageCosts {
 public:
  LayerFlopsStages(std::span<const double> forward_flops, int pp, int micro_batches)
      : forward_flops_(forward_flops), pp_(pp), micro_batches_(micro_batches) {}
  int pipeline_stages() const override { return pp_; }
  int virtual_stages() const override { return 1; }
  int layers() const override { return static_cast<int>(forward_flops_.size()); }
  double num_microbatches() const override { return micro_batches_; }
  double memory_limit_bytes() const override { return std::numeric_limits<double>::infinity(); }
  StageWork stage_work(int, int first_layer, int layers, int, double) const override {
    const auto first = forward_flops_.begin() + first_layer;
    return {3 * std::accumulate(first, first + layers, 0.0), 0};
  }
  // Embedding, blocks and head differ: the assignment must try every first layer.
  bool layers_alike() const override { return false; }
  double model_work_s() const override {
    return 3 * std::accumulate(forward_flops_.begin(), forward_flops_.end(), 0.0);
  }

 private:
  std::span<const double> forward_flops_;
  int pp_, micro_batches_;
};

}  // namespace

std::vector<int> split_stages(std::span<const double> layer_forward_flops, int pp, int micro_batches) {
  const int layers = static_cast<int>(layer_forward_flops.size());
  if (layers < pp)
    throw Error(fmt::format("pp: {} pipeline stages for a model of {} layers: each stage needs at least one layer",
                            pp, layers));
  if (pp == 1) return {layers};
  const LayerFlopsStages costs(layer_forward_flops, pp, micro_batches);
  // GPipe keeps every micro-batch's activations until its backward; with no memory limit the
  // count does not change the answer.
  const std::vector<double> in_flight(static_cast<std::size_t>(pp), micro_batches);
  const plan::StageAssignment assignment = plan::assign_stages(costs, in_flight, /*allow_recompute=*/false);
  if (!assignment.feasible) throw Error("pipeline split: no assignment of layers to stages exists");  // unreachable
  return assignment.stage_layers;
}

void check_stage_layers(std::span<const int> stage_layers, int model_layers, int pp) {
  std::string given;
  for (int n : stage_layers) given += (given.empty() ? "" : ",") + std::to_string(n);
  if (static_cast<int>(stage_layers.size()) != pp)
    throw Error(fmt::format("stage_layers: value '{}' has {} stages; pp is {}", given, stage_layers.size(), pp));
  const int sum = std::accumulate(stage_layers.begin(), stage_layers.end(), 0);
  if (sum != model_layers)
    throw Error(fmt::format("stage_layers: value '{}' places {} layers; the model has {}", given, sum, model_layers));
}

}  // namespace paratune::train
