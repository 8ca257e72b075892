#include "paratune/report/launch.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>

namespace paratune {
namespace {

bool all_equal(const std::vector<int>& v) { return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end(); }

std::string join_slash(const std::vector<int>& v) { return fmt::format("{}", fmt::join(v, "/")); }

LaunchSettings megatron(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model) {
  LaunchSettings out;
  std::vector<std::string> args;
  auto arg = [&](std::string a) { args.push_back(std::move(a)); };
  arg(fmt::format("--tensor-model-parallel-size {}", p.tp));
  arg(fmt::format("--pipeline-model-parallel-size {}", p.pp));
  if (p.vpp > 1) arg(fmt::format("--virtual-pipeline-model-parallel-size {}", p.vpp));
  arg(fmt::format("--context-parallel-size {}", p.cp));
  if (model.moe) {
    arg(fmt::format("--expert-model-parallel-size {}", p.ep));
    arg(fmt::format("--expert-tensor-parallel-size {}", p.expert_tp()));
  }
  if (p.sequence_parallel) arg("--sequence-parallel");
  if (p.zero >= 1) {
    arg("--use-distributed-optimizer");
    // Hybrid sharding: the optimizer state is sharded over op ranks, replicated dp/op times.
    if (p.op < p.dp) arg(fmt::format("--num-distributed-optimizer-instances {}", p.dp / p.op));
    if (p.zero == 2)
      out.cannot_express.push_back(
          "zero=2: the distributed optimizer reduce-scatters gradients but keeps the full gradient buffer, so "
          "gradient memory is not sharded (as zero=1)");
    if (p.zero == 3)
      out.cannot_express.push_back(
          "zero=3: the distributed optimizer does not shard parameters; emitted as zero=1 (use torchtitan/FSDP2 for "
          "parameter sharding)");
  }
  arg(fmt::format("--micro-batch-size {}", p.mbs));
  arg(fmt::format("--global-batch-size {}", training.global_batch));
  arg(fmt::format("--seq-length {}", training.seq_len));

  // Recompute: Megatron's "block" method recomputes the first N layers of every pipeline stage (of
  // every model chunk with interleaving): one N for all stages.
  if (p.recompute == RecomputeMode::kSelective) {
    arg("--recompute-granularity selective");
  } else if (p.recompute == RecomputeMode::kFull) {
    const std::vector<int> recomputed = recomputed_layers_per_stage(p);
    if (recomputed == p.stage_layers) {
      arg("--recompute-granularity full");
      arg("--recompute-method uniform");
      arg("--recompute-num-layers 1");
    } else {
      const int most = *std::max_element(recomputed.begin(), recomputed.end());
      const int per_chunk = (most + p.vpp - 1) / p.vpp;
      arg("--recompute-granularity full");
      arg("--recompute-method block");
      arg(fmt::format("--recompute-num-layers {}", per_chunk));
      if (!all_equal(recomputed) || most % p.vpp != 0)
        out.cannot_express.push_back(fmt::format(
            "per-stage recompute {}: --recompute-num-layers is one count for every stage{}; emitted {} (the most "
            "any stage needs), which recomputes more layers than the plan and is slower than predicted",
            join_slash(recomputed), p.vpp > 1 ? " and model chunk" : "", per_chunk));
    }
  }

  // Uneven stages: only the first and last stage may differ from the others.
  if (p.pp > 1 && !all_equal(p.stage_layers)) {
    const std::vector<int> middle(p.stage_layers.begin() + 1, p.stage_layers.end() - 1);
    if (all_equal(middle)) {
      arg(fmt::format("--decoder-first-pipeline-num-layers {}", p.stage_layers.front()));
      arg(fmt::format("--decoder-last-pipeline-num-layers {}", p.stage_layers.back()));
    } else {
      out.cannot_express.push_back(fmt::format(
          "stage layers {}: --decoder-first/last-pipeline-num-layers make only the first and last stage uneven",
          join_slash(p.stage_layers)));
    }
  }

  if (p.grad_sync == GradSync::kOverlapped && p.overlap_grad_reduce) arg("--overlap-grad-reduce");
  if (p.zero >= 1 && p.overlap_param_gather) arg("--overlap-param-gather");
  if (p.tp_comm_overlap) arg("--tp-comm-overlap");
  if (p.grad_sync == GradSync::kShifted)
    out.text += "# grad_sync=shifted: no --overlap-grad-reduce, gradients are reduced after the pipeline flush\n";
  if (p.grad_sync == GradSync::kInBackward)
    out.cannot_express.push_back(
        "grad_sync=in-backward: Megatron reduces gradients overlapped (--overlap-grad-reduce) or after the flush");
  if (p.schedule == Schedule::kZeroBubbleH1 || p.schedule == Schedule::kGPipe)
    out.cannot_express.push_back(fmt::format(
        "schedule={}: Megatron-LM runs 1F1B or interleaved 1F1B; emitted as 1F1B", to_string(p.schedule)));
  if (training.precision == Precision::kFP8) arg("--fp8-format hybrid");
  else arg(training.precision == Precision::kBF16 ? "--bf16" : "--fp16");

  for (std::size_t i = 0; i < args.size(); ++i) out.text += args[i] + (i + 1 < args.size() ? " \\\n" : "\n");
  return out;
}

LaunchSettings torchtitan(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model) {
  LaunchSettings out;
  std::string& t = out.text;
  t += "[parallelism]\n";
  // FSDP2 shards over op ranks and replicates over dp/op (HSDP); ZeRO-0 is plain replication.
  const int shard = p.zero >= 1 ? p.op : 1;
  t += fmt::format("data_parallel_replicate_degree = {}\n", p.dp / shard);
  t += fmt::format("data_parallel_shard_degree = {}\n", shard);
  if (p.zero == 1 || p.zero == 2) {
    t += "fsdp_reshard_after_forward = \"never\"\n";
    out.cannot_express.push_back(fmt::format(
        "zero={}: FSDP2 always shards parameters at rest (ZeRO-3 memory); reshard_after_forward=never keeps them "
        "gathered from forward to backward, ZeRO-2's communication",
        p.zero));
  }
  t += fmt::format("tensor_parallel_degree = {}\n", p.tp);
  if (p.tp_comm_overlap) t += "enable_async_tensor_parallel = true\n";
  t += fmt::format("context_parallel_degree = {}\n", p.cp);
  if (model.moe) {
    t += fmt::format("expert_parallel_degree = {}\n", p.ep);
    t += fmt::format("expert_tensor_parallel_degree = {}\n", p.expert_tp());
  }
  t += fmt::format("pipeline_parallel_degree = {}\n", p.pp);
  if (p.pp > 1) {
    const char* schedule = p.schedule == Schedule::kInterleaved1F1B ? "Interleaved1F1B"
                           : p.schedule == Schedule::kGPipe        ? "GPipe"
                                                                    : "1F1B";
    if (p.schedule == Schedule::kZeroBubbleH1)
      out.cannot_express.push_back("schedule=zb-h1: torchtitan has ZBVZeroBubble/InterleavedZeroBubble, not ZB-H1; "
                                   "emitted as 1F1B");
    t += fmt::format("pipeline_parallel_schedule = \"{}\"\n", schedule);
    t += fmt::format("pipeline_parallel_microbatch_size = {}\n", p.mbs);
    // Boundaries of the pp x vpp model chunks (chunk c of rank r holds virtual stage c·pp + r).
    std::vector<std::string> splits;
    int layer = 0;
    for (int k = 0; k + 1 < p.pp * p.vpp; ++k) {
      layer += p.stage_layers[static_cast<std::size_t>(k % p.pp)] / p.vpp;
      splits.push_back(fmt::format("\"layers.{}\"", layer));
    }
    t += fmt::format("pipeline_parallel_split_points = [{}]\n", fmt::join(splits, ", "));
  }
  if (p.tp > 1 && !p.sequence_parallel)
    out.cannot_express.push_back("sp=false: torchtitan's tensor parallelism always shards norms over the sequence");
  t += "\n[activation_checkpoint]\n";
  t += fmt::format("mode = \"{}\"\n", to_string(p.recompute));
  if (p.recompute == RecomputeMode::kSelective) t += "selective_ac_option = \"op\"\n";
  if (p.recompute == RecomputeMode::kFull) {
    const std::vector<int> recomputed = recomputed_layers_per_stage(p);
    if (recomputed != p.stage_layers)
      out.cannot_express.push_back(fmt::format(
          "per-stage recompute {}: activation_checkpoint mode=full recomputes every layer", join_slash(recomputed)));
  }
  if (p.grad_sync != GradSync::kOverlapped)
    out.cannot_express.push_back(fmt::format(
        "grad_sync={}: FSDP2/DDP reduce gradients overlapped with the backward pass", to_string(p.grad_sync)));
  t += "\n[training]\n";
  t += fmt::format("local_batch_size = {}\n", training.global_batch / p.dp);
  t += fmt::format("global_batch_size = {}\n", training.global_batch);
  t += fmt::format("seq_len = {}\n", training.seq_len);
  if (training.precision == Precision::kFP8) t += "\n[float8]\nenable_fsdp_float8_all_gather = true\n";
  return out;
}

LaunchSettings deepspeed(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model) {
  LaunchSettings out;
  nlohmann::ordered_json j;
  j["train_batch_size"] = training.global_batch;
  j["train_micro_batch_size_per_gpu"] = p.mbs;
  j["gradient_accumulation_steps"] = p.num_microbatches(training);
  if (training.precision == Precision::kFP16) j["fp16"] = {{"enabled", true}};
  else j["bf16"] = {{"enabled", true}};
  nlohmann::ordered_json zero{{"stage", p.zero}, {"overlap_comm", p.overlap_grad_reduce}, {"contiguous_gradients", true}};
  if (p.zero == 3 && p.op < p.dp) zero["mics_shard_size"] = p.op;  // MiCS: shard within op ranks
  if (p.zero > 0 && p.zero < 3 && p.op < p.dp)
    out.cannot_express.push_back(fmt::format("op={} < dp={}: ZeRO-1/2 shard over the whole data-parallel group", p.op, p.dp));
  j["zero_optimization"] = zero;
  if (p.recompute != RecomputeMode::kNone)
    j["activation_checkpointing"] = {{"partition_activations", p.sequence_parallel},
                                     {"contiguous_memory_optimization", false},
                                     {"cpu_checkpointing", false}};
  out.text = j.dump(2) + "\n";
  out.cannot_express.push_back(fmt::format(
      "parallel degrees are not DeepSpeed config keys: pass --tensor-model-parallel-size {} --pipeline-model-parallel-size "
      "{} to Megatron-DeepSpeed (PipelineModule(num_stages={})){}",
      p.tp, p.pp, p.pp, model.moe ? fmt::format(", and ep_size={} to the MoE layers", p.ep) : ""));
  if (p.pp > 1 && p.zero >= 2)
    out.cannot_express.push_back(fmt::format("zero={} with pp={}: DeepSpeed's pipeline engine supports ZeRO-1 only", p.zero, p.pp));
  if (p.pp > 1 && p.schedule != Schedule::kOneFOneB)
    out.cannot_express.push_back(fmt::format("schedule={}: DeepSpeed's pipeline engine runs its own 1F1B schedule",
                                             to_string(p.schedule)));
  if (p.pp > 1 && !all_equal(p.stage_layers))
    out.cannot_express.push_back(fmt::format(
        "stage layers {}: PipelineModule partitions by method (uniform/parameters/type), not by given counts",
        join_slash(p.stage_layers)));
  if (p.recompute == RecomputeMode::kSelective)
    out.cannot_express.push_back("recompute=selective: DeepSpeed checkpoints whole layers (the model code chooses which)");
  if (p.recompute == RecomputeMode::kFull && recomputed_layers_per_stage(p) != p.stage_layers)
    out.cannot_express.push_back(fmt::format("per-stage recompute {}: checkpointed layers are chosen in the model code",
                                             join_slash(recomputed_layers_per_stage(p))));
  if (p.cp > 1)
    out.cannot_express.push_back(fmt::format("cp={}: DeepSpeed has Ulysses sequence parallelism, not ring context parallelism", p.cp));
  if (p.grad_sync != GradSync::kOverlapped)
    out.cannot_express.push_back(fmt::format("grad_sync={}: DeepSpeed reduces gradients during the backward pass",
                                             to_string(p.grad_sync)));
  if (training.precision == Precision::kFP8)
    out.cannot_express.push_back("precision=fp8: FP8 GEMMs come from Transformer Engine in the model code");
  return out;
}

}  // namespace

LaunchSettings launch_settings(Framework framework, const ParallelConfig& plan, const ModelSpec& model,
                               const TrainingSpec& training) {
  switch (framework) {
    case Framework::kMegatron: return megatron(plan, training, model);
    case Framework::kTorchtitan: return torchtitan(plan, training, model);
    case Framework::kDeepSpeed: return deepspeed(plan, training, model);
  }
  return {};
}

}  // namespace paratune
