// What torchtitan runs as planned (paratune/launch/framework_support.h): its rules, each check
// citing the rule of data/frameworks/torchtitan-rules.md it follows (T, torchtitan v0.2.2); a few
// checks are not rules of that file, and say so and why. torchtitan's launch and the models it
// builds (T10): torchtitan.cc; its TOML schema: schema_check.cc.
#include <fmt/format.h>

#include "support.h"

namespace paratune::launch::support_detail {

void torchtitan(const Input& in, Verdict& v) {
  const ParallelConfig& c = in.c;
  const TrainingSpec& t = in.training;
  // Only bfloat16 or float32 parameters; no fp16 (T5.3).
  if (t.precision == Precision::kFP16 &&
      v.refuse([] { return std::string("precision=fp16: torchtitan has no fp16 mode (bfloat16 or float32, T5.3)"); }))
    return;
  // Data parallelism (T1.7, T1.8): dp_shard > 1 or cp > 1 is FSDP2 over dp_shard × cp (ZeRO-3;
  // ZeRO-2-like with fsdp_reshard_after_forward = "never"), HSDP when dp_replicate > 1 too; else
  // dp_replicate > 1 is DDP, allowed only as the only parallelism. No ZeRO-1 mode. The plan's
  // sharding: zero 2/3 over op ranks -> dp_shard = op, dp_replicate = dp/op; zero 0 -> replicate dp.
  if (c.zero == 1 && v.refuse([] {
        return std::string("zero=1: torchtitan has no optimizer-only sharding; FSDP2 shards parameters, gradients "
                           "and optimizer state (ZeRO-3, or ZeRO-2-like with fsdp_reshard_after_forward=\"never\"), "
                           "DDP shards nothing (T1.8)");
      }))
    return;
  const int shard = c.zero >= 2 ? c.optimizer_shard_degree() : 1;
  const int replicate = c.dp / shard;
  const bool plan_shards = shard > 1;
  // With cp > 1, FSDP2 shards over dp_shard × cp (T1.7): a plan that shards (over op ranks) is run
  // with cp times the sharding group, the same technique; a plan that does not shard cannot be run.
  if (c.cp > 1 && !plan_shards && v.refuse([&] {
        return fmt::format("zero={}{} with cp={}: torchtitan applies FSDP2 over dp_shard x cp whenever cp > 1, "
                           "sharding parameters, gradients and optimizer state over the cp ranks (T1.7)",
                           c.zero, c.zero >= 2 ? fmt::format(" over op={} rank", shard) : "", c.cp);
      }))
    return;
  const bool fsdp = plan_shards || c.cp > 1;
  if (!fsdp && replicate > 1 && (c.tp > 1 || c.pp > 1) && v.refuse([&] {
        return fmt::format("zero={} with dp={} and {}: unsharded data parallelism is DDP, which torchtitan refuses "
                           "together with tensor or pipeline parallelism (T1.7)",
                           c.zero, c.dp, c.tp > 1 ? fmt::format("tp={}", c.tp) : fmt::format("pp={}", c.pp));
      }))
    return;
  // Without FSDP or DDP and with TP or PP, mixed precision is off: training runs in training.dtype
  // without fp32 master weights (T5.2), not what the plan's memory and time assume.
  if (!fsdp && replicate == 1 && (c.tp > 1 || c.pp > 1) && t.precision != Precision::kFP16 && v.refuse([&] {
        return std::string("no sharded data parallelism (dp_shard = cp = 1) with tp/pp > 1: torchtitan switches "
                           "mixed precision off and trains in training.dtype without fp32 master weights (T5.2)");
      }))
    return;
  // FSDP2 reduces gradients in float32 only (mixed_precision_reduce, T5.1).
  if (fsdp && !t.fp32_grad_accumulation && v.refuse([] {
        return std::string("bf16 gradient reduction: torchtitan's FSDP2 reduces in float32 only "
                           "(training.mixed_precision_reduce, T5.1)");
      }))
    return;
  // TP always includes sequence parallelism (T2.1), and seq_len % (tp·2·cp) == 0 (T2.1).
  if (c.tp > 1 && !c.sequence_parallel && v.refuse([&] {
        return fmt::format("sp=false with tp={}: torchtitan's tensor parallelism always shards the sequence (no "
                           "separate switch, T2.1)",
                           c.tp);
      }))
    return;
  if (t.seq_len % (c.tp * 2 * c.cp) != 0 && v.refuse([&] {
        return fmt::format("seq_len={} is not divisible by tp·2·cp = {} (T2.1)", t.seq_len, c.tp * 2 * c.cp);
      }))
    return;
  // Expert parallelism: etp is 1 or tp (T1.4); ep·etp divides dp_shard·cp·tp, EP never uses the
  // replicate ranks (T1.5).
  if (c.ep > 1) {
    if (c.expert_tp() != 1 && c.expert_tp() != c.tp && v.refuse([&] {
          return fmt::format("etp={} with tp={}: with ep > 1 expert_tensor_parallel_degree must be 1 or tp (T1.4)",
                             c.expert_tp(), c.tp);
        }))
      return;
    const int sparse = shard * c.cp * c.tp;
    if (sparse % (c.ep * c.expert_tp()) != 0 && v.refuse([&] {
          return fmt::format("ep={} x etp={} does not divide dp_shard·cp·tp = {}·{}·{}: torchtitan carves expert "
                             "parallelism out of the FSDP-shard, CP and TP ranks, never the replicate ones (T1.5)",
                             c.ep, c.expert_tp(), shard, c.cp, c.tp);
        }))
      return;
  }
  // Schedules: 1F1B, GPipe, Interleaved1F1B, InterleavedZeroBubble, ZBVZeroBubble, DualPipeV; no ZB-H1,
  // no two-direction DualPipe (T4.2).
  if (c.schedule == Schedule::kZeroBubbleH1 && c.pp > 1 && v.refuse([] {
        return std::string("schedule=zb-h1: torchtitan has no ZB-H1 (its zero-bubble schedules are the multi-stage "
                           "InterleavedZeroBubble and ZBVZeroBubble, T4.2)");
      }))
    return;
  if (c.schedule == Schedule::kDualPipe && v.refuse([] {
        return std::string("schedule=dualpipe: torchtitan runs DualPipeV, the V-shaped cut of DualPipe, not the "
                           "two-direction DualPipe with two parameter copies (T4.2)");
      }))
    return;
  // Stage layouts: any, with module_fqns_per_model_part (T4.3a). Recompute: one mode for every
  // layer of every stage (T9.3).
  if (!all_recomputed(c, in.model) && v.refuse([&] {
        const std::vector<int> layers = layers_per_stage(c, in.model);
        return fmt::format("recompute_layers={} per stage (of {}): activation_checkpoint.mode applies to every layer "
                           "of every stage (T9.3)",
                           join_slash(recomputed_per_stage(c, layers)), join_slash(layers));
      }))
    return;
  // Selective recompute is per-operator ("op") or every N-th layer (T9.2): no module list.
  if (has_module_list(c) && v.refuse([&] {
        return fmt::format("recompute_modules={}: torchtitan's selective activation checkpointing is per operator "
                           "(selective_ac_option = \"op\") or every N-th layer (T9.2); it has no module list",
                           fmt::join(recompute_module_names(c.recompute_modules), "+"));
      }))
    return;
  // torchtitan v0.2.2 offloads FSDP parameters and optimizer state (--training.enable_cpu_offload),
  // not activations: its activation_checkpoint section has modes and a memory budget only
  // (data/frameworks/torchtitan.json; our reading, not a rule of torchtitan-rules.md).
  if (c.offload_modules != 0 && v.refuse([&] {
        return fmt::format("offload_modules={}: torchtitan has no activation offload (its --training.enable_cpu_offload "
                           "moves FSDP parameters and optimizer state)",
                           offload_modules_text(c.offload_modules));
      }))
    return;
  // Expert-parallel communication overlap exists only with the DualPipeV schedule (T4.6), which
  // paratune does not model.
  if (c.dispatcher == MoeDispatcher::kDeepEP && c.expert_tp() != 1 && v.refuse([&] {
        return fmt::format("dispatcher=deepep with etp={}: torchtitan's DeepEP backend needs expert TP 1 "
                           "(expert_parallel_comm_backend, T8.3)",
                           c.expert_tp());
      }))
    return;
  if (c.ep_overlap && !(c.schedule == Schedule::kDualPipeV && c.pp > 1 && c.ep > 1) && v.refuse([] {
        return std::string("ep_overlap=true: torchtitan overlaps expert-parallel communication only in the DualPipeV "
                           "schedule with pp > 1 and ep > 1 (pipeline_parallel_expert_parallel_overlap, T4.6)");
      }))
    return;
  // FP8 (T7): quantize.linear.float8 with recipe tensorwise or rowwise (paratune's blockwise is
  // torchao's rowwise, spec/enums.h), quantize.linear.mx for mxfp8; no delayed scaling. MoE
  // experts in float8 (quantize.grouped_mm.float8) need pp = 1 and cp = 1 (T7.6).
  if (t.precision == Precision::kFP8) {
    if (t.fp8_recipe == Fp8Recipe::kDelayed && v.refuse([] {
          return std::string("fp8_recipe=delayed: torchtitan's float8 recipes are tensorwise, rowwise and "
                             "rowwise_with_gw_hp (quantize.linear.float8.recipe_name, T7.5), or mxfp8 (T7.7)");
        }))
      return;
    // FSDP's float8 all-gather: tensorwise scaling only, over a sharded data-parallel dimension (T7.5).
    if (t.fp8_param_gather && (t.fp8_recipe != Fp8Recipe::kTensorwise || c.zero != 3) && v.refuse([&] {
          return fmt::format("fp8_param_gather with fp8_recipe={}, zero={}: enable_fsdp_float8_all_gather needs the "
                             "tensorwise recipe and FSDP (zero=3, dp_shard > 1) (T7.5)",
                             to_string(t.fp8_recipe), c.zero);
        }))
      return;
    if (in.model.moe && t.fp8_recipe != Fp8Recipe::kMxfp8 && (c.pp > 1 || c.cp > 1) && v.refuse([&] {
          return fmt::format("fp8 MoE experts with pp={}, cp={}: quantize.grouped_mm.float8 needs pp = 1 and cp = 1 "
                             "(T7.6)",
                             c.pp, c.cp);
        }))
      return;
  }
  // Models (T4.1, T2.2), recognised by paratune's preset names: qwen3 registers no pipelining
  // function; deepseek_v3 671B uses flex attention, which refuses context parallelism.
  if (in.model.name.starts_with("qwen3") && c.pp > 1 && v.refuse([&] {
        return fmt::format("pp={} with {}: torchtitan's qwen3 has no pipeline-parallel support at v0.2.2 (T4.1)", c.pp,
                           in.model.name);
      }))
    return;
  if (in.model.name == "deepseek-v3" && c.cp > 1 && v.refuse([&] {
        return fmt::format("cp={} with deepseek-v3: torchtitan's deepseek_v3 671B uses flex attention, which refuses "
                           "context parallelism (T2.2)",
                           c.cp);
      }))
    return;
  if (in.judge_grad_sync && !runs_grad_sync(Framework::kTorchtitan, c.pp, c.grad_sync) &&
      v.refuse([&] { return grad_sync_reason(Framework::kTorchtitan, c.pp, c.grad_sync); }))
    return;
}

}  // namespace paratune::launch::support_detail
