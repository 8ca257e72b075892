// Validation of the plain spec structs: one function per struct, each naming field, value and rule.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "paratune/spec/hardware.h"
#include "paratune/spec/input_file.h"
#include "paratune/spec/model.h"
#include "paratune/spec/training.h"

namespace paratune {
namespace {

void require_positive(std::string_view field, double value) {
  if (!(value > 0)) throw Error(fmt::format("{}: {} must be > 0", field, value));
}

// Figures read from files: NaN and infinity are never a measurement of hardware.
void require_finite_positive(std::string_view field, double value) {
  if (!(value > 0) || !std::isfinite(value))
    throw Error(fmt::format("{}: {} must be a finite number > 0", field, value));
}
void require_finite_non_negative(std::string_view field, double value) {
  if (!(value >= 0) || !std::isfinite(value))
    throw Error(fmt::format("{}: {} must be a finite number >= 0", field, value));
}

// Hardware figures orders of magnitude outside any real machine's are almost always a unit slip (a
// bare number is in base units: `intra_node_bandwidth: 450` is 450 B/s), and would silently give
// predictions off by as much: an error naming the range, and how to write the unit.
void require_plausible(std::string_view field, double value, double low, double high, std::string_view unit,
                       std::string_view example) {
  if (value >= low && value <= high) return;
  throw Error(fmt::format("{}: {:g} {} is outside any real machine's range ({:g} to {:g} {}); a bare number is in "
                          "{}: write the unit, e.g. {}",
                          field, value, unit, low, high, unit, unit, example));
}

}  // namespace

int ModelSpec::num_moe_layers() const {
  // Closed form (no loop: this sits in the cost model's hot path): layers first_dense_layers,
  // first_dense_layers + layer_freq, ... below num_layers.
  if (!moe || num_layers <= moe->first_dense_layers) return 0;
  return (num_layers - moe->first_dense_layers + moe->layer_freq - 1) / moe->layer_freq;
}

void validate(const ModelSpec& m) {
  // The name is printed in every report: a control character (an ANSI escape, a newline from a
  // config.json's _name_or_path) would act on the terminal or break a line of output.
  if (const auto bad = std::find_if(m.name.begin(), m.name.end(),
                                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; });
      bad != m.name.end())
    throw Error(fmt::format("name: '{}' holds the control character 0x{:02X}, which a name may not",
                            printable_text(m.name), static_cast<unsigned char>(*bad)));
  require_positive("num_layers", m.num_layers);
  require_positive("hidden_size", m.hidden_size);
  require_positive("num_attention_heads", m.num_attention_heads);
  require_positive("vocab_size", m.vocab_size);
  require_positive("ffn_hidden_size", m.ffn_hidden_size);
  if (m.num_kv_heads < 0) throw Error(fmt::format("num_kv_heads: {} must be >= 1", m.num_kv_heads));
  if (m.num_attention_heads % m.kv_heads() != 0)
    throw Error(fmt::format("num_kv_heads: {} must divide num_attention_heads {}", m.kv_heads(),
                            m.num_attention_heads));
  if (m.head_dim < 0)
    throw Error(fmt::format("head_dim: {} must be >= 1 (0 or left out: hidden_size / num_attention_heads)", m.head_dim));
  if (m.head_dim == 0 && m.hidden_size % m.num_attention_heads != 0)
    throw Error(fmt::format("num_attention_heads: {} does not divide hidden_size {} (set head_dim explicitly)",
                            m.num_attention_heads, m.hidden_size));
  if (m.mtp_layers < 0) throw Error(fmt::format("mtp_layers: {} must be >= 0", m.mtp_layers));
  if (m.mtp_layers > 0 && !m.causal)
    throw Error(fmt::format("mtp_layers: {} needs a causal decoder (multi-token prediction predicts later tokens)",
                            m.mtp_layers));
  if (m.position_embedding == PositionEmbedding::kLearned && m.max_position_embeddings <= 0)
    throw Error("max_position_embeddings: must be > 0 with learned position embeddings");
  if (m.moe) {
    const auto& e = *m.moe;
    require_positive("moe.num_experts", e.num_experts);
    require_positive("moe.expert_ffn_hidden_size", e.expert_ffn_hidden_size);
    if (e.top_k < 1 || e.top_k > e.num_experts)
      throw Error(fmt::format("moe.top_k: {} must be between 1 and moe.num_experts {}", e.top_k, e.num_experts));
    if (e.num_shared_experts < 0) throw Error(fmt::format("moe.num_shared_experts: {} must be >= 0", e.num_shared_experts));
    if (e.shared_expert_ffn_hidden_size < 0)
      throw Error(fmt::format("moe.shared_expert_ffn_hidden_size: {} must be >= 0 (0: expert_ffn_hidden_size)",
                              e.shared_expert_ffn_hidden_size));
    if (e.first_dense_layers < 0 || e.first_dense_layers > m.num_layers)
      throw Error(fmt::format("moe.first_dense_layers: {} must be between 0 and num_layers {}", e.first_dense_layers,
                              m.num_layers));
    if (e.layer_freq < 1) throw Error(fmt::format("moe.layer_freq: {} must be >= 1", e.layer_freq));
    if (e.route_groups != 0 || e.route_group_topk != 0) {
      if (e.route_groups < 1 || e.num_experts % e.route_groups != 0)
        throw Error(fmt::format("moe.route_groups: {} must divide moe.num_experts {} (equal groups of experts)",
                                e.route_groups, e.num_experts));
      if (e.route_group_topk < 1 || e.route_group_topk > e.route_groups)
        throw Error(fmt::format("moe.route_group_topk: {} must be between 1 and moe.route_groups {}",
                                e.route_group_topk, e.route_groups));
      if (e.top_k > e.num_experts / e.route_groups * e.route_group_topk)
        throw Error(fmt::format("moe.top_k: {} is more than the {} experts of moe.route_group_topk = {} groups", e.top_k,
                                e.num_experts / e.route_groups * e.route_group_topk, e.route_group_topk));
    }
  }
  if (m.mla) {
    require_positive("mla.kv_lora_rank", m.mla->kv_lora_rank);
    require_positive("mla.qk_nope_head_dim", m.mla->qk_nope_head_dim);
    require_positive("mla.v_head_dim", m.mla->v_head_dim);
    if (m.mla->q_lora_rank < 0 || m.mla->qk_rope_head_dim < 0)
      throw Error("mla: q_lora_rank and qk_rope_head_dim must be >= 0");
  }
}

double GpuSpec::peak_flops_per_s(Precision precision) const {
  const double peak = precision == Precision::kBF16   ? peak_bf16_flops_per_s
                      : precision == Precision::kFP16 ? peak_fp16_flops_per_s
                                                      : peak_fp8_flops_per_s;
  if (peak <= 0)
    throw Error(fmt::format("precision: {} is not supported by GPU '{}' (no {} tensor cores)", to_string(precision),
                            name, to_string(precision)));
  return peak;
}

std::string gpu_generation(const std::string& gpu_name) {
  auto starts = [&](const char* prefix) { return gpu_name.rfind(prefix, 0) == 0; };
  if (starts("v100")) return "volta";
  if (starts("a100")) return "ampere";
  if (starts("h100") || starts("h200") || starts("h800")) return "hopper";
  if (starts("b200") || starts("gb200") || starts("b300") || starts("gb300")) return "blackwell";
  return "other";
}

void validate(const GpuSpec& g) {
  require_finite_positive("gpu.memory", g.memory_bytes);
  require_finite_positive("gpu.hbm_bandwidth", g.hbm_bandwidth_bytes_per_s);
  require_plausible("gpu.memory", g.memory_bytes, 1e8, 1e14, "B", "80GB");
  require_plausible("gpu.hbm_bandwidth", g.hbm_bandwidth_bytes_per_s, 1e9, 1e15, "B/s", "3.35TB/s");
  require_finite_non_negative("gpu.peak_bf16_tflops", g.peak_bf16_flops_per_s / 1e12);
  require_finite_non_negative("gpu.peak_fp16_tflops", g.peak_fp16_flops_per_s / 1e12);
  require_finite_non_negative("gpu.peak_fp8_tflops", g.peak_fp8_flops_per_s / 1e12);
  require_finite_non_negative("gpu.peak_fp32_tflops", g.peak_fp32_flops_per_s / 1e12);
  if (g.peak_bf16_flops_per_s <= 0 && g.peak_fp16_flops_per_s <= 0)
    throw Error("gpu: needs at least one of peak_bf16_tflops, peak_fp16_tflops > 0");
  require_finite_non_negative("gpu.host_link_bandwidth", g.host_link_bandwidth_bytes_per_s);
  if (g.host_link_bandwidth_bytes_per_s > 0)
    require_plausible("gpu.host_link_bandwidth", g.host_link_bandwidth_bytes_per_s, 1e9, 1e13, "B/s", "55GB/s");
  require_finite_non_negative("gpu.board_power_w", g.board_power_w);
  require_finite_non_negative("gpu.power_limit_w", g.power_limit_w);
  if (g.power_limit_w > 0) {
    if (g.board_power_w <= 0)
      throw Error(fmt::format("gpu.power_limit_w: {} W needs the board power the peaks are for (gpu.board_power_w); "
                              "{} does not state it",
                              g.power_limit_w, g.name));
    if (g.power_limit_w > g.board_power_w)
      throw Error(fmt::format("gpu.power_limit_w: {} W is above {}'s board power of {} W (a limit only lowers the "
                              "clocks)",
                              g.power_limit_w, g.name, g.board_power_w));
    // nvidia-smi refuses limits below about a quarter of the board power (H100 SXM: 200 of 700 W).
    if (g.power_limit_w < 0.25 * g.board_power_w)
      throw Error(fmt::format("gpu.power_limit_w: {} W is below a quarter of {}'s board power of {} W, lower than "
                              "any GPU allows",
                              g.power_limit_w, g.name, g.board_power_w));
  }
}

void validate(const ClusterSpec& c) {
  validate(c.gpu);
  require_positive("nodes", c.nodes);
  require_positive("gpus_per_node", c.gpus_per_node);
  // GPU counts in 64 bits: nodes x gpus_per_node must not wrap (536870913 x 8 is not 8 GPUs).
  if (c.num_gpus() > kMaxGpus)
    throw Error(fmt::format("nodes: {} nodes x {} GPUs per node = {} GPUs; paratune models at most {} GPUs", c.nodes,
                            c.gpus_per_node, c.num_gpus(), kMaxGpus));
  require_finite_positive("intra_node_bandwidth", c.intra_node_bandwidth_bytes_per_s);
  if (c.nodes > 1) require_finite_positive("inter_node_bandwidth", c.inter_node_bandwidth_bytes_per_s);
  else require_finite_non_negative("inter_node_bandwidth", c.inter_node_bandwidth_bytes_per_s);
  require_finite_non_negative("intra_node_latency", c.intra_node_latency_s);
  require_finite_non_negative("inter_node_latency", c.inter_node_latency_s);
  require_plausible("intra_node_bandwidth", c.intra_node_bandwidth_bytes_per_s, 1e6, 1e14, "B/s", "450GB/s");
  if (c.inter_node_bandwidth_bytes_per_s > 0)
    require_plausible("inter_node_bandwidth", c.inter_node_bandwidth_bytes_per_s, 1e6, 1e14, "B/s", "50GB/s");
  for (const auto& [field, latency] : {std::pair{"intra_node_latency", c.intra_node_latency_s},
                                       std::pair{"inter_node_latency", c.inter_node_latency_s}})
    if (latency > 1)
      throw Error(fmt::format("{}: {} s is outside any real machine's range (0 to 1 s); a bare number is in seconds: "
                              "write the unit, e.g. 5us",
                              field, latency));
  if (c.nvlink_domain_gpus < 0 || c.nvlink_domain_gpus % c.gpus_per_node != 0)
    throw Error(fmt::format("nvlink_domain_gpus: {} must be 0 (one node) or a multiple of gpus_per_node {}",
                            c.nvlink_domain_gpus, c.gpus_per_node));
  if (c.nvlink_domain_gpus > kMaxGpus)
    throw Error(fmt::format("nvlink_domain_gpus: {} must be at most {}", c.nvlink_domain_gpus, kMaxGpus));
  if (c.nodes_per_pod < 0) throw Error(fmt::format("nodes_per_pod: {} must be >= 0 (0 = one fabric)", c.nodes_per_pod));
  if (c.pod_gpus() > kMaxGpus)
    throw Error(fmt::format("nodes_per_pod: {} nodes x {} GPUs = {} GPUs per pod; at most {}", c.nodes_per_pod,
                            c.gpus_per_node, c.pod_gpus(), kMaxGpus));
  if (c.nodes_per_pod > 0 && c.pod_gpus() % c.scale_up_gpus() != 0)
    throw Error(fmt::format("nodes_per_pod: {} nodes x {} GPUs = {} GPUs must be a whole number of {}-GPU NVLink "
                            "domains (nvlink_domain_gpus)",
                            c.nodes_per_pod, c.gpus_per_node, c.pod_gpus(), c.scale_up_gpus()));
  if (!(c.pod_oversubscription >= 1) || !std::isfinite(c.pod_oversubscription))
    throw Error(fmt::format("pod_oversubscription: {} must be a finite number >= 1 (1 = non-blocking)",
                            c.pod_oversubscription));
}

void validate(const TrainingSpec& t) {
  require_positive("seq_len", t.seq_len);
  require_positive("global_batch", t.global_batch);
  if (t.fp8_param_gather && t.precision != Precision::kFP8)
    throw Error(fmt::format("fp8_param_gather: needs precision fp8 (precision is {})", to_string(t.precision)));
  if (t.fp8_attention && t.precision != Precision::kFP8)
    throw Error(fmt::format("fp8_attention: needs precision fp8 (precision is {})", to_string(t.precision)));
  if (t.moe_capacity_factor != 0 && !(t.moe_capacity_factor >= 1 && std::isfinite(t.moe_capacity_factor)))
    throw Error(fmt::format("moe_capacity_factor: {} must be 0 (dropless) or a finite number >= 1",
                            t.moe_capacity_factor));
}

void validate(const ModelSpec& model, const TrainingSpec& training) {
  // A learned position table has no row past its last: the model cannot take a longer sequence
  // (rotary and ALiBi-style positions have no such limit).
  if (model.position_embedding == PositionEmbedding::kLearned && training.seq_len > model.max_position_embeddings)
    throw Error(fmt::format("seq_len: {} exceeds {}'s {} learned positions (max_position_embeddings); give a model "
                            "spec with max_position_embeddings >= {} to train it at that length",
                            training.seq_len, model.name, model.max_position_embeddings, training.seq_len));
}

}  // namespace paratune
