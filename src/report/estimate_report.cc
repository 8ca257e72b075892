#include "paratune/report/estimate_report.h"

#include <fmt/format.h>

#include "paratune/spec/io.h"
#include "paratune/spec/presets.h"
#include "paratune/spec/units.h"

namespace paratune {
namespace {

nlohmann::json memory_json(const MemoryBreakdown& m) {
  return {{"weights", m.weights_bytes},
          {"grads", m.grads_bytes},
          {"optimizer", m.optimizer_bytes},
          {"activations", m.activations_bytes},
          {"other", m.other_bytes},
          {"total", m.total_bytes()}};
}

}  // namespace

nlohmann::json to_json(const Estimate& e) {
  const TimeBreakdown& b = e.breakdown;
  nlohmann::json stages = nlohmann::json::array();
  nlohmann::json memory = nlohmann::json::array();
  for (std::size_t i = 0; i < e.stages.size(); ++i) {
    const StageEstimate& s = e.stages[i];
    memory.push_back(memory_json(s.memory));
    stages.push_back({{"stage", i},
                      {"layers", s.layers},
                      {"recomputed_layers", s.recomputed_layers},
                      {"forward_s", s.forward_s},
                      {"backward_s", s.backward_s},
                      {"compute_s", s.compute_s},
                      {"in_flight_microbatches", s.in_flight_microbatches},
                      {"host_activation_bytes", s.host_activation_bytes},
                      {"params", s.params},
                      {"memory_bytes", memory_json(s.memory)}});
  }
  nlohmann::json j{{"config", to_json(e.config)},
                   {"num_microbatches", e.num_microbatches},
                   {"iteration_time_s", e.iteration_time_s},
                   {"bubble_fraction", e.bubble_fraction},
                   {"tokens_per_s", e.tokens_per_s},
                   {"mfu", e.mfu},
                   {"hfu", e.hfu},
                   {"tflops_per_gpu", e.tflops_per_gpu},
                   {"model_flops", e.model_flops},
                   {"hardware_flops", e.hardware_flops},
                   {"breakdown_s",
                    {{"compute", b.compute_s},
                     {"bubble", b.bubble_s},
                     {"tp_comm", b.tp_comm_s},
                     {"cp_comm", b.cp_comm_s},
                     {"ep_comm", b.ep_comm_s},
                     {"pp_comm", b.pp_comm_s},
                     {"dp_comm", b.dp_comm_s},
                     {"zero3_comm", b.zero3_comm_s},
                     {"optimizer", b.optimizer_s},
                     {"overhead", b.overhead_s}}},
                   {"memory_bytes_per_stage", memory},
                   {"stages", stages},
                   {"peak_memory_bytes", e.peak_memory_bytes},
                   {"memory_limit_bytes", e.memory_limit_bytes},
                   {"fits", e.fits}};
  if (!e.fits) j["reason"] = e.reason;
  return j;
}

std::string format_estimate(const Estimate& e, const ModelSpec& model, const ClusterSpec& cluster,
                            const TrainingSpec& training) {
  using units::format_bytes;
  using units::format_duration;
  std::string out;
  const ParallelConfig& c = e.config;
  out += fmt::format("paratune estimate: {} on {} ({} x {}), seq {}, global batch {}, {}\n", model.name, cluster.name,
                     cluster.num_gpus(), cluster.gpu.name, training.seq_len, training.global_batch,
                     to_string(training.precision));
  out += fmt::format("config: {}\n", to_string(c));
  out += fmt::format("micro-batches per iteration: {}\n\n", e.num_microbatches);
  out += fmt::format("iteration time   {}\n", format_duration(e.iteration_time_s));
  out += fmt::format("tokens/s         {:.0f} ({:.0f} per GPU)\n", e.tokens_per_s, e.tokens_per_s / cluster.num_gpus());
  out += fmt::format("MFU / HFU        {:.1f}% / {:.1f}%   ({:.1f} model TFLOP/s per GPU)\n", 100 * e.mfu,
                     100 * e.hfu, e.tflops_per_gpu);
  if (c.pp > 1)
    out += fmt::format("pipeline bubble  {:.1f}% of compute, all stages (replayed: see `paratune simulate`)\n",
                       100 * e.bubble_fraction);
  out += "\n";
  const TimeBreakdown& b = e.breakdown;
  out += "time breakdown (exposed)\n";
  auto line = [&](const char* name, double s) {
    if (s > 0) out += fmt::format("  {:<22} {:>12}  {:5.1f}%\n", name, format_duration(s), 100 * s / e.iteration_time_s);
  };
  line("compute", b.compute_s);
  line("pipeline bubble", b.bubble_s);
  line("TP communication", b.tp_comm_s);
  line("CP communication", b.cp_comm_s);
  line("EP all-to-all", b.ep_comm_s);
  line("PP point-to-point", b.pp_comm_s);
  line("DP gradient sync", b.dp_comm_s);
  line("ZeRO sharding comm", b.zero3_comm_s);  // ZeRO-3 gathers, ZeRO-2/3 reduce-scatters
  line("optimizer step", b.optimizer_s);
  line("fixed overhead", b.overhead_s);
  out += "\nmemory per stage (one GPU)\n";
  out += fmt::format("  {:>5} {:>6} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n", "stage", "layers", "weights", "grads",
                     "optimizer", "activations", "other", "total");
  for (std::size_t i = 0; i < e.stages.size(); ++i) {
    const StageEstimate& s = e.stages[i];
    const MemoryBreakdown& m = s.memory;
    out += fmt::format("  {:>5} {:>6} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n", i, s.layers,
                       format_bytes(m.weights_bytes), format_bytes(m.grads_bytes), format_bytes(m.optimizer_bytes),
                       format_bytes(m.activations_bytes), format_bytes(m.other_bytes), format_bytes(m.total_bytes()));
  }
  out += fmt::format("\npeak {} of {} usable: {}\n", format_bytes(e.peak_memory_bytes),
                     format_bytes(e.memory_limit_bytes), e.fits ? "fits" : "DOES NOT FIT");
  if (!e.fits) out += "reason: " + e.reason + "\n";
  // Activation offload: host memory the GPUs' offloaded activations take at their peak (not checked
  // against the node's: paratune does not know it).
  const auto host = std::max_element(e.stages.begin(), e.stages.end(), [](const auto& a, const auto& b) {
    return a.host_activation_bytes < b.host_activation_bytes;
  });
  if (host != e.stages.end() && host->host_activation_bytes > 0)
    out += fmt::format("host memory for offloaded activations: up to {} per GPU (stage {}), up to {} per node of {} GPUs\n",
                       format_bytes(host->host_activation_bytes), host - e.stages.begin(),
                       format_bytes(host->host_activation_bytes * cluster.gpus_per_node), cluster.gpus_per_node);
  return out;
}

nlohmann::json model_summary_json(const ModelSpec& model, int seq_len) {
  const ParamCounts c = count_parameters(model);
  nlohmann::json j{{"model", to_json(model)},
                   {"total_params", c.total},
                   {"active_params", c.active},
                   {"embedding_params", c.embedding},
                   {"seq_len", seq_len},
                   {"forward_flops_per_token", forward_flops_per_token(model, seq_len)},
                   {"training_flops_per_token", training_flops_per_token(model, seq_len)}};
  for (const auto& preset : model_presets()) {
    if (preset.spec.name != model.name) continue;
    j["published_total_params"] = preset.published_total_params;
    j["published_active_params"] = preset.published_active_params;
    j["published_source"] = preset.source;
  }
  return j;
}

std::string format_model_summary(const ModelSpec& model, int seq_len) {
  const ParamCounts c = count_parameters(model);
  std::string out = fmt::format("{}\n", model.name);
  out += fmt::format("  layers {}, hidden {}, heads {} (kv {}), head dim {}, ffn {}{}, vocab {}\n", model.num_layers,
                     model.hidden_size, model.num_attention_heads, model.kv_heads(), model.head_size(),
                     model.ffn_hidden_size, model.gated_mlp ? " (gated)" : "", model.vocab_size);
  if (model.moe)
    out += fmt::format("  MoE: {} experts, top-{}, expert ffn {}, {} shared, {} leading dense layers, {} MoE layers\n",
                       model.moe->num_experts, model.moe->top_k, model.moe->expert_ffn_hidden_size,
                       model.moe->num_shared_experts, model.moe->first_dense_layers, model.num_moe_layers());
  if (model.mla)
    out += fmt::format("  MLA: q_lora {}, kv_lora {}, rope {}, nope {}, v {}\n", model.mla->q_lora_rank,
                       model.mla->kv_lora_rank, model.mla->qk_rope_head_dim, model.mla->qk_nope_head_dim,
                       model.mla->v_head_dim);
  out += fmt::format("  total parameters   {} ({:.0f})\n", units::format_count(c.total), c.total);
  out += fmt::format("  active parameters  {} ({:.0f})\n", units::format_count(c.active), c.active);
  out += fmt::format("  embedding          {}\n", units::format_count(c.embedding));
  for (const auto& preset : model_presets())
    if (preset.spec.name == model.name)
      out += fmt::format("  published          {} total, {} active ({})\n",
                         units::format_count(preset.published_total_params),
                         units::format_count(preset.published_active_params), preset.source);
  out += fmt::format("  FLOPs per token at seq {}: forward {:.3g}, training (3x) {:.3g}\n", seq_len,
                     forward_flops_per_token(model, seq_len), training_flops_per_token(model, seq_len));
  return out;
}

}  // namespace paratune
