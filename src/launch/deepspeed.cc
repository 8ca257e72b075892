// DeepSpeed launch (data/frameworks/deepspeed-rules.md; rule ids D*): a complete bash script
// running Megatron-DeepSpeed's pretrain_gpt.py, the training code through which the rules give a
// plan's parallel degrees to DeepSpeed (D2.4, D5.1, the plan table). The script writes the ds_config
// with a quoted heredoc (`cat > "$DS_CONFIG" <<'JSON'` ... `JSON`, written as checked against the
// schema) and starts the deepspeed launcher on one node, srun + torchrun (or the
// deepspeed launcher with a hostfile) on several. The tensor/pipeline/expert degrees, the model's
// shape, data/tokenizer placeholders and the schedule are Megatron-DeepSpeed arguments.
//
// paratune has no schema of Megatron-DeepSpeed's flags (data/frameworks pins Megatron-LM,
// torchtitan and DeepSpeed only); the arguments below are those of Megatron-DeepSpeed's own example
// launches (examples_deepspeed/), and the script says so.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>
#include <optional>

#include "emitters.h"
#include "paratune/launch/schema_check.h"
#include "paratune/spec/error.h"

namespace paratune::launch::detail {
namespace {

constexpr const char* kJsonHeredocOpen = "<<'JSON'\n";
constexpr const char* kJsonHeredocClose = "\nJSON\n";

// The ds_config (D0-D4, D7). W, the data-parallel size DeepSpeed divides the batch by, is the plan's
// dp: Megatron-DeepSpeed passes its mpu with one stage (--no-pipeline-parallel) and builds a
// PipelineModule over a (pp, dp, tp) grid with several (D2.3, D2.4).
nlohmann::ordered_json deepspeed_config_json(const ParallelConfig& p, const TrainingSpec& training,
                                             const ModelSpec& model, std::vector<std::string>& cannot_express) {
  nlohmann::ordered_json j;
  // D1.3: all three batch keys, train = micro x accumulation x dp.
  j["train_batch_size"] = training.global_batch;
  j["train_micro_batch_size_per_gpu"] = p.mbs;
  j["gradient_accumulation_steps"] = p.num_microbatches(training);
  j["steps_per_print"] = 10;
  j["wall_clock_breakdown"] = false;
  // Clipping is the top-level key, never optimizer.params.max_grad_norm (D3.10).
  j["gradient_clipping"] = 1.0;
  // Precision: fp16 and bf16 exclude each other (D3.4); FP8 has no setting (framework_support).
  if (training.precision == Precision::kFP16) {
    j["fp16"] = {{"enabled", true}, {"loss_scale", 0}, {"initial_scale_power", 16}};  // 0: dynamic scaling
  } else {
    j["bf16"] = {{"enabled", true}};
    // Gradient accumulation dtype (D4, deepspeed.json data_types): without ZeRO bf16 accumulates in
    // fp32 by default (D4.1), and bf16 accumulation is allowed only with a pipeline (D4.3); with
    // ZeRO-1, fp32 accumulation is the BF16 optimizer (D4.2). Stages 2 and 3 keep the default.
    if (p.zero == 0 && !training.fp32_grad_accumulation) {
      if (p.pp > 1) j["data_types"] = {{"grad_accum_dtype", "bf16"}};
      else
        cannot_express.emplace_back("fp32_grad_accumulation=false with bf16 and no ZeRO: DeepSpeed accumulates "
                                    "gradients in fp32 there, and refuses bf16 accumulation without a pipeline (D4.3)");
    } else if (p.zero == 1 && training.fp32_grad_accumulation) {
      j["data_types"] = {{"grad_accum_dtype", "fp32"}};
    }
  }
  const bool overlap = p.grad_sync == GradSync::kOverlapped && p.overlap_grad_reduce;
  nlohmann::ordered_json zero{{"stage", p.zero}, {"overlap_comm", overlap}, {"contiguous_gradients", true}};
  j["zero_optimization"] = zero;  // ZeRO-3 over all of dp: MiCS (op < dp) is refused (framework_support)
  // MoE with pp > 1 and tp > 1: two tensors that need gradients pass between stages, which the
  // PipelineEngine's partitioned send cannot carry; Megatron-DeepSpeed asserts both flags are off but
  // reads them absent as off, while DeepSpeed's defaults are on (gpt_model.py:376-384 at
  // microsoft/Megatron-DeepSpeed@f4157bea): say so.
  if (model.moe && p.pp > 1 && p.tp > 1) j["pipeline"] = {{"pipe_partitioned", false}, {"grad_partitioned", false}};
  // A client optimizer other than DeepSpeed's tested ones needs this with ZeRO (D3.9).
  if (training.optimizer == Optimizer::kSGD && p.zero > 0) j["zero_allow_untested_optimizer"] = true;
  // D7: the checkpointing table. Which layers are recomputed is Megatron-DeepSpeed's --recompute-*
  // (D7); the plan's sequence parallelism is --sequence-parallel, so no extra partitioning here.
  const std::vector<int> recomputed = recomputed_layers_per_stage(p);
  if (p.recompute == RecomputeMode::kFull && std::accumulate(recomputed.begin(), recomputed.end(), 0) > 0)
    j["activation_checkpointing"] = {{"partition_activations", false},
                                     {"contiguous_memory_optimization", false},
                                     {"cpu_checkpointing", false}};
  return j;
}

// The model's shape as Megatron-DeepSpeed arguments; what they cannot say goes to cannot_express.
std::vector<std::string> model_args(const ModelSpec& m, const TrainingSpec& training, const ParallelConfig& p,
                                    std::vector<std::string>& notes, std::vector<std::string>& cannot_express) {
  std::vector<std::string> a;
  const bool all_moe = m.moe && m.moe->first_dense_layers == 0 && m.moe->layer_freq == 1;
  a.push_back(fmt::format("--num-layers {}", m.num_layers));
  a.push_back(fmt::format("--hidden-size {}", m.hidden_size));
  // The experts' MLPs are Megatron-DeepSpeed's MLP at --ffn-hidden-size: with every layer MoE, the
  // expert size.
  a.push_back(fmt::format("--ffn-hidden-size {}", all_moe ? m.moe->expert_ffn_hidden_size : m.ffn_hidden_size));
  a.push_back(fmt::format("--num-attention-heads {}", m.num_attention_heads));
  if (m.mla)
    cannot_express.emplace_back("multi-latent attention: Megatron-DeepSpeed has no MLA; the launch would train "
                                "the model with standard attention");
  // deepspeed-rules.md names no multi-token-prediction module (Megatron-DeepSpeed has no
  // --mtp-num-layers): the launch trains without the MTP layers the estimate costs.
  if (m.mtp_layers > 0)
    cannot_express.push_back(fmt::format("mtp_layers={}: Megatron-DeepSpeed has no multi-token prediction; the launch "
                                         "would train without the MTP layers the estimate includes",
                                         m.mtp_layers));
  if (m.kv_heads() != m.num_attention_heads) a.push_back(fmt::format("--num-key-value-heads {}", m.kv_heads()));
  if (m.head_size() * m.num_attention_heads != m.hidden_size) a.push_back(fmt::format("--kv-channels {}", m.head_size()));
  a.push_back(fmt::format("--seq-length {}", training.seq_len));
  a.push_back(fmt::format("--max-position-embeddings {}", std::max(training.seq_len, m.max_position_embeddings)));
  if (m.position_embedding == PositionEmbedding::kRotary) {
    a.emplace_back("--use-rotary-position-embeddings");
    a.emplace_back("--no-position-embedding");
  } else if (m.position_embedding == PositionEmbedding::kNone) {
    a.emplace_back("--no-position-embedding");
  }
  if (m.norm == NormKind::kRMSNorm) a.emplace_back("--normalization rmsnorm");
  if (m.gated_mlp) a.emplace_back("--swiglu");
  if (!m.bias) a.emplace_back("--disable-bias-linear");
  if (!m.bias && m.qkv_bias)
    cannot_express.emplace_back("qkv_bias: Megatron-DeepSpeed has no bias for q/k/v alone; --disable-bias-linear "
                                "drops it with the others");
  if (!m.tie_embeddings) a.emplace_back("--untie-embeddings-and-output-weights");
  if (!m.dropout) {
    a.emplace_back("--attention-dropout 0.0");
    a.emplace_back("--hidden-dropout 0.0");
  }
  if (training.flash_attention) a.emplace_back("--use-flash-attn-v2");
  if (m.moe) {
    // MoE is DeepSpeed's layer (D6.1): num_experts, ep_size, k from these flags; ep divides dp (D6.3).
    const MoeSpec& e = *m.moe;
    a.push_back(fmt::format("--num-experts {}", e.num_experts));
    a.push_back(fmt::format("--moe-expert-parallel-size {}", p.ep));
    a.push_back(fmt::format("--topk {}", e.top_k));
    a.push_back(fmt::format("--expert-interval {}", e.layer_freq));
    // The experts' parameters in their own optimizer groups, which DeepSpeed's ZeRO requires.
    a.emplace_back("--create-moe-param-group");
    if (p.pp > 1)
      notes.emplace_back("MoE with pp > 1: Megatron-DeepSpeed's MoE examples run with --no-pipeline-parallel; check "
                         "that your checkout builds MoE layers in its PipelineModule");
    if (e.layer_freq > 1)
      notes.push_back(fmt::format("MoE: every {}th layer counted from 1 (Megatron-DeepSpeed's --expert-interval), "
                                  "where the model has them from its first layer",
                                  e.layer_freq));
    if (e.first_dense_layers > 0)
      cannot_express.push_back(fmt::format("first_dense_layers={}: Megatron-DeepSpeed places MoE layers every "
                                           "--expert-interval layers, no dense leading layers",
                                           e.first_dense_layers));
    if (!all_moe && e.expert_ffn_hidden_size != m.ffn_hidden_size)
      cannot_express.push_back(fmt::format("expert_ffn_hidden_size={} beside dense layers of {}: Megatron-DeepSpeed's "
                                           "experts use --ffn-hidden-size",
                                           e.expert_ffn_hidden_size, m.ffn_hidden_size));
    if (e.num_shared_experts > 0)
      cannot_express.push_back(fmt::format("{} shared expert(s): DeepSpeed's MoE layer has a residual MLP "
                                           "(use_residual, deepspeed.json moe) mixed by a learned coefficient, not "
                                           "shared experts",
                                           e.num_shared_experts));
    // Expert tensor parallelism is on (etp = tp) or off (D6.3).
    if (p.tp > 1 && p.expert_tp() == p.tp) a.emplace_back("--enable-expert-tensor-parallelism");
    if (training.moe_balancing == MoeBalancing::kAuxLoss) a.emplace_back("--moe-loss-coeff 0.01");
    else
      cannot_express.push_back(fmt::format("moe_balancing={}: DeepSpeed's gate balances with an auxiliary loss only",
                                           to_string(training.moe_balancing)));
    if (training.moe_capacity_factor > 0)
      a.push_back(fmt::format("--moe-train-capacity-factor {}", training.moe_capacity_factor));
    else
      a.emplace_back("--disable-moe-token-dropping");  // dropless (drop_tokens=False, deepspeed.json moe)
  }
  return a;
}

// Data and tokenizer from the environment (the placeholders the script asks for); the schedule and
// optimizer hyperparameters are common defaults. Megatron-DeepSpeed hands its own optimizer and LR
// scheduler to deepspeed.initialize, so they are arguments here, not ds_config sections.
std::vector<std::string> training_args(const TrainingSpec& training) {
  std::vector<std::string> a{"--data-path \"${DATA_PATH}\"",
                             "--split 99,1,0",
                             "--tokenizer-type HFTokenizer",
                             "--tokenizer-model \"${TOKENIZER}\"",
                             "--train-iters 1000"};
  if (training.optimizer == Optimizer::kSGD) {
    a.emplace_back("--optimizer sgd");
    a.emplace_back("--sgd-momentum 0.9");
  } else {
    a.emplace_back("--optimizer adam");
  }
  for (const char* x : {"--lr 3.0e-4", "--min-lr 3.0e-5", "--lr-decay-style cosine", "--lr-warmup-iters 100",
                        "--weight-decay 0.1"})
    a.emplace_back(x);
  if (training.optimizer != Optimizer::kSGD) {
    a.emplace_back("--adam-beta1 0.9");
    a.emplace_back("--adam-beta2 0.95");
  }
  // Checkpoints every 500 iterations in $CHECKPOINT_DIR, resumed from on restart; validation on the
  // split's 1% every 500 iterations, 10 batches each.
  for (const char* x : {"--clip-grad 1.0", "--init-method-std 0.02", "--log-interval 10",
                        "--save \"${CHECKPOINT_DIR}\"", "--load \"${CHECKPOINT_DIR}\"", "--save-interval 500",
                        "--eval-interval 500", "--eval-iters 10"})
    a.emplace_back(x);
  return a;
}

std::string script(const std::string& config, const std::vector<std::string>& args, const std::vector<std::string>& notes,
                   const std::vector<std::pair<std::string, std::string>>& environment, const LaunchTarget& target,
                   const std::string& version,
                   const std::string& commit) {
  std::string s = "#!/bin/bash\n";
  s += fmt::format("# DeepSpeed {} ({}) launch written by paratune: Megatron-DeepSpeed's pretrain_gpt.py on {} node(s) "
                   "x {} GPUs.\n",
                   version, commit.substr(0, 8), target.nodes, target.gpus_per_node);
  s += "# The parallel degrees and the model are Megatron-DeepSpeed arguments; $DS_CONFIG has the batch, precision "
       "and ZeRO.\n";
  s += "# paratune checks the ds_config against DeepSpeed's keys; it has no schema of Megatron-DeepSpeed's flags.\n";
  s += "# Checked against that DeepSpeed commit; Megatron-DeepSpeed's behaviour read at microsoft/Megatron-DeepSpeed "
       "f4157bea.\n";
  if (target.nodes > 1)
    s += fmt::format("# Run it with sbatch --nodes={} --ntasks-per-node=1 --gpus-per-node={} (srun + torchrun on every "
                     "node),\n# or set HOSTFILE (one \"host slots={}\" line per node) for the deepspeed launcher over "
                     "ssh.\n",
                     target.nodes, target.gpus_per_node, target.gpus_per_node);
  else
    s += "# Run it on the node: the deepspeed launcher starts one process per GPU.\n";
  for (const std::string& n : notes) s += "# " + n + "\n";
  s += "set -euo pipefail\n";
  s += ": \"${MEGATRON_DEEPSPEED:?set MEGATRON_DEEPSPEED to a Megatron-DeepSpeed checkout}\"\n";
  s += ": \"${DATA_PATH:?set DATA_PATH to the preprocessed data prefix (tools/preprocess_data.py)}\"\n";
  s += ": \"${TOKENIZER:?set TOKENIZER to a Hugging Face tokenizer name or path}\"\n";
  s += "CHECKPOINT_DIR=\"${CHECKPOINT_DIR:-$PWD/checkpoints}\"  # saved to and resumed from\n";
  for (const auto& [variable, why] : environment) s += fmt::format("export {}  # {}\n", variable, why);
  s += fmt::format("NNODES={}\nGPUS_PER_NODE={}\n", target.nodes, target.gpus_per_node);
  if (target.nodes > 1) s += "# Read on every node: keep it on a shared file system.\n";
  s += "DS_CONFIG=\"${DS_CONFIG:-$PWD/ds_config.json}\"\n";
  s += std::string("cat > \"$DS_CONFIG\" ") + kJsonHeredocOpen + config + kJsonHeredocClose;
  if (target.nodes == 1) {
    s += "LAUNCH=(deepspeed --num_nodes \"$NNODES\" --num_gpus \"$GPUS_PER_NODE\" --master_port 29500)\n";
  } else {
    s += "if [ -n \"${HOSTFILE:-}\" ]; then\n";
    // Over ssh the launcher passes on only the variables listed in .deepspeed_env (and NCCL_*, ...).
    for (const auto& [variable, why] : environment)
      s += fmt::format("  grep -qsx '{0}' .deepspeed_env || echo '{0}' >> .deepspeed_env  # for the other nodes\n",
                       variable);
    s += "  LAUNCH=(deepspeed --hostfile \"$HOSTFILE\" --num_nodes \"$NNODES\" --num_gpus \"$GPUS_PER_NODE\" "
         "--master_port 29500)\n"
         "else\n" +
         std::string(kSlurmTorchrun) + "fi\n";
  }
  s += "ARGS=(\n";
  for (const std::string& a : args) s += "  " + a + "\n";
  s += ")\n\"${LAUNCH[@]}\" \"$MEGATRON_DEEPSPEED/pretrain_gpt.py\" \"${ARGS[@]}\"\n";
  return s;
}

}  // namespace

LaunchSettings deepspeed(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model,
                         const LaunchTarget& target, const std::string& version, const std::string& commit) {
  LaunchSettings out;
  std::vector<std::string> args, notes;
  auto arg = [&](std::string a) { args.push_back(std::move(a)); };
  const nlohmann::ordered_json config = deepspeed_config_json(p, training, model, out.cannot_express);
  // Every key exists at the version with its type and choices (D0): else an emitter bug.
  if (const auto problems = check_deepspeed_config(nlohmann::json::parse(config.dump()), version); !problems.empty())
    throw Error(fmt::format("internal error: the DeepSpeed {} config breaks the key schema: {}", version,
                            fmt::join(problems, "; ")));

  // The layout. One stage: Megatron's model with its mpu, where every ZeRO stage works (D2.4);
  // several: Megatron-DeepSpeed's PipelineModule, ZeRO 0/1 only (D3.2, D5.1).
  arg(fmt::format("--tensor-model-parallel-size {}", p.tp));
  arg(fmt::format("--pipeline-model-parallel-size {}", p.pp));
  if (p.pp == 1) arg("--no-pipeline-parallel");
  if (p.sequence_parallel && p.tp > 1) arg("--sequence-parallel");
  // The ZeRO stage again for Megatron-DeepSpeed itself (stage 3 builds the model under zero.Init).
  arg(fmt::format("--zero-stage {}", p.zero));
  arg(fmt::format("--micro-batch-size {}", p.mbs));
  arg(fmt::format("--global-batch-size {}", training.global_batch));

  // Recompute: which layers is the model code's choice (D7). The PipelineModule checkpoints every
  // activation_checkpoint_interval layers on every stage (D5.2): uniform 1 = every layer. With one
  // stage, block N = the first N layers, through Megatron's own checkpointing: with
  // --deepspeed-activation-checkpointing, ParallelTransformer._checkpointed_forward checkpoints
  // every layer in chunks of --checkpoint-num-layers and ignores the method
  // (microsoft/Megatron-DeepSpeed@f4157bea megatron/model/transformer.py:1910-1921).
  if (p.recompute == RecomputeMode::kSelective) {
    arg("--recompute-granularity selective");
  } else if (const std::vector<int> recomputed = recomputed_layers_per_stage(p);
             p.recompute == RecomputeMode::kFull && std::accumulate(recomputed.begin(), recomputed.end(), 0) > 0) {
    arg("--recompute-granularity full");
    if (recomputed == p.stage_layers || p.pp > 1) {
      arg("--recompute-method uniform");
      arg("--recompute-num-layers 1");
      arg("--deepspeed-activation-checkpointing");
    } else {
      arg("--recompute-method block");
      arg(fmt::format("--recompute-num-layers {}", recomputed.front()));
    }
  }
  if (training.precision == Precision::kFP16) arg("--fp16");
  else arg("--bf16");

  std::vector<std::pair<std::string, std::string>> environment;  // NAME=VALUE, why
  if (p.tp > 1) environment.emplace_back("CUDA_DEVICE_MAX_CONNECTIONS=1", "tp > 1: ordered TP communication");

  for (std::string& a : model_args(model, training, p, notes, out.cannot_express)) args.push_back(std::move(a));
  for (std::string& a : training_args(training)) args.push_back(std::move(a));
  arg("--deepspeed");  // flags of deepspeed.add_config_arguments (deepspeed.json launcher)
  arg("--deepspeed_config \"$DS_CONFIG\"");
  out.text = script(config.dump(2), args, notes, environment, target, version, commit);
  return out;
}

}  // namespace paratune::launch::detail
