// The planner's search space: which values each parallelism axis may take, and the candidates of
// level 1 (every valid combination of them).
//
// Users narrow it with `--fix tp=8`, `--max pp=16`, `--allow zero=0,1` (any axis, enum axes by name:
// `--allow schedule=1f1b,zb-h1`). Everything else is the full valid space: every factorization of
// the GPU count into dp x tp x pp x cp, ep and etp as the model allows, every ZeRO stage with every
// optimizer-sharding degree op dividing dp, micro-batch sizes that split the batch into whole
// micro-batches, sequence parallelism on and off, every schedule, vpp and recompute mode, and for
// MoE models the expert-parallel communication overlap (ep_overlap) where it is valid and both token
// dispatchers (alltoall, deepep) where ep > 1; activation offload (`offload`) as one more memory
// saver beside the recompute modes (offload_saving_modules).
#pragma once

#include <array>
#include <climits>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "paratune/spec/hardware.h"
#include "paratune/spec/model.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/training.h"

namespace paratune::plan {

enum class Axis {
  kDp, kTp, kPp, kCp, kEp, kEtp, kMbs, kVpp, kZero, kOp, kSequenceParallel, kSchedule, kRecompute, kGradSync,
  kEpOverlap, kDispatcher, kOffload
};
inline constexpr int kAxisCount = 17;
// The configuration key of each axis ("sp" for sequence parallelism, as in --config).
std::string_view axis_name(Axis axis);

struct AxisRule {
  std::vector<int> allowed;  // empty: any valid value
  int max = INT_MAX;
};

// Values are integers: degrees as they are, sp, ep_overlap and offload (activation offload) as 0/1, schedule / recompute /
// grad_sync / dispatcher as their enum value. etp is the effective expert-TP degree (never 0).
struct SearchSpace {
  std::array<AxisRule, kAxisCount> rules;
  int max_mbs = 16;  // default cap on the micro-batch size when --max/--allow/--fix mbs is not given

  [[nodiscard]] bool permits(Axis axis, int value) const;
  [[nodiscard]] const AxisRule& rule(Axis axis) const { return rules[static_cast<std::size_t>(axis)]; }
  AxisRule& rule(Axis axis) { return rules[static_cast<std::size_t>(axis)]; }
};

// "tp=8,pp=4" / "zero=0,1,schedule=1f1b,zb-h1": keys with one or more values each. `flag`: what
// error messages call the text (the paratune program passes its flag: --fix, --allow or --max).
// kind: fix (one value per key), allow (the values allowed), max (an upper bound).
enum class ConstraintKind { kFix, kAllow, kMax };
void add_constraints(SearchSpace& space, std::string_view text, ConstraintKind kind, std::string_view flag);

// A level-1 candidate: every axis but the stage assignment, per-stage recompute and gradient-sync
// placement (level 2 chooses those). Compact: millions of them are enumerated. Degrees are 32-bit:
// on 32,768 GPUs and more, dp (and mbs, op) do not fit 16 bits.
struct Candidate {
  std::int32_t dp = 1, tp = 1, pp = 1, cp = 1, ep = 1, etp = 0, mbs = 1, vpp = 1, op = 1;
  std::int8_t zero = 0;
  std::int8_t sequence_parallel = 0;
  // MoE all-to-all overlapped with another micro-batch's compute (ParallelConfig::ep_overlap);
  // only where resolve accepts it: ep > 1, recompute != full, pp == 1, vpp > 1 or DualPipe.
  std::int8_t ep_overlap = 0;
  // How tokens reach the expert ranks (ParallelConfig::dispatcher); deepep only where ep > 1.
  MoeDispatcher dispatcher = MoeDispatcher::kAllToAll;
  // Megatron's embedding-/loss-aware pipeline split (ParallelConfig::account_embedding/_loss, R11):
  // bit 1 the embedding, bit 2 the loss count as a layer. Only for interleaving whose layers do not
  // split evenly otherwise (126 layers on pp 8 x vpp 8); the layout is then Megatron's, not searched.
  std::int8_t pipeline_split = 0;
  Schedule schedule = Schedule::kOneFOneB;
  RecomputeMode recompute = RecomputeMode::kNone;
  // recompute=selective only: 0 = the base's modules (Megatron's default, core_attn), else this set
  // of RecomputeModule bits (memory_saving_modules).
  std::uint8_t recompute_modules = 0;
  // Activation offload: 0 = none, else a set of OffloadModule bits (offload_saving_modules).
  std::uint8_t offload_modules = 0;
};

// The memory-saving selective set searched beside the default for MoE and MLA models: Megatron-Core's
// modules that are cheap to recompute and hold much (core_attn, the norms, the expert activation
// function, MLA's up-projections; NVIDIA's DeepSeek-V3 recipes recompute mla_up_proj or core_attn,
// dgxc-benchmarking @6be5ea0 deepseek_v3/pretraining/launch.sh), so that a plan short of memory has a
// step between core_attn and full recompute. 0 for dense models (its gain over core_attn is the
// norms' inputs alone) and under torchtitan's per-op checkpointing (no modules).
unsigned memory_saving_modules(const ModelSpec& model, const TrainingSpec& training);

// The activation-offload set searched: core attention's inputs (Q, K, V) and the output projection's
// input, the heavy tensors that are costly to recompute (Megatron-LM's fine-grained offloading guide
// at d98e8a64: "Use offloading for heavy modules (e.g., core_attn, ...)"; NVIDIA's DeepSeek-V3
// recipe offloads core_attn and attn_proj, Megatron-Bridge @067f987 perf_recipes/deepseek/common.py).
// It is searched in one setting per model, the step before full recompute: with recompute=none for
// dense models, and with the memory-saving selective set less core_attn (whose checkpoint would
// bypass the offload) and mla_up_proj (Q, K, V go to the host instead) where a model has one. 0 under torchtitan's per-op checkpointing (no offload).
unsigned offload_saving_modules(const TrainingSpec& training);

// The configuration of a candidate: even stages, all layers recomputed with recompute=full, the
// flags in `base` (overlap flags, gradient-sync placement) for everything not searched.
ParallelConfig to_config(const Candidate& candidate, const ParallelConfig& base = {});

// Whether tensor parallelism of degree tp splits the model's heads, KV heads and FFN evenly.
bool valid_tp(const ModelSpec& model, int tp);

// Positive divisors of n in increasing order.
std::vector<int> divisors(int n);

// The outer level of the enumeration: the valid (tp, cp, pp) triples (dp follows), each a unit of
// parallel work for the planner's threads.
struct MeshShape {
  int tp, cp, pp, dp;
};
std::vector<MeshShape> mesh_shapes(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                                   const SearchSpace& space);

// The layer-shape groups of one mesh shape, in a fixed order: visit_group(first member) for each
// group with at least one member. A group's members share every axis but the ZeRO stage, its
// sharding degree op, the schedule, vpp and Megatron's embedding/loss split (Candidate::zero, op,
// schedule, vpp, pipeline_split): those change no layer's cost.
void enumerate_groups(const ModelSpec& model, const TrainingSpec& training, const SearchSpace& space,
                      const MeshShape& mesh, const std::function<void(const Candidate&)>& visit_group);
// The members of the group whose first member is `group` (from enumerate_groups), in a fixed order.
void enumerate_members(const ModelSpec& model, const TrainingSpec& training, const SearchSpace& space,
                       const Candidate& group, const std::function<void(const Candidate&)>& visit_member);

// Every candidate with one mesh shape, in a fixed order, exactly those `resolve` accepts. They come
// in groups with the same layer shape (ep, etp, mbs, sp, recompute, ep_overlap, dispatcher: the axes that change
// a layer's cost): visit_group(first member) is called before each group's members are passed to
// visit_member, so the planner builds one cost model per group.
void enumerate_mesh(const ModelSpec& model, const TrainingSpec& training, const SearchSpace& space,
                    const MeshShape& mesh, const std::function<void(const Candidate&)>& visit_group,
                    const std::function<void(const Candidate&)>& visit_member);

// Why the space has no level-1 candidate for this model, cluster and batch (plan/space_diagnosis.cc):
// each constraint that alone leaves none, with the values its axis takes without constraints
// ("tp=3: tp takes 1, 2, 4, 8 here"), or, when each alone leaves some, all of them together. ""
// when the space has candidates, or has none even without constraints (nothing to blame them for).
std::string why_no_candidate(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                             const SearchSpace& space);

}  // namespace paratune::plan
