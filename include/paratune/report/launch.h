// Launch settings for a plan in the frameworks people run: Megatron-LM arguments, a torchtitan
// TOML fragment, a DeepSpeed config. What a framework cannot express is listed, not dropped.
#pragma once

#include <string>
#include <vector>

#include "paratune/cost/estimate.h"
#include "paratune/plan/framework_support.h"

namespace paratune {

using plan::Framework;  // its name table is the one `--emit` parses

struct LaunchSettings {
  std::string text;                         // ready to paste
  std::vector<std::string> cannot_express;  // parts of the plan the framework has no setting for
};

// `plan` must be resolved (an Estimate's config is).
LaunchSettings launch_settings(Framework framework, const ParallelConfig& plan, const ModelSpec& model,
                               const TrainingSpec& training);

}  // namespace paratune
