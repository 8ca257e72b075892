// Which configurations the frameworks paratune writes launch settings for (`plan --emit`) can run
// as planned, and why not. The rules are those of data/frameworks/*-rules.md, each reason
// citing its rule id, for the versions pinned there:
//   Megatron-LM  main d98e8a64 (package 0.20.0 dev, 2026-08-22)       megatron-lm-rules.md  R0-R24
//   torchtitan   v0.2.2, 73a0e697 (2026-02-20, the last TOML release)  torchtitan-rules.md   T0-T10
//   DeepSpeed    master 38327e07 (0.16.5 dev, 2025-02-21)              deepspeed-rules.md    D0-D7
// "Run as planned" means: launch settings exist that the framework accepts and that do what the
// plan's cost was predicted for (a plan the framework would silently run differently, e.g.
// Megatron's recompute count taken as the largest of the per-stage counts, counts as not runnable).
// Not judged: hardware (MXFP8 needs Blackwell) and kernels. Whether the framework builds the model
// itself (torchtitan registers no GPT-3 or Mixtral, T10) is model_refusals().
#pragma once

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "paratune/spec/enums.h"
#include "paratune/spec/model.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/training.h"

namespace paratune::launch {

enum class Framework { kMegatron, kTorchtitan, kDeepSpeed };
inline constexpr std::array<Framework, 3> kFrameworks{Framework::kMegatron, Framework::kTorchtitan,
                                                      Framework::kDeepSpeed};

}  // namespace paratune::launch

namespace paratune {
template <>
struct EnumNames<launch::Framework> {
  static constexpr std::string_view kWhat = "framework";
  static constexpr std::array<std::pair<launch::Framework, const char*>, 3> kTable{
      {{launch::Framework::kMegatron, "megatron"},
       {launch::Framework::kTorchtitan, "torchtitan"},
       {launch::Framework::kDeepSpeed, "deepspeed"}}};
};
}  // namespace paratune

namespace paratune::launch {

// A framework's name ("megatron") is spec/enums.h's to_string, found from here too, where
// schema_check.h adds to_string(FrameworkTarget).
using paratune::to_string;

// What keeps `framework` from running `model` at all, whatever the configuration: torchtitan builds
// only models it has a flavor of (T10). Empty: nothing. unsupported_reasons() lists these first;
// can_run() judges the configuration only (a search within one framework the user named still
// plans for it: the launch says what to register).
std::vector<std::string> model_refusals(Framework framework, const ModelSpec& model);

// Why `framework` cannot run `config` as planned; empty: it can. `config` is resolved or a level-1
// configuration (empty stage_layers = even stages, recompute_layers -1 = every layer). One line per
// reason: the plan's setting, what the framework offers instead, the rule id.
std::vector<std::string> unsupported_reasons(Framework framework, const ParallelConfig& config, const ModelSpec& model,
                                             const TrainingSpec& training);

// The same judgement without the messages, for the planner's inner loop. `judge_grad_sync`:
// false at level 1, where the gradient-sync placement is not chosen yet (runs_grad_sync says which
// placements level 2 may choose).
bool can_run(Framework framework, const ParallelConfig& config, const ModelSpec& model, const TrainingSpec& training,
             bool judge_grad_sync = true);

// Whether the framework reduces data-parallel gradients the way `grad_sync` models, with pp stages.
bool runs_grad_sync(Framework framework, int pp, GradSync grad_sync);

// What level 2 may choose for a candidate (resolved, even stages) so that the framework can express
// the result; the planner still checks every refined plan with can_run.
struct RefinementScope {
  bool uneven_stages = true;  // layouts other than even stages
  enum class Recompute {
    kPerStage,          // each stage its own count of fully recomputed layers
    kSameCountPerChunk, // every model chunk recomputes min(N, its layers) for one N (Megatron block N)
    kAllOrNone,         // every layer of every stage, or none
  } recompute = Recompute::kPerStage;
};
RefinementScope refinement_scope(std::optional<Framework> framework, const ParallelConfig& candidate);

// Every framework's verdict on one configuration, in kFrameworks order.
struct FrameworkVerdict {
  Framework framework;
  std::vector<std::string> reasons;  // empty: runs it
};
std::vector<FrameworkVerdict> framework_verdicts(const ParallelConfig& config, const ModelSpec& model,
                                                 const TrainingSpec& training);

}  // namespace paratune::launch
