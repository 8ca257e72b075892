// Which of a paratune-train model's layers each pipeline stage holds (strategies mp, gpipe and
// dp+gpipe): the planner's own stage assignment (plan::assign_stages) on the layers' counted work.
#pragma once

#include <span>
#include <vector>

namespace paratune::train {

// Layers per stage, contiguous and in order, for `pp` stages and `micro_batches` micro-batches,
// minimising the GPipe time model (m - 1) x max_s w_s + sum_s w_s (stage_assignment.h with vpp 1)
// where w_s is the forward + backward work of stage s's layers: 3 x their forward FLOPs (the
// backward computes gradients of inputs and of weights, each about one forward). No memory limit:
// the trainer's models are small next to a host's memory. Throws Error when there are fewer layers
// than stages.
std::vector<int> split_stages(std::span<const double> layer_forward_flops, int pp, int micro_batches);

// Checks a user's --stage-layers against the model: one count >= 1 per stage, adding up to the
// model's layers. Throws Error naming the option, the values and the rule.
void check_stage_layers(std::span<const int> stage_layers, int model_layers, int pp);

}  // namespace paratune::train
