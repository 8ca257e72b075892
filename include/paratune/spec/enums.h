// Every enum in paratune's specs, each with exactly one name table used for parsing, printing and
// `--help`. An unknown name gets an Error listing the valid ones.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "paratune/spec/error.h"

namespace paratune {

enum class Precision { kBF16, kFP16, kFP8 };
enum class Optimizer { kAdamW, kAdam, kSGD };
enum class NormKind { kLayerNorm, kRMSNorm };
enum class PositionEmbedding { kRotary, kLearned, kNone };
enum class RecomputeMode { kNone, kSelective, kFull };
// With recompute=selective: the modules whose activations are dropped and recomputed in the
// backward (Megatron-Core TransformerConfig.recompute_modules, --recompute-modules; the labels and
// their boundaries as Megatron-Bridge docs/training/activation-recomputation.md lists them).
enum class RecomputeModule { kCoreAttn, kMoeAct, kLayernorm, kMlaUpProj, kMlp, kMoe, kSharedExperts };
// Megatron-Core's fine-grained activation offloading (--fine-grained-activation-offloading
// --offload-modules; TransformerConfig.offload_modules at the pinned d98e8a64): the tensors each
// module saves for its backward go to host memory after its forward and come back before its
// backward. Its fused_group_mlp (needs Transformer Engine's op fuser) and gdp_qkv (Gated DeltaNet
// mixers) are not modelled.
enum class OffloadModule { kAttnNorm, kQkvLinear, kCoreAttn, kAttnProj, kMlpNorm, kExpertFc1, kMoeAct };
// Pipeline schedules (sim/schedules.cc says whose event order each one follows).
enum class Schedule {
  kOneFOneB,
  kInterleaved1F1B,
  kGPipe,
  kZeroBubbleH1,
  kInterleavedZeroBubble,  // PyTorch ScheduleInterleavedZeroBubble (torchtitan "InterleavedZeroBubble")
  kZeroBubbleV,            // PyTorch ScheduleZBVZeroBubble (torchtitan "ZBVZeroBubble")
  kDualPipeV,              // DeepSeek DualPipeV (torchtitan "DualPipeV")
  kDualPipe,               // DeepSeek DualPipe: two directions, two parameter copies
};
enum class GradSync { kInBackward, kShifted, kOverlapped };
// How FP8 GEMM inputs are scaled (Transformer Engine recipes; torchao's names in brackets):
// delayed = per-tensor scale from an amax history (TE DelayedScaling, NeMo's default "ds");
// tensorwise = per-tensor scale from the current amax (TE Float8CurrentScaling) [torchao tensorwise];
// blockwise = per-row / 1x128 and 128x128 block scales (TE Float8BlockScaling, DeepSeek-V3)
//             [torchao rowwise]; mxfp8 = 32-element blocks with E8M0 scales (TE MXFP8BlockScaling,
//             Blackwell tensor cores).
enum class Fp8Recipe { kDelayed, kTensorwise, kBlockwise, kMxfp8 };
// How MoE routing is kept balanced: an auxiliary loss (GShard/Switch; Megatron's aux_loss),
// DeepSeek-V3's auxiliary-loss-free expert bias, or routing forced to be uniform (benchmarks:
// Megatron's --moe-router-force-load-balancing).
enum class MoeBalancing { kAuxLoss, kAuxLossFree, kForceBalanced };
// How MoE tokens reach their experts' ranks: alltoall = one copy per chosen expert through an
// NCCL all-to-all (Megatron --moe-token-dispatcher-type alltoall); deepep = one copy per distinct
// node over RDMA, forwarded over NVLink to each distinct rank (DeepEP normal kernels, Megatron's
// flex dispatcher with the deepep or hybridep backend; torchtitan expert_parallel_comm_backend).
enum class MoeDispatcher { kAllToAll, kDeepEP };

template <typename E>
struct EnumNames;  // specialised below: `static constexpr std::array<std::pair<E, const char*>, N> kTable`

template <>
struct EnumNames<Precision> {
  static constexpr std::string_view kWhat = "precision";
  static constexpr std::array<std::pair<Precision, const char*>, 3> kTable{
      {{Precision::kBF16, "bf16"}, {Precision::kFP16, "fp16"}, {Precision::kFP8, "fp8"}}};
};
template <>
struct EnumNames<Optimizer> {
  static constexpr std::string_view kWhat = "optimizer";
  static constexpr std::array<std::pair<Optimizer, const char*>, 3> kTable{
      {{Optimizer::kAdamW, "adamw"}, {Optimizer::kAdam, "adam"}, {Optimizer::kSGD, "sgd"}}};
};
template <>
struct EnumNames<NormKind> {
  static constexpr std::string_view kWhat = "norm";
  static constexpr std::array<std::pair<NormKind, const char*>, 2> kTable{
      {{NormKind::kLayerNorm, "layernorm"}, {NormKind::kRMSNorm, "rmsnorm"}}};
};
template <>
struct EnumNames<PositionEmbedding> {
  static constexpr std::string_view kWhat = "position_embedding";
  static constexpr std::array<std::pair<PositionEmbedding, const char*>, 3> kTable{
      {{PositionEmbedding::kRotary, "rope"},
       {PositionEmbedding::kLearned, "learned"},
       {PositionEmbedding::kNone, "none"}}};
};
template <>
struct EnumNames<RecomputeMode> {
  static constexpr std::string_view kWhat = "recompute";
  static constexpr std::array<std::pair<RecomputeMode, const char*>, 3> kTable{
      {{RecomputeMode::kNone, "none"}, {RecomputeMode::kSelective, "selective"}, {RecomputeMode::kFull, "full"}}};
};
template <>
struct EnumNames<RecomputeModule> {
  static constexpr std::string_view kWhat = "recompute_modules";
  static constexpr std::array<std::pair<RecomputeModule, const char*>, 7> kTable{
      {{RecomputeModule::kCoreAttn, "core_attn"},
       {RecomputeModule::kMoeAct, "moe_act"},
       {RecomputeModule::kLayernorm, "layernorm"},
       {RecomputeModule::kMlaUpProj, "mla_up_proj"},
       {RecomputeModule::kMlp, "mlp"},
       {RecomputeModule::kMoe, "moe"},
       {RecomputeModule::kSharedExperts, "shared_experts"}}};
};
template <>
struct EnumNames<OffloadModule> {
  static constexpr std::string_view kWhat = "offload_modules";
  static constexpr std::array<std::pair<OffloadModule, const char*>, 7> kTable{
      {{OffloadModule::kAttnNorm, "attn_norm"},
       {OffloadModule::kQkvLinear, "qkv_linear"},
       {OffloadModule::kCoreAttn, "core_attn"},
       {OffloadModule::kAttnProj, "attn_proj"},
       {OffloadModule::kMlpNorm, "mlp_norm"},
       {OffloadModule::kExpertFc1, "expert_fc1"},
       {OffloadModule::kMoeAct, "moe_act"}}};
};
template <>
struct EnumNames<Schedule> {
  static constexpr std::string_view kWhat = "schedule";
  static constexpr std::array<std::pair<Schedule, const char*>, 8> kTable{
      {{Schedule::kOneFOneB, "1f1b"},
       {Schedule::kInterleaved1F1B, "interleaved-1f1b"},
       {Schedule::kGPipe, "gpipe"},
       {Schedule::kZeroBubbleH1, "zb-h1"},
       {Schedule::kInterleavedZeroBubble, "interleaved-zb"},
       {Schedule::kZeroBubbleV, "zb-v"},
       {Schedule::kDualPipeV, "dualpipev"},
       {Schedule::kDualPipe, "dualpipe"}}};
};
template <>
struct EnumNames<GradSync> {
  static constexpr std::string_view kWhat = "grad_sync";
  static constexpr std::array<std::pair<GradSync, const char*>, 3> kTable{
      {{GradSync::kInBackward, "in-backward"}, {GradSync::kShifted, "shifted"}, {GradSync::kOverlapped, "overlapped"}}};
};

template <>
struct EnumNames<Fp8Recipe> {
  static constexpr std::string_view kWhat = "fp8_recipe";
  static constexpr std::array<std::pair<Fp8Recipe, const char*>, 4> kTable{{{Fp8Recipe::kDelayed, "delayed"},
                                                                            {Fp8Recipe::kTensorwise, "tensorwise"},
                                                                            {Fp8Recipe::kBlockwise, "blockwise"},
                                                                            {Fp8Recipe::kMxfp8, "mxfp8"}}};
};
template <>
struct EnumNames<MoeDispatcher> {
  static constexpr std::string_view kWhat = "dispatcher";
  static constexpr std::array<std::pair<MoeDispatcher, const char*>, 2> kTable{
      {{MoeDispatcher::kAllToAll, "alltoall"}, {MoeDispatcher::kDeepEP, "deepep"}}};
};
template <>
struct EnumNames<MoeBalancing> {
  static constexpr std::string_view kWhat = "moe_balancing";
  static constexpr std::array<std::pair<MoeBalancing, const char*>, 3> kTable{
      {{MoeBalancing::kAuxLoss, "aux-loss"},
       {MoeBalancing::kAuxLossFree, "aux-loss-free"},
       {MoeBalancing::kForceBalanced, "force-balanced"}}};
};

template <typename E>
std::string to_string(E value) {
  for (const auto& [v, name] : EnumNames<E>::kTable)
    if (v == value) return name;
  return "?";
}

template <typename E>
std::vector<std::string> enum_names() {
  std::vector<std::string> names;
  names.reserve(EnumNames<E>::kTable.size());
  for (const auto& entry : EnumNames<E>::kTable) names.emplace_back(entry.second);
  return names;
}

// Parses a name from the table; throws Error naming the valid ones otherwise.
template <typename E>
E parse_enum(std::string_view name) {
  for (const auto& [v, n] : EnumNames<E>::kTable)
    if (name == n) return v;
  const auto names = enum_names<E>();
  throw Error(unknown_name_message(EnumNames<E>::kWhat, name, names));
}

}  // namespace paratune
