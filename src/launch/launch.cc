// Launch settings for the frameworks of data/frameworks at a named version (launch/schema_check.h);
// rule ids R/T/D refer to its *-rules.md. The emitters (emitters.h) write the launch and
// check it against the framework's schema; here the version is resolved, and what the framework
// cannot run as planned comes from launch/framework_support.h (one source of truth).
#include "paratune/launch/launch.h"

#include <fmt/format.h>

#include "emitters.h"
#include "paratune/launch/schema_check.h"

namespace paratune::launch {

LaunchSettings launch_settings(Framework framework, const ParallelConfig& plan, const ModelSpec& model,
                               const TrainingSpec& training, const LaunchTarget& target) {
  const FrameworkTarget version =
      parse_framework_target(target.version.empty() ? to_string(framework) : to_string(framework) + "@" + target.version);
  LaunchSettings out;
  switch (framework) {
    case Framework::kMegatron:
      out = detail::megatron(plan, training, model, target, version.version, framework_commit(version));
      if (training.optimizer == Optimizer::kSGD)
        out.cannot_express.push_back(fmt::format("optimizer=sgd: Megatron-LM {}'s --optimizer flag is deprecated; "
                                                 "the launch keeps its default, Adam",
                                                 version.version));
      break;
    case Framework::kTorchtitan:
      out = detail::torchtitan(plan, training, model, target, version.version, framework_commit(version));
      break;
    case Framework::kDeepSpeed:
      out = detail::deepspeed(plan, training, model, target, version.version, framework_commit(version));
      break;
  }
  // What it cannot run as planned, from the one set of rules.
  std::vector<std::string> reasons = unsupported_reasons(framework, plan, model, training);
  out.cannot_express.insert(out.cannot_express.begin(), reasons.begin(), reasons.end());
  return out;
}

}  // namespace paratune::launch
