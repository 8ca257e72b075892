// What Megatron-LM, torchtitan and DeepSpeed can run (paratune/launch/framework_support.h). Each
// framework's rules are in a file of their own (megatron_support.cc, torchtitan_support.cc,
// deepspeed_support.cc; what they share in support.h), each check citing the rule of
// data/frameworks/<framework>-rules.md it follows (R = Megatron-LM d98e8a64, T = torchtitan v0.2.2,
// D = DeepSpeed 38327e07); here a configuration is judged with them.
#include "paratune/launch/framework_support.h"

#include <fmt/format.h>

#include "paratune/launch/launch.h"  // torchtitan's flavors (T10)
#include "support.h"

namespace paratune::launch {

namespace support_detail {

std::string grad_sync_reason(Framework f, int pp, GradSync g) {
  std::string what = fmt::format("grad_sync={}", to_string(g));
  switch (f) {
    case Framework::kMegatron:
      return what + ": Megatron-LM reduces gradients overlapped with the backward pass (--overlap-grad-reduce, "
                    "R9) or, without it, after the pipeline flush (shifted); never synchronously inside it";
    case Framework::kTorchtitan:
      return what + ": torchtitan's FSDP2/DDP reduce gradients from backward hooks, overlapped with the backward "
                    "pass (T1.7; the hooks are PyTorch's, not a rule of torchtitan-rules.md)";
    case Framework::kDeepSpeed:
      return pp > 1 ? what + ": DeepSpeed's PipelineEngine reduces gradients once, after the last micro-batch "
                             "(D5.3; its TrainSchedule's ReduceGrads step, runtime/pipe/schedule.py: our reading, "
                             "not a rule of deepspeed-rules.md), which is grad_sync=shifted"
                    : what + ": DeepSpeed reduces gradients from backward hooks, overlapped or not "
                             "(zero_optimization.overlap_comm, D3.7), never synchronously inside the backward pass";
  }
  return what;
}

}  // namespace support_detail

namespace {

using support_detail::Input;
using support_detail::Verdict;

void judge(Framework f, const Input& in, Verdict& v) {
  switch (f) {
    case Framework::kMegatron: support_detail::megatron(in, v); return;
    case Framework::kTorchtitan: support_detail::torchtitan(in, v); return;
    case Framework::kDeepSpeed: support_detail::deepspeed(in, v); return;
  }
}

}  // namespace

bool runs_grad_sync(Framework framework, int pp, GradSync grad_sync) {
  // in-backward (reductions on the compute stream before the input gradient goes back: Alpa's XLA
  // pipeline, src/sim) is no framework's behaviour.
  if (grad_sync == GradSync::kInBackward) return false;
  switch (framework) {
    case Framework::kMegatron: return true;  // overlapped: --overlap-grad-reduce; shifted: without it (R9)
    case Framework::kTorchtitan: return grad_sync == GradSync::kOverlapped;
    case Framework::kDeepSpeed: return pp > 1 ? grad_sync == GradSync::kShifted : true;
  }
  return false;
}

std::vector<std::string> model_refusals(Framework framework, const ModelSpec& model) {
  if (framework != Framework::kTorchtitan) return {};
  if (std::optional<std::string> why = torchtitan_model_refusal(model)) return {*why};
  return {};
}

std::vector<std::string> unsupported_reasons(Framework framework, const ParallelConfig& config, const ModelSpec& model,
                                             const TrainingSpec& training) {
  std::vector<std::string> reasons = model_refusals(framework, model);
  Verdict v(&reasons);
  judge(framework, Input{config, model, training, true}, v);
  return reasons;
}

bool can_run(Framework framework, const ParallelConfig& config, const ModelSpec& model, const TrainingSpec& training,
             bool judge_grad_sync) {
  Verdict v(nullptr);
  judge(framework, Input{config, model, training, judge_grad_sync}, v);
  return !v.refused();
}

RefinementScope refinement_scope(std::optional<Framework> framework, const ParallelConfig& candidate) {
  RefinementScope scope;
  if (!framework) return scope;
  switch (*framework) {
    case Framework::kMegatron:  // any layout (R12, R13); one block count N (R19.5)
      scope.recompute = RefinementScope::Recompute::kSameCountPerChunk;
      break;
    case Framework::kTorchtitan:  // any layout (T4.3a); one recompute mode (T9.3)
      scope.recompute = RefinementScope::Recompute::kAllOrNone;
      break;
    case Framework::kDeepSpeed:  // pp > 1: even stages (D5), every layer or none (D5.2)
      if (candidate.pp > 1) {
        scope.uneven_stages = false;
        scope.recompute = RefinementScope::Recompute::kAllOrNone;
      }
      break;
  }
  return scope;
}

std::vector<FrameworkVerdict> framework_verdicts(const ParallelConfig& config, const ModelSpec& model,
                                                 const TrainingSpec& training) {
  std::vector<FrameworkVerdict> out;
  out.reserve(kFrameworks.size());
  for (Framework f : kFrameworks) out.push_back({f, unsupported_reasons(f, config, model, training)});
  return out;
}

}  // namespace paratune::launch
