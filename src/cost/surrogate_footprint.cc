#include "paratune/cost/surrogate_footprint.h"

#include <fmt/format.h>

#include "paratune/cost/estimate.h"
#include "paratune/cost/model_stats.h"
#include "paratune/spec/error.h"

namespace paratune {
namespace {

// `value` / ratio; a width the ratio does not divide is refused (muP narrows whole widths).
int narrowed(int value, int ratio, const char* field) {
  if (value == 0) return 0;  // unset: derived from the others
  if (value % ratio != 0)
    throw Error(fmt::format("surrogate ratio {}: the model's {} {} is not divisible by it", ratio, field, value));
  return value / ratio;
}

}  // namespace

ModelSpec narrowed_model(const ModelSpec& model, int ratio) {
  if (ratio < 1) throw Error(fmt::format("surrogate ratio {}: must be >= 1", ratio));
  ModelSpec m = model;
  m.name = fmt::format("{} / {}", model.name, ratio);
  m.hidden_size = narrowed(model.hidden_size, ratio, "hidden_size");
  // The head count stays (as paratune-train's surrogates keep it): each head narrows.
  m.head_dim = narrowed(model.head_size(), ratio, "head dimension");
  m.ffn_hidden_size = narrowed(model.ffn_hidden_size, ratio, "ffn_hidden_size");
  if (m.moe) {
    m.moe->expert_ffn_hidden_size = narrowed(model.moe->expert_ffn_hidden_size, ratio, "moe.expert_ffn_hidden_size");
    m.moe->shared_expert_ffn_hidden_size =
        narrowed(model.moe->shared_expert_ffn_hidden_size, ratio, "moe.shared_expert_ffn_hidden_size");
  }
  if (m.mla) {
    m.mla->q_lora_rank = narrowed(model.mla->q_lora_rank, ratio, "mla.q_lora_rank");
    m.mla->kv_lora_rank = narrowed(model.mla->kv_lora_rank, ratio, "mla.kv_lora_rank");
    m.mla->qk_rope_head_dim = narrowed(model.mla->qk_rope_head_dim, ratio, "mla.qk_rope_head_dim");
    m.mla->qk_nope_head_dim = narrowed(model.mla->qk_nope_head_dim, ratio, "mla.qk_nope_head_dim");
    m.mla->v_head_dim = narrowed(model.mla->v_head_dim, ratio, "mla.v_head_dim");
  }
  validate(m);
  return m;
}

SurrogateFootprint surrogate_footprint(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                                       int ratio, const Calibration& calibration) {
  SurrogateFootprint f;
  f.surrogate = narrowed_model(model, ratio);
  f.parameters = count_parameters(f.surrogate).total;
  ClusterSpec one_gpu = cluster;
  one_gpu.nodes = 1;
  one_gpu.gpus_per_node = 1;
  one_gpu.nvlink_domain_gpus = 0;
  one_gpu.nodes_per_pod = 0;
  TrainingSpec one_sequence = training;
  one_sequence.global_batch = 1;
  ParallelConfig alone;  // dp = tp = pp = 1, one micro-batch of one sequence
  // No memory margin: the budget it must fit is the bubble's, which the packer checks.
  const Estimate e = estimate(f.surrogate, one_gpu, one_sequence, alone, calibration, EstimateOptions{0});
  f.step_time_s = e.iteration_time_s;
  f.memory_bytes = e.peak_memory_bytes;
  return f;
}

}  // namespace paratune
