// What Megatron-LM runs as planned (paratune/launch/framework_support.h): its rules, each check
// citing the rule of data/frameworks/megatron-lm-rules.md it follows (R, Megatron-LM d98e8a64).
// Megatron-LM's launch: megatron.cc; its flag schema: schema_check.cc; the validate_args rules an
// emitted launch is checked against: megatron_rules.cc.
#include <fmt/format.h>

#include <optional>

#include "support.h"

namespace paratune::launch::support_detail {

namespace {

// Megatron's --recompute-method block N recomputes the first min(N, chunk layers) layers of every
// model chunk on every rank (R19.5): stage s (vpp chunks of L_s / vpp layers) recomputes
// min(N·vpp, L_s). Whether one N gives the plan's per-stage counts. Stage totals only: chunks are
// taken as even (L_s / vpp), also under an uneven layout.
bool one_block_count(const std::vector<int>& recomputed, const std::vector<int>& layers, int vpp) {
  std::optional<int> n;
  for (std::size_t s = 0; s < layers.size(); ++s) {
    if (recomputed[s] == layers[s]) continue;  // any N >= L_s / vpp
    if (recomputed[s] % vpp != 0 || (n && *n != recomputed[s] / vpp)) return false;
    n = recomputed[s] / vpp;
  }
  if (!n) return true;  // every layer: --recompute-method uniform
  for (std::size_t s = 0; s < layers.size(); ++s)
    if (recomputed[s] == layers[s] && *n * vpp < layers[s]) return false;
  return true;
}

}  // namespace

void megatron(const Input& in, Verdict& v) {
  const ParallelConfig& c = in.c;
  // Only 1F1B and, with vpp, interleaved 1F1B ("Schedules that Megatron-LM does not offer").
  if (c.schedule != Schedule::kOneFOneB && c.schedule != Schedule::kInterleaved1F1B && c.pp > 1 && v.refuse([&] {
        return fmt::format("schedule={}: Megatron-LM runs only 1F1B and, with vpp, interleaved 1F1B; it has no "
                           "GPipe, zero-bubble, V-shape or DualPipe schedule (megatron-lm-rules.md, \"Schedules that "
                           "Megatron-LM does not offer\")",
                           to_string(c.schedule));
      }))
    return;
  // The instances also split the expert data-parallel group (dp·cp·tp / (ep·etp) ranks), which
  // initialize_model_parallel divides by them as well; validate_args does not check it (R22).
  if (in.model.moe && c.zero == 1 && c.optimizer_shard_degree() < c.dp) {
    const int instances = c.dp / c.optimizer_shard_degree();
    const int expert_dp = c.expert_data_parallel_size();
    if (expert_dp % instances != 0 && v.refuse([&] {
          return fmt::format("zero=1 with op={}: --num-distributed-optimizer-instances {} must divide the expert "
                             "data-parallel size dp·cp·tp/(ep·etp) = {} as well as dp·cp; initialize_model_parallel "
                             "fails otherwise (R22)",
                             c.optimizer_shard_degree(), instances, expert_dp);
        }))
      return;
  }
  // ZeRO-1 is the distributed optimizer (R21.1), with --num-distributed-optimizer-instances dp/op
  // for op < dp (R22: (dp·cp) % instances == 0 holds as op divides dp). ZeRO-2/3 are Megatron-FSDP's
  // optim_grads / optim_grads_params strategies (R21.2), which require --ckpt-format fsdp_dtensor,
  // CUDA_DEVICE_MAX_CONNECTIONS unset or > 1 (R6.2; with tp/cp > 1 on Hopper that is only a warning,
  // R6.1), an adam or sgd optimizer (paratune's adamw is Megatron's adam); the rules name no
  // exclusion of pp, ep or cp (only --hybrid-context-parallel, R14.5, which paratune does not use).
  // Sharding over op < dp ranks with Megatron-FSDP is HSDP (--outer-dp-sharding-strategy, R21.2),
  // whose inner group size R21.2 does not give: not emitted.
  if (c.zero >= 2 && c.optimizer_shard_degree() < c.dp && v.refuse([&] {
        return fmt::format("zero={} with op={} < dp={}: Megatron-FSDP shards over the whole data-parallel group "
                           "(--data-parallel-sharding-strategy {}); its HSDP mode (--outer-dp-sharding-strategy) has "
                           "no documented inner-group size (R21.2)",
                           c.zero, c.optimizer_shard_degree(), c.dp, c.zero == 2 ? "optim_grads" : "optim_grads_params");
      }))
    return;
  // Recompute: one --recompute-num-layers N for every chunk of every rank (R19.5). Uneven stages are
  // always expressible: --decoder-first/last-pipeline-num-layers when the middle stages are equal
  // (R12), --pipeline-model-parallel-layout for any contiguous layout (R13).
  if (c.recompute == RecomputeMode::kFull && has_stage_detail(c)) {
    const std::vector<int> layers = layers_per_stage(c, in.model);
    const std::vector<int> recomputed = recomputed_per_stage(c, layers);
    if (!one_block_count(recomputed, layers, c.vpp) && v.refuse([&] {
          return fmt::format("recompute_layers={} per stage (of {}): Megatron-LM recomputes the same count N of "
                             "layers in every model chunk of every rank (--recompute-method block "
                             "--recompute-num-layers N, R19.5)",
                             join_slash(recomputed), join_slash(layers));
        }))
      return;
  }
  // --recompute-modules takes one or more names (nargs "+" in data/frameworks/megatron-lm.json, R19.1):
  // the empty set of selective recompute is a TransformerConfig setting the command line cannot give.
  if (c.recompute == RecomputeMode::kSelective && c.recompute_modules == 0 && v.refuse([] {
        return std::string("recompute_modules=none: Megatron-LM's --recompute-modules takes one or more module names "
                           "(R19.1); selective recompute of nothing is recompute=none");
      }))
    return;
  // --recompute-modules (R19.4): moe_act needs --moe-grouped-gemm (always emitted for MoE models);
  // mla_up_proj, moe, shared_experts need their model parts (resolve checks those); the delayed FP8
  // recipe cannot recompute moe_act or layernorm.
  if (in.training.precision == Precision::kFP8 && in.training.fp8_recipe == Fp8Recipe::kDelayed &&
      (c.recomputes(RecomputeModule::kMoeAct) || c.recomputes(RecomputeModule::kLayernorm)) && v.refuse([&] {
        return fmt::format("recompute_modules={} with fp8_recipe=delayed: Megatron-LM's delayed FP8 recipe cannot "
                           "recompute moe_act or layernorm (R19.4)",
                           fmt::join(recompute_module_names(c.recompute_modules), "+"));
      }))
    return;
  // --overlap-moe-expert-parallel-comm (R17): ep > 1, no full recompute, vpp with pp > 1 (resolve
  // checks these too), the alltoall dispatcher (emitted), --bf16/--fp16 (emitted, also with FP8,
  // R20.2), no shared-expert overlap (paratune models none) and at most one MTP layer.
  if (c.ep_overlap && (c.ep < 2 || c.recompute == RecomputeMode::kFull || (c.pp > 1 && c.vpp < 2)) && v.refuse([&] {
        return std::string("ep_overlap=true: --overlap-moe-expert-parallel-comm needs ep > 1, no full recompute and, "
                           "with pp > 1, virtual stages (R17.1)");
      }))
    return;
  if (c.ep_overlap && in.model.mtp_layers > 1 && v.refuse([&] {
        return fmt::format("ep_overlap=true with mtp_layers={}: --overlap-moe-expert-parallel-comm allows at most one "
                           "MTP layer (R17.1)",
                           in.model.mtp_layers);
      }))
    return;
  // --tp-comm-overlap needs --sequence-parallel (R8.1).
  if (c.tp_comm_overlap && c.tp > 1 && !c.sequence_parallel && v.refuse([&] {
        return std::string("tp_comm_overlap=true without sequence parallelism: --tp-comm-overlap requires "
                           "--sequence-parallel (R8.1)");
      }))
    return;
  // Virtual stages with pp = 2 need p2p overlap (R10.4).
  if (c.vpp > 1 && c.pp < 3 && !c.overlap_p2p && v.refuse([&] {
        return fmt::format("vpp={} with pp={} and overlap_p2p=false: with --no-overlap-p2p-communication virtual "
                           "stages need pp >= 3 (R10.4)",
                           c.vpp, c.pp);
      }))
    return;
  // A MoE model with linear biases needs expert-TP 1 (R15.3).
  if (in.model.moe && in.model.bias && c.expert_tp() != 1 && v.refuse([&] {
        return fmt::format("etp={}: a MoE model with linear biases requires --expert-tensor-parallel-size 1 (R15.3)",
                           c.expert_tp());
      }))
    return;
  // FP8: --fp8-recipe offers delayed, tensorwise, blockwise and mxfp8 (R20.1): every recipe
  // paratune models. Gradients reduced in bf16: --grad-reduce-in-bf16 (R5.3).
  if (in.judge_grad_sync && !runs_grad_sync(Framework::kMegatron, c.pp, c.grad_sync) &&
      v.refuse([&] { return grad_sync_reason(Framework::kMegatron, c.pp, c.grad_sync); }))
    return;
}

}  // namespace paratune::launch::support_detail
