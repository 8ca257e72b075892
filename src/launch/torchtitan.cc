// torchtitan launch (data/frameworks/torchtitan-rules.md; rule ids T*): a complete bash script
// that writes the TOML job file (a quoted heredoc, `cat > "$CONFIG" <<'TOML'` ... `TOML`, so the
// file written is the one checked against the schema) and runs
// `-m torchtitan.train --job.config_file "$CONFIG"` under torchrun on one node, or srun + torchrun
// (c10d rendezvous) on every node of a Slurm allocation ("Minimal complete launch"). The model is a
// registered name and flavor (T10), matched to the model spec's shape; the tokenizer and the data
// are placeholders given on the command line (command line > TOML, T0.1).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>

#include "emitters.h"
#include "paratune/launch/schema_check.h"
#include "paratune/sim/schedule.h"
#include "paratune/spec/error.h"

namespace paratune::launch {
namespace detail {
std::string framework_schema_text(std::string_view name);  // generated: framework_schemas.cc

namespace {

constexpr std::string_view kTomlHeredocOpen = "<<'TOML'\n";
constexpr std::string_view kTomlHeredocClose = "TOML\n";  // the job file ends with its own newline

// module_fqns_per_model_part (T4.3a): one list of module names per stage, in stage order (stage s
// on rank s % pp for looped schedules, rank r holding stages r and 2·pp-1-r for V-shapes, T4.4:
// the placement paratune's replay uses, sim/schedule.h); the first holds tok_embeddings, the last
// norm and output.
std::string torchtitan_stages(const ParallelConfig& p) {
  std::vector<std::string> stages;
  const int n = p.pp * p.vpp;
  const std::vector<int> layers_of = sim::by_model_part(p, chunk_layers(p));  // the layout's uneven chunks too
  int layer = 0;
  for (int s = 0; s < n; ++s) {
    std::vector<std::string> modules;
    if (s == 0) modules.emplace_back("\"tok_embeddings\"");
    for (int k = 0; k < layers_of[static_cast<std::size_t>(s)]; ++k)
      modules.push_back(fmt::format("\"layers.{}\"", layer++));
    if (s == n - 1) {
      modules.emplace_back("\"norm\"");
      modules.emplace_back("\"output\"");
    }
    stages.push_back(fmt::format("[{}]", fmt::join(modules, ", ")));
  }
  return fmt::format("[{}]", fmt::join(stages, ", "));
}

// --- Model and flavor (T10) --------------------------------------------------------------------
// torchtitan builds a model only from a flavor registered in its model's flavor table; the
// flavors' arguments are torchtitan.json -> models (compiled into the torchtitan schema).

// The shape a registered flavor builds, in the model spec's terms.
struct FlavorShape {
  int layers = 0, dim = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
  int ffn = 0;  // dense MLP width (the layers that are not MoE)
  bool tied = false;
  bool biases = false;      // gpt_oss: biases on attention and experts
  std::vector<bool> moe;    // per layer: an MoE MLP
  int experts = 0, top_k = 0, expert_ffn = 0, shared_ffn = 0;  // shared_ffn: all shared experts together
  std::optional<MlaSpec> mla;
  bool flex = false;  // flex attention (refuses context parallelism for deepseek_v3, T2.2)
  int oddity = 0;     // flex/varlen attention, NoPE layers: a same-shape plain flavor is preferred
};

std::optional<int> int_arg(const nlohmann::json& args, const char* key) {
  const auto it = args.find(key);
  if (it == args.end() || !it->is_number()) return std::nullopt;
  return it->get<int>();
}
int int_arg(const nlohmann::json& args, const char* key, int fallback) { return int_arg(args, key).value_or(fallback); }

// Llama's FeedForward width: int(2/3 · 4·dim), times ffn_dim_multiplier, rounded up to multiple_of
// (llama3 8B: 14336, 70B: 28672, 405B: 53248).
int llama_ffn(int dim, int multiple_of, const nlohmann::json& multiplier, int divisor = 1) {
  int h = 2 * (4 * dim) / 3;
  if (multiplier.is_number()) h = static_cast<int>(multiplier.get<double>() * h);
  h /= divisor;
  return multiple_of * ((h + multiple_of - 1) / multiple_of);
}

// The shape of `family`'s flavor with `args` (model_args_defaults with the flavor's overrides);
// none for the models that are not decoder LLMs (flux) or have no flavor table of their own.
std::optional<FlavorShape> flavor_shape(const std::string& family, const nlohmann::json& args,
                                        const nlohmann::json& moe_defaults) {
  FlavorShape s;
  s.layers = int_arg(args, "n_layers", 0);
  s.dim = int_arg(args, "dim", 0);
  s.heads = int_arg(args, "n_heads", 0);
  s.kv_heads = int_arg(args, "n_kv_heads", s.heads);
  s.vocab = int_arg(args, "vocab_size", 0);
  const std::string attention = args.value("attn_type", std::string("sdpa"));
  s.flex = attention == "flex";
  s.oddity = (attention != "sdpa") + (args.contains("every_n_layers_nope") && !args["every_n_layers_nope"].is_null());
  nlohmann::json moe = moe_defaults;
  if (args.contains("moe_args")) moe.merge_patch(args["moe_args"]);
  auto moe_args = [&](int expert_ffn) {
    s.experts = int_arg(moe, "num_experts", 0);
    s.top_k = int_arg(moe, "top_k", 1);
    s.expert_ffn = expert_ffn;
    s.shared_ffn = int_arg(moe, "num_shared_experts", 0) * expert_ffn;  // one FeedForward of that width
  };
  if (family == "llama3" || family == "llama4") {
    s.head_dim = s.dim / std::max(1, s.heads);
    const int multiple_of = int_arg(args, "multiple_of", 256);
    const nlohmann::json multiplier = args.value("ffn_dim_multiplier", nlohmann::json());
    s.ffn = llama_ffn(s.dim, multiple_of, multiplier);
    s.moe.assign(static_cast<std::size_t>(s.layers), false);
    if (family == "llama4") {
      // Every interleave_moe_layer_step-th layer is MoE ((layer + 1) % step == 0); the expert width
      // is the dense one divided by top_k + num_shared_experts (auto_scale_hidden_dim), rounded up
      // to multiple_of (models/llama4/model/model.py, TransformerBlock; not in torchtitan.json).
      const int step = std::max(1, int_arg(args, "interleave_moe_layer_step", 1));
      for (int l = 0; l < s.layers; ++l) s.moe[static_cast<std::size_t>(l)] = (l + 1) % step == 0;
      const int divisor = args.value("auto_scale_hidden_dim", true)
                              ? int_arg(moe, "top_k", 1) + int_arg(moe, "num_shared_experts", 0)
                              : 1;
      moe_args(llama_ffn(s.dim, multiple_of, multiplier, std::max(1, divisor)));
    }
  } else if (family == "qwen3") {
    s.head_dim = int_arg(args, "head_dim", 0);
    s.ffn = int_arg(args, "hidden_dim", 0);
    s.tied = args.value("enable_weight_tying", false);
    const bool all_moe = args.value("moe_enabled", false);  // every layer MoE, or none
    s.moe.assign(static_cast<std::size_t>(s.layers), all_moe);
    if (all_moe) moe_args(int_arg(args, "moe_inter_dim", 0));
  } else if (family == "deepseek_v3") {
    s.ffn = int_arg(args, "inter_dim", 0);
    const int dense = int_arg(args, "n_dense_layers", 0);  // the first n layers dense, the rest MoE
    for (int l = 0; l < s.layers; ++l) s.moe.push_back(l >= dense);
    moe_args(int_arg(args, "moe_inter_dim", 0));
    s.mla = MlaSpec{int_arg(args, "q_lora_rank", 0), int_arg(args, "kv_lora_rank", 0),
                    int_arg(args, "qk_rope_head_dim", 0), int_arg(args, "qk_nope_head_dim", 0),
                    int_arg(args, "v_head_dim", 0)};
  } else if (family == "gpt_oss") {
    s.head_dim = int_arg(args, "head_dim", 0);
    s.biases = true;
    s.moe.assign(static_cast<std::size_t>(s.layers), true);
    moe_args(int_arg(args, "moe_inter_dim", 0));
  } else {
    return std::nullopt;
  }
  return s;
}

// Whether a model is a Llama-style decoder (RMSNorm, SwiGLU, RoPE, causal, no dropout), the only
// kind torchtitan's LLMs build; the differences, else.
std::vector<std::string> not_llama_style(const ModelSpec& m, bool biases_allowed) {
  std::vector<std::string> d;
  if (!m.causal) d.emplace_back("an encoder");
  if (m.norm != NormKind::kRMSNorm) d.emplace_back("LayerNorm");
  if (!m.gated_mlp) d.emplace_back("a non-gated MLP");
  if (m.position_embedding != PositionEmbedding::kRotary) d.emplace_back("no rotary positions");
  if (!biases_allowed && (m.bias || m.qkv_bias)) d.emplace_back(m.bias ? "biases" : "q/k/v biases");
  if (m.dropout) d.emplace_back("dropout");
  if (m.type_vocab_size > 0 || m.pooler) d.emplace_back("BERT token types/pooler");
  return d;
}

bool same_shape(const ModelSpec& m, const FlavorShape& s) {
  if (!not_llama_style(m, s.biases).empty()) return false;
  if (m.num_layers != s.layers || m.hidden_size != s.dim || m.num_attention_heads != s.heads ||
      m.vocab_size != s.vocab || m.tie_embeddings != s.tied || m.mla.has_value() != s.mla.has_value())
    return false;
  if (m.mla) {
    const MlaSpec &a = *m.mla, &b = *s.mla;
    if (a.q_lora_rank != b.q_lora_rank || a.kv_lora_rank != b.kv_lora_rank ||
        a.qk_rope_head_dim != b.qk_rope_head_dim || a.qk_nope_head_dim != b.qk_nope_head_dim ||
        a.v_head_dim != b.v_head_dim)
      return false;
  } else if (m.kv_heads() != s.kv_heads || m.head_size() != s.head_dim) {
    return false;
  }
  bool any_dense = false;
  for (int l = 0; l < m.num_layers; ++l) {
    if (m.is_moe_layer(l) != s.moe[static_cast<std::size_t>(l)]) return false;
    any_dense = any_dense || !m.is_moe_layer(l);
  }
  if (any_dense && m.ffn_hidden_size != s.ffn) return false;
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    if (e.num_experts != s.experts || e.top_k != s.top_k || e.expert_ffn_hidden_size != s.expert_ffn ||
        e.num_shared_experts * e.shared_ffn() != s.shared_ffn)
      return false;
  }
  return true;
}

// The model and flavor the job file names.
struct TorchtitanModel {
  std::string name, flavor;
  bool registered = false;  // flavor is registered with the model's shape
  bool pipelining = true;   // the model registers a pipelining function (T4.1)
  bool flex = false;
  std::string file;         // where the model's flavors are registered
};

const nlohmann::json& torchtitan_models() {
  static const nlohmann::json models = nlohmann::json::parse(detail::framework_schema_text("torchtitan")).at("models");
  return models;
}

// A name that is safe inside a TOML string and as a flavor key.
std::string plain(std::string_view text) {
  std::string out;
  for (char c : text)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  return out.empty() ? "paratune" : out;
}

// The registered flavor with the model's shape (a plain sdpa one before flex/varlen/NoPE variants);
// else the nearest model family, named with a flavor to register: deepseek_v3 for MLA, qwen3 /
// gpt_oss / llama4 by name, llama4 for other MoE models (Llama-style MoE with pipelining), llama3
// for other dense ones.
TorchtitanModel torchtitan_model(const ModelSpec& m) {
  const nlohmann::json& models = torchtitan_models();
  std::optional<TorchtitanModel> best;
  int best_oddity = 0;
  for (const nlohmann::json& entry : models.at("entries")) {
    if (!entry.contains("flavor_overrides") || !entry.contains("model_args_defaults")) continue;
    const std::string family = entry.at("name");
    for (const auto& [flavor, overrides] : entry.at("flavor_overrides").items()) {
      nlohmann::json args = entry.at("model_args_defaults");
      args.merge_patch(overrides);
      const std::optional<FlavorShape> s = flavor_shape(family, args, models.at("moe_args_defaults"));
      if (!s || !same_shape(m, *s) || (best && s->oddity >= best_oddity)) continue;
      best = TorchtitanModel{family, flavor, true, entry.value("pipeline_parallel_supported", false), s->flex,
                             entry.value("file", std::string())};
      best_oddity = s->oddity;
    }
  }
  if (best) return *best;
  const std::string& n = m.name;
  const char* family = m.mla                                                ? "deepseek_v3"
                       : n.starts_with("qwen3")                             ? "qwen3"
                       : n.starts_with("gpt-oss") || n.starts_with("gpt_oss") ? "gpt_oss"
                       : n.starts_with("llama4") || m.moe                   ? "llama4"
                                                                            : "llama3";
  TorchtitanModel out{family, plain(n), false, true, false, ""};
  for (const nlohmann::json& entry : models.at("entries"))
    if (entry.at("name") == family) {
      out.pipelining = entry.value("pipeline_parallel_supported", false);
      out.file = entry.value("file", std::string());
    }
  return out;
}

// The cannot_express line for a model no flavor builds.
std::string unregistered_model_line(const ModelSpec& m, const TorchtitanModel& t, const std::string& version) {
  std::vector<std::string> shape{fmt::format("layers={}", m.num_layers), fmt::format("hidden={}", m.hidden_size),
                                 fmt::format("heads={}", m.num_attention_heads)};
  if (m.mla) {
    shape.push_back(fmt::format("mla q_lora/kv_lora/rope/nope/v={}/{}/{}/{}/{}", m.mla->q_lora_rank,
                                m.mla->kv_lora_rank, m.mla->qk_rope_head_dim, m.mla->qk_nope_head_dim,
                                m.mla->v_head_dim));
  } else {
    shape.push_back(fmt::format("kv_heads={}", m.kv_heads()));
    shape.push_back(fmt::format("head_dim={}", m.head_size()));
  }
  shape.push_back(fmt::format("ffn={}", m.ffn_hidden_size));
  shape.push_back(fmt::format("vocab={}", m.vocab_size));
  if (m.tie_embeddings) shape.emplace_back("tied embeddings");
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    shape.push_back(fmt::format("experts={}", e.num_experts));
    shape.push_back(fmt::format("top_k={}", e.top_k));
    shape.push_back(fmt::format("expert_ffn={}", e.expert_ffn_hidden_size));
    if (e.num_shared_experts > 0) shape.push_back(fmt::format("shared={}x{}", e.num_shared_experts, e.shared_ffn()));
    if (e.first_dense_layers > 0) shape.push_back(fmt::format("first_dense={}", e.first_dense_layers));
    if (e.layer_freq > 1) shape.push_back(fmt::format("moe_every={}", e.layer_freq));
  }
  const std::vector<std::string> differences = not_llama_style(m, t.name == "gpt_oss");
  if (!differences.empty())
    return fmt::format("model {} ({}; {}) is not a Llama-style decoder: torchtitan {}'s LLMs use RMSNorm, SwiGLU and "
                       "RoPE without biases and build a model only from a registered flavor (T10), so it needs a new "
                       "model in torchtitan/models, not only a flavor; the job file names {} flavor \"{}\" as a "
                       "stand-in",
                       m.name, fmt::join(differences, ", "), fmt::join(shape, ", "), version, t.name, t.flavor);
  return fmt::format("model {}: torchtitan {} builds a model only from a registered flavor (T10), and no flavor "
                     "of deepseek_v3, gpt_oss, llama3, llama4 or qwen3 has its shape ({}); register it as {} "
                     "flavor \"{}\" ({}) before running",
                     m.name, version, fmt::join(shape, ", "), t.name, t.flavor, t.file);
}

// --- The job file ------------------------------------------------------------------------------

// The hyperparameters of a run (the same as the Megatron-LM launch's): AdamW 3e-4, betas 0.9/0.95,
// weight decay 0.1, 100 warmup steps then cosine decay to 3e-5, 1000 steps, gradient clipping 1.0.
std::string job_file(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model,
                     const TorchtitanModel& tt) {
  std::string t;
  t += "[job]\n";
  t += "dump_folder = \"./outputs\"\n";
  t += fmt::format("description = \"paratune plan for {}: {}\"\n", plain(model.name), to_string(p));

  t += "\n[model]\n";
  t += fmt::format("name = \"{}\"\n", tt.name);
  t += fmt::format("flavor = \"{}\"\n", tt.flavor);
  t += "# hf_assets_path (the tokenizer): on the command line, from $TOKENIZER\n";
  // FP8 only through [model] converters (T7.1-T7.2): quantize.linear.float8 with a recipe (T7.5;
  // paratune's blockwise is torchao's rowwise), quantize.linear.mx for mxfp8 (T7.7); MoE experts
  // with the grouped_mm converter of the same kind (T7.4), float8 only with pp = cp = 1 (T7.6).
  std::string quantize;
  if (training.precision == Precision::kFP8) {
    const bool mx = training.fp8_recipe == Fp8Recipe::kMxfp8;
    std::vector<std::string> converters{mx ? "\"quantize.linear.mx\"" : "\"quantize.linear.float8\""};
    if (model.moe && (mx || (p.pp == 1 && p.cp == 1)))
      converters.emplace_back(mx ? "\"quantize.grouped_mm.mx\"" : "\"quantize.grouped_mm.float8\"");
    t += fmt::format("converters = [{}]\n", fmt::join(converters, ", "));
    // FSDP's float8 all-gather is the default tensorwise scaling without a recipe_name (T7.5).
    if (training.fp8_param_gather)
      quantize = "\n[quantize.linear.float8]\nenable_fsdp_float8_all_gather = true\n"
                 "precompute_float8_dynamic_scale_for_fsdp = true\n";
    else if (!mx && training.fp8_recipe != Fp8Recipe::kDelayed)
      quantize = fmt::format("\n[quantize.linear.float8]\nrecipe_name = \"{}\"\n",
                             training.fp8_recipe == Fp8Recipe::kTensorwise ? "tensorwise" : "rowwise");
  }

  t += "\n[optimizer]\n";
  t += fmt::format("name = \"{}\"\n", training.optimizer == Optimizer::kAdam ? "Adam" : "AdamW");
  t += "lr = 3e-4\nbeta1 = 0.9\nbeta2 = 0.95\neps = 1e-8\nweight_decay = 0.1\n";
  t += "\n[lr_scheduler]\nwarmup_steps = 100\ndecay_type = \"cosine\"\nmin_lr_factor = 0.1\n";

  // Batches (T3): with pp = 1 the local batch is one micro-batch (accumulation makes the rest);
  // with pp > 1 one pipeline schedule over the replica's whole batch per step.
  t += "\n[training]\n";
  t += "dataset = \"c4\"\n";
  t += "# dataset_path (the data for the c4 loader): on the command line, from $DATASET\n";
  t += fmt::format("local_batch_size = {}\n", p.pp > 1 ? training.global_batch / p.dp : p.mbs);
  t += fmt::format("global_batch_size = {}\n", training.global_batch);
  t += fmt::format("seq_len = {}\n", training.seq_len);
  t += "steps = 1000\nmax_norm = 1.0\n";

  t += "\n[parallelism]\n";
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
    if (p.dispatcher == MoeDispatcher::kDeepEP) t += "expert_parallel_comm_backend = \"deepep\"\n";  // T8.3
  }
  t += fmt::format("pipeline_parallel_degree = {}\n", p.pp);
  if (p.pp > 1) {
    const char* schedule = p.schedule == Schedule::kInterleaved1F1B        ? "Interleaved1F1B"
                           : p.schedule == Schedule::kGPipe                ? "GPipe"
                           : p.schedule == Schedule::kInterleavedZeroBubble ? "InterleavedZeroBubble"
                           : p.schedule == Schedule::kZeroBubbleV          ? "ZBVZeroBubble"
                           : p.schedule == Schedule::kDualPipeV            ? "DualPipeV"
                                                                           : "1F1B";  // T4.2 names
    t += fmt::format("pipeline_parallel_schedule = \"{}\"\n", schedule);
    t += fmt::format("pipeline_parallel_microbatch_size = {}\n", p.mbs);
    // On by default, effective only with DualPipeV and ep > 1 (T4.6): stated as planned.
    if (p.schedule == Schedule::kDualPipeV && p.ep > 1)
      t += fmt::format("pipeline_parallel_expert_parallel_overlap = {}\n", p.ep_overlap ? "true" : "false");
    t += fmt::format("module_fqns_per_model_part = {}\n", torchtitan_stages(p));
  }

  t += "\n[activation_checkpoint]\n";  // one mode for every layer (T9)
  t += fmt::format("mode = \"{}\"\n", to_string(p.recompute));
  if (p.recompute == RecomputeMode::kSelective) t += "selective_ac_option = \"op\"\n";
  // Async TP needs the compiled model, "model" in the default components (T6.1).
  t += fmt::format("\n[compile]\nenable = {}\n", async_tp);
  t += quantize;
  // Checkpoints every 500 steps in ./outputs/checkpoint, resumed from on restart (T0: the
  // [checkpoint] table's enable, folder, interval); metrics every 10 steps.
  t += "\n[checkpoint]\nenable = true\nfolder = \"checkpoint\"\ninterval = 500\n";
  t += "\n[metrics]\nlog_freq = 10\n";
  t += "# Evaluation: torchtitan validates on a dataset of its own; set [validation] enable = true,\n"
       "# dataset_path and freq to have it.\n";
  return t;
}

// The bash script: the placeholders, the job file in a quoted heredoc (written as checked, no
// expansion), torchrun on one node or srun + torchrun with c10d rendezvous on several ("Minimal
// complete launch"); extra arguments go to torchtitan (command line > TOML, T0.1).
std::string torchtitan_script(const std::string& toml, const std::vector<std::string>& notes, const ParallelConfig& p,
                              const TorchtitanModel& tt, const LaunchTarget& target, const std::string& version,
                              const std::string& commit) {
  std::string s = "#!/bin/bash\n";
  s += fmt::format("# torchtitan {} ({}) launch written by paratune: {} {} on {} node(s) x {} GPUs.\n", version,
                   commit.substr(0, 8), tt.name, tt.flavor, target.nodes, target.gpus_per_node);
  s += fmt::format("# Several nodes: sbatch --nodes={} --ntasks-per-node=1 --gpus-per-node={} this script; $CONFIG\n"
                   "# must then be on a filesystem every node sees.\n",
                   target.nodes, target.gpus_per_node);
  s += "# Arguments are passed on to torchtitan, e.g. --training.steps 10 (command line > job file).\n";
  s += "# Checked against that torchtitan commit, with the PyTorch its requirements name.\n";
  if (p.num_gpus() != static_cast<std::int64_t>(target.nodes) * target.gpus_per_node)
    s += fmt::format("# NOTE: the plan uses {} GPUs; this launch starts {} x {}.\n", p.num_gpus(), target.nodes,
                     target.gpus_per_node);
  for (const std::string& n : notes) s += "# NOTE: " + n + "\n";
  s += "set -euo pipefail\n";
  s += fmt::format(": \"${{TORCHTITAN:?set TORCHTITAN to a torchtitan {} checkout (its requirements installed)}}\"\n",
                   version);
  s += ": \"${TOKENIZER:?set TOKENIZER to the directory with the model's Hugging Face tokenizer files "
       "(scripts/download_hf_assets.py)}\"\n";
  s += ": \"${DATASET:?set DATASET to the training data of torchtitan's c4 loader: allenai/c4 or a local copy}\"\n";
  s += "CONFIG=\"${CONFIG:-$PWD/paratune_torchtitan.toml}\"\n";
  s += fmt::format("cat > \"$CONFIG\" {}{}{}", kTomlHeredocOpen, toml, kTomlHeredocClose);
  s += "export PYTHONPATH=\"$TORCHTITAN${PYTHONPATH:+:$PYTHONPATH}\"\n";
  s += torchrun_launch(target);
  s += "\"${LAUNCH[@]}\" -m torchtitan.train --job.config_file \"$CONFIG\" \\\n"
       "  --model.hf_assets_path \"$TOKENIZER\" --training.dataset_path \"$DATASET\" \"$@\"\n";
  return s;
}

}  // namespace

LaunchSettings torchtitan(const ParallelConfig& p, const TrainingSpec& training, const ModelSpec& model,
                          const LaunchTarget& target, const std::string& version, const std::string& commit) {
  LaunchSettings out;
  const TorchtitanModel tt = torchtitan_model(model);
  if (!tt.registered) out.cannot_express.push_back(unregistered_model_line(model, tt, version));
  // What the named model refuses; framework_support says so already for paratune's qwen3 and
  // deepseek-v3 presets (T4.1, T2.2).
  if (p.pp > 1 && !tt.pipelining && !model.name.starts_with("qwen3"))
    out.cannot_express.push_back(fmt::format("pp={} with {}: torchtitan {}'s {} registers no pipelining function "
                                             "(T4.1)",
                                             p.pp, model.name, version, tt.name));
  if (p.cp > 1 && tt.flex && tt.name == "deepseek_v3" && model.name != "deepseek-v3")
    out.cannot_express.push_back(fmt::format("cp={} with {}: torchtitan {}'s deepseek_v3 {} uses flex attention, which "
                                             "refuses context parallelism (T2.2)",
                                             p.cp, model.name, version, tt.flavor));
  // torchtitan-rules.md names no multi-token-prediction module or option for any model: the launch
  // trains without the MTP layers the estimate costs.
  if (model.mtp_layers > 0)
    out.cannot_express.push_back(fmt::format("mtp_layers={}: torchtitan {} has no multi-token prediction; the launch "
                                             "would train without the MTP layers the estimate includes",
                                             model.mtp_layers, version));
  if (training.optimizer == Optimizer::kSGD)
    out.cannot_express.push_back(fmt::format("optimizer=sgd: torchtitan {}'s [optimizer] name takes Adam or AdamW; "
                                             "the launch uses AdamW",
                                             version));
  const std::string toml = job_file(p, training, model, tt);
  // Every key exists in its table at the version with its TOML type and choices (T0): else an
  // emitter bug.
  if (const std::vector<std::string> problems = check_torchtitan_toml(toml, version); !problems.empty())
    throw Error(fmt::format("internal error: the torchtitan {} job file breaks the key schema: {}", version,
                            fmt::join(problems, "; ")));
  out.text = torchtitan_script(toml, out.cannot_express, p, tt, target, version, commit);
  return out;
}

}  // namespace detail

std::optional<std::string> torchtitan_model_refusal(const ModelSpec& model) {
  const detail::TorchtitanModel tt = detail::torchtitan_model(model);
  if (tt.registered) return std::nullopt;
  return detail::unregistered_model_line(model, tt, framework_versions(Framework::kTorchtitan).front());
}

}  // namespace paratune::launch
