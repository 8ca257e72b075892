// The two baselines `paratune plan` reports its speedup against, costed by the same model.
#include <fmt/format.h>

#include <algorithm>

#include "paratune/cost/model_stats.h"
#include "paratune/plan/planner.h"
#include "paratune/plan/ranking.h"

namespace paratune::plan {
namespace {

// With one framework searched (PlanOptions::frameworks, `--emit`), a baseline takes its nearest
// expression of its rule:
//   torchtitan: no ZeRO-1 (T1.8), and unsharded data parallelism (DDP) only without TP/PP (T1.7):
//               data parallelism is FSDP2 (zero=3 over all of dp); TP always shards the sequence
//               (sp on, T2.1);
//   DeepSpeed:  its pipeline runs its own 1F1B only (D5.3): interleaving becomes 1F1B;
//   Megatron-LM: the rules are Megatron's already;
//   all: a gradient-sync placement the framework does not do becomes the first of overlapped,
//        shifted that it does (runs_grad_sync; DeepSpeed's pipeline reduces after the flush).
// With several (or none), the rule is taken as written. Returns what was changed, in words (empty:
// nothing).
std::string adapt_to_framework(const PlanOptions& options, ParallelConfig& c) {
  if (options.frameworks.size() != 1) return "";
  const launch::Framework framework = options.frameworks.front();
  std::vector<std::string> changed;
  switch (framework) {
    case launch::Framework::kMegatron: break;
    case launch::Framework::kTorchtitan:
      if (c.zero == 1 && c.dp == 1) c.zero = 0;  // sharding over one rank is no sharding
      if (c.zero < 2 && c.dp > 1) {
        c.zero = 3;
        c.op = c.dp;
        changed.push_back("FSDP2 (zero=3) for data parallelism");
      }
      if (c.tp > 1 && !c.sequence_parallel) {
        c.sequence_parallel = true;
        changed.push_back("SP with TP");
      }
      break;
    case launch::Framework::kDeepSpeed:
      if (c.vpp > 1) {
        c.vpp = 1;
        c.schedule = Schedule::kOneFOneB;
        changed.push_back("1F1B instead of interleaving");
      }
      break;
  }
  if (!launch::runs_grad_sync(framework, c.pp, c.grad_sync))
    for (GradSync g : {GradSync::kOverlapped, GradSync::kShifted})
      if (launch::runs_grad_sync(framework, c.pp, g)) {
        c.grad_sync = g;
        changed.push_back(fmt::format("grad_sync={}", to_string(g)));
        break;
      }
  return fmt::format("{}", fmt::join(changed, ", "));
}

std::optional<Estimate> fitting(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                                const ParallelConfig& config, const PlanOptions& options, const Calibration& calibration) {
  try {
    Estimate e = estimate(model, cluster, training, config, calibration, options.estimate);
    // Only what a searched framework runs (e.g. torchtitan without data parallelism and with TP: T5.2).
    if (!options.frameworks.empty() &&
        std::none_of(options.frameworks.begin(), options.frameworks.end(),
                     [&](launch::Framework f) { return launch::can_run(f, e.config, model, training); }))
      return std::nullopt;
    if (e.fits) return e;
  } catch (const Error&) {
    // Not a valid configuration of this rule for this model (e.g. batch not divisible): skip it.
  }
  return std::nullopt;
}

}  // namespace

// expert: what a careful engineer takes from the published Megatron-LM / NeMo recipes.
//   1. tp = GPUs per node for models of 20B parameters or more, else 1; lowered to the largest
//      divisor of it that the model's heads, KV heads and FFN allow. Sequence parallelism when tp > 1.
//   2. MoE: ep = the largest divisor of the expert count that divides dp; etp = tp.
//   3. mbs = 1, distributed optimizer (ZeRO-1 over all of dp), cp = 1, overlap flags on.
//   4. pp = the smallest divisor of GPUs/tp (pp <= layers, dp dividing the batch) with which the
//      configuration fits: without recompute if that fits, else with full recompute.
//   5. pp > 1: interleaved 1F1B with the most model chunks per rank that keep >= 4 layers per
//      chunk (Llama-3-70B: pp=4, vpp=5, as NeMo), when layers and micro-batches divide evenly;
//      else 1F1B. Even stages.
//   6. With a framework: its nearest expression of these (adapt_to_framework).
Baseline expert_baseline(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                         const PlanOptions& options, const Calibration& calibration) {
  Baseline out;
  out.rule =
      "tp = GPUs per node for >= 20B parameters (else 1), SP, ep = most experts dividing dp, mbs = 1, "
      "distributed optimizer, smallest pp that fits (full recompute only if needed), interleaved 1F1B "
      "with >= 4 layers per chunk when pp > 1";
  const int gpus = static_cast<int>(cluster.num_gpus());  // <= kMaxGpus (validate(ClusterSpec))
  int tp = count_parameters(model).total >= 20e9 ? cluster.gpus_per_node : 1;
  while (tp > 1 && (!valid_tp(model, tp) || gpus % tp != 0)) --tp;
  for (int pp = 1; pp <= std::min(model.num_layers, gpus / tp); ++pp) {
    if ((gpus / tp) % pp != 0) continue;
    const int dp = gpus / (tp * pp);
    if (training.global_batch % dp != 0) continue;
    ParallelConfig c = options.base;
    c.recompute_modules = kDefaultRecomputeModules;  // no selective recompute here
    c.offload_modules = 0;                            // nor activation offload
    c.dp = dp;
    c.tp = tp;
    c.pp = pp;
    c.sequence_parallel = tp > 1;
    c.mbs = 1;
    c.zero = 1;
    c.op = dp;
    if (model.moe)
      for (int ep = model.moe->num_experts; ep >= 1; --ep)
        if (model.moe->num_experts % ep == 0 && dp % ep == 0) {
          c.ep = ep;
          break;
        }
    const int microbatches = training.global_batch / dp;
    if (pp > 1 && model.num_layers % pp == 0 && microbatches % pp == 0) {
      const int per_rank = model.num_layers / pp;
      for (int v = per_rank / 4; v > 1; --v)
        if (per_rank % v == 0) {
          c.vpp = v;
          c.schedule = Schedule::kInterleaved1F1B;
          break;
        }
    }
    const std::string adapted = adapt_to_framework(options, c);
    for (RecomputeMode rc : {RecomputeMode::kNone, RecomputeMode::kFull}) {
      c.recompute = rc;
      if (auto e = fitting(model, cluster, training, c, options, calibration)) {
        out.estimate = std::move(e);
        if (!adapted.empty()) out.rule += fmt::format(" (as {} runs it: {})", to_string(options.frameworks.front()), adapted);
        return out;
      }
    }
  }
  return out;
}

// 3-axis: a planner that searches dp, tp and pp only (every factorization of the GPUs), with
// mbs = 1, no optimizer sharding, full recompute, even stages, 1F1B, no sequence/context/expert
// parallelism; the fastest that fits (ranked by plan/ranking.h). With a framework: its nearest
// expression of these (adapt_to_framework).
Baseline three_axis_baseline(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                             const PlanOptions& options, const Calibration& calibration) {
  Baseline out;
  out.rule = "best of dp x tp x pp only: mbs = 1, no ZeRO, full recompute, even stages, 1F1B, no SP/CP/EP";
  std::string adaptation;
  const int gpus = static_cast<int>(cluster.num_gpus());  // <= kMaxGpus (validate(ClusterSpec))
  for (int tp = 1; tp <= gpus; ++tp) {
    if (gpus % tp != 0 || !valid_tp(model, tp)) continue;
    for (int pp = 1; pp <= std::min(model.num_layers, gpus / tp); ++pp) {
      if ((gpus / tp) % pp != 0) continue;
      ParallelConfig c = options.base;
      c.recompute_modules = kDefaultRecomputeModules;  // full recompute: no module list
      c.offload_modules = 0;                            // and nothing to offload
      c.dp = gpus / (tp * pp);
      c.tp = tp;
      c.pp = pp;
      c.mbs = 1;
      c.recompute = RecomputeMode::kFull;
      const std::string adapted = adapt_to_framework(options, c);
      if (auto e = fitting(model, cluster, training, c, options, calibration))
        if (!out.estimate ||
            ranks_before(e->iteration_time_s, e->config, out.estimate->iteration_time_s, out.estimate->config)) {
          out.estimate = std::move(e);
          adaptation = adapted;
        }
    }
  }
  if (!adaptation.empty()) out.rule += fmt::format(" (as {} runs it: {})", to_string(options.frameworks.front()), adaptation);
  return out;
}

}  // namespace paratune::plan
