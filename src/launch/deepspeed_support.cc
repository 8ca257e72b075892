// What DeepSpeed runs as planned (paratune/launch/framework_support.h): its rules, each check citing
// the rule of data/frameworks/deepspeed-rules.md it follows (D, DeepSpeed 38327e07); a few checks
// are not rules of that file, and say so and why. DeepSpeed's launch: deepspeed.cc; its ds_config
// schema: schema_check.cc.
#include <fmt/format.h>

#include "support.h"

namespace paratune::launch::support_detail {

namespace {

bool even(const ParallelConfig& c, const ModelSpec& model) {
  return c.stage_layers.empty() || c.stage_layers == even_stage_layers(model.num_layers, c.pp);
}

}  // namespace

void deepspeed(const Input& in, Verdict& v) {
  const ParallelConfig& c = in.c;
  // The PipelineEngine refuses ZeRO stages 2 and 3 (D3.2).
  if (c.pp > 1 && c.zero >= 2 && v.refuse([&] {
        return fmt::format("zero={} with pp={}: DeepSpeed's PipelineEngine refuses ZeRO stages 2 and 3 (D3.2)", c.zero,
                           c.pp);
      }))
    return;
  // MoE layers with ZeRO-3 are refused (D3.3, D6.5).
  if (in.model.moe && c.zero == 3 && v.refuse([] {
        return std::string("zero=3 with a MoE model: DeepSpeed refuses MoE layers with ZeRO stage 3 (D3.3)");
      }))
    return;
  // Optimizer sharding over part of the data-parallel group exists for ZeRO-3 only (MiCS,
  // zero_optimization.mics_shard_size in deepspeed.json); stages 1 and 2 shard over all of it.
  if ((c.zero == 1 || c.zero == 2) && c.optimizer_shard_degree() < c.dp && v.refuse([&] {
        return fmt::format("zero={} with op={} < dp={}: ZeRO stages 1 and 2 shard over the whole data-parallel group; "
                           "partial sharding (mics_shard_size) is a stage-3 setting (deepspeed.json zero_optimization)",
                           c.zero, c.optimizer_shard_degree(), c.dp);
      }))
    return;
  // And MiCS needs its own model construction, deepspeed.zero.MiCS_Init; Megatron-DeepSpeed builds
  // the model under deepspeed.zero.Init (pretrain_gpt.py:46 at microsoft/Megatron-DeepSpeed@f4157bea),
  // which a mics_shard_size config fails under: ZeRO-3 shards over all of dp there (our reading, not a
  // rule of deepspeed-rules.md).
  if (c.zero == 3 && c.optimizer_shard_degree() < c.dp && v.refuse([&] {
        return fmt::format("zero=3 with op={} < dp={}: partial ZeRO-3 sharding is MiCS, which needs "
                           "deepspeed.zero.MiCS_Init; Megatron-DeepSpeed builds the model under deepspeed.zero.Init "
                           "(pretrain_gpt.py), so it shards over all of dp (ZeRO stages: D3; MiCS: our reading of Megatron-DeepSpeed, "
                           "not a rule of deepspeed-rules.md)",
                           c.optimizer_shard_degree(), c.dp);
      }))
    return;
  // No ring context parallelism: DeepSpeed's sequence parallelism is Ulysses (D2.4), which splits
  // attention heads with all-to-alls, a different method from the plan's cp.
  if (c.cp > 1 && v.refuse([&] {
        return fmt::format("cp={}: DeepSpeed has Ulysses sequence parallelism (all-to-all over heads), no ring context "
                           "parallelism (D2.4)",
                           c.cp);
      }))
    return;
  // One pipeline schedule, 1F1B-style: no interleaving, no zero-bubble, no GPipe (D5.3).
  if (c.pp > 1 && c.schedule != Schedule::kOneFOneB && v.refuse([&] {
        return fmt::format("schedule={}: DeepSpeed's PipelineEngine runs its own 1F1B-style schedule only (D5.3)",
                           to_string(c.schedule));
      }))
    return;
  // Stages come from PipelineModule's partition method (uniform, parameters, type), not from given
  // counts ("per-stage layouts: not available", D5 and the plan table).
  if (c.pp > 1 && !even(c, in.model) && v.refuse([&] {
        return fmt::format("stage layers {}: DeepSpeed's PipelineModule partitions by method (uniform, parameters, "
                           "type), not by given per-stage counts (D5)",
                           join_slash(c.stage_layers));
      }))
    return;
  // With pp > 1 the PipelineModule checkpoints every activation_checkpoint_interval layers on every
  // stage (D5.2): every layer or none. With one stage the model code chooses the layers (D7).
  if (c.pp > 1 && !all_recomputed(c, in.model) && v.refuse([&] {
        const std::vector<int> layers = layers_per_stage(c, in.model);
        return fmt::format("recompute_layers={} per stage (of {}): DeepSpeed's PipelineModule checkpoints every "
                           "activation_checkpoint_interval layers on every stage (D5.2)",
                           join_slash(recomputed_per_stage(c, layers)), join_slash(layers));
      }))
    return;
  // Which layers and modules are recomputed is the model code's (D7): Megatron-DeepSpeed's
  // --recompute-granularity selective recomputes core attention, with no module list (its
  // arguments predate Megatron-Core's --recompute-modules: our reading, not a rule of
  // deepspeed-rules.md).
  if (has_module_list(c) && v.refuse([&] {
        return fmt::format("recompute_modules={}: DeepSpeed (Megatron-DeepSpeed's --recompute-granularity "
                           "selective) recomputes core attention only; it has no --recompute-modules (D7)",
                           fmt::join(recompute_module_names(c.recompute_modules), "+"));
      }))
    return;
  // DeepSpeed's activation_checkpointing.cpu_checkpointing moves the checkpoints of full recompute to
  // the host (D7): not per module, and paratune does not model it.
  if (c.offload_modules != 0 && v.refuse([&] {
        return fmt::format("offload_modules={}: DeepSpeed has no per-module activation offload (its "
                           "activation_checkpointing.cpu_checkpointing moves full recompute's checkpoints, D7)",
                           offload_modules_text(c.offload_modules));
      }))
    return;
  // EP comes out of data parallelism only: ep divides dp; expert-TP is on (= tp) or off (D6.3).
  if (c.ep > 1 && c.dp % c.ep != 0 && v.refuse([&] {
        return fmt::format("ep={} does not divide dp={}: DeepSpeed carves expert parallelism out of data parallelism "
                           "only (D6.3)",
                           c.ep, c.dp);
      }))
    return;
  if (c.ep > 1 && c.expert_tp() != 1 && c.expert_tp() != c.tp && v.refuse([&] {
        return fmt::format("etp={} with tp={}: DeepSpeed's expert tensor parallelism is on (etp = tp) or off "
                           "(enable_expert_tensor_parallelism, D6.3)",
                           c.expert_tp(), c.tp);
      }))
    return;
  if (c.dispatcher == MoeDispatcher::kDeepEP && v.refuse([] {
        return std::string("dispatcher=deepep: DeepSpeed's MoE layer dispatches with an all-to-all only "
                           "(deepspeed.json moe constructor parameters, D6.1)");
      }))
    return;
  if (c.ep_overlap && v.refuse([] {
        return std::string("ep_overlap=true: DeepSpeed's MoE layer has no expert-parallel communication overlap "
                           "(deepspeed.json moe constructor parameters, D6.1)");
      }))
    return;
  // ds_config has fp16, bf16 and amp tables (D3.4), no FP8.
  if (in.training.precision == Precision::kFP8 && v.refuse([] {
        return std::string("precision=fp8: ds_config has no FP8 setting (fp16/bf16/amp only, D3.4)");
      }))
    return;
  // TP comes from Megatron-DeepSpeed's mpu (D2.4); no ds_config key overlaps its collectives.
  if (c.tp_comm_overlap && c.tp > 1 && v.refuse([] {
        return std::string("tp_comm_overlap=true: no DeepSpeed setting overlaps tensor-parallel communication with "
                           "GEMMs (deepspeed.json)");
      }))
    return;
  if (in.judge_grad_sync && !runs_grad_sync(Framework::kDeepSpeed, c.pp, c.grad_sync) &&
      v.refuse([&] { return grad_sync_reason(Framework::kDeepSpeed, c.pp, c.grad_sync); }))
    return;
}

}  // namespace paratune::launch::support_detail
