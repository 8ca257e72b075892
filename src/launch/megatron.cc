// Megatron-LM launch (data/frameworks/megatron-lm-rules.md; rule ids R*): a complete bash
// script running pretrain_gpt.py under torchrun, with the plan's parallel layout, the model's
// shape, data/tokenizer placeholders and a training schedule.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>
#include <map>
#include <optional>

#include "emitters.h"
#include "paratune/launch/megatron_rules.h"
#include "paratune/launch/schema_check.h"
#include "paratune/spec/error.h"
#include "paratune/spec/hardware.h"

namespace paratune::launch::detail {
namespace {

// --pipeline-model-parallel-layout (R13): the configuration's own layout when it has one; else
// pp·vpp stages in order, stage s on rank s % pp (chunk s / pp) holding stage_layers[s % pp] / vpp
// decoder layers ("t"); the embedding "E" opens the first, the MTP layers "m" and the loss "L"
// close the last. E.g. 6/9/9/8 layers: "E,t*6|t*9|t*9|t*8,L".
std::string megatron_layout(const ParallelConfig& p, const ModelSpec& model) {
  if (!p.layout.empty()) return to_string(p.layout);
  std::vector<std::string> stages;
  const int n = p.pp * p.vpp;
  for (int s = 0; s < n; ++s) {
    std::string stage = s == 0 ? "E," : "";
    stage += fmt::format("t*{}", p.stage_layers[static_cast<std::size_t>(s % p.pp)] / p.vpp);
    if (s == n - 1 && model.mtp_layers > 0) stage += fmt::format(",m*{}", model.mtp_layers);
    if (s == n - 1) stage += ",L";
    stages.push_back(std::move(stage));
  }
  return fmt::format("{}", fmt::join(stages, "|"));
}

// The N of --recompute-method block N (R19.5: every model chunk recomputes min(N, its layers)).
// Works on stage totals with even chunks (layers / vpp); with an uneven layout the count is the
// same rule applied to even chunks, an approximation the note below names when inexact:
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
  // Multi-token prediction (Megatron-Core multi_token_prediction.py): on the last pipeline stage,
  // or where the layout's "m" puts it (R13.3: the layout's m count must equal this).
  if (m.mtp_layers > 0) a.push_back(fmt::format("--mtp-num-layers {}", m.mtp_layers));
  if (!m.dropout) {
    a.emplace_back("--attention-dropout 0.0");
    a.emplace_back("--hidden-dropout 0.0");
  }
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    a.push_back(fmt::format("--num-experts {}", e.num_experts));
    a.push_back(fmt::format("--moe-router-topk {}", e.top_k));
    a.push_back(fmt::format("--moe-ffn-hidden-size {}", e.expert_ffn_hidden_size));
    if (e.route_groups > 0) {  // group-limited routing (R16.3)
      a.push_back(fmt::format("--moe-router-num-groups {}", e.route_groups));
      a.push_back(fmt::format("--moe-router-group-topk {}", e.route_group_topk));
    }
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
std::vector<std::string> megatron_training_args() {
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
                             // Checkpoints every 500 iterations, resumed from on restart.
                             "--save \"${CHECKPOINT_DIR}\"",
                             "--load \"${CHECKPOINT_DIR}\"",
                             "--save-interval 500",
                             "--log-interval 10",
                             // Validation on the split's 1% every 500 iterations, 10 batches each.
                             "--eval-interval 500",
                             "--eval-iters 10"};
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
  // The software stack the flags were checked against: the Megatron-LM commit above, in the NGC
  // container its install guide names at both pinned versions (docs/get-started/install.md).
  s += "# Checked against that commit; run it in the NGC container its install guide names:\n"
       "# nvcr.io/nvidia/pytorch:26.01-py3 (Megatron-LM docs/get-started/install.md).\n";
  s += fmt::format("# Several nodes: sbatch --nodes={} --ntasks-per-node=1 --gpus-per-node={} this script.\n",
                   target.nodes, target.gpus_per_node);
  for (const std::string& n : notes) s += "# " + n + "\n";
  s += "set -euo pipefail\n";
  s += ": \"${MEGATRON_LM:?set MEGATRON_LM to a Megatron-LM checkout}\"\n";
  s += ": \"${DATA_PATH:?set DATA_PATH to the preprocessed data prefix (tools/preprocess_data.py)}\"\n";
  s += ": \"${TOKENIZER:?set TOKENIZER to a Hugging Face tokenizer name or path}\"\n";
  s += "CHECKPOINT_DIR=\"${CHECKPOINT_DIR:-$PWD/checkpoints}\"  # saved to and resumed from\n";
  for (const std::string& e : environment) s += e + "\n";
  s += torchrun_launch(target);
  s += "ARGS=(\n";
  for (const std::string& a : args) s += "  " + a + "\n";
  s += ")\n\"${LAUNCH[@]}\" \"$MEGATRON_LM/pretrain_gpt.py\" \"${ARGS[@]}\"\n";
  return s;
}

}  // namespace

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
    // R16.4: DeepEP is the flex dispatcher's deepep backend.
    if (p.dispatcher == MoeDispatcher::kDeepEP) {
      arg("--moe-token-dispatcher-type flex");
      arg("--moe-flex-dispatcher-backend deepep");
    } else if (p.ep > 1) {
      arg("--moe-token-dispatcher-type alltoall");
    }
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
    // The configuration's own layout (uneven chunks; it sets vpp itself, R13.2/R13.4), or stages
    // the first/last flags cannot express: --pipeline-model-parallel-layout.
    const bool needs_layout = !p.layout.empty() || (!p.account_embedding && !p.account_loss &&
                                                    !all_equal(p.stage_layers) && !all_equal(middle));
    if (needs_layout) {
      arg(fmt::format("--pipeline-model-parallel-layout \"{}\"", megatron_layout(p, model)));
    } else if (p.account_embedding || p.account_loss) {
      // Megatron's own split counting the embedding / loss as a layer (R11): the plan's layout.
      if (p.account_embedding) arg("--account-for-embedding-in-pipeline-split");
      if (p.account_loss) arg("--account-for-loss-in-pipeline-split");
      if (p.vpp > 1) arg(fmt::format("--num-virtual-stages-per-pipeline-rank {}", p.vpp));
    } else if (all_equal(p.stage_layers)) {
      if (p.vpp > 1) arg(fmt::format("--num-virtual-stages-per-pipeline-rank {}", p.vpp));
    } else {  // equal middle stages
      arg(fmt::format("--decoder-first-pipeline-num-layers {}", p.stage_layers.front()));
      arg(fmt::format("--decoder-last-pipeline-num-layers {}", p.stage_layers.back()));
      if (p.vpp > 1) arg(fmt::format("--num-virtual-stages-per-pipeline-rank {}", p.vpp));
    }
    if (p.vpp > 1 && !p.overlap_p2p) arg("--no-overlap-p2p-communication");
  }

  // Recompute: "uniform 1" recomputes every layer; "block N" the first N layers of every model
  // chunk on every rank (R19.5).
  if (p.recompute == RecomputeMode::kSelective) {
    arg("--recompute-granularity selective");
    // Megatron's default module list is core_attn (R19.4); any other set is stated, space-separated
    // (the empty set cannot be: megatron_support.cc refuses it).
    if (p.recompute_modules != kDefaultRecomputeModules)
      arg(fmt::format("--recompute-modules {}", fmt::join(recompute_module_names(p.recompute_modules), " ")));
  }
  // Activation offload (R19.8; module names as Megatron-Core's, megatron_support.cc admits
  // the set). Transformer Engine >= 2.10 must be told not to offload weights (environment below).
  if (p.offload_modules != 0) {
    arg("--fine-grained-activation-offloading");
    arg(fmt::format("--offload-modules {}", fmt::join(offload_module_names(p.offload_modules), " ")));
  }
  if (p.recompute == RecomputeMode::kFull) {
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
  const bool blackwell = gpu_generation(target.gpu) == "blackwell";
  std::vector<std::string> environment;
  if (fsdp) environment.emplace_back("unset CUDA_DEVICE_MAX_CONNECTIONS  # Megatron-FSDP (R6.2)");
  else if ((p.tp > 1 || p.cp > 1) && !blackwell)
    environment.emplace_back("export CUDA_DEVICE_MAX_CONNECTIONS=1  # tp or cp > 1 before Blackwell (R6.1)");

  if (p.offload_modules != 0)
    environment.emplace_back("export NVTE_CPU_OFFLOAD_V1=1  # activation offload with Transformer Engine >= 2.10 (R19.8)");

  for (std::string& a : megatron_model_args(model, training)) args.push_back(std::move(a));
  for (std::string& a : megatron_training_args()) args.push_back(std::move(a));
  // Every flag exists at the version with its type, choices and arity: else an emitter bug.
  if (const std::vector<std::string> problems = check_megatron_args(args, version); !problems.empty())
    throw Error(fmt::format("internal error: the Megatron-LM {} launch breaks the flag schema: {}", version,
                            fmt::join(problems, "; ")));
  // And every combination validate_args / TransformerConfig check (launch/megatron_rules.h); R6.1
  // binds GPUs before Blackwell only, where the script sets the variable.
  std::map<std::string, std::string> env;
  const bool connections_set = std::any_of(environment.begin(), environment.end(), [](const std::string& e) {
    return e.rfind("export CUDA_DEVICE_MAX_CONNECTIONS=1", 0) == 0;
  });
  if (connections_set) env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1";
  if (p.offload_modules != 0) env["NVTE_CPU_OFFLOAD_V1"] = "1";
  std::vector<std::string> violations = check_megatron_rules(args, p.num_gpus(), env);
  if (blackwell)
    std::erase_if(violations, [](const std::string& v) { return v.rfind("R6.1", 0) == 0; });
  if (!violations.empty())
    throw Error(fmt::format("internal error: the Megatron-LM {} launch breaks its validation rules: {}", version,
                            fmt::join(violations, "; ")));
  out.text = megatron_script(args, notes, environment, target, version, commit);
  return out;
}


}  // namespace paratune::launch::detail
