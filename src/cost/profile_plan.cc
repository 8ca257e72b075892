// The plan of what `paratune profile` measures, and each measurement beside the model's prediction
// (paratune/cost/profile_plan.h).
#include "paratune/cost/profile_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "measured_rates.h"
#include "paratune/cost/estimate.h"
#include "paratune/spec/error.h"
#include "stage_cost_model_impl.h"

namespace paratune {
namespace {
namespace profile_planning {

// A logged size as the measurer takes it: a whole number (the model's sizes can be fractional
// averages, e.g. routed tokens per expert).
std::int64_t whole(double v) { return static_cast<std::int64_t>(std::max(1.0, std::ceil(v - 1e-9))); }

// The vocabulary of a quick plan's step: a CPU cannot hold AdamW states for a 128K vocabulary's
// embedding and output layer in a reasonable time and memory.
constexpr int kQuickVocabulary = 8192;

TrainingSpec planned_training(const TrainingSpec& training, bool quick) {
  TrainingSpec t = training;
  if (quick) t.seq_len = std::min(t.seq_len, kQuickSeqLen);
  return t;
}

}  // namespace profile_planning
}  // namespace

nlohmann::ordered_json profile_plan(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                                    const Calibration& calibration, const ProfilePlanOptions& options) {
  using namespace profile_planning;
  if (options.configs.empty()) throw Error("configs: give at least one configuration whose kernels to measure");
  if (options.warmup < 0 || options.repetitions < 1)
    throw Error(fmt::format("warmup {} must be >= 0 and repetitions {} >= 1", options.warmup, options.repetitions));
  const TrainingSpec t = planned_training(training, options.quick);
  cost_detail::KernelLog log;
  EstimateOptions estimate_options;
  estimate_options.kernel_log = &log;
  for (const ParallelConfig& config : options.configs) {
    try {
      (void)estimate(model, cluster, t, config, calibration, estimate_options);
    } catch (const Error& e) {
      throw e.with_context(fmt::format("configuration {}", to_string(config)));
    }
  }

  nlohmann::ordered_json plan;
  plan["format"] = kProfilePlanFormat;
  plan["version"] = kHardwareProfileVersion;
  plan["model"] = model.name;
  plan["model_fingerprint"] = model_fingerprint(model);
  plan["gpu"] = cluster.gpu.name;
  plan["precision"] = to_string(training.precision);
  plan["quick"] = options.quick;
  plan["seq_len"] = t.seq_len;
  plan["warmup"] = options.warmup;
  plan["repetitions"] = options.repetitions;
  nlohmann::ordered_json configs = nlohmann::ordered_json::array();
  for (const ParallelConfig& c : options.configs) configs.push_back(to_string(c));
  plan["configs"] = configs;

  nlohmann::ordered_json gemms = nlohmann::ordered_json::array();
  for (const cost_detail::KernelLog::Gemm& g : log.gemms) {
    const std::int64_t m = whole(g.m), n = whole(g.n), k = whole(g.k);
    const std::string id = fmt::format("gemm/{}x{}x{}/{}", m, n, k, to_string(g.dtype));
    if (std::any_of(gemms.begin(), gemms.end(), [&](const auto& e) { return e["id"] == id; })) continue;
    gemms.push_back({{"id", id}, {"m", m}, {"n", n}, {"k", k}, {"dtype", to_string(g.dtype)}});
  }
  plan["gemms"] = gemms;

  // Attention at the planned length and at half of it (a second point to interpolate between).
  nlohmann::ordered_json attention = nlohmann::ordered_json::array();
  for (const cost_detail::KernelLog::Attention& a : log.attention)
    for (const int seq : {a.seq_len / 2, a.seq_len}) {
      if (seq < 16) continue;
      const std::string id = fmt::format("attention/b{}/s{}/h{}/kv{}/d{}{}", a.batch, seq, a.heads, a.kv_heads, a.head_dim,
                                         a.causal ? "/causal" : "");
      if (std::any_of(attention.begin(), attention.end(), [&](const auto& e) { return e["id"] == id; })) continue;
      attention.push_back({{"id", id},
                           {"batch", a.batch},
                           {"seq_len", seq},
                           {"heads", a.heads},
                           {"kv_heads", a.kv_heads},
                           {"head_dim", a.head_dim},
                           {"causal", a.causal}});
    }
  plan["attention"] = attention;

  // Element-wise passes of one micro-batch of the first configuration.
  const ParallelConfig& first = options.configs.front();
  const std::int64_t rows = static_cast<std::int64_t>(first.mbs) * t.seq_len;
  nlohmann::ordered_json elementwise = nlohmann::ordered_json::array();
  elementwise.push_back({{"id", "rmsnorm"}, {"kind", "rmsnorm"}, {"rows", rows}, {"cols", model.hidden_size}});
  elementwise.push_back({{"id", "residual add"}, {"kind", "add"}, {"rows", rows}, {"cols", model.hidden_size}});
  if (model.gated_mlp)
    elementwise.push_back({{"id", "swiglu"}, {"kind", "swiglu"}, {"rows", rows},
                           {"cols", whole(static_cast<double>(model.ffn_hidden_size) / first.tp)}});
  if (model.moe)
    elementwise.push_back({{"id", "moe token permutation"}, {"kind", "permute"}, {"rows", rows * model.moe->top_k},
                           {"cols", model.hidden_size}});
  plan["elementwise"] = elementwise;
  plan["memory_bandwidth_bytes"] = std::int64_t{options.quick ? 64 : 1024} * 1024 * 1024;

  // Collectives inside one node (what one machine can measure): the sizes priced, those above the
  // cap measured at the cap (a whole model's gradients do not fit twice in a GPU's memory; larger
  // messages run in the bandwidth regime the cap's measurement shows: measured_rates.h), tiny ones
  // (under 4 KiB: latency, no bandwidth) left to the fitted model.
  const double cap = options.quick ? 64.0 * 1024 * 1024 : 1024.0 * 1024 * 1024;
  nlohmann::ordered_json collectives = nlohmann::ordered_json::array();
  for (const cost_detail::KernelLog::Collective& c : log.collectives) {
    if (c.nodes != 1 || c.bytes < 4096) continue;
    const std::int64_t bytes = whole(std::min(c.bytes, cap));
    const std::string id = fmt::format("{}/{}/{}", to_string(c.op), c.ranks, bytes);
    if (std::any_of(collectives.begin(), collectives.end(), [&](const auto& e) { return e["id"] == id; })) continue;
    collectives.push_back({{"id", id}, {"op", to_string(c.op)}, {"ranks", c.ranks}, {"bytes", bytes}});
  }
  plan["collectives"] = collectives;

  // The reduced-depth step: the model's widths, every layer MoE for a MoE model.
  nlohmann::ordered_json moe = nullptr;
  if (model.moe)
    moe = {{"experts", model.moe->num_experts},
           {"top_k", model.moe->top_k},
           {"expert_ffn_hidden_size", model.moe->expert_ffn_hidden_size},
           {"shared_experts", model.moe->num_shared_experts}};
  plan["step"] = {{"layers", options.quick ? 1 : 2},
                  {"hidden_size", model.hidden_size},
                  {"ffn_hidden_size", model.ffn_hidden_size},
                  {"heads", model.num_attention_heads},
                  {"kv_heads", model.kv_heads()},
                  {"head_dim", model.head_size()},
                  {"vocab_size", options.quick ? std::min(model.vocab_size, kQuickVocabulary) : model.vocab_size},
                  {"seq_len", t.seq_len},
                  {"micro_batch", first.mbs},
                  {"gated_mlp", model.gated_mlp},
                  {"moe", moe},
                  {"steps", options.quick ? 2 : 5}};
  return plan;
}

namespace {
namespace profile_comparing {

// The measured step's model: the profiled model at the step's depth and vocabulary, every layer
// MoE for a MoE model (as the measurer builds it), on one GPU of the cluster.
struct StepSetup {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  ParallelConfig config;
};
StepSetup step_setup(const HardwareProfile& profile, const ModelSpec& model, const ClusterSpec& cluster,
                     const TrainingSpec& training) {
  StepSetup s{model, cluster, training, ParallelConfig{}};
  const MeasuredStep& step = *profile.step;
  s.model.num_layers = step.layers;
  s.model.mtp_layers = 0;
  if (step.vocab_size > 0) s.model.vocab_size = step.vocab_size;
  if (s.model.moe) {
    s.model.moe->first_dense_layers = 0;
    s.model.moe->layer_freq = 1;
  }
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 1;
  s.cluster.nvlink_domain_gpus = 0;
  s.cluster.nodes_per_pod = 0;
  s.training.seq_len = step.seq_len;
  s.training.global_batch = step.micro_batch;
  s.config.mbs = step.micro_batch;
  return s;
}

}  // namespace profile_comparing
}  // namespace

ProfileComparison compare_profile(const HardwareProfile& profile, const ModelSpec& model, const ClusterSpec& cluster,
                                  const TrainingSpec& training, const Calibration& calibration) {
  using cost_detail::LayerCosts;
  ProfileComparison out;
  const cost_detail::Fp8Costs fp8 = cost_detail::fp8_costs(cluster.gpu, training, calibration);
  const cost_detail::Device plain = LayerCosts::device_for(cluster, training, calibration, fp8, nullptr, false);
  const Fabric fabric = LayerCosts::fabric_for(cluster, calibration, nullptr, nullptr);
  const cost_detail::MeasuredRates rates(profile, plain, fabric);
  for (const cost_detail::MeasuredRates::Comparison& c : rates.comparisons())
    out.rows.push_back({c.kind, c.id, c.measured_s, c.model_s});

  if (profile.step && profile.step->time) {
    const profile_comparing::StepSetup s = profile_comparing::step_setup(profile, model, cluster, training);
    const Estimate fitted = estimate(s.model, s.cluster, s.training, s.config, calibration);
    EstimateOptions with;
    with.profile = &profile;
    const Estimate measured = estimate(s.model, s.cluster, s.training, s.config, calibration, with);
    ProfileComparison::Step step;
    step.layers = profile.step->layers;
    step.measured_s = profile.step->time->median_s;
    step.model_s = fitted.iteration_time_s;
    step.with_profile_s = measured.iteration_time_s;
    step.measured_memory_bytes = profile.step->max_memory_allocated_bytes;
    const MemoryBreakdown& m = fitted.stages.front().memory;
    step.model_memory_bytes = m.weights_bytes + m.grads_bytes + m.optimizer_bytes + m.activations_bytes;
    out.step = step;
  }
  return out;
}

}  // namespace paratune
