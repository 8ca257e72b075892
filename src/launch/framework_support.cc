// What Megatron-LM, torchtitan and DeepSpeed can run (plan/framework_support.h). One function per
// framework; each check cites the rule of data/frameworks/<framework>-rules.md it follows
// (R = Megatron-LM d98e8a64, T = torchtitan v0.2.2, D = DeepSpeed 38327e07). A few checks are not
// rules of those files; they say so and why.
#include "paratune/launch/framework_support.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "paratune/launch/launch.h"  // torchtitan's flavors (T10)

namespace paratune::launch {
namespace {

// Collects the reasons, or only whether there is one (reasons == nullptr: stop at the first).
class Verdict {
 public:
  explicit Verdict(std::vector<std::string>* reasons) : reasons_(reasons) {}
  // Records a refusal; true when the caller may stop checking.
  template <typename Why>
  bool refuse(Why&& why) {
    refused_ = true;
    if (reasons_) reasons_->push_back(why());
    return reasons_ == nullptr;
  }
  [[nodiscard]] bool refused() const { return refused_; }

 private:
  std::vector<std::string>* reasons_;
  bool refused_ = false;
};

struct Input {
  const ParallelConfig& c;
  const ModelSpec& model;
  const TrainingSpec& training;
  bool judge_grad_sync;
};

std::string join_slash(const std::vector<int>& v) { return fmt::format("{}", fmt::join(v, "/")); }

// Whether stage layouts or per-stage recompute counts are given (a level-1 configuration has
// neither: even stages, every layer recomputed with recompute=full).
bool has_stage_detail(const ParallelConfig& c) {
  return !c.stage_layers.empty() || !c.stage_recompute_layers.empty() || c.recompute_layers >= 0;
}

std::vector<int> layers_per_stage(const ParallelConfig& c, const ModelSpec& model) {
  return c.stage_layers.empty() ? even_stage_layers(model.num_layers, c.pp) : c.stage_layers;
}

// Fully recomputed layers of each stage (0 unless recompute=full).
std::vector<int> recomputed_per_stage(const ParallelConfig& c, const std::vector<int>& layers) {
  std::vector<int> out(layers.size(), 0);
  if (c.recompute != RecomputeMode::kFull) return out;
  for (std::size_t s = 0; s < layers.size(); ++s)
    out[s] = !c.stage_recompute_layers.empty() ? c.stage_recompute_layers[s]
             : c.recompute_layers < 0          ? layers[s]
                                               : std::min(c.recompute_layers, layers[s]);
  return out;
}

bool all_recomputed(const ParallelConfig& c, const ModelSpec& model) {
  if (c.recompute != RecomputeMode::kFull || !has_stage_detail(c)) return true;
  const std::vector<int> layers = layers_per_stage(c, model);
  return recomputed_per_stage(c, layers) == layers;
}

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

// Selective recompute of other modules than Megatron's default core attention.
bool has_module_list(const ParallelConfig& c) {
  return c.recompute == RecomputeMode::kSelective && c.recompute_modules != kDefaultRecomputeModules;
}

bool even(const ParallelConfig& c, const ModelSpec& model) {
  return c.stage_layers.empty() || c.stage_layers == even_stage_layers(model.num_layers, c.pp);
}

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

// --- Megatron-LM ---------------------------------------------------------------------------------------
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

// --- torchtitan ----------------------------------------------------------------------------------------
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

// --- DeepSpeed -----------------------------------------------------------------------------------------
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

void judge(Framework f, const Input& in, Verdict& v) {
  switch (f) {
    case Framework::kMegatron: megatron(in, v); return;
    case Framework::kTorchtitan: torchtitan(in, v); return;
    case Framework::kDeepSpeed: deepspeed(in, v); return;
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
