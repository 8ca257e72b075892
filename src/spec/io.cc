#include "paratune/spec/io.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

#include "json_reader.h"
#include "paratune/spec/input_file.h"
#include "paratune/spec/presets.h"
#include "paratune/spec/units.h"
#include "yaml_load.h"

namespace paratune {
namespace {

using detail::JsonReader;
using nlohmann::json;

// YAML -> JSON. Plain (unquoted) scalars become numbers/booleans/null when they look like one;
// quoted scalars stay strings.
//
// Aliases (*name) repeat the node they name, so a few hundred bytes of nested aliases expand to
// billions of values (the "billion laughs" bomb). The conversion counts the values it produces
// and stops at kMaxYamlValues: a model, cluster or calibration file has a few hundred.
constexpr std::size_t kMaxYamlValues = 1'000'000;

class YamlToJson {
 public:
  json convert(const YAML::Node& node) {
    if (++values_ > kMaxYamlValues)
      throw Error(fmt::format("the document expands to more than {} values (YAML aliases repeat what they name; "
                              "a model, cluster or calibration file has a few hundred)",
                              kMaxYamlValues));
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return nullptr;
      case YAML::NodeType::Sequence: {
        json out = json::array();
        for (const auto& item : node) out.push_back(convert(item));
        return out;
      }
      case YAML::NodeType::Map: {
        json out = json::object();
        for (const auto& item : node) {
          const std::string key = item.first.as<std::string>();
          check_decoded_utf8(key, item.first);
          if (out.contains(key))
            throw Error(
                fmt::format("line {}: the key '{}' appears twice in one mapping", item.first.Mark().line + 1, key));
          out[key] = convert(item.second);
        }
        return out;
      }
      case YAML::NodeType::Scalar:
        return scalar(node);
    }
    return nullptr;
  }

 private:
  // The file is UTF-8 (parse_document checks it), but yaml-cpp decodes the escapes \N and \_ of a
  // double-quoted scalar to single Latin-1 bytes: a string JSON cannot hold.
  static void check_decoded_utf8(const std::string& text, const YAML::Node& node) {
    if (first_non_utf8(text) != std::string::npos)
      throw Error(fmt::format("line {}: a string is not UTF-8 once YAML's escapes are decoded (yaml-cpp decodes \\N "
                              "and \\_ to Latin-1 bytes: write those characters themselves)",
                              node.Mark().line + 1));
  }

  static json scalar(const YAML::Node& node) {
    const std::string& text = node.Scalar();
    check_decoded_utf8(text, node);
    if (node.Tag() == "!") return text;  // quoted
    if (text == "true" || text == "True" || text == "yes") return true;
    if (text == "false" || text == "False" || text == "no") return false;
    if (text == "null" || text == "~") return nullptr;
    char* end = nullptr;
    errno = 0;
    const long long integer = std::strtoll(text.c_str(), &end, 10);
    if (!text.empty() && *end == '\0' && errno != ERANGE) return integer;  // too long: a double below
    const double real = std::strtod(text.c_str(), &end);
    if (!text.empty() && *end == '\0') return real;
    return text;
  }

  std::size_t values_ = 0;
};

// Whether an argument names something on disk. An argument that cannot be a path (a name longer
// than the system allows, say) is not one: the check never throws (std::filesystem::exists
// without an error_code throws on ENAMETOOLONG).
bool names_a_path(const std::string& arg) {
  std::error_code ec;
  return std::filesystem::exists(arg, ec);
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

const std::vector<std::string> kModelKeys{
    "name", "num_layers", "hidden_size", "num_attention_heads", "num_kv_heads", "head_dim", "ffn_hidden_size",
    "gated_mlp", "vocab_size", "tie_embeddings", "norm", "bias", "qkv_bias", "causal", "dropout",
    "position_embedding", "max_position_embeddings", "type_vocab_size", "pooler", "mtp_layers", "moe", "mla"};
const std::vector<std::string> kMoeKeys{"num_experts",        "top_k",      "expert_ffn_hidden_size",
                                        "num_shared_experts", "shared_expert_ffn_hidden_size",
                                        "first_dense_layers", "layer_freq", "route_groups", "route_group_topk"};
const std::vector<std::string> kMlaKeys{"q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
                                        "v_head_dim"};
const std::vector<std::string> kClusterKeys{"name", "gpu", "nodes", "gpus_per_node", "intra_node_bandwidth",
                                            "inter_node_bandwidth", "intra_node_latency", "inter_node_latency",
                                            "nvlink_domain_gpus", "nodes_per_pod", "pod_oversubscription",
                                            "rail_optimized", "gpu_power_limit_w"};
const std::vector<std::string> kGpuKeys{"name",          "memory",        "peak_bf16_tflops", "peak_fp16_tflops",
                                        "peak_fp8_tflops", "peak_fp32_tflops", "hbm_bandwidth", "board_power_w",
                                        "power_limit_w", "host_link_bandwidth"};

// Fills the "0 means derived" fields so every later stage sees complete numbers. Only 0: a negative
// value stays, for validate() to refuse.
ModelSpec normalize(ModelSpec m) {
  if (m.num_kv_heads == 0) m.num_kv_heads = m.num_attention_heads;
  // head_dim stays 0 when heads do not divide hidden, so validate() reports it.
  if (m.head_dim == 0 && m.num_attention_heads > 0 && m.hidden_size % m.num_attention_heads == 0)
    m.head_dim = m.hidden_size / m.num_attention_heads;
  if (m.ffn_hidden_size == 0 && m.hidden_size <= std::numeric_limits<int>::max() / 4)
    m.ffn_hidden_size = 4 * m.hidden_size;
  if (m.bias) m.qkv_bias = true;
  return m;
}

}  // namespace

json parse_document(std::string_view text, const std::string& source, DocumentFormat format) {
  check_utf8(text, source);
  try {
    if (format == DocumentFormat::kJson) {
      // A key twice in one object is an error (nlohmann keeps the last one silently).
      std::vector<std::set<std::string>> keys;
      const json::parser_callback_t unique_keys = [&](int, json::parse_event_t event, json& parsed) {
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        else if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
        else if (event == json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
          throw Error(fmt::format("{}: the key '{}' appears twice in one object", source, parsed.get<std::string>()));
        return true;
      };
      return json::parse(text, unique_keys);
    }
    return YamlToJson().convert(load_yaml(std::string(text)));  // surrogate pairs too, as JSON has them
  } catch (const json::exception& e) {  // syntax, and numbers out of range (1e400)
    throw Error(fmt::format("{}: invalid JSON: {}", source, e.what()));
  } catch (const Error& e) {
    if (std::string_view(e.what()).starts_with(source)) throw;
    throw e.with_context(source);
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("{}: invalid YAML at line {}, column {}: {}", source, e.mark.line + 1, e.mark.column + 1,
                            e.msg));
  }
}

json read_document(const std::string& path) {
  const bool is_json = ends_with(path, ".json");
  return parse_document(read_input_file(path, is_json ? "JSON file" : "YAML file"), path,
                        is_json ? DocumentFormat::kJson : DocumentFormat::kYaml);
}

ModelSpec model_from_json(const json& doc, std::string_view source) {
  JsonReader r(doc, std::string(source), kModelKeys);
  ModelSpec m;
  m.name = r.get_string("name", std::string(std::filesystem::path(source).stem()));
  m.num_layers = r.require_int("num_layers");
  m.hidden_size = r.require_int("hidden_size");
  m.num_attention_heads = r.require_int("num_attention_heads");
  m.num_kv_heads = r.get_int("num_kv_heads", 0);
  m.head_dim = r.get_int("head_dim", 0);
  m.ffn_hidden_size = r.get_int("ffn_hidden_size", 0);
  m.gated_mlp = r.get_bool("gated_mlp", false);
  m.vocab_size = r.require_int("vocab_size");
  m.tie_embeddings = r.get_bool("tie_embeddings", false);
  m.norm = r.get_enum("norm", NormKind::kLayerNorm);
  m.bias = r.get_bool("bias", false);
  m.qkv_bias = r.get_bool("qkv_bias", false);
  m.causal = r.get_bool("causal", true);
  m.dropout = r.get_bool("dropout", false);
  m.position_embedding = r.get_enum("position_embedding", PositionEmbedding::kRotary);
  m.max_position_embeddings = r.get_int("max_position_embeddings", 0);
  m.type_vocab_size = r.get_int("type_vocab_size", 0);
  m.pooler = r.get_bool("pooler", false);
  m.mtp_layers = r.get_int("mtp_layers", 0);
  if (const json* moe = r.get_object("moe")) {
    JsonReader e(*moe, r.context() + ": moe", kMoeKeys);
    MoeSpec spec;
    spec.num_experts = e.require_int("num_experts");
    spec.top_k = e.get_int("top_k", 1);
    spec.expert_ffn_hidden_size = e.require_int("expert_ffn_hidden_size");
    spec.num_shared_experts = e.get_int("num_shared_experts", 0);
    spec.shared_expert_ffn_hidden_size = e.get_int("shared_expert_ffn_hidden_size", 0);
    spec.first_dense_layers = e.get_int("first_dense_layers", 0);
    spec.layer_freq = e.get_int("layer_freq", 1);
    spec.route_groups = e.get_int("route_groups", 0);
    spec.route_group_topk = e.get_int("route_group_topk", 0);
    e.finish();
    m.moe = spec;
  }
  if (const json* mla = r.get_object("mla")) {
    JsonReader a(*mla, r.context() + ": mla", kMlaKeys);
    MlaSpec spec;
    spec.q_lora_rank = a.get_int("q_lora_rank", 0);
    spec.kv_lora_rank = a.require_int("kv_lora_rank");
    spec.qk_rope_head_dim = a.get_int("qk_rope_head_dim", 0);
    spec.qk_nope_head_dim = a.require_int("qk_nope_head_dim");
    spec.v_head_dim = a.require_int("v_head_dim");
    a.finish();
    m.mla = spec;
  }
  r.finish();
  m = normalize(m);
  try {
    validate(m);
  } catch (const Error& e) {
    throw e.with_context(source);
  }
  return m;
}

std::vector<std::string> supported_hf_model_types() {
  return {"llama", "mistral", "qwen2", "qwen3", "gpt2", "gptj", "bert", "mixtral", "qwen2_moe", "qwen3_moe",
          "deepseek_v2", "deepseek_v3"};
}

ModelSpec model_from_hf_config(const json& doc, std::string_view source) {
  const std::string src(source);
  auto get = [&](const char* key) -> const json& {
    if (!doc.contains(key) || doc[key].is_null()) throw Error(fmt::format("{}: {}: is required for this model_type", src, key));
    return doc[key];
  };
  // A present value of the wrong type or out of range is an error, never the default: "8" for
  // num_key_value_heads must not silently become multi-head attention.
  auto get_int = [&](const char* key) {
    const json& v = get(key);
    const std::optional<int> value = detail::json_int(v);
    if (!value) throw Error(fmt::format("{}: {}: {}", src, key, detail::int_problem(v)));
    return *value;
  };
  auto opt_int = [&](const char* key, int fallback) {
    return doc.contains(key) && !doc[key].is_null() ? get_int(key) : fallback;
  };
  // Sizes whose 0 means "derive it" in paratune's own files: in a config.json only null (or no key)
  // means the default, so 0 or less is an error rather than the derived value.
  auto positive = [&](const char* key, int value) {
    if (value < 1)
      throw Error(fmt::format("{}: {}: {} must be >= 1 (leave it out or null for the default)", src, key, value));
    return value;
  };
  auto opt_size = [&](const char* key, int fallback) {
    return doc.contains(key) && !doc[key].is_null() ? positive(key, get_int(key)) : fallback;
  };
  auto opt_bool = [&](const char* key, bool fallback) {
    if (!doc.contains(key) || doc[key].is_null()) return fallback;
    if (!doc[key].is_boolean())
      throw Error(fmt::format("{}: {}: {} is not a boolean (true/false)", src, key, doc[key].dump()));
    return doc[key].get<bool>();
  };
  const std::string type = doc.contains("model_type") && doc["model_type"].is_string()
                               ? doc["model_type"].get<std::string>()
                               : "";
  const auto supported = supported_hf_model_types();
  if (std::find(supported.begin(), supported.end(), type) == supported.end())
    throw Error(fmt::format("{}: model_type: '{}' is not supported; supported: {}", src, type, join(supported)));

  // The name: the checkpoint's own (_name_or_path, "meta-llama/Llama-3.1-405B"); without one, the
  // model type and shape ("llama-126L-16384h", set below). Never the directory: a downloaded
  // snapshot's is a commit hash, a local one often "data" or "model".
  ModelSpec m;
  if (doc.contains("_name_or_path") && doc["_name_or_path"].is_string()) m.name = doc["_name_or_path"].get<std::string>();

  if (type == "gpt2" || type == "gptj") {
    m.num_layers = get_int("n_layer");
    m.hidden_size = get_int("n_embd");
    m.num_attention_heads = get_int("n_head");
    m.ffn_hidden_size = opt_size("n_inner", 4 * m.hidden_size);
    m.vocab_size = get_int("vocab_size");
    m.norm = NormKind::kLayerNorm;
    m.bias = true;
    m.dropout = true;
    if (type == "gpt2") {
      m.tie_embeddings = opt_bool("tie_word_embeddings", true);
      m.position_embedding = PositionEmbedding::kLearned;
      m.max_position_embeddings = opt_int("n_positions", 1024);
    } else {
      m.tie_embeddings = opt_bool("tie_word_embeddings", false);
      m.position_embedding = PositionEmbedding::kRotary;
    }
  } else if (type == "bert") {
    m.num_layers = get_int("num_hidden_layers");
    m.hidden_size = get_int("hidden_size");
    m.num_attention_heads = get_int("num_attention_heads");
    m.ffn_hidden_size = positive("intermediate_size", get_int("intermediate_size"));
    m.vocab_size = get_int("vocab_size");
    m.norm = NormKind::kLayerNorm;
    m.bias = true;
    m.causal = false;
    m.dropout = true;
    m.tie_embeddings = true;
    m.position_embedding = PositionEmbedding::kLearned;
    m.max_position_embeddings = opt_int("max_position_embeddings", 512);
    m.type_vocab_size = opt_int("type_vocab_size", 2);
    m.pooler = true;
  } else {
    // Llama-style decoders: llama, mistral, qwen2/3, mixtral, qwen*-moe, deepseek.
    m.num_layers = get_int("num_hidden_layers");
    m.hidden_size = get_int("hidden_size");
    m.num_attention_heads = get_int("num_attention_heads");
    m.num_kv_heads = opt_size("num_key_value_heads", m.num_attention_heads);
    m.head_dim = opt_size("head_dim", 0);
    m.ffn_hidden_size = positive("intermediate_size", get_int("intermediate_size"));
    m.vocab_size = get_int("vocab_size");
    m.gated_mlp = true;
    m.norm = NormKind::kRMSNorm;
    m.position_embedding = PositionEmbedding::kRotary;
    m.tie_embeddings = opt_bool("tie_word_embeddings", false);
    m.qkv_bias = type == "qwen2" || type == "qwen2_moe" || opt_bool("attention_bias", false);
    if (type == "mixtral") {
      m.moe = MoeSpec{get_int("num_local_experts"), get_int("num_experts_per_tok"), m.ffn_hidden_size, 0, 0, 0, 1};
    } else if (type == "qwen2_moe" || type == "qwen3_moe") {
      MoeSpec e;
      e.num_experts = get_int("num_experts");
      e.top_k = get_int("num_experts_per_tok");
      e.expert_ffn_hidden_size = get_int("moe_intermediate_size");
      const int shared = opt_int("shared_expert_intermediate_size", 0);
      e.num_shared_experts = shared > 0 ? 1 : 0;
      e.shared_expert_ffn_hidden_size = shared;
      e.layer_freq = opt_int("decoder_sparse_step", 1);
      m.moe = e;
    } else if (type == "deepseek_v2" || type == "deepseek_v3") {
      MoeSpec e;
      e.num_experts = get_int("n_routed_experts");
      e.top_k = get_int("num_experts_per_tok");
      e.expert_ffn_hidden_size = get_int("moe_intermediate_size");
      e.num_shared_experts = opt_int("n_shared_experts", 0);
      e.first_dense_layers = opt_int("first_k_dense_replace", 0);
      e.layer_freq = opt_int("moe_layer_freq", 1);
      // Group-limited routing: DeepSeek-V3 n_group 8, topk_group 4 (V2: "group_limited_greedy").
      if (opt_int("n_group", 1) > 1 && opt_int("topk_group", 0) > 0) {
        e.route_groups = opt_int("n_group", 1);
        e.route_group_topk = opt_int("topk_group", 0);
      }
      m.moe = e;
      m.mtp_layers = opt_int("num_nextn_predict_layers", 0);  // DeepSeek-V3: 1 (the MTP module)
      MlaSpec a;
      a.q_lora_rank = opt_int("q_lora_rank", 0);  // null for DeepSeek-V2-Lite
      a.kv_lora_rank = get_int("kv_lora_rank");
      a.qk_rope_head_dim = get_int("qk_rope_head_dim");
      a.qk_nope_head_dim = get_int("qk_nope_head_dim");
      a.v_head_dim = get_int("v_head_dim");
      m.mla = a;
      m.head_dim = a.qk_rope_head_dim + a.qk_nope_head_dim;
    }
  }
  if (m.name.empty()) m.name = fmt::format("{}-{}L-{}h", type, m.num_layers, m.hidden_size);
  m = normalize(m);
  try {
    validate(m);
  } catch (const Error& e) {
    throw e.with_context(src);
  }
  return m;
}

ModelSpec load_model(std::string_view name_or_path) {
  const std::string arg(name_or_path);
  if (!names_a_path(arg)) {
    if (arg.find('/') != std::string::npos || ends_with(arg, ".json") || ends_with(arg, ".yaml") ||
        ends_with(arg, ".yml"))
      throw Error(fmt::format("{}: model file does not exist", arg));
    return find_model_preset(arg).spec;
  }
  // A directory is a Hugging Face checkpoint: its config.json.
  std::error_code ec;
  const std::string file =
      std::filesystem::is_directory(arg, ec) ? (std::filesystem::path(arg) / "config.json").string() : arg;
  if (file != arg && !names_a_path(file))
    throw Error(fmt::format("{}: is a directory without a config.json (a Hugging Face model directory has one)", arg));
  return model_from_document(read_document(file), file);
}

ModelSpec model_from_document(const json& doc, std::string_view source) {
  if (doc.is_object() && doc.contains("model_type")) return model_from_hf_config(doc, source);
  // Hugging Face's names without its model_type: a config.json cut short, not a paratune model spec
  // missing num_layers.
  if (doc.is_object() && !doc.contains("num_layers") &&
      (doc.contains("num_hidden_layers") || doc.contains("n_layer") || doc.contains("architectures")))
    throw Error(fmt::format("{}: model_type: is required: the file has Hugging Face config.json fields "
                            "(num_hidden_layers, n_layer or architectures) and model_type says how to read them; "
                            "supported: {}",
                            source, join(supported_hf_model_types())));
  return model_from_json(doc, source);
}

GpuSpec gpu_from_json(const json& doc, std::string_view source) {
  if (doc.is_string()) {
    try {
      return find_gpu_preset(doc.get<std::string>());
    } catch (const Error& e) {
      throw e.with_context(source);
    }
  }
  JsonReader r(doc, std::string(source), kGpuKeys);
  GpuSpec g;
  g.name = r.get_string("name", "custom-gpu");
  for (const auto& [key, example] : {std::pair{"memory", "80GB"}, std::pair{"hbm_bandwidth", "3.35TB/s"}})
    if (!r.has(key)) r.fail(key, fmt::format("is required for a GPU given as an object (e.g. {})", example));
  g.memory_bytes = r.get_quantity("memory", 0, units::parse_bytes);
  g.peak_bf16_flops_per_s = r.get_double("peak_bf16_tflops", 0) * 1e12;
  g.peak_fp16_flops_per_s = r.get_double("peak_fp16_tflops", g.peak_bf16_flops_per_s / 1e12) * 1e12;
  g.peak_fp8_flops_per_s = r.get_double("peak_fp8_tflops", 0) * 1e12;
  g.peak_fp32_flops_per_s = r.get_double("peak_fp32_tflops", 0) * 1e12;
  g.hbm_bandwidth_bytes_per_s = r.get_quantity("hbm_bandwidth", 0, units::parse_bandwidth);
  g.host_link_bandwidth_bytes_per_s = r.get_quantity("host_link_bandwidth", 0, units::parse_bandwidth);
  g.board_power_w = r.get_double("board_power_w", 0);
  g.power_limit_w = r.get_double("power_limit_w", 0);
  r.finish();
  try {
    validate(g);
  } catch (const Error& e) {
    throw e.with_context(source);
  }
  return g;
}

ClusterSpec cluster_from_json(const json& doc, std::string_view source) {
  JsonReader r(doc, std::string(source), kClusterKeys);
  const json* gpu_doc = r.get_object("gpu");
  if (!gpu_doc) r.fail("gpu", "is required (a GPU preset name or an object)");
  ClusterSpec c;
  c.gpu = gpu_from_json(*gpu_doc, r.context() + ": gpu");
  // A power limit for the GPUs of a preset ("gpu: h100-sxm" has no field of its own for it).
  if (r.has("gpu_power_limit_w")) c.gpu.power_limit_w = r.get_double("gpu_power_limit_w", 0);
  // Unset links default to the GPU's reference node (e.g. NVLink and NDR for an H100).
  ClusterSpec ref;
  bool have_ref = false;
  try {
    ref = reference_node_for_gpu(c.gpu.name).node;
    have_ref = true;
  } catch (const Error&) {
  }
  c.name = r.get_string("name", std::string(std::filesystem::path(source).stem()));
  c.nodes = r.require_int("nodes");
  c.gpus_per_node = r.get_int("gpus_per_node", have_ref ? ref.gpus_per_node : 0);
  auto link = [&](const char* key, double ref_value, double (*parse)(std::string_view)) {
    if (!r.has(key) && !have_ref) r.fail(key, "is required for a GPU without a reference node");
    return r.get_quantity(key, ref_value, parse);
  };
  c.intra_node_bandwidth_bytes_per_s = link("intra_node_bandwidth", ref.intra_node_bandwidth_bytes_per_s, units::parse_bandwidth);
  c.inter_node_bandwidth_bytes_per_s = link("inter_node_bandwidth", ref.inter_node_bandwidth_bytes_per_s, units::parse_bandwidth);
  c.intra_node_latency_s = link("intra_node_latency", ref.intra_node_latency_s, units::parse_duration);
  c.inter_node_latency_s = link("inter_node_latency", ref.inter_node_latency_s, units::parse_duration);
  // The NVLink domain defaults to the reference node's only when the node is the reference node's
  // (GB200 trays of 4 -> 72-GPU racks); a different gpus_per_node is a different machine.
  c.nvlink_domain_gpus = r.get_int(
      "nvlink_domain_gpus", have_ref && c.gpus_per_node == ref.gpus_per_node ? ref.nvlink_domain_gpus : 0);
  c.nodes_per_pod = r.get_int("nodes_per_pod", 0);
  c.pod_oversubscription = r.get_double("pod_oversubscription", 1);
  c.rail_optimized = r.get_bool("rail_optimized", true);
  r.finish();
  try {
    validate(c);
  } catch (const Error& e) {
    throw e.with_context(source);
  }
  return c;
}

ClusterSpec load_cluster(std::string_view text) {
  const std::string arg(text);
  if (names_a_path(arg)) return cluster_from_json(read_document(arg), arg);
  if (ends_with(arg, ".yaml") || ends_with(arg, ".yml") || ends_with(arg, ".json"))
    throw Error(fmt::format("{}: cluster file does not exist", arg));
  // A count from 1 to kMaxGpus (a larger one does not fit the cluster's GPU count either).
  auto parse_count = [&](std::string_view digits, const char* what) {
    int value = 0;
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || ptr != digits.data() + digits.size() || value < 1 || value > kMaxGpus)
      throw Error(fmt::format("cluster '{}': {} '{}' must be an integer from 1 to {}", arg, what, digits, kMaxGpus));
    return value;
  };
  // The node count replaced: the product with gpus_per_node is checked again.
  auto checked = [&](ClusterSpec c) {
    try {
      validate(c);
    } catch (const Error& e) {
      throw e.with_context(fmt::format("cluster '{}'", arg));
    }
    return c;
  };
  if (const auto colon = arg.rfind(':'); colon != std::string::npos) {  // PRESET:NODES or FILE:NODES
    const std::string head = arg.substr(0, colon);
    if (names_a_path(head)) {
      ClusterSpec c = cluster_from_json(read_document(head), head);
      c.nodes = parse_count(std::string_view(arg).substr(colon + 1), "node count");
      c.name += fmt::format(":{}", c.nodes);
      return checked(c);
    }
    ClusterSpec c = find_cluster_preset(arg.substr(0, colon)).node;
    c.nodes = parse_count(std::string_view(arg).substr(colon + 1), "node count");
    c.name = arg;
    return checked(c);
  }
  for (const auto& p : cluster_presets())
    if (p.node.name == arg) return p.node;
  // GPUxCOUNT: "h100x128", "a100-80gbx64". The GPU part may be a preset name or its unique prefix.
  if (const auto x = arg.rfind('x'); x != std::string::npos && x + 1 < arg.size() &&
                                     std::isdigit(static_cast<unsigned char>(arg[x + 1]))) {
    const std::string gpu_part = arg.substr(0, x);
    const int count = parse_count(std::string_view(arg).substr(x + 1), "GPU count");
    std::vector<const GpuSpec*> matches;
    for (const auto& g : gpu_presets())
      if (g.name == gpu_part || g.name.rfind(gpu_part, 0) == 0) matches.push_back(&g);
    if (matches.size() != 1) {
      const auto names = gpu_preset_names();
      throw Error(fmt::format("cluster '{}': '{}' {} GPU preset; valid: {}", arg, gpu_part,
                              matches.empty() ? "matches no" : "matches more than one", join(names)));
    }
    ClusterSpec c = reference_node_for_gpu(matches.front()->name).node;
    if (count < c.gpus_per_node) {
      c.gpus_per_node = count;
    } else if (count % c.gpus_per_node != 0) {
      throw Error(fmt::format("cluster '{}': {} GPUs is not a whole number of {}-GPU nodes", arg, count,
                              c.gpus_per_node));
    }
    c.nodes = count / c.gpus_per_node;
    c.name = arg;
    return checked(c);
  }
  find_cluster_preset(arg);  // throws the unknown-preset error with suggestions
  return {};
}

json to_json(const ModelSpec& m) {
  json j{{"name", m.name},
         {"num_layers", m.num_layers},
         {"hidden_size", m.hidden_size},
         {"num_attention_heads", m.num_attention_heads},
         {"num_kv_heads", m.kv_heads()},
         {"head_dim", m.head_size()},
         {"ffn_hidden_size", m.ffn_hidden_size},
         {"gated_mlp", m.gated_mlp},
         {"vocab_size", m.vocab_size},
         {"tie_embeddings", m.tie_embeddings},
         {"norm", to_string(m.norm)},
         {"bias", m.bias},
         {"qkv_bias", m.qkv_bias},
         {"causal", m.causal},
         {"dropout", m.dropout},
         {"position_embedding", to_string(m.position_embedding)},
         {"max_position_embeddings", m.max_position_embeddings},
         {"type_vocab_size", m.type_vocab_size},
         {"pooler", m.pooler}};
  if (m.mtp_layers > 0) j["mtp_layers"] = m.mtp_layers;
  if (m.moe)
    j["moe"] = {{"num_experts", m.moe->num_experts},
                {"top_k", m.moe->top_k},
                {"expert_ffn_hidden_size", m.moe->expert_ffn_hidden_size},
                {"num_shared_experts", m.moe->num_shared_experts},
                {"shared_expert_ffn_hidden_size", m.moe->shared_expert_ffn_hidden_size},
                {"first_dense_layers", m.moe->first_dense_layers},
                {"layer_freq", m.moe->layer_freq},
                {"route_groups", m.moe->route_groups},
                {"route_group_topk", m.moe->route_group_topk}};
  if (m.mla)
    j["mla"] = {{"q_lora_rank", m.mla->q_lora_rank},
                {"kv_lora_rank", m.mla->kv_lora_rank},
                {"qk_rope_head_dim", m.mla->qk_rope_head_dim},
                {"qk_nope_head_dim", m.mla->qk_nope_head_dim},
                {"v_head_dim", m.mla->v_head_dim}};
  return j;
}

json to_json(const GpuSpec& g) {
  return {{"name", g.name},
          {"memory", g.memory_bytes},
          {"peak_bf16_tflops", g.peak_bf16_flops_per_s / 1e12},
          {"peak_fp16_tflops", g.peak_fp16_flops_per_s / 1e12},
          {"peak_fp8_tflops", g.peak_fp8_flops_per_s / 1e12},
          {"peak_fp32_tflops", g.peak_fp32_flops_per_s / 1e12},
          {"hbm_bandwidth", g.hbm_bandwidth_bytes_per_s},
          {"host_link_bandwidth", g.host_link_bandwidth_bytes_per_s},
          {"board_power_w", g.board_power_w},
          {"power_limit_w", g.power_limit_w}};
}

json to_json(const ClusterSpec& c) {
  return {{"name", c.name},
          {"gpu", to_json(c.gpu)},
          {"nodes", c.nodes},
          {"gpus_per_node", c.gpus_per_node},
          {"intra_node_bandwidth", c.intra_node_bandwidth_bytes_per_s},
          {"inter_node_bandwidth", c.inter_node_bandwidth_bytes_per_s},
          {"intra_node_latency", c.intra_node_latency_s},
          {"inter_node_latency", c.inter_node_latency_s},
          {"nvlink_domain_gpus", c.nvlink_domain_gpus},
          {"nodes_per_pod", c.nodes_per_pod},
          {"pod_oversubscription", c.pod_oversubscription},
          {"rail_optimized", c.rail_optimized}};
}

json to_json(const TrainingSpec& t) {
  return {{"seq_len", t.seq_len},
          {"global_batch", t.global_batch},
          {"precision", to_string(t.precision)},
          {"fp8_recipe", to_string(t.fp8_recipe)},
          {"fp8_param_gather", t.fp8_param_gather},
          {"moe_balancing", to_string(t.moe_balancing)},
          {"moe_capacity_factor", t.moe_capacity_factor},
          {"optimizer", to_string(t.optimizer)},
          {"flash_attention", t.flash_attention},
          {"fp32_grad_accumulation", t.fp32_grad_accumulation},
          {"fp32_param_gather", t.fp32_param_gather}};
}

json to_json(const ParallelConfig& c) {
  nlohmann::json j{{"dp", c.dp},
          {"tp", c.tp},
          {"pp", c.pp},
          {"vpp", c.vpp},
          {"cp", c.cp},
          {"ep", c.ep},
          {"etp", c.expert_tp()},
          {"mbs", c.mbs},
          {"sequence_parallel", c.sequence_parallel},
          {"zero", c.zero},
          {"op", c.op},
          {"recompute", to_string(c.recompute)},
          {"recompute_layers", c.recompute_layers},
          // Only selective recompute recomputes modules; [] under recompute=selective is "none".
          {"recompute_modules", c.recompute == RecomputeMode::kSelective ? recompute_module_names(c.recompute_modules)
                                                                         : std::vector<std::string>{}},
          {"offload_modules", offload_module_names(c.offload_modules)},
          {"stage_recompute_layers", c.stage_recompute_layers},
          {"stage_layers", c.stage_layers},
          {"schedule", to_string(c.schedule)},
          {"grad_sync", to_string(c.grad_sync)},
          {"overlap_grad_reduce", c.overlap_grad_reduce},
          {"overlap_param_gather", c.overlap_param_gather},
          {"tp_comm_overlap", c.tp_comm_overlap},
          {"overlap_p2p", c.overlap_p2p},
          {"ep_overlap", c.ep_overlap},
          {"dispatcher", to_string(c.dispatcher)},
          {"account_embedding", c.account_embedding},
          {"account_loss", c.account_loss}};
  if (!c.layout.empty()) j["layout"] = to_string(c.layout);  // Megatron syntax (R13)
  return j;
}

}  // namespace paratune
