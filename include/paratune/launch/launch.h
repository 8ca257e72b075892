// Launch settings for a plan in the frameworks people run: Megatron-LM arguments, a torchtitan
// TOML fragment, a DeepSpeed config. What a framework cannot express is listed, not dropped.
// The launch module keeps each framework's parts together: what it runs as planned
// (framework_support.h; src/launch/<framework>_support.cc), its emitter (src/launch/<framework>.cc)
// and the checks of what it emits (schema_check.h; megatron_rules.h for Megatron-LM).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "paratune/cost/estimate.h"
#include "paratune/launch/framework_support.h"

namespace paratune::launch {

struct LaunchSettings {
  std::string text;                         // ready to paste
  std::vector<std::string> cannot_express;  // parts of the plan the framework has no setting for
};

// Where the launch runs: the framework version (launch/schema_check.h framework_versions(); empty =
// the newest paratune has), and the cluster's shape for the launcher and the architecture rules.
struct LaunchTarget {
  std::string version;
  int nodes = 1;
  int gpus_per_node = 8;
  std::string gpu;  // preset name, e.g. "h100-sxm" (Blackwell lifts Megatron's R6.1)
};

// `plan` must be resolved (an Estimate's config is). The text is checked against the framework's
// schema at the version before it is returned; a violation is an emitter bug and throws.
LaunchSettings launch_settings(Framework framework, const ParallelConfig& plan, const ModelSpec& model,
                               const TrainingSpec& training, const LaunchTarget& target = {});

// Why torchtitan, at the version paratune has the facts of, cannot build `model`, or none: it builds
// a model only from a registered flavor of its shape (T10); the reason names the flavor to register
// and where. launch/framework_support.h counts it among torchtitan's reasons.
std::optional<std::string> torchtitan_model_refusal(const ModelSpec& model);

}  // namespace paratune::launch
