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

#include "paratune/report/launch_check.h"
#include "paratune/spec/error.h"

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

// The model's shape (R3; Llama-style flags R3.4, MoE R16, MLA R18), from the model spec.
std::vector<std::string> megatron_model_args(const ModelSpec& m, const TrainingSpec& training) {
  std::vector<std::string> a;
  a.push_back(fmt::format("--num-layers {}", m.num_layers));
  a.push_back(fmt::format("--hidden-size {}", m.hidden_size));
  a.push_back(fmt::format("--ffn-hidden-size {}", m.ffn_hidden_size));
  a.push_back(fmt::format("--num-attention-heads {}", m.num_attention_heads));
  if (m.mla) {
    a.emplace_back("--multi-latent-attention");  // R18: always with its dimensions
    if (m.mla->q_lora_rank > 0) a.push_back(fmt::format("--q-lora-rank {}", m.mla->q_lora_rank));
    a.push_back(fmt::format("--kv-lora-rank {}", m.mla->kv_lora_rank));
    a.push_back(fmt::format("--qk-head-dim {}", m.mla->qk_nope_head_dim));
    a.push_back(fmt::format("--qk-pos-emb-head-dim {}", m.mla->qk_rope_head_dim));
    a.push_back(fmt::format("--v-head-dim {}", m.mla->v_head_dim));
  } else {
    if (m.kv_heads() != m.num_attention_heads) {  // R3.4: both flags, or MHA is used
      a.emplace_back("--group-query-attention");
      a.push_back(fmt::format("--num-query-groups {}", m.kv_heads()));
    }
    if (m.head_size() * m.num_attention_heads != m.hidden_size) a.push_back(fmt::format("--kv-channels {}", m.head_size()));
  }
  a.push_back(fmt::format("--seq-length {}", training.seq_len));
  a.push_back(fmt::format("--max-position-embeddings {}", std::max(training.seq_len, m.max_position_embeddings)));
  a.push_back(fmt::format("--position-embedding-type {}",
                          m.position_embedding == PositionEmbedding::kRotary ? "rope" : "learned_absolute"));
  a.push_back(fmt::format("--normalization {}", m.norm == NormKind::kRMSNorm ? "RMSNorm" : "LayerNorm"));
  if (m.gated_mlp) a.emplace_back("--swiglu");
  if (!m.bias) a.emplace_back("--disable-bias-linear");
  if (!m.bias && m.qkv_bias) a.emplace_back("--add-qkv-bias");
  if (!m.tie_embeddings) a.emplace_back("--untie-embeddings-and-output-weights");
  if (!m.dropout) {
    a.emplace_back("--attention-dropout 0.0");
    a.emplace_back("--hidden-dropout 0.0");
  }
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    a.push_back(fmt::format("--num-experts {}", e.num_experts));
    a.push_back(fmt::format("--moe-router-topk {}", e.top_k));
    a.push_back(fmt::format("--moe-ffn-hidden-size {}", e.expert_ffn_hidden_size));
    if (e.num_shared_experts > 0)  // the total over the shared experts (R16.6)
      a.push_back(fmt::format("--moe-shared-expert-intermediate-size {}", e.num_shared_experts * e.shared_ffn()));
    if (e.first_dense_layers > 0 || e.layer_freq > 1) {  // one 0/1 per layer (R16.2)
      std::string pattern = "[";
      for (int layer = 0; layer < m.num_layers; ++layer) pattern += (layer ? "," : "") + std::string(e.is_moe_layer(layer) ? "1" : "0");
      a.push_back(fmt::format("--moe-layer-freq \"{}]\"", pattern));
    }
    a.emplace_back("--moe-grouped-gemm");
    switch (training.moe_balancing) {
      case MoeBalancing::kAuxLoss:
        a.emplace_back("--moe-router-load-balancing-type aux_loss");
        a.emplace_back("--moe-aux-loss-coeff 1e-2");
        break;
      case MoeBalancing::kAuxLossFree:  // expert bias needs sigmoid scores (R16.3)
        a.emplace_back("--moe-router-load-balancing-type none");
        a.emplace_back("--moe-router-score-function sigmoid");
        a.emplace_back("--moe-router-enable-expert-bias");
        break;
      case MoeBalancing::kForceBalanced:
        a.emplace_back("--moe-router-load-balancing-type none");
        a.emplace_back("--moe-router-force-load-balancing");
        break;
    }
    if (training.moe_capacity_factor > 0)
      a.push_back(fmt::format("--moe-expert-capacity-factor {}", training.moe_capacity_factor));
  }
  return a;
}

// Data, tokenizer and the training schedule (R3.5, R3.6): data and tokenizer come from the
// environment (the placeholders the script asks for); the hyperparameters are common defaults.
std::vector<std::string> megatron_training_args(const TrainingSpec& training) {
  std::vector<std::string> a{"--data-path \"${DATA_PATH}\"",
                             "--split 99,1,0",
                             "--tokenizer-type HuggingFaceTokenizer",
                             "--tokenizer-model \"${TOKENIZER}\"",
                             "--train-iters 1000",
                             "--lr 3.0e-4",
                             "--min-lr 3.0e-5",
                             "--lr-decay-style cosine",
                             "--lr-warmup-iters 100",
                             "--weight-decay 0.1",
                             "--adam-beta1 0.9",
                             "--adam-beta2 0.95",
                             "--clip-grad 1.0",
                             "--init-method-std 0.02",
                             "--log-interval 1",
                             "--eval-iters 0"};
  return a;
}

// A bash script: environment, the placeholders, torchrun on one node or srun + torchrun (c10d
// rendezvous) on every node of a Slurm allocation (R0.5: torchrun sets RANK and WORLD_SIZE).
std::string megatron_script(const std::vector<std::string>& args, const std::vector<std::string>& notes,
                            const std::vector<std::string>& environment, const LaunchTarget& target,
                            const std::string& version, const std::string& commit) {
  std::string s = "#!/bin/bash\n";
  s += fmt::format("# Megatron-LM {} ({}) launch written by paratune: pretrain_gpt.py on {} node(s) x {} GPUs.\n",
                   version, commit.substr(0, 8), target.nodes, target.gpus_per_node);
  s += fmt::format("# Several nodes: sbatch --nodes={} --ntasks-per-node=1 --gpus-per-node={} this script.\n",
                   target.nodes, target.gpus_per_node);
  for (const std::string& n : notes) s += "# " + n + "\n";
  s += "set -euo pipefail\n";
  s += ": \"${MEGATRON_LM:?set MEGATRON_LM to a Megatron-LM checkout}\"\n";
  s += ": \"${DATA_PATH:?set DATA_PATH to the preprocessed data prefix (tools/preprocess_data.py)}\"\n";
  s += ": \"${TOKENIZER:?set TOKENIZER to a Hugging Face tokenizer name or path}\"\n";
  for (const std::string& e : environment) s += e + "\n";
  s += fmt::format("NNODES={}\nGPUS_PER_NODE={}\n", target.nodes, target.gpus_per_node);
  s += "if [ \"$NNODES\" -gt 1 ]; then\n"
       "  MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
       "  LAUNCH=(srun --ntasks-per-node=1 torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" "
       "--rdzv-backend c10d --rdzv-endpoint \"$MASTER_ADDR:29500\" --rdzv-id \"$SLURM_JOB_ID\")\n"
       "else\n"
       "  LAUNCH=(torchrun --standalone --nproc-per-node \"$GPUS_PER_NODE\")\n"
       "fi\n";
  s += "ARGS=(\n";
  for (const std::string& a : args) s += "  " + a + "\n";
  s += ")\n\"${LAUNCH[@]}\" \"$MEGATRON_LM/pretrain_gpt.py\" \"${ARGS[@]}\"\n";
  return s;
}

LaunchSettings megatron(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model,
                        const LaunchTarget& target, const std::string& version, const std::string& commit) {
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
  // CUDA_DEVICE_MAX_CONNECTIONS (R6): 1 with tp or cp > 1 before Blackwell (arch 10), unset with
  // Megatron-FSDP (R6.2).
  const bool blackwell = target.gpu.rfind("b200", 0) == 0 || target.gpu.rfind("gb200", 0) == 0;
  std::vector<std::string> environment;
  if (fsdp) environment.emplace_back("unset CUDA_DEVICE_MAX_CONNECTIONS  # Megatron-FSDP (R6.2)");
  else if ((p.tp > 1 || p.cp > 1) && !blackwell)
    environment.emplace_back("export CUDA_DEVICE_MAX_CONNECTIONS=1  # tp or cp > 1 before Blackwell (R6.1)");

  for (std::string& a : megatron_model_args(model, training)) args.push_back(std::move(a));
  for (std::string& a : megatron_training_args(training)) args.push_back(std::move(a));
  // Every flag exists at the version with its type, choices and arity: else an emitter bug.
  if (const std::vector<std::string> problems = check_megatron_args(args, version); !problems.empty())
    throw Error(fmt::format("internal error: the Megatron-LM {} launch breaks the flag schema: {}", version,
                            fmt::join(problems, "; ")));
  out.text = megatron_script(args, notes, environment, target, version, commit);
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
                               const TrainingSpec& training, const LaunchTarget& target) {
  const FrameworkTarget version =
      parse_framework_target(target.version.empty() ? to_string(framework) : to_string(framework) + "@" + target.version);
  LaunchSettings out;
  switch (framework) {
    case Framework::kMegatron:
      out = megatron(plan, training, model, target, version.version, framework_commit(version));
      if (training.optimizer == Optimizer::kSGD)
        out.cannot_express.push_back(fmt::format("optimizer=sgd: Megatron-LM {}'s --optimizer flag is deprecated; "
                                                 "the launch keeps its default, Adam",
                                                 version.version));
      break;
    case Framework::kTorchtitan: {
      out = torchtitan(plan, training, model);
      if (const auto problems = check_torchtitan_toml(out.text, version.version); !problems.empty())
        throw Error(fmt::format("internal error: the torchtitan {} job file breaks the key schema: {}", version.version,
                                fmt::join(problems, "; ")));
      break;
    }
    case Framework::kDeepSpeed: {
      out = deepspeed(plan, training, model);
      if (const auto problems = check_deepspeed_config(nlohmann::json::parse(out.text), version.version);
          !problems.empty())
        throw Error(fmt::format("internal error: the DeepSpeed {} config breaks the key schema: {}", version.version,
                                fmt::join(problems, "; ")));
      break;
    }
  }
  // What it cannot run as planned, from the one set of rules.
  std::vector<std::string> reasons = plan::unsupported_reasons(framework, plan, model, training);
  out.cannot_express.insert(out.cannot_express.begin(), reasons.begin(), reasons.end());
  return out;
}

}  // namespace paratune
