// A published row -> the specs, the stated and searched axes, and the metric (setup_for_run).
//
// Every value a row states is honoured; every value it does not state is derived from stated ones,
// taken from the model's known architecture, searched, or set to the framework's default, and each
// such choice is written to RunSetup::assumptions with its source.
#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

#include "paratune/calib/published_runs.h"
#include "paratune/spec/presets.h"
#include "row_fields.h"

namespace paratune {

using calib_detail::contains;
using calib_detail::integer;
using calib_detail::lower;
using calib_detail::number;
using calib_detail::other_result_int;
using calib_detail::stated_recompute_modules;
using calib_detail::token_count;

std::string to_string(SkipKind kind) {
  switch (kind) {
    case SkipKind::kUnsupported: return "unsupported";
    case SkipKind::kInconsistent: return "inconsistent";
    case SkipKind::kRefusedByRule: return "refused-by-rule";
    case SkipKind::kKnownSourceError: return "known-source-error";
    case SkipKind::kUnstatedHardware: return "unstated-hardware";
  }
  return "?";
}

namespace {

std::vector<int> divisors_up_to(int n, int limit) {
  std::vector<int> out;
  for (int d = 1; d <= std::min(n, limit); ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// The text outside parentheses: "FP8 (recipe ... (nested))" -> "FP8 ".
std::string outside_parentheses(const std::string& text) {
  std::string out;
  int depth = 0;
  for (char ch : text) {
    if (ch == '(') ++depth;
    else if (ch == ')') depth = std::max(0, depth - 1);
    else if (depth == 0) out += ch;
  }
  return out;
}

// --- Frameworks ------------------------------------------------------------------------------------

struct Framework {
  bool megatron = false;        // Megatron-LM, Megatron-Core, NeMo, Megatron-Bridge
  bool early_megatron = false;  // the 2020/2021 Megatron-LM READMEs (no flash attention, no SP/CP)
  // Megatron-Bridge (NeMo 26.x containers) and its performance recipes: Megatron-Core with
  // --overlap-moe-expert-parallel-comm (R17.1) and the flex (DeepEP) dispatcher, DeepSeek-V3 with
  // MTP and a pipeline layout, BF16 gradients. NeMo 25.02/25.04 predate them.
  bool megatron_bridge = false;
  bool nemo = false;
  bool torchtitan = false;
  bool llm_foundry = false;  // MosaicML Composer / llm-foundry
};

Framework framework_of(const PublishedRun& run) {
  const std::string f = run.get("framework");
  Framework fw;
  fw.nemo = contains(f, "nemo");
  fw.megatron = contains(f, "megatron") || fw.nemo;
  fw.early_megatron = contains(f, "megatron-lm") && (contains(f, "2020") || contains(f, "2021"));
  fw.torchtitan = contains(f, "torchtitan");
  fw.llm_foundry = contains(f, "llm-foundry");
  fw.megatron_bridge = contains(f, "megatron-bridge");
  return fw;
}

// --- GPU and cluster -------------------------------------------------------------------------------

// "500W power limit" / "500 W power limit" in a gpu_type: the limit, W.
std::optional<double> stated_power_limit_w(const std::string& gpu_type_lower) {
  static const RE2 pattern(R"((\d+(?:\.\d+)?)\s*w power limit)");
  double watts = 0;
  if (!RE2::PartialMatch(gpu_type_lower, pattern, &watts)) return std::nullopt;
  return watts;
}

// "capacity factor 1.0" in a row's notes (Megatron's --moe-expert-capacity-factor: token drop): the factor.
std::optional<double> stated_capacity_factor(const std::string& notes_lower) {
  static const RE2 pattern(R"(capacity factor (\d+(?:\.\d+)?))");
  double factor = 0;
  if (!RE2::PartialMatch(notes_lower, pattern, &factor)) return std::nullopt;
  return factor;
}

// GPU preset from the free-text gpu_type: "A100 80GB (Selene ...)", "h100_80gb", "GB200 (NVL72 ...)".
GpuSpec gpu_for(const PublishedRun& run, std::vector<std::string>& why) {
  const std::string g = lower(run.get("gpu_type"));
  auto preset = [](const char* name) { return find_gpu_preset(name); };
  if (contains(g, "v100")) return preset("v100-32gb");
  if (contains(g, "gb200")) return preset("gb200");  // before "b200": "gb200" contains it
  if (contains(g, "gb300")) return preset("gb300");  // before "b300"
  if (contains(g, "b300")) return preset("b300");
  if (contains(g, "b200")) {
    // A power-limited GPU runs at clocks its unstated limit sets: no datasheet peak describes it.
    if (contains(g, "power limit") && contains(g, "not stated"))
      throw RowSkipped(SkipKind::kUnstatedHardware,
                       fmt::format("gpu_type: '{}': the B200's power limit is not stated, so its clocks and peaks are "
                                   "unknown (the datasheet's are for 1000 W)",
                                   run.get("gpu_type")));
    return preset("b200");
  }
  if (contains(g, "h800")) return preset("h800");
  if (contains(g, "h200")) return preset("h200");
  if (contains(g, "h100")) {
    // The PCIe and NVL boards run lower clocks and power than the SXM5 part: no preset describes them.
    if (contains(g, "pcie") || contains(g, "nvl"))
      throw RowSkipped(SkipKind::kUnsupported,
                       fmt::format("gpu_type: '{}': the H100 PCIe/NVL boards have lower peaks than the h100-sxm preset "
                                   "(no preset for them)",
                                   run.get("gpu_type")));
    GpuSpec gpu = preset("h100-sxm");
    if (!contains(g, "sxm") && !contains(g, "dgx") && !contains(g, "hgx") && !contains(g, "96"))
      why.push_back("gpu_type: H100 SKU not stated: H100 SXM5 80GB assumed (the training clusters' SKU)");
    if (contains(g, "96gb") || contains(g, "96 gb")) {
      // Grand Teton H100 96GB HBM2e: the 80GB preset's usable memory scaled to 96 GB.
      gpu.memory_bytes *= 96.0 / 80.0;
      gpu.name = "h100-sxm";  // same GEMM efficiency class
      why.push_back("H100 96GB: the h100-sxm preset with memory scaled by 96/80; HBM2e bandwidth taken as the "
                    "preset's");
    }
    if (const auto watts = stated_power_limit_w(g)) {
      gpu.power_limit_w = *watts;
      why.push_back(fmt::format("{:g} W power limit: compute peaks x ({:g}/{:g})^power_clock_exponent", *watts, *watts,
                                gpu.board_power_w));
    }
    return gpu;
  }
  if (contains(g, "a100")) {
    if (contains(g, "80")) return preset("a100-80gb");
    if (contains(g, "40")) return preset("a100-40gb");
    why.push_back("A100 memory size not stated: a100-40gb (DGX A100 shipped with 40GB GPUs in 2020)");
    return preset("a100-40gb");
  }
  throw RowSkipped(SkipKind::kUnsupported, fmt::format("gpu_type: '{}' matches no GPU preset (known: {})",
                                                      run.get("gpu_type"), join(gpu_preset_names())));
}

// Scale-out bandwidth per GPU stated in `interconnect`, bytes/s; 0 when not stated. Forms:
// "1600 Gbps node-node" (per node), "8x400 Gb/s InfiniBand per node", "RDMA 400 Gb/s per GPU".
// RE2, not std::regex: linear time and no recursion, so no length of field can exhaust the stack.
double stated_inter_node_bandwidth(const std::string& interconnect, int gpus_per_node) {
  const std::string t = lower(interconnect);
  static const RE2 per_node_nx(R"((\d+)\s*x\s*(\d+(?:\.\d+)?)\s*gb/?s[^;]*per node)");
  static const RE2 per_gpu(R"((\d+(?:\.\d+)?)\s*gb/?s[^;]*per gpu)");
  static const RE2 node_gbps(R"((\d+(?:\.\d+)?)\s*gbps)");
  const auto number = [&](const std::string& digits) {
    double value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || end != digits.data() + digits.size() || !std::isfinite(value))
      throw Error(fmt::format("interconnect: '{}' is not a number in range", digits));
    return value;
  };
  std::string a, b;
  if (RE2::PartialMatch(t, per_node_nx, &a, &b)) return number(a) * number(b) * 1e9 / 8 / gpus_per_node;
  if (RE2::PartialMatch(t, per_gpu, &a)) return number(a) * 1e9 / 8;
  if (RE2::PartialMatch(t, node_gbps, &a)) return number(a) * 1e9 / 8 / gpus_per_node;
  return 0;
}

ClusterSpec cluster_for(const PublishedRun& run, std::vector<std::string>& why) {
  const GpuSpec gpu = gpu_for(run, why);
  const std::string description = run.get("gpu_type") + " " + run.get("interconnect");
  const ClusterPreset& preset =
      contains(description, "dgx-2") ? find_cluster_preset("dgx-2") : reference_node_for_gpu(gpu.name);
  ClusterSpec c = preset.node;
  c.gpu = gpu;
  const int stated_per_node = integer(run, "gpus_per_node", 0);
  if (stated_per_node > 0) c.gpus_per_node = stated_per_node;
  else why.push_back(fmt::format("gpus_per_node not stated: {} ({} preset)", c.gpus_per_node, preset.node.name));
  if (const double bw = stated_inter_node_bandwidth(run.get("interconnect"), c.gpus_per_node);
      bw > 0 && std::abs(bw / c.inter_node_bandwidth_bytes_per_s - 1) > 0.01) {
    c.inter_node_bandwidth_bytes_per_s = bw;
    why.push_back(fmt::format("inter-node bandwidth from interconnect: {:.1f} GB/s per GPU", bw / 1e9));
  }
  const int gpus = integer(run, "total_gpus", 0);
  if (gpus < 1) throw RowSkipped(SkipKind::kUnsupported, "total_gpus: missing");
  if (gpus < c.gpus_per_node) {
    c.gpus_per_node = gpus;
    c.nodes = 1;
  } else {
    if (gpus % c.gpus_per_node != 0)
      throw RowSkipped(SkipKind::kInconsistent, fmt::format("total_gpus {} is not a whole number of {}-GPU nodes",
                                                            gpus, c.gpus_per_node));
    c.nodes = gpus / c.gpus_per_node;
  }
  if (c.nvlink_domain_gpus > c.gpus_per_node) {  // GB200/GB300 NVL72: trays in racks
    // A job of 64·k GPUs cannot fill 72-GPU NVLink domains: it is placed in 16-tray (64-GPU)
    // segments of each rack (Slurm block topology, --segment 16), so groups never straddle racks.
    if (c.nvlink_domain_gpus > 0 && gpus % c.nvlink_domain_gpus != 0 && gpus % 64 == 0) c.nvlink_domain_gpus = 64;
    why.push_back(fmt::format("{}: {} preset, {}-GPU compute trays in NVLink domains of {} GPUs{}", gpu.name,
                              preset.node.name,
                              c.gpus_per_node, c.nvlink_domain_gpus,
                              c.nvlink_domain_gpus == 64 ? " (64-GPU segments of the 72-GPU racks)" : ""));
  }
  c.name = fmt::format("{} x {}", gpus, gpu.name);
  return c;
}

// --- Model -----------------------------------------------------------------------------------------

enum class Family { kGpt, kMpt, kLlama, kLlama4, kMixtral, kGrok, kDeepSeekV3, kQwen3Moe, kGptOss, kNemotron4 };

Family family_of(const std::string& model_name) {
  const std::string n = lower(model_name);
  if (contains(n, "deepseek")) return Family::kDeepSeekV3;
  if (contains(n, "llama 4") || contains(n, "llama4") || contains(n, "maverick")) return Family::kLlama4;
  if (contains(n, "llama")) return Family::kLlama;
  if (contains(n, "mixtral")) return Family::kMixtral;
  if (contains(n, "grok")) return Family::kGrok;
  if (contains(n, "qwen3")) return Family::kQwen3Moe;
  if (contains(n, "gpt oss") || contains(n, "gpt-oss") || contains(n, "gpt_oss")) return Family::kGptOss;
  if (contains(n, "nemotron")) return Family::kNemotron4;
  if (contains(n, "mpt")) return Family::kMpt;
  return Family::kGpt;
}

// Llama family: SwiGLU, RMSNorm, RoPE, no biases, untied output layer.
void llama_style(ModelSpec& m) {
  m.gated_mlp = true;
  m.norm = NormKind::kRMSNorm;
  m.position_embedding = PositionEmbedding::kRotary;
  m.tie_embeddings = false;
}

// Architecture columns a row may state beyond the basic ones (memory_runs.csv's Megatron CI rows give
// them from the test's model_config.yaml); stated values win over a family's defaults:
//   mla_dims                    q_lora/kv_lora/qk_nope/qk_rope/v (Megatron --q-lora-rank, --kv-lora-rank,
//                               --qk-head-dim, --qk-pos-emb-head-dim, --v-head-dim)
//   moe_first_dense_layers      dense layers before the MoE ones (--moe-layer-freq ([0]*k+[1]*n))
//   moe_shared_expert_ffn_size  the shared experts' FFN width (--moe-shared-expert-intermediate-size)
//   mtp_layers                  multi-token prediction layers (--mtp-num-layers)
void apply_stated_architecture(const PublishedRun& run, ModelSpec& m, std::vector<std::string>& why) {
  if (const std::string dims = run.get("mla_dims"); !dims.empty()) {
    std::vector<int> v;
    std::size_t start = 0;
    while (start <= dims.size()) {
      const std::size_t end = std::min(dims.find('/', start), dims.size());
      int x = 0;
      const auto [ptr, ec] = std::from_chars(dims.data() + start, dims.data() + end, x);
      if (ec != std::errc() || ptr != dims.data() + end || x < 1)
        throw Error(fmt::format("mla_dims: '{}' must be five positive integers q_lora/kv_lora/qk_nope/qk_rope/v", dims));
      v.push_back(x);
      start = end + 1;
    }
    if (v.size() != 5)
      throw Error(fmt::format("mla_dims: '{}' must be five positive integers q_lora/kv_lora/qk_nope/qk_rope/v", dims));
    m.mla = MlaSpec{.q_lora_rank = v[0], .kv_lora_rank = v[1], .qk_rope_head_dim = v[3], .qk_nope_head_dim = v[2],
                    .v_head_dim = v[4]};
    m.head_dim = v[2] + v[3];
    m.num_kv_heads = m.num_attention_heads;
    why.push_back(fmt::format("MLA stated: {}", dims));
  }
  if (m.moe) {
    if (const std::string k = run.get("moe_first_dense_layers"); !k.empty()) {
      m.moe->first_dense_layers = integer(run, "moe_first_dense_layers", 0);
      why.push_back(fmt::format("first {} layers dense (stated)", m.moe->first_dense_layers));
    }
    if (const std::string k = run.get("moe_shared_expert_ffn_size"); !k.empty())
      m.moe->shared_expert_ffn_hidden_size = integer(run, "moe_shared_expert_ffn_size", 0);
  }
  if (const std::string k = run.get("mtp_layers"); !k.empty()) {
    m.mtp_layers = integer(run, "mtp_layers", 0);
    why.push_back(fmt::format("multi-token prediction: {} layer(s) (stated)", m.mtp_layers));
  }
}

ModelSpec model_for(const PublishedRun& run, const Framework& fw, std::vector<std::string>& why) {
  ModelSpec m;
  m.name = run.get("model");
  const Family family = family_of(m.name);
  m.num_layers = integer(run, "num_layers", 0);
  m.hidden_size = integer(run, "hidden_size", 0);
  m.num_attention_heads = integer(run, "num_attention_heads", 0);
  if (m.num_layers < 1 || m.hidden_size < 1) throw RowSkipped(SkipKind::kUnsupported, "num_layers and hidden_size are required");
  if (m.num_attention_heads == 0) {
    m.num_attention_heads = m.hidden_size / 128;
    if (m.num_attention_heads == 0)  // found by fuzz/published_runs: a division by zero below
      throw RowSkipped(SkipKind::kUnsupported,
                       fmt::format("num_attention_heads: not stated, and hidden_size {} is below one 128-wide head",
                                   m.hidden_size));
    why.push_back(fmt::format("num_attention_heads not stated: hidden/128 = {}", m.num_attention_heads));
  }
  m.num_kv_heads = integer(run, "num_kv_heads", 0);
  if (m.num_kv_heads == 0 && family != Family::kDeepSeekV3) {
    m.num_kv_heads = m.num_attention_heads;
    if (family != Family::kGpt && family != Family::kMpt)
      why.push_back("num_kv_heads not stated: = num_attention_heads (MHA)");
  }
  m.head_dim = m.hidden_size / m.num_attention_heads;

  // MoE columns.
  const int experts = integer(run, "moe_num_experts", 0);
  if (experts > 0) {
    MoeSpec e;
    e.num_experts = experts;
    e.top_k = integer(run, "moe_top_k", 0);
    if (e.top_k < 1) throw RowSkipped(SkipKind::kUnsupported, "moe_top_k: missing for an MoE row");
    e.expert_ffn_hidden_size = integer(run, "moe_expert_ffn_size", 0);
    if (e.expert_ffn_hidden_size == 0) {
      e.expert_ffn_hidden_size = integer(run, "ffn_hidden_size", 0);
      if (e.expert_ffn_hidden_size == 0) throw RowSkipped(SkipKind::kUnsupported, "moe_expert_ffn_size: missing");
      why.push_back("moe_expert_ffn_size not stated: = ffn_hidden_size (Mixtral convention)");
    }
    e.num_shared_experts = integer(run, "moe_shared_experts", 0);
    m.moe = e;
  }

  const int stated_ffn = integer(run, "ffn_hidden_size", 0);
  m.ffn_hidden_size = stated_ffn;

  switch (family) {
    case Family::kLlama:
    case Family::kMixtral:
      llama_style(m);
      break;
    case Family::kGrok:
      // NeMo scripts/performance/llm/pretrain_grok1_314b.py: MixtralConfig8x7B with Grok-1's
      // dimensions (row notes): SwiGLU experts, RMSNorm, RoPE, untied output layer.
      llama_style(m);
      why.push_back("Grok-1: Mixtral architecture (NeMo pretrain_grok1_314b.py builds on MixtralConfig8x7B)");
      break;
    case Family::kLlama4:
      llama_style(m);
      if (m.moe) {
        // NeMo Llama4Experts128Config: moe_layer_freq [0,1]*24 (layers 1, 3, ..., 47 are MoE), a shared
        // expert of the routed experts' size, dense FFN 16384 on the other layers.
        m.moe->first_dense_layers = 1;
        m.moe->layer_freq = 2;
        why.push_back("Llama 4 Maverick: MoE on every 2nd layer (layers 1,3,...; NeMo Llama4Experts128Config "
                      "moe_layer_freq [0,1]*24), shared expert of the routed size; chunked attention (8192) = seq, "
                      "no effect");
      }
      break;
    case Family::kDeepSeekV3: {
      // A DeepSeek-style model that states its own MLA (Megatron CI's proxies) is not DeepSeek-V3:
      // apply_stated_architecture reads it.
      if (!run.get("mla_dims").empty()) {
        llama_style(m);
        why.push_back("DeepSeek-style: SwiGLU, RMSNorm, RoPE, untied output; MLA and layers from the row's columns");
        break;
      }
      // MLA, the 3 leading dense layers and the shared expert's size from the deepseek-v3 preset
      // (deepseek-ai/DeepSeek-V3 config.json), which NeMo DeepSeekV3Config (row notes) matches.
      const ModelPreset& p = find_model_preset("deepseek-v3");
      llama_style(m);
      m.mla = p.spec.mla;
      m.head_dim = p.spec.head_dim;
      m.num_kv_heads = m.num_attention_heads;
      if (m.moe && p.spec.moe) {
        m.moe->first_dense_layers = p.spec.moe->first_dense_layers;
        m.moe->shared_expert_ffn_hidden_size = p.spec.moe->shared_expert_ffn_hidden_size;
        m.moe->route_groups = p.spec.moe->route_groups;  // node-limited routing (NeMo: 8 groups, top 4)
        m.moe->route_group_topk = p.spec.moe->route_group_topk;
      }
      why.push_back(fmt::format(
          "DeepSeek-V3: MLA (q_lora {}, kv_lora {}, rope {}, nope {}, v {}) and first {} layers dense, from the "
          "deepseek-v3 preset (NeMo DeepSeekV3Config per notes)",
          m.mla->q_lora_rank, m.mla->kv_lora_rank, m.mla->qk_rope_head_dim, m.mla->qk_nope_head_dim,
          m.mla->v_head_dim, m.moe ? m.moe->first_dense_layers : 0));
      // Multi-token prediction: Megatron-Bridge's perf recipes build on deepseek_v3_pretrain_config
      // (recipes/deepseek/h100/deepseek_v3.py @067f987: mtp_num_layers = 1) and do not unset it;
      // NeMo 2's recipe trains without it (recipes/deepseek_v3.py model(use_mtp=False),
      // DeepSeekV3Config mtp_num_layers None @8cfedd7).
      m.mtp_layers = fw.megatron_bridge ? 1 : 0;
      why.push_back(fw.megatron_bridge ? "multi-token prediction: 1 MTP layer (Megatron-Bridge's DeepSeek-V3 recipe "
                                         "sets mtp_num_layers = 1; not stated by the row)"
                                       : "multi-token prediction: none (NeMo 2's DeepSeek-V3 recipe trains without "
                                         "it, use_mtp=False; not stated by the row)");
      break;
    }
    case Family::kQwen3Moe:
      llama_style(m);
      m.head_dim = 128;
      why.push_back("Qwen3 MoE: head_dim 128 (NeMo qwen3.py, per notes), every layer MoE");
      break;
    case Family::kGptOss:
      llama_style(m);
      m.head_dim = 64;
      why.push_back("GPT-OSS: head_dim 64 (NeMo GPTOSSConfig120B, per notes), every layer MoE; sliding-window "
                    "attention on alternate layers and attention sinks not modelled (full causal attention)");
      break;
    case Family::kNemotron4:
      // NeMo Nemotron4Config15B/340B: squared-ReLU MLP (not gated), LayerNorm, RoPE, no biases,
      // untied output layer, no dropout.
      m.gated_mlp = false;
      m.norm = NormKind::kLayerNorm;
      m.position_embedding = PositionEmbedding::kRotary;
      m.tie_embeddings = false;
      why.push_back("Nemotron-4: squared-ReLU MLP, LayerNorm, RoPE, no bias, untied output (NeMo Nemotron4Config)");
      break;
    case Family::kMpt:
      // MPT: ALiBi (no position table), LayerNorm without bias, no biases, tied embeddings.
      m.norm = NormKind::kLayerNorm;
      m.position_embedding = PositionEmbedding::kNone;
      m.tie_embeddings = true;
      break;
    case Family::kGpt:
      // Megatron GPT: learned positions, LayerNorm and biases, tied embeddings, dropout 0.1.
      m.norm = NormKind::kLayerNorm;
      m.bias = true;
      m.qkv_bias = true;
      m.tie_embeddings = true;
      m.dropout = !fw.nemo;
      m.position_embedding = PositionEmbedding::kLearned;
      m.max_position_embeddings = integer(run, "seq_length", 2048);
      why.push_back(fw.nemo ? "GPT architecture: GeLU MLP, learned positions, tied embeddings; no dropout (assumed: "
                              "NeMo GPT-3 perf configs set hidden/attention dropout 0)"
                            : "GPT architecture: GeLU MLP, learned positions, tied embeddings, dropout (Megatron "
                              "defaults)");
      break;
  }

  apply_stated_architecture(run, m, why);

  if (m.ffn_hidden_size == 0) {
    const bool every_layer_moe = m.moe && m.moe->first_dense_layers == 0 && m.moe->layer_freq == 1;
    if (every_layer_moe) {
      m.ffn_hidden_size = m.moe->expert_ffn_hidden_size;
      why.push_back("ffn_hidden_size not stated: unused (every layer MoE), set to the expert FFN size");
    } else {
      m.ffn_hidden_size = 4 * m.hidden_size;
      why.push_back(fmt::format("ffn_hidden_size not stated: 4 x hidden = {}", m.ffn_hidden_size));
    }
  }

  m.vocab_size = integer(run, "vocab_size", 0);
  if (m.vocab_size == 0) {
    // The tokenizer the family is trained with (SOURCES.md: left empty where the benchmark named an HF
    // tokenizer and no numeric config was found).
    const std::string n = lower(m.name);
    if (family == Family::kGpt && fw.nemo) {
      m.vocab_size = 51200;
      why.push_back("vocab_size not stated: 51200 (NeMo perf script NullTokenizer; GPT-2 BPE padded)");
    } else if (family == Family::kLlama && (contains(n, "llama 3") || contains(n, "llama3"))) {
      m.vocab_size = 128256;
      why.push_back("vocab_size not stated: 128256 (Llama 3 tokenizer)");
    } else if (family == Family::kMixtral) {
      m.vocab_size = 32000;
      why.push_back("vocab_size not stated: 32000 (Mixtral tokenizer; SOURCES.md notes a 32000/32768 conflict)");
    } else {
      m.vocab_size = 32000;
      why.push_back("vocab_size not stated: 32000 (Llama-2 tokenizer)");
    }
  }
  validate(m);
  return m;
}

// --- Precision -------------------------------------------------------------------------------------

// Sets training.precision and fp8_recipe from the precision column.
void read_precision(const PublishedRun& run, const Framework& fw, const GpuSpec& gpu, TrainingSpec& t,
                    std::vector<std::string>& why) {
  const std::string text = run.get("precision");
  const std::string full = lower(text);
  const std::string main = lower(outside_parentheses(text));  // "BF16 (no float8)" -> "bf16"
  const bool fp8 = contains(main, "fp8") || contains(main, "float8");
  if (!fp8) {
    t.precision = gpu.peak_bf16_flops_per_s > 0 ? Precision::kBF16 : Precision::kFP16;
    if (contains(main, "fp16") && !contains(main, "bf16")) t.precision = Precision::kFP16;
    if (!contains(main, "bf16") && !contains(main, "fp16"))
      why.push_back(fmt::format("precision {}: {}", text.empty() ? "not stated" : "'" + text + "'",
                                to_string(t.precision)));
    return;
  }
  t.precision = Precision::kFP8;
  if (contains(full, "mxfp8")) {
    t.fp8_recipe = Fp8Recipe::kMxfp8;
  } else if (contains(full, "rowwise")) {
    t.fp8_recipe = Fp8Recipe::kBlockwise;
    why.push_back("torchao float8 rowwise: the blockwise recipe (per-row scales)");
  } else if (contains(full, "tensorwise") || contains(full, "current scaling") || contains(full, "fp8-cs")) {
    // Megatron's --fp8-recipe tensorwise is per-tensor *current* scaling (NeMo/Bridge "fp8_cs").
    t.fp8_recipe = Fp8Recipe::kTensorwise;
    if (contains(full, "not named"))
      why.push_back("float8 recipe not named: tensorwise (its flags belong to the tensorwise recipe, SOURCES.md)");
  } else if (contains(full, "delayed") || contains(full, "bf16_with_fp8_mixed") || contains(full, "fp8_recipe ds")) {
    t.fp8_recipe = Fp8Recipe::kDelayed;
  } else if (fw.torchtitan) {
    t.fp8_recipe = Fp8Recipe::kTensorwise;
    why.push_back("FP8 recipe not stated: tensorwise (torchao's default)");
  } else {
    t.fp8_recipe = Fp8Recipe::kDelayed;
    why.push_back("FP8 recipe not stated: delayed (NeMo's default, per-tensor delayed scaling; SOURCES.md)");
  }
}

// --- Known errors of the sources (SOURCES.md) ------------------------------------------------------

struct KnownError {
  const char* source;
  bool (*applies)(const PublishedRun&);
  std::vector<std::string> columns;  // metric columns not to use
  const char* why;
};

const std::vector<KnownError>& known_errors() {
  static const std::vector<KnownError> errors{
      {"S25",
       [](const PublishedRun& r) {
         return contains(r.get("model"), "grok") && contains(r.get("gpu_type"), "gb200") && r.get("total_gpus") == "512";
       },
       {"tokens_per_s_total"},
       "Grok-1 512-GPU GB200 throughput is about half of GBS x seq / step time (SOURCES.md S25)"},
      {"S25",
       [](const PublishedRun& r) {
         return contains(r.get("model"), "llama 4") && contains(r.get("gpu_type"), "gb200") &&
                r.get("total_gpus") == "128" && !contains(r.get("precision"), "fp8");
       },
       {"mfu_pct"},
       "Llama 4 128-GPU GB200 BF16 MFU was computed with the FP8 peak (SOURCES.md S25)"},
      {"S27",
       [](const PublishedRun& r) {
         return contains(r.get("precision"), "rowwise") && contains(r.get("framework"), "vanilla tp");
       },
       {"tokens_per_s_per_gpu", "tokens_per_s_total"},
       "the source flags the vanilla-TP float8 rowwise baseline as abnormally low (torchtitan #1207; SOURCES.md S27)"},
  };
  return errors;
}

// --- The metric ------------------------------------------------------------------------------------

// Sources whose runs train on synthetic (random-token) data for a few dozen iterations (SOURCES.md):
// NVIDIA's DGX Cloud benchmarking recipes, S24/S25/S31 (NVIDIA/dgxc-benchmarking @841f546, e.g.
// deepseek_v3/pretrain/megatron_bridge/README.md: "Deepseek-v3 training only uses synthetic
// datasets"), and NeMo's performance summary, S21 (NVIDIA/NeMo @8cfedd7 scripts/performance/llm/
// pretrain_mixtral_8x7b.py runs nemo/collections/llm/recipes/mixtral_8x7b.py, whose data is
// MockDataModule; pretrain_deepseek_v3.py also sets moe_router_force_load_balancing = True). S31's
// Megatron-Bridge script builds its recipe with mock=True (@7c0ae3fd scripts/performance/run_script.py).
bool runs_synthetic_data(const std::string& source_id) {
  return source_id == "S21" || source_id == "S24" || source_id == "S25" || source_id == "S31";
}

void choose_metric(const PublishedRun& run, const Framework& fw, Family family, RunSetup& s) {
  std::set<std::string> unusable;
  std::vector<std::string> known;
  for (const KnownError& e : known_errors())
    if (run.source() == e.source && e.applies(run)) {
      unusable.insert(e.columns.begin(), e.columns.end());
      known.emplace_back(e.why);
    }
  auto usable = [&](const char* column) -> std::optional<double> {
    if (unusable.contains(column)) return std::nullopt;
    return number(run, column);
  };
  std::vector<std::string>& why = s.assumptions;
  if (auto v = usable("iteration_time_s")) s.metric = "iteration_time_s", s.published = *v;
  else if (auto tok = usable("tokens_per_s_per_gpu")) s.metric = "tokens_per_s_per_gpu", s.published = *tok;
  else if (auto total = usable("tokens_per_s_total")) s.metric = "tokens_per_s_total", s.published = *total;
  else if (auto tf = usable("tflops_per_gpu")) s.metric = "tflops_per_gpu", s.published = *tf;
  else if (auto mfu = usable("mfu_pct")) s.metric = "mfu", s.published = *mfu / 100;
  else if (!known.empty())
    throw RowSkipped(SkipKind::kKnownSourceError, "no usable metric: " + join(known, "; "));
  else
    throw RowSkipped(SkipKind::kUnsupported,
                     "no metric to compare (iteration_time_s, tokens_per_s_per_gpu, tokens_per_s_total, tflops_per_gpu, "
                     "mfu_pct all empty)");
  for (const auto& k : known) why.push_back("not used: " + k);
  if (!(s.published > 0)) throw RowSkipped(SkipKind::kUnsupported, fmt::format("{}: must be > 0", s.metric));

  const std::string basis = lower(run.get("tflops_basis"));
  const std::string source = run.source();
  s.flops_basis = source == "S1" || contains(basis, "sc21") ? "megatron-sc21"
                  : fw.torchtitan                           ? "torchtitan"
                  : fw.megatron || contains(basis, "model tflop") || contains(basis, "nemo") ? "megatron"
                                                                                              : "paratune";
  if (s.metric != "tflops_per_gpu" && s.metric != "mfu") return;
  if (s.flops_basis == "paratune")
    throw RowSkipped(SkipKind::kUnsupported,
                     fmt::format("tflops_basis '{}' is not a FLOP convention paratune knows", run.get("tflops_basis")));
  if (source == "S1") why.push_back("S1 TFLOP/s basis assumed SC'21 Eq. 3 (it reproduces the published numbers)");
  if (s.flops_basis == "megatron") {
    // NeMo 25.04's figures for these families reproduce with the causal (halved) attention count:
    // Grok-1 4.27e15 and Llama 4 8.92e14 FLOPs per sample (DGXC READMEs), DeepSeek-V3 174 TFLOP/s at
    // 48.9 s (with its one MTP layer). Llama/GPT/Nemotron figures (4.74e14, 2.20e15, 3.85e14) count it fully.
    if (family == Family::kGrok || family == Family::kLlama4 || family == Family::kDeepSeekV3) {
      s.flops_causal_half = true;
      why.push_back("model FLOPs: Megatron count with causal (halved) attention, as NeMo reports this family");
    }
    if (family == Family::kDeepSeekV3) {
      s.flops_mtp_layers = 1;
      why.push_back("model FLOPs include 1 MTP layer (reproduces NeMo's reported DeepSeek-V3 TFLOP/s)");
    }
  }
}

// --- Axes and candidates ---------------------------------------------------------------------------

// Fully recomputed layers per rank to try (ParallelConfig::recompute_layers): 0 = as set up. When
// recompute is not stated, a run may recompute only some layers (Megatron's
// --recompute-num-layers), so full recompute is also tried on 1/8 ... 3/4 of a rank's layers.
std::vector<int> recompute_counts(const RunSetup& s, RecomputeMode rc, int pp) {
  const bool searched = std::find(s.searched_axes.begin(), s.searched_axes.end(), "recompute") != s.searched_axes.end();
  if (rc != RecomputeMode::kFull || !searched) return {0};
  const int per_rank = s.model.num_layers / pp;
  std::vector<int> counts{-1};
  for (double share : {0.125, 0.25, 0.375, 0.5, 0.75}) {
    const int n = static_cast<int>(std::lround(share * per_rank));
    if (n >= 1 && n < per_rank && std::find(counts.begin(), counts.end(), n) == counts.end()) counts.push_back(n);
  }
  return counts;
}

// Megatron-Bridge's DeepSeek-V3 layouts (recipes/deepseek/h100/deepseek_v3.py
// _get_deepseek_v3_pipeline_layout @067f987, e.g. pp 4 x vp 4: [E + 4t] + 14 x [4t] + [1t + mtp +
// loss]): the embedding in the first chunk, the MTP layers and the loss in the last, every chunk
// ceil(L / chunks) decoder layers but the last, which takes the remainder. Empty when that leaves
// the last chunk nothing or less.
std::vector<LayoutStage> bridge_layout(int layers, int chunks, int mtp) {
  const int per_chunk = (layers + chunks - 1) / chunks;
  const int last = layers - (chunks - 1) * per_chunk;
  if (chunks < 2 || last < 1) return {};
  std::vector<LayoutStage> out(static_cast<std::size_t>(chunks), LayoutStage{.layers = per_chunk});
  out.front().embedding = true;
  out.back() = LayoutStage{.layers = last, .mtp = mtp, .loss = true};
  return out;
}

// The ways build_candidates splits the layers over pp·vpp chunks: {account_embedding,
// account_loss, layout}. Megatron-Bridge's layout is tried for a model with MTP layers (its
// DeepSeek recipes, which place MTP with it) and where no account-for split divides the layers
// (the row would be refused); elsewhere its recipes use the account-for flags (Qwen3-235B:
// recipes/qwen/h100/qwen3_moe.py), and a candidate the run did not use would only widen the search.
struct PipelineSplit {
  bool embedding = false, loss = false;
  std::vector<LayoutStage> layout;
};
std::vector<PipelineSplit> pipeline_splits(const ModelSpec& model, int pp, int vpp, bool megatron_layout) {
  std::vector<PipelineSplit> out{{}};
  if (!megatron_layout || model.num_layers % (pp * vpp) == 0) return out;
  bool account_divides = false;
  if (vpp > 1) {
    for (const auto& [e, l] : {std::pair{true, true}, std::pair{true, false}, std::pair{false, true}}) {
      out.push_back({e, l, {}});
      const int slots = model.num_layers + (e ? 1 : 0) + (l ? 1 : 0);  // R11: slots split over pp, then vpp
      account_divides = account_divides || (slots % pp == 0 && (slots / pp) % vpp == 0);
    }
  }
  const bool refused = vpp > 1 && !account_divides;
  if (pp > 1 && (model.mtp_layers > 0 || refused))
    if (std::vector<LayoutStage> layout = bridge_layout(model.num_layers, pp * vpp, model.mtp_layers); !layout.empty())
      out.push_back({false, false, std::move(layout)});
  return out;
}

// Fills s.candidates with every combination of the axes that resolve accepts; throws RowSkipped when
// the stated axes contradict each other or paratune's rules refuse every combination.
void build_candidates(RunSetup& s, bool vpp_searched, bool sp_searched, bool megatron_layout) {
  const int gpus = static_cast<int>(s.cluster.num_gpus());  // total_gpus, an int (cluster_for)
  std::map<std::string, int> refusals;
  std::string batch_inconsistency;  // Megatron needs GBS divisible by dp·mbs too: a contradiction of the row
  std::string overlap_inconsistency;  // the stated EP overlap with a stated full recompute (R18.1)
  int consistent = 0;
  for (int tp : s.tp_choices)
    for (int pp : s.pp_choices)
      for (int cp : s.cp_choices) {
        if (gpus % (tp * pp * cp) != 0) continue;
        const int dp = gpus / (tp * pp * cp);
        if (s.stated_dp > 0 && dp != s.stated_dp) continue;
        ++consistent;
        std::vector<int> vpps = s.vpp_choices;
        if (vpps == std::vector<int>{0})
          vpps = divisors_up_to(s.model.num_layers % pp == 0 ? s.model.num_layers / pp : 1, 8);
        for (int ep : s.ep_choices)
          for (int mbs : s.mbs_choices)
            for (int vpp : vpps)
              // How the layers split over pp·vpp chunks is a layout sources do not print. Even when
              // possible; otherwise Megatron's account-for-embedding / -loss split (searched: NeMo's
              // Llama 3.1 405B recipe, for one, runs 126 layers on pp 8 x vpp 8 with both) and
              // Megatron-Bridge's layout (bridge_layout: its DeepSeek-V3 recipes).
              for (const auto& [embedding, loss, layout] :
                   s.stated_layout.empty() ? pipeline_splits(s.model, pp, vpp, megatron_layout)
                                           : std::vector<PipelineSplit>{{false, false, s.stated_layout}})
              for (RecomputeMode rc : s.recompute_choices)
                for (int recomputed : recompute_counts(s, rc, pp))
                for (bool sp : s.sp_choices)
                for (bool ep_overlap : s.ep_overlap_choices)
                for (MoeDispatcher dispatcher : s.dispatcher_choices)
                for (int etp : s.etp_choices) {
                  if (dispatcher != MoeDispatcher::kAllToAll && ep < 2) continue;
                  if (etp == 1 && tp == 1 && s.etp_choices.size() > 1) continue;  // etp = tp = 1 already
                  if (vpp_searched && vpp > 1 && pp == 1) continue;
                  if (sp_searched && sp && tp == 1) continue;
                  if (ep_overlap && (ep < 2 || rc == RecomputeMode::kFull)) {  // R18.1
                    overlap_inconsistency = fmt::format(
                        "the EP all-to-all overlap (--overlap-moe-expert-parallel-comm) needs ep >= 2 and no full "
                        "recompute (Megatron-LM R18.1), but ep = {} and recompute = {}",
                        ep, to_string(rc));
                    continue;
                  }
                  ParallelConfig c = s.config;
                  c.tp = tp;
                  c.pp = pp;
                  c.cp = cp;
                  c.dp = dp;
                  c.ep = ep;
                  c.mbs = mbs;
                  c.vpp = vpp;
                  c.recompute = rc;
                  c.sequence_parallel = sp;
                  c.account_embedding = embedding;
                  c.account_loss = loss;
                  c.layout = layout;
                  c.ep_overlap = ep_overlap;
                  c.dispatcher = dispatcher;
                  c.etp = etp;
                  if (rc != RecomputeMode::kFull) c.recompute_layers = -1;
                  else if (recomputed != 0) c.recompute_layers = recomputed;
                  else if (s.recompute_share > 0) {  // of each stage's layers (the largest stage's, when uneven)
                    const int largest_stage = (s.model.num_layers + pp - 1) / pp;
                    c.recompute_layers = std::max(1, static_cast<int>(s.recompute_share * largest_stage));
                  }
                  if (s.training.global_batch % (dp * mbs) != 0) {
                    batch_inconsistency =
                        s.training.global_batch % dp != 0
                            ? fmt::format("global batch {} is not a multiple of dp = total_gpus / (tp·pp·cp) = {} / "
                                          "({}·{}·{}) = {}",
                                          s.training.global_batch, gpus, tp, pp, cp, dp)
                            : fmt::format("global batch {} is not a multiple of dp·mbs = {}·{}", s.training.global_batch,
                                          dp, mbs);
                    continue;
                  }
                  try {
                    (void)resolve(c, s.model, s.cluster, s.training);
                    s.candidates.push_back(c);
                  } catch (const Error& e) {
                    ++refusals[e.what()];
                  }
                }
      }
  if (consistent == 0) {
    const bool all_stated = s.tp_choices.size() == 1 && s.pp_choices.size() == 1 && s.cp_choices.size() == 1;
    if (all_stated && s.stated_dp > 0)
      throw RowSkipped(SkipKind::kInconsistent,
                       fmt::format("tp·pp·dp·cp = {}·{}·{}·{} = {} but total_gpus = {}", s.tp_choices[0], s.pp_choices[0],
                                   s.stated_dp, s.cp_choices[0],
                                   s.tp_choices[0] * s.pp_choices[0] * s.stated_dp * s.cp_choices[0], gpus));
    throw RowSkipped(SkipKind::kInconsistent,
                     fmt::format("no tp·pp·cp among the stated and searched values divides total_gpus = {}{}", gpus,
                                 s.stated_dp > 0 ? fmt::format(" into dp = {}", s.stated_dp) : ""));
  }
  if (s.candidates.empty() && refusals.empty())
    throw RowSkipped(SkipKind::kInconsistent, !batch_inconsistency.empty()   ? batch_inconsistency
                                              : !overlap_inconsistency.empty() ? overlap_inconsistency
                                                                               : "no combination of the stated axes "
                                                                                 "remains");
  if (s.candidates.empty()) {
    // Most frequent rule first: it is the one the stated axes break whatever the searched ones are.
    std::vector<std::pair<int, std::string>> rules;
    rules.reserve(refusals.size());
    for (const auto& [rule, count] : refusals) rules.emplace_back(-count, rule);
    std::sort(rules.begin(), rules.end());
    std::vector<std::string> text;
    for (std::size_t i = 0; i < rules.size() && i < 4; ++i) text.push_back(rules[i].second);
    throw RowSkipped(SkipKind::kRefusedByRule,
                     "paratune's rules refuse the stated configuration (it ran: the source published it): " +
                         join(text, "; "));
  }
}

// The one reading of a row's model, cluster, training and parallel configuration, shared by the
// time rows (setup_for_run: with the metric) and the memory rows (setup_configuration: without).
RunSetup read_setup(const PublishedRun& run, bool with_metric) {
  RunSetup s;
  s.row_id = run.id();
  s.source_id = run.source();
  try {
    std::vector<std::string>& why = s.assumptions;
    const Framework fw = framework_of(run);
    const Family family = family_of(run.get("model"));
    s.model = model_for(run, fw, why);
    s.cluster = cluster_for(run, why);
    const int gpus = static_cast<int>(s.cluster.num_gpus());  // total_gpus, an int (cluster_for)
    const std::string optimizer = lower(run.get("zero_or_distributed_optimizer"));
    const bool ddp = contains(optimizer, "ddp");  // "DDP (FSDP column 0)": no parameter sharding
    const bool fsdp = !ddp && (contains(optimizer, "fsdp") || contains(optimizer, "full_shard"));
    // torch DDP (not Megatron's DDP, which reduces from its own contiguous gradient buffer): its
    // bucket buffers hold a second copy of the gradients (cost/memory.cc).
    if (ddp && !fw.megatron) {
      s.training.ddp_gradient_buckets = true;
      why.push_back("torch DDP: gradient buckets are a second copy of the gradients (gradient_as_bucket_view off)");
    }

    // --- Training -------------------------------------------------------------------------------
    TrainingSpec& t = s.training;
    t.seq_len = integer(run, "seq_length", 0);
    t.global_batch = integer(run, "global_batch_size", 0);
    if (t.global_batch == 0 && t.seq_len > 0) {
      std::string reading;
      if (const auto tokens = token_count(run, "global_batch_tokens", t.seq_len, reading);
          tokens && std::fmod(*tokens, t.seq_len) == 0) {
        if (!reading.empty()) why.push_back("global_batch_tokens " + reading);
        if (!(*tokens / t.seq_len >= 1 && *tokens / t.seq_len <= std::numeric_limits<int>::max()))
          throw Error(fmt::format("global_batch_tokens: {} / seq_length {} is not a batch of 1 to {} sequences", *tokens,
                                  t.seq_len, std::numeric_limits<int>::max()));
        t.global_batch = static_cast<int>(*tokens / t.seq_len);
        why.push_back(fmt::format("global batch derived: global_batch_tokens / seq = {}", t.global_batch));
      }
    }
    if (t.seq_len < 1 || t.global_batch < 1)
      throw RowSkipped(SkipKind::kUnsupported, "seq_length and global_batch_size are required");
    read_precision(run, fw, s.cluster.gpu, t, why);
    (void)s.cluster.gpu.peak_flops_per_s(t.precision);  // throws when the GPU lacks the precision
    t.flash_attention = !fw.early_megatron;
    if (fw.early_megatron) why.push_back("no flash attention (predates it; Megatron fused softmax)");
    // Megatron CI tests run with --attention-backend unfused or --transformer-impl local (Megatron's
    // own core attention): the s x s scores are materialised (MEMORY_SOURCES.md S5 notes them).
    if (const std::string notes = run.get("notes");
        contains(notes, "unfused attention") || contains(notes, "transformer-impl local")) {
      t.flash_attention = false;
      why.push_back("unfused attention (row notes): s x s attention scores kept for the backward");
    }
    // torch AMP over an fp32 model ("FP16 (torch AMP: fp32 weights, ...)"): fp32 weights, no
    // separate master copy (cost/memory.cc).
    if (contains(run.get("precision"), "torch amp")) {
      t.amp_fp32_weights = true;
      why.push_back("torch AMP: fp32 weights are the optimizer's master copy (4 + 4 + 8 bytes per parameter)");
    }
    // Composer FSDP mixed precision: PURE gathers and reduces in bf16; DEFAULT keeps fp32
    // parameters (gathered in fp32) and reduces gradients in bf16.
    const std::string precision_text = run.get("precision");
    if (contains(precision_text, "pure")) t.fp32_grad_accumulation = false;
    // Megatron-Bridge's performance recipes reduce and keep gradients in BF16
    // (perf_recipes/_common.py _benchmark_common: mixed_precision.grad_reduce_in_fp32 = False,
    // ddp.grad_reduce_in_fp32 = False; Megatron-Bridge @067f987), so the grad buffer is BF16.
    if (fw.megatron_bridge) {
      t.fp32_grad_accumulation = false;
      why.push_back("BF16 gradient buffers (Megatron-Bridge performance recipes: grad_reduce_in_fp32 = False)");
    }
    if (contains(precision_text, "mp mode default")) {
      t.fp32_grad_accumulation = false;
      t.fp32_param_gather = true;
      why.push_back("Composer MixedPrecision DEFAULT: fp32 parameter all-gather, bf16 gradient reduce-scatter");
    }
    if (s.model.moe) {
      if (contains(run.get("notes"), "force-balanced") || contains(run.get("other_result"), "force-balanced")) {
        t.moe_balancing = MoeBalancing::kForceBalanced;
        why.push_back("MoE routing force-balanced, token-dropless (source footnote)");
        // Forced balancing replaces the router's choice (Megatron's --moe-router-force-load-balancing
        // draws experts uniformly): group limits no longer apply.
        s.model.moe->route_groups = s.model.moe->route_group_topk = 0;
      } else if (runs_synthetic_data(s.source_id)) {
        // A router at its random initialisation, fed uniformly random tokens, spreads them evenly:
        // each expert's share is binomial, within a fraction of a percent at these token counts.
        t.moe_balancing = MoeBalancing::kForceBalanced;
        why.push_back(
            "MoE routing balanced: the benchmark trains on synthetic data from a random initialisation (step times "
            "of its first iterations), where routers spread tokens evenly (SOURCES.md)");
      } else {
        t.moe_balancing = MoeBalancing::kAuxLoss;
        why.push_back("MoE routing balance not stated: aux-loss, dropless (Megatron defaults)");
      }
      if (const auto factor = stated_capacity_factor(lower(run.get("notes")))) {
        // Token drop: an expert takes at most factor x its fair share. Padding up to the capacity
        // (--moe-pad-expert-input-to-capacity) is not modelled: exact at factor 1 with balanced routing.
        if (*factor < 1)
          throw Error(fmt::format("notes: capacity factor {} must be at least 1 (an expert's fair share)", *factor));
        t.moe_capacity_factor = *factor;
        why.push_back(fmt::format("MoE token drop as stated: expert capacity factor {}", *factor));
      }
    }

    // --- Parallel axes --------------------------------------------------------------------------
    ParallelConfig& c = s.config;
    int tp = integer(run, "tp", 0), pp = integer(run, "pp", 0), cp = integer(run, "cp", 0);
    const int dp = integer(run, "dp", 0);
    const int mp = integer(run, "model_parallel_total", 0);
    s.stated_dp = dp;
    if (tp == 0 && pp == 0 && mp > 0) {
      // Megatron READMEs: "for numbers larger than 8, typically tensor parallel of size 8 was used".
      tp = std::min(mp, s.cluster.gpus_per_node);
      pp = mp / tp;
      why.push_back(fmt::format("model-parallel {} split as tp={} x pp={}", mp, tp, pp));
    } else if (mp > 0 && (tp == 0) != (pp == 0)) {
      const int stated = std::max(tp, pp);
      if (mp % stated != 0)
        throw RowSkipped(SkipKind::kInconsistent,
                         fmt::format("model_parallel_total {} is not a multiple of the stated {} = {}", mp,
                                     tp > 0 ? "tp" : "pp", stated));
      const char* derived = tp == 0 ? "tp" : "pp";
      (tp == 0 ? tp : pp) = mp / stated;
      why.push_back(fmt::format("{} = {} derived: model_parallel_total {} / {}", derived, mp / stated, mp, stated));
    } else if (mp > 0 && tp * pp != mp) {
      throw RowSkipped(SkipKind::kInconsistent,
                       fmt::format("tp·pp = {}·{} = {} but model_parallel_total = {}", tp, pp, tp * pp, mp));
    }
    if (dp > 0) {
      if (gpus % dp != 0)
        throw RowSkipped(SkipKind::kInconsistent, fmt::format("dp = {} does not divide total_gpus = {}", dp, gpus));
      // tp·pp·cp = gpus / dp: derive the unstated ones when that leaves no choice.
      const int rest = gpus / dp;
      const int known = std::max(tp, 1) * std::max(pp, 1) * std::max(cp, 1);
      const int unstated = (tp == 0) + (pp == 0) + (cp == 0);
      if (unstated > 0 && rest % known == 0) {
        const int left = rest / known;
        // "total_gpus / (dp·tp) = 64 / (8·8) = 1"
        std::vector<std::string> names{"dp"}, values{std::to_string(dp)};
        for (const auto& [name, v] : {std::pair{"tp", tp}, std::pair{"pp", pp}, std::pair{"cp", cp}})
          if (v > 0) names.emplace_back(name), values.push_back(std::to_string(v));
        const std::string how = fmt::format("total_gpus / ({}) = {} / ({}) = {}", join(names, "·"), gpus,
                                            join(values, "·"), left);
        if (left == 1) {
          std::vector<std::string> derived;
          if (tp == 0) tp = 1, derived.emplace_back("tp");
          if (pp == 0) pp = 1, derived.emplace_back("pp");
          if (cp == 0) cp = 1, derived.emplace_back("cp");
          why.push_back(fmt::format("{} = 1 derived: {}", join(derived, ", "), how));
        } else if (unstated == 1) {
          int& axis = tp == 0 ? tp : pp == 0 ? pp : cp;
          const char* name = tp == 0 ? "tp" : pp == 0 ? "pp" : "cp";
          axis = left;
          why.push_back(fmt::format("{} = {} derived: {}", name, left, how));
        }
      }
    }
    if (tp == 0 && pp == 0 && fsdp) {
      tp = pp = 1;
      why.push_back("tp, pp not stated: 1 (pure FSDP)");
    }
    if (cp == 0) {
      cp = 1;
      why.push_back("cp not stated: 1 (no context parallelism)");
    }
    s.cp_choices = {cp};
    if (tp > 0) s.tp_choices = {tp};
    else {
      for (int v : {1, 2, 4, 8})
        if (v <= s.cluster.gpus_per_node) s.tp_choices.push_back(v);
      s.searched_axes.emplace_back("tp");
      why.push_back("tp not stated: searched 1..8");
    }
    if (pp > 0) s.pp_choices = {pp};
    else {
      s.pp_choices = divisors_up_to(gpus, 32);
      s.searched_axes.emplace_back("pp");
      why.push_back("pp not stated: searched");
    }

    // Expert parallelism (other_result "EDP/ETP = n" where the source prints them).
    const int ep = integer(run, "ep", 0);
    if (ep > 0) s.ep_choices = {ep};
    else if (s.model.moe) {
      s.ep_choices = divisors_up_to(s.model.moe->num_experts, 64);
      s.searched_axes.emplace_back("ep");
      why.push_back("ep not stated: searched");
    } else {
      s.ep_choices = {1};
    }
    // Expert all-to-all overlap only where the row states it and its framework has it: a searched
    // overlap would be taken whenever it is faster, crediting runs with an overlap nobody measured.
    const std::string stated = lower(run.get("notes") + " " + run.get("other_result"));
    if (s.model.moe && fw.megatron_bridge) {
      if (contains(stated, "--overlap-moe-expert-parallel-comm") ||
          contains(stated, "overlap_moe_expert_parallel_comm = true")) {
        s.ep_overlap_choices = {true};
        why.push_back("EP all-to-all overlap (--overlap-moe-expert-parallel-comm) as stated");
      } else {
        why.push_back("EP all-to-all overlap (--overlap-moe-expert-parallel-comm) not stated: off (Megatron-Core's "
                      "default)");
      }
    }
    // Megatron-Bridge's containers have Megatron-Core's flex dispatcher (DeepEP / HybridEP
    // backends) beside the all-to-all one; its MoE recipes pick either per model and GPU.
    if (s.model.moe && contains(stated, "alltoall dispatcher")) {
      s.dispatcher_choices = {MoeDispatcher::kAllToAll};
      why.push_back("MoE token dispatcher as stated: alltoall (top-k copies through an all-to-all)");
    } else if (s.model.moe && (contains(stated, "hybridep") || contains(stated, "deepep"))) {
      s.dispatcher_choices = {MoeDispatcher::kDeepEP};
      why.push_back("MoE token dispatcher as stated: node-deduplicated (HybridEP / DeepEP: dispatcher=deepep)");
    } else if (s.model.moe && fw.megatron_bridge && s.ep_choices != std::vector<int>{1}) {
      s.dispatcher_choices = {MoeDispatcher::kAllToAll, MoeDispatcher::kDeepEP};
      s.searched_axes.emplace_back("dispatcher");
      why.push_back("MoE token dispatcher not stated: searched alltoall and deepep (Megatron-Bridge has both)");
    }
    if (const auto etp = other_result_int(run, "ETP")) {
      s.etp_choices = {*etp};
    } else if (s.model.moe) {
      // Megatron defaults expert TP to tp, but MoE recipes set it to 1 as often (NeMo's DeepSeek-V3,
      // Qwen3 and Llama 4 recipes): both are searched, never assumed.
      s.etp_choices = {0, 1};
      s.searched_axes.emplace_back("etp");
      why.push_back("expert TP not stated: searched (= tp, or 1)");
    }

    // ZeRO / distributed optimizer / FSDP and the overlaps. Megatron overlaps TP communication by
    // default; a recipe that turns it off (NeMo 2.3's DeepSeek-V3 performance script:
    // MegatronCommOverlapCallback(tp_comm_overlap=False)) says so in the row's notes.
    const bool tp_overlap_stated_off = contains(lower(run.get("notes")), "tp_comm_overlap = false");
    if (fsdp) {
      c.zero = 3;
      c.overlap_param_gather = true;
    } else if (contains(optimizer, "zero-3") || contains(optimizer, "zero3")) {
      c.zero = 3;  // DeepSpeed ZeRO stage 3: parameters, gradients and optimizer state sharded
    } else if (contains(optimizer, "distributed optimizer") || contains(optimizer, "zero-1")) {
      c.zero = 1;
    } else if (fw.megatron && !fw.early_megatron) {
      c.zero = 1;  // overlap-param-gather implies the distributed optimizer
      why.push_back(fmt::format("{}distributed optimizer (zero=1), overlapped grad reduce / param gather{} "
                                "(Megatron-Core / NeMo recipe defaults)",
                                ddp ? "no FSDP (DDP); " : "", tp_overlap_stated_off ? "" : " / TP comm"));
    } else {
      c.zero = 0;
      // The 2020 README's DP scaling (8.3B: 1.343 s on 8 GPUs, 1.380 s on 1024) leaves no room for
      // an exposed 4 GB gradient all-reduce: it overlapped with the backward (torch DDP buckets).
      c.overlap_grad_reduce = true;
      why.push_back("DP gradient all-reduce overlapped with backward (implied by the published DP scaling)");
    }
    // FP8 parameters: NVIDIA's FP8 recipes pass --fp8-param-gather with the distributed optimizer
    // (Megatron-LM R20.6; NeMo's bf16_with_fp8_mixed sets fp8_param_gather); torchao's "float8
    // all-gather" rows gather FSDP parameters in float8 (torchtitan T7.5). MXFP8 too in
    // Megatron-Bridge (mixed_precision.py bf16_with_mxfp8_mixed: fp8_param_gather = True, with
    // reuse_grad_buf_for_mxfp8_param_ag).
    const std::string precision_lower = lower(run.get("precision"));
    if (t.precision == Precision::kFP8 && c.zero >= 1) {
      if (fw.megatron && !fw.early_megatron && (t.fp8_recipe != Fp8Recipe::kMxfp8 || fw.megatron_bridge)) {
        t.fp8_param_gather = true;
        why.push_back("FP8 parameters gathered in FP8 (--fp8-param-gather, NVIDIA / NeMo FP8 recipe default)");
      } else if (contains(precision_lower, "float8 all-gather") || contains(precision_lower, "f8 all-gather")) {
        t.fp8_param_gather = true;
        why.push_back("FSDP parameters all-gathered in float8 (torchao enable_fsdp_float8_all_gather)");
      }
    }
    c.tp_comm_overlap = fw.megatron && !fw.early_megatron;
    if (c.tp_comm_overlap && tp_overlap_stated_off) {
      c.tp_comm_overlap = false;
      why.push_back("TP communication not overlapped with the GEMMs, as stated (tp_comm_overlap = False)");
    }
    // The attention kernel: torchtitan's SDPA backends put FLASH_ATTENTION (FlashAttention-2) first
    // below Blackwell (torchtitan/models/attention.py @820504e: "Add CuDNN on B200 w/ highest
    // priority"); llm-foundry's benchmarks run its Triton flash kernel (submit_benchmarks.py
    // @061f2c7: --attn_impl default 'triton'). Transformer Engine (Megatron, NeMo) runs cuDNN's.
    if (fw.torchtitan || fw.llm_foundry) {
      t.flash_attention_2 = true;
      why.push_back(fw.torchtitan ? "attention: PyTorch SDPA's FlashAttention-2 backend (torchtitan's first below Blackwell)"
                                  : "attention: llm-foundry's Triton flash attention (its benchmarks' attn_impl default)");
    }
    // FP8 core attention where the row's recipe states it (Megatron-Bridge's MXFP8 MoE recipes:
    // mixed_precision.fp8_dot_product_attention = True); otherwise BF16, TE's default.
    if (contains(lower(run.get("notes")), "fp8_dot_product_attention = true")) {
      if (t.precision != Precision::kFP8)
        throw RowSkipped(SkipKind::kInconsistent,
                         fmt::format("notes: fp8_dot_product_attention = True, but precision '{}' is not FP8",
                                     run.get("precision")));
      t.fp8_attention = true;
      why.push_back("core attention in FP8, as stated (fp8_dot_product_attention = True)");
    }
    if (fw.torchtitan) {
      // torchtitan's loss: F.cross_entropy(pred.flatten(0, 1).float(), labels) (train.py), unfused.
      t.fp32_unfused_cross_entropy = true;
      // torchtitan's FSDP with PP: parameters not resharded between micro-batches (cost/memory.cc).
      t.fsdp_unsharded_across_microbatches = true;
      // torchtitan's TP is DTensor's: the column-parallel linears save their gathered input.
      t.tp_saves_gathered_inputs = true;
      // torchtitan's float8 is torchao's Float8Linear: BF16 inputs saved, no cached FP8 weights.
      if (t.precision == Precision::kFP8) t.fp8_saves_bf16_inputs = true;
    }
    if (fw.torchtitan && contains(run.get("framework"), "async tp")) {
      c.tp_comm_overlap = true;
      why.push_back("async TP: TP communication overlapped with the GEMMs (tp_comm_overlap)");
    }

    // Micro-batch, interleaving, recompute, sequence parallelism.
    const int mbs = integer(run, "micro_batch_size", 0);
    if (mbs > 0) s.mbs_choices = {mbs};
    else {
      s.mbs_choices = {1, 2, 4, 8, 16};
      s.searched_axes.emplace_back("mbs");
      why.push_back("micro-batch size not stated: searched 1..16");
    }
    int vpp = integer(run, "vpp", 0);
    bool vpp_searched = false;
    // A stated layout fixes the stages per rank: vpp = its stages / pp.
    if (const std::string text = run.get("pipeline_layout"); !text.empty()) {
      try {
        s.stated_layout = parse_pipeline_layout(text);
      } catch (const Error& e) {
        throw e.with_context("pipeline_layout");
      }
      const int stages = static_cast<int>(s.stated_layout.size());
      if (s.pp_choices.size() != 1 || stages % s.pp_choices.front() != 0)
        throw RowSkipped(SkipKind::kInconsistent,
                         fmt::format("pipeline_layout: '{}' has {} stages, not a multiple of the stated pp", text, stages));
      const int layout_vpp = stages / s.pp_choices.front();
      if (vpp > 0 && vpp != layout_vpp)
        throw RowSkipped(SkipKind::kInconsistent,
                         fmt::format("pipeline_layout: '{}' gives vpp {}, the row states vpp {}", text, layout_vpp, vpp));
      vpp = layout_vpp;
      why.push_back(fmt::format("pipeline layout stated: {} (vpp {})", text, vpp));
    }
    if (vpp > 1 && s.pp_choices == std::vector<int>{1}) {
      why.push_back(fmt::format("vpp {} printed with pp 1: no interleaving (vpp = 1)", vpp));
      vpp = 1;
    }
    if (vpp > 0) s.vpp_choices = {vpp};
    else if (fw.megatron) {
      s.vpp_choices = {0};
      vpp_searched = true;
      s.searched_axes.emplace_back("vpp");
      why.push_back("interleaving (vpp) not stated: searched");
    } else {
      s.vpp_choices = {1};
    }
    // The mode is read from the words outside parentheses ("none (not full recompute)" is none; a
    // value that is all parentheses, "(full)", from its words); torchtitan's qualifier may sit inside
    // them ("selective (per layer)").
    const std::string rc = lower(run.get("activation_recompute"));
    std::string rc_mode = lower(outside_parentheses(run.get("activation_recompute")));
    if (rc_mode.find_first_not_of(" \t") == std::string::npos) rc_mode = rc;
    const bool rc_selective = contains(rc_mode, "selective");
    const auto rc_says = [&](const char* words) {
      return contains(rc_mode, words) || (rc_selective && contains(rc, words));
    };
    if (rc.empty()) {
      if (fw.early_megatron) {
        s.recompute_choices = {RecomputeMode::kFull};
        why.push_back("full activation recompute (SC'21 Eq. 3 assumes it)");
      } else {
        s.recompute_choices = {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull};
        s.searched_axes.emplace_back("recompute");
        why.push_back("recompute not stated: searched none/selective/full");
      }
    } else if (rc_says("per layer") || ((rc_says("per op") || rc_says("per-op")) && fw.torchtitan)) {
      // torchtitan selective per-layer AC checkpoints every 2nd layer fully.
      s.recompute_choices = {RecomputeMode::kFull};
      s.recompute_share = 0.5;
      why.push_back("torchtitan selective AC: per-layer checkpoints every 2nd layer; per-op saves every other matmul "
                    "output: both recompute about half the forward, modelled as half the layers fully recomputed");
    } else if (rc_selective && fw.torchtitan) {
      // torchtitan's selective AC without a mode named: its train_configs' default, per-op SAC
      // (selective_ac_option = "op"; cost/memory.cc has what it saves).
      s.recompute_choices = {RecomputeMode::kSelective};
      t.per_op_selective_recompute = true;
      why.push_back("torchtitan selective AC: per-op SAC (selective_ac_option \"op\", the train_configs default)");
    } else if (rc_selective) {
      s.recompute_choices = {RecomputeMode::kSelective};
      // Megatron's --recompute-modules, where the row states them (the column, else its notes).
      std::optional<unsigned> modules = stated_recompute_modules(run.get("activation_recompute"));
      if (!modules) modules = stated_recompute_modules(run.get("notes"));
      if (modules) {
        c.recompute_modules = *modules;
        why.push_back(fmt::format("selective recompute of the stated modules {}",
                                  fmt::join(recompute_module_names(*modules), ", ")));
      }
    } else if (contains(rc_mode, "full")) {
      s.recompute_choices = {RecomputeMode::kFull};
    } else {
      s.recompute_choices = {RecomputeMode::kNone};
    }
    // "yes (torchtitan TP uses sequence parallel for norms)": the words outside parentheses.
    std::string sp = lower(outside_parentheses(run.get("sequence_parallel")));
    sp.erase(std::remove(sp.begin(), sp.end(), ' '), sp.end());
    bool sp_searched = false;
    const bool stated_on = sp == "true" || sp == "yes" || sp == "1";
    const bool stated_off = sp == "false" || sp == "no" || sp == "0";
    if (!sp.empty() && !stated_on && !stated_off)
      throw Error(fmt::format("sequence_parallel: '{}' must be empty, yes/true/1 or no/false/0",
                              run.get("sequence_parallel")));
    if (stated_on) {
      s.sp_choices = {true};
    } else if (sp.empty() && fw.torchtitan) {
      // torchtitan's TP plan (parallelize_llama apply_tp) shards the norms' inputs over the sequence
      // (SequenceParallel): Megatron-style SP whenever tp > 1.
      s.sp_choices = {true};
      if (s.tp_choices != std::vector<int>{1})
        why.push_back("sequence parallelism not stated: on with TP (torchtitan's TP plan uses SequenceParallel)");
    } else if (sp.empty() && fw.megatron && !fw.early_megatron) {
      s.sp_choices = {false, true};
      sp_searched = true;
      s.searched_axes.emplace_back("sp");
      why.push_back("sequence parallelism not stated: searched");
    } else {
      s.sp_choices = {false};  // stated off, or the framework's default
    }

    if (with_metric) choose_metric(run, fw, family, s);
    build_candidates(s, vpp_searched, sp_searched, fw.megatron);
    const bool account_split = std::any_of(s.candidates.begin(), s.candidates.end(), [](const ParallelConfig& k) {
      return k.account_embedding || k.account_loss;
    });
    const bool bridge_split = std::any_of(s.candidates.begin(), s.candidates.end(),
                                          [](const ParallelConfig& k) { return !k.layout.empty(); });
    if (account_split || bridge_split) {
      s.searched_axes.emplace_back("pipeline split");
      std::vector<std::string> splits;
      if (account_split) splits.emplace_back("Megatron's account-for-embedding/loss pipeline split");
      if (bridge_split)
        splits.emplace_back("Megatron-Bridge's layout (E in the first chunk, ceil(L/chunks) layers a chunk, the "
                            "remainder with MTP and loss in the last)");
      why.push_back(fmt::format("num_layers {} do not split evenly over pp·vpp chunks: {} searched (layout not stated)",
                                s.model.num_layers, join(splits, " and ")));
    }

    // Expert data parallelism printed by the source (other_result "EDP = n"): Megatron's expert
    // layers use tp·cp·dp GPUs per stage as etp·ep·edp.
    if (const auto edp = other_result_int(run, "EDP"))
      for (const auto& cand : s.candidates) {
        const int etp = cand.etp > 0 ? cand.etp : cand.tp;
        if (cand.tp * cand.cp * cand.dp != etp * cand.ep * *edp) {
          why.push_back(fmt::format("source prints EDP = {} but tp·cp·dp / (etp·ep) = {}: EDP not used", *edp,
                                    cand.tp * cand.cp * cand.dp / static_cast<double>(etp * cand.ep)));
          break;
        }
      }
    // Gradient accumulation printed by the source (other_result "GA = n"): a check of the batch
    // columns, not an input. A mismatch is reported; the global batch is what is used.
    if (const auto ga = other_result_int(run, "GA"); ga && mbs > 0) {
      std::set<int> implied;
      for (const auto& cand : s.candidates) implied.insert(t.global_batch / (cand.dp * cand.mbs));
      if (implied.size() == 1 && *implied.begin() != *ga)
        why.push_back(fmt::format("source prints GA = {} but GBS/(dp·mbs) = {}: the global batch is used{}", *ga,
                                  *implied.begin(), contains(run.get("notes"), "GA") ? " (SOURCES.md notes it)" : ""));
    }
  } catch (const RowSkipped& e) {
    std::string message = "row " + run.id() + ": " + e.what();
    if (e.kind == SkipKind::kInconsistent) {
      // The source's own caveat, when the notes give one ("DP printed as 4 but TPxPPxDPxCP = ...").
      const std::string notes = run.get("notes");
      if (const auto pos = notes.find("DP printed"); pos != std::string::npos)
        message += " (notes: " + notes.substr(pos, notes.find('.', pos) - pos) + ")";
    }
    throw RowSkipped(e.kind, message);
  } catch (const Error& e) {
    throw RowSkipped(SkipKind::kUnsupported, "row " + run.id() + ": " + e.what());
  }
  return s;
}

}  // namespace

RunSetup setup_for_run(const PublishedRun& run) { return read_setup(run, true); }

RunSetup setup_configuration(const PublishedRun& run) { return read_setup(run, false); }

}  // namespace paratune
