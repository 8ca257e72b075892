// Launch settings for the frameworks of ../shared/frameworks (versions pinned there: Megatron-LM
// d98e8a64, torchtitan v0.2.2, DeepSpeed 38327e07); rule ids R/T/D refer to its *-rules.md.
// What a framework cannot run as planned comes from plan/framework_support.h (one source of
// truth); the emitters add how they wrote what they could.
#include "paratune/report/launch.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>
#include <optional>

namespace paratune {
namespace {

bool all_equal(const std::vector<int>& v) { return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end(); }

std::string join_slash(const std::vector<int>& v) { return fmt::format("{}", fmt::join(v, "/")); }

// --- Megatron-LM -----------------------------------------------------------------------------------------

// --pipeline-model-parallel-layout (R13): pp·vpp stages in order, stage s on rank s % pp (chunk
// s / pp) holding stage_layers[s % pp] / vpp decoder layers ("t"); the embedding "E" opens the first,
// the loss "L" closes the last. E.g. 6/9/9/8 layers: "E,t*6|t*9|t*9|t*8,L".
std::string megatron_layout(const ParallelConfig& p) {
  std::vector<std::string> stages;
  const int n = p.pp * p.vpp;
  for (int s = 0; s < n; ++s) {
    std::string stage = s == 0 ? "E," : "";
    stage += fmt::format("t*{}", p.stage_layers[static_cast<std::size_t>(s % p.pp)] / p.vpp);
    if (s == n - 1) stage += ",L";
    stages.push_back(std::move(stage));
  }
  return fmt::format("{}", fmt::join(stages, "|"));
}

// The N of --recompute-method block N (R19.5: every model chunk recomputes min(N, its layers)):
// the one that gives the plan's per-stage counts, else the most any chunk needs (recomputes more
// than planned: fits, slower than predicted). Second: whether it gives the plan's counts.
std::pair<int, bool> megatron_block_count(const std::vector<int>& recomputed, const std::vector<int>& layers, int vpp) {
  int n = 1;
  for (int r : recomputed) n = std::max(n, (r + vpp - 1) / vpp);
  for (std::size_t s = 0; s < layers.size(); ++s)
    if (recomputed[s] < layers[s]) n = std::max(1, recomputed[s] / vpp);
  bool exact = true;
  for (std::size_t s = 0; s < layers.size(); ++s) exact = exact && recomputed[s] == std::min(n * vpp, layers[s]);
  if (!exact) {
    n = 1;
    for (int r : recomputed) n = std::max(n, (r + vpp - 1) / vpp);
  }
  return {n, exact};
}

LaunchSettings megatron(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model) {
  LaunchSettings out;
  std::vector<std::string> args, notes;
  auto arg = [&](std::string a) { args.push_back(std::move(a)); };
  const bool fsdp = p.zero >= 2;
  arg(fmt::format("--tensor-model-parallel-size {}", p.tp));
  arg(fmt::format("--pipeline-model-parallel-size {}", p.pp));
  arg(fmt::format("--context-parallel-size {}", p.cp));
  if (model.moe) {
    arg(fmt::format("--expert-model-parallel-size {}", p.ep));
    arg(fmt::format("--expert-tensor-parallel-size {}", p.expert_tp()));
    if (p.ep > 1) arg("--moe-token-dispatcher-type alltoall");
    if (p.ep_overlap) arg("--overlap-moe-expert-parallel-comm");  // R17.1
  }
  if (p.sequence_parallel) arg("--sequence-parallel");
  if (p.zero == 1) {
    arg("--use-distributed-optimizer");  // ZeRO-1 (R21.1)
    // Hybrid sharding: the optimizer state is sharded over op ranks, replicated dp/op times (R22).
    if (p.op < p.dp) arg(fmt::format("--num-distributed-optimizer-instances {}", p.dp / p.op));
  } else if (fsdp) {  // ZeRO-2/3: Megatron-FSDP (R21.2)
    arg("--use-megatron-fsdp");
    arg(fmt::format("--data-parallel-sharding-strategy {}", p.zero == 2 ? "optim_grads" : "optim_grads_params"));
    arg("--ckpt-format fsdp_dtensor");
  }
  arg(fmt::format("--micro-batch-size {}", p.mbs));
  arg(fmt::format("--global-batch-size {}", training.global_batch));
  arg(fmt::format("--seq-length {}", training.seq_len));

  // Stages. Megatron's own split needs L % pp == 0 (R11.1) and gives equal stages; first/last
  // stages of other sizes with equal middle ones: --decoder-first/last-pipeline-num-layers (R12,
  // with vpp only --num-virtual-stages-per-pipeline-rank, R10.2); any other layout:
  // --pipeline-model-parallel-layout (R13, which sets vpp itself and excludes the vpp flags).
  if (p.pp > 1) {
    const std::vector<int> middle(p.stage_layers.begin() + 1, p.stage_layers.end() - 1);
    if (p.account_embedding || p.account_loss) {
      // Megatron's own split counting the embedding / loss as a layer (R11): the plan's layout.
      if (p.account_embedding) arg("--account-for-embedding-in-pipeline-split");
      if (p.account_loss) arg("--account-for-loss-in-pipeline-split");
      if (p.vpp > 1) arg(fmt::format("--num-virtual-stages-per-pipeline-rank {}", p.vpp));
    } else if (all_equal(p.stage_layers)) {
      if (p.vpp > 1) arg(fmt::format("--num-virtual-stages-per-pipeline-rank {}", p.vpp));
    } else if (all_equal(middle)) {
      arg(fmt::format("--decoder-first-pipeline-num-layers {}", p.stage_layers.front()));
      arg(fmt::format("--decoder-last-pipeline-num-layers {}", p.stage_layers.back()));
      if (p.vpp > 1) arg(fmt::format("--num-virtual-stages-per-pipeline-rank {}", p.vpp));
    } else {
      arg(fmt::format("--pipeline-model-parallel-layout \"{}\"", megatron_layout(p)));
    }
    if (p.vpp > 1 && !p.overlap_p2p) arg("--no-overlap-p2p-communication");
  }

  // Recompute: "uniform 1" recomputes every layer; "block N" the first N layers of every model
  // chunk on every rank (R19.5).
  if (p.recompute == RecomputeMode::kSelective) {
    arg("--recompute-granularity selective");
  } else if (p.recompute == RecomputeMode::kFull) {
    const std::vector<int> recomputed = recomputed_layers_per_stage(p);
    arg("--recompute-granularity full");
    if (recomputed == p.stage_layers) {
      arg("--recompute-method uniform");
      arg("--recompute-num-layers 1");
    } else {
      const auto [n, exact] = megatron_block_count(recomputed, p.stage_layers, p.vpp);
      arg("--recompute-method block");
      arg(fmt::format("--recompute-num-layers {}", n));
      if (!exact)
        notes.push_back(fmt::format("recompute: block {} per model chunk, the most any stage needs (the plan "
                                    "recomputes {} per stage): more than planned, slower than predicted",
                                    n, join_slash(recomputed)));
    }
  }

  const bool overlap_grad_reduce = p.grad_sync == GradSync::kOverlapped && p.overlap_grad_reduce;
  if (overlap_grad_reduce) arg("--overlap-grad-reduce");
  // --overlap-param-gather needs a sharded optimizer and --overlap-grad-reduce (R9.1).
  if (p.zero >= 1 && p.overlap_param_gather && overlap_grad_reduce) arg("--overlap-param-gather");
  if (p.tp_comm_overlap && p.tp > 1 && p.sequence_parallel) arg("--tp-comm-overlap");  // R8.1
  if (p.grad_sync == GradSync::kShifted)
    notes.push_back("grad_sync=shifted: no --overlap-grad-reduce, gradients are reduced after the pipeline flush");
  // Precision: FP8 does not choose the parameter dtype, so always with --bf16 (R20.2).
  if (training.precision == Precision::kFP16) {
    arg("--fp16");
  } else {
    arg("--bf16");
    if (!training.fp32_grad_accumulation) arg("--grad-reduce-in-bf16");  // R5.3
    if (training.precision == Precision::kFP8) {
      arg("--fp8-format hybrid");
      arg(fmt::format("--fp8-recipe {}", to_string(training.fp8_recipe)));  // R20.1 choices
      if (training.fp8_param_gather) arg("--fp8-param-gather");  // with the distributed optimizer (R20.3)
    }
  }
  // CUDA_DEVICE_MAX_CONNECTIONS (R6): 1 with tp or cp > 1 before Blackwell, unset with Megatron-FSDP.
  if (fsdp) notes.push_back("environment: leave CUDA_DEVICE_MAX_CONNECTIONS unset (Megatron-FSDP, R6.2)");
  else if (p.tp > 1 || p.cp > 1)
    notes.push_back("environment: CUDA_DEVICE_MAX_CONNECTIONS=1 (tp or cp > 1 on GPUs before Blackwell, R6.1)");

  for (const std::string& n : notes) out.text += "# " + n + "\n";
  for (std::size_t i = 0; i < args.size(); ++i) out.text += args[i] + (i + 1 < args.size() ? " \\\n" : "\n");
  return out;
}

// --- torchtitan ----------------------------------------------------------------------------------------

// module_fqns_per_model_part (T4.3a): one list of module names per stage, in stage order (stage s
// on rank s % pp, T4.4); the first holds tok_embeddings, the last norm and output.
std::string torchtitan_stages(const ParallelConfig& p) {
  std::vector<std::string> stages;
  const int n = p.pp * p.vpp;
  int layer = 0;
  for (int s = 0; s < n; ++s) {
    std::vector<std::string> modules;
    if (s == 0) modules.emplace_back("\"tok_embeddings\"");
    for (int k = 0; k < p.stage_layers[static_cast<std::size_t>(s % p.pp)] / p.vpp; ++k)
      modules.push_back(fmt::format("\"layers.{}\"", layer++));
    if (s == n - 1) {
      modules.emplace_back("\"norm\"");
      modules.emplace_back("\"output\"");
    }
    stages.push_back(fmt::format("[{}]", fmt::join(modules, ", ")));
  }
  return fmt::format("[{}]", fmt::join(stages, ", "));
}

LaunchSettings torchtitan(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model) {
  LaunchSettings out;
  std::string& t = out.text;
  t += "[parallelism]\n";
  // FSDP2 shards over op ranks and replicates over dp/op (HSDP); without ZeRO-2/3, replication
  // (DDP) (T1.7, T1.8).
  const int shard = p.zero >= 2 ? p.op : 1;
  t += fmt::format("data_parallel_replicate_degree = {}\n", p.dp / shard);
  t += fmt::format("data_parallel_shard_degree = {}\n", shard);
  // ZeRO-2: parameters stay gathered from forward to backward; ZeRO-3: freed after forward (the
  // default frees them unless PP is on, T1.8).
  if (p.zero == 2) t += "fsdp_reshard_after_forward = \"never\"\n";
  if (p.zero == 3 && p.pp > 1) t += "fsdp_reshard_after_forward = \"always\"\n";
  t += fmt::format("tensor_parallel_degree = {}\n", p.tp);
  const bool async_tp = p.tp_comm_overlap && p.tp > 1;
  if (async_tp) t += "enable_async_tensor_parallel = true\n";
  t += fmt::format("context_parallel_degree = {}\n", p.cp);
  if (model.moe) {
    t += fmt::format("expert_parallel_degree = {}\n", p.ep);
    t += fmt::format("expert_tensor_parallel_degree = {}\n", p.expert_tp());
  }
  t += fmt::format("pipeline_parallel_degree = {}\n", p.pp);
  if (p.pp > 1) {
    const char* schedule = p.schedule == Schedule::kInterleaved1F1B ? "Interleaved1F1B"
                           : p.schedule == Schedule::kGPipe        ? "GPipe"
                                                                    : "1F1B";  // T4.2 names
    t += fmt::format("pipeline_parallel_schedule = \"{}\"\n", schedule);
    t += fmt::format("pipeline_parallel_microbatch_size = {}\n", p.mbs);
    t += fmt::format("module_fqns_per_model_part = {}\n", torchtitan_stages(p));
  }
  t += "\n[activation_checkpoint]\n";  // one mode for every layer (T9)
  t += fmt::format("mode = \"{}\"\n", to_string(p.recompute));
  if (p.recompute == RecomputeMode::kSelective) t += "selective_ac_option = \"op\"\n";
  // Batches (T3): with pp = 1 the local batch is one micro-batch (accumulation makes the rest);
  // with pp > 1 one pipeline schedule over the replica's whole batch per step.
  t += "\n[training]\n";
  t += fmt::format("local_batch_size = {}\n", p.pp > 1 ? training.global_batch / p.dp : p.mbs);
  t += fmt::format("global_batch_size = {}\n", training.global_batch);
  t += fmt::format("seq_len = {}\n", training.seq_len);
  // FP8 only through [model] converters (T7.1-T7.2): quantize.linear.float8 with a recipe (T7.5;
  // paratune's blockwise is torchao's rowwise), quantize.linear.mx for mxfp8 (T7.7); MoE experts
  // with the grouped_mm converter of the same kind (T7.4), float8 only with pp = cp = 1 (T7.6).
  if (training.precision == Precision::kFP8) {
    const bool mx = training.fp8_recipe == Fp8Recipe::kMxfp8;
    std::vector<std::string> converters{mx ? "\"quantize.linear.mx\"" : "\"quantize.linear.float8\""};
    if (model.moe && (mx || (p.pp == 1 && p.cp == 1)))
      converters.emplace_back(mx ? "\"quantize.grouped_mm.mx\"" : "\"quantize.grouped_mm.float8\"");
    t += fmt::format("\n[model]\nconverters = [{}]\n", fmt::join(converters, ", "));
    // FSDP's float8 all-gather is the default tensorwise scaling without a recipe_name (T7.5).
    if (training.fp8_param_gather)
      t += "\n[quantize.linear.float8]\nenable_fsdp_float8_all_gather = true\n"
           "precompute_float8_dynamic_scale_for_fsdp = true\n";
    else if (!mx && training.fp8_recipe != Fp8Recipe::kDelayed)
      t += fmt::format("\n[quantize.linear.float8]\nrecipe_name = \"{}\"\n",
                       training.fp8_recipe == Fp8Recipe::kTensorwise ? "tensorwise" : "rowwise");
  }
  if (async_tp) t += "\n[compile]\nenable = true\n";  // async TP needs the compiled model (T6.1)
  return out;
}

// --- DeepSpeed ------------------------------------------------------------------------------------------
LaunchSettings deepspeed(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model) {
  LaunchSettings out;
  nlohmann::ordered_json j;
  // The batch rule train = micro x accumulation x dp, with dp from the mpu (D1, D2).
  j["train_batch_size"] = training.global_batch;
  j["train_micro_batch_size_per_gpu"] = p.mbs;
  j["gradient_accumulation_steps"] = p.num_microbatches(training);
  if (training.precision == Precision::kFP16) j["fp16"] = {{"enabled", true}};
  else j["bf16"] = {{"enabled", true}};
  const bool overlap = p.grad_sync == GradSync::kOverlapped && p.overlap_grad_reduce;
  nlohmann::ordered_json zero{{"stage", p.zero}, {"overlap_comm", overlap}, {"contiguous_gradients", true}};
  if (p.zero == 3 && p.op < p.dp) zero["mics_shard_size"] = p.op;  // MiCS: shard within op ranks
  j["zero_optimization"] = zero;
  if (p.recompute != RecomputeMode::kNone)
    j["activation_checkpointing"] = {{"partition_activations", p.sequence_parallel},
                                     {"contiguous_memory_optimization", false},
                                     {"cpu_checkpointing", false}};
  out.text = j.dump(2) + "\n";
  // Parallel degrees are not ds_config keys (D5.1, D6.1, the plan table).
  out.cannot_express.push_back(fmt::format(
      "parallel degrees are not DeepSpeed config keys: pass --tensor-model-parallel-size {} "
      "--pipeline-model-parallel-size {} to Megatron-DeepSpeed (PipelineModule(num_stages={})){}",
      p.tp, p.pp, p.pp, model.moe ? fmt::format(", and ep_size={} to the MoE layers", p.ep) : ""));
  return out;
}

}  // namespace

LaunchSettings launch_settings(Framework framework, const ParallelConfig& plan, const ModelSpec& model,
                               const TrainingSpec& training) {
  LaunchSettings out;
  switch (framework) {
    case Framework::kMegatron: out = megatron(plan, training, model); break;
    case Framework::kTorchtitan: out = torchtitan(plan, training, model); break;
    case Framework::kDeepSpeed: out = deepspeed(plan, training, model); break;
  }
  // What it cannot run as planned, from the one set of rules.
  std::vector<std::string> reasons = plan::unsupported_reasons(framework, plan, model, training);
  out.cannot_express.insert(out.cannot_express.begin(), reasons.begin(), reasons.end());
  return out;
}

}  // namespace paratune
