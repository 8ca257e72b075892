#include "setup_flags.h"

#include <fmt/format.h>

#include "flag_checks.h"
#include "paratune/spec/enums.h"
#include "paratune/spec/error.h"
#include "paratune/version.h"

namespace paratune::cli {

void add_setup_flags(CLI::App* app, SetupFlags& f, bool required) {
  app->add_option("--model", f.model, "model preset name, model-spec file (YAML/JSON) or HF config.json")
      ->required(required);
  app->add_option("--cluster", f.cluster, "cluster: PRESET:NODES (dgx-h100:16), GPUxCOUNT (h100x128) or a file")
      ->required(required);
  app->add_option("--seq-len", f.seq_len, "tokens per sequence")->required(required)->transform(whole_number(1, kIntMax));
  app->add_option("--global-batch", f.global_batch, "sequences per iteration")
      ->required(required)
      ->transform(whole_number(1, kIntMax));
  app->add_option("--precision", f.precision, "bf16 | fp16 | fp8")->capture_default_str();
  app->add_option("--fp8-recipe", f.fp8_recipe, "with --precision fp8: delayed | tensorwise | blockwise | mxfp8")
      ->capture_default_str();
  app->add_flag("--fp8-param-gather", f.fp8_param_gather,
                "with --precision fp8: parameters held and all-gathered in FP8 (Megatron --fp8-param-gather; needs zero >= 1)");
  app->add_option("--moe-balancing", f.moe_balancing, "MoE routing: aux-loss | aux-loss-free | force-balanced")
      ->capture_default_str();
  app->add_option("--moe-capacity-factor", f.moe_capacity_factor, "MoE expert capacity factor (0 = dropless)")
      ->capture_default_str()
      ->transform(cli::capacity_factor());
  app->add_option("--optimizer", f.optimizer, "adamw | adam | sgd")->capture_default_str();
  app->add_flag("--no-flash-attention", f.no_flash_attention, "model unfused attention (s^2 scores in memory)");
  app->add_option("--calibration", f.calibration, "calibration JSON (default: the shipped fitted calibration)");
  app->add_option("--memory-margin", f.memory_margin, "fraction of GPU memory kept free when judging fit")
      ->capture_default_str()
      ->transform(real_number(0, 1, Ends::kOpenHigh, "the fraction of GPU memory kept free"));
  app->add_option("--profile", f.profile,
                  "hardware profile measured on your GPUs (`paratune profile`): its GEMMs, attention, collectives and "
                  "memory bandwidth replace the fitted model's where it measured them");
}

TrainingSpec training_from(const SetupFlags& f) {
  TrainingSpec t;
  t.seq_len = f.seq_len;
  t.global_batch = f.global_batch;
  try {
    t.precision = parse_enum<Precision>(f.precision);
    t.optimizer = parse_enum<Optimizer>(f.optimizer);
  } catch (const Error& e) {
    throw e.with_context("--precision/--optimizer");
  }
  try {
    t.fp8_recipe = parse_enum<Fp8Recipe>(f.fp8_recipe);
  } catch (const Error& e) {
    throw e.with_context("--fp8-recipe");
  }
  try {
    t.moe_balancing = parse_enum<MoeBalancing>(f.moe_balancing);
  } catch (const Error& e) {
    throw e.with_context("--moe-balancing");
  }
  t.moe_capacity_factor = f.moe_capacity_factor;
  t.fp8_param_gather = f.fp8_param_gather;
  t.flash_attention = !f.no_flash_attention;
  try {
    validate(t);
  } catch (const Error& e) {
    throw e.with_context("--seq-len/--global-batch/--moe-capacity-factor");
  }
  return t;
}

void check_training_fits_model(const ModelSpec& model, const TrainingSpec& training) {
  try {
    validate(model, training);
  } catch (const Error& e) {
    throw e.with_context("--seq-len");
  }
}

Calibration calibration_from(const SetupFlags& f) {
  try {
    return f.calibration.empty() ? default_calibration() : load_calibration(f.calibration);
  } catch (const Error& e) {
    throw e.with_context("--calibration");
  }
}

std::optional<HardwareProfile> profile_from(const SetupFlags& f, const ModelSpec& model, const ClusterSpec& cluster,
                                            const TrainingSpec& training) {
  if (f.profile.empty()) return std::nullopt;
  try {
    HardwareProfile profile = read_hardware_profile(f.profile);
    check_profile_applies(profile, model, cluster, training);
    return profile;
  } catch (const Error& e) {
    throw e.with_context("--profile");
  }
}

EstimateOptions estimate_options(const SetupFlags& f, const std::optional<HardwareProfile>& profile) {
  EstimateOptions options;
  options.memory_margin = f.memory_margin;
  options.profile = profile ? &*profile : nullptr;
  return options;
}

namespace {
constexpr const char* kProfileUse =
    "the GEMMs, flash attention, collectives and memory bandwidth it measured, interpolated between its shapes and "
    "sizes; the fitted model elsewhere";
}

std::string prediction_source(const SetupFlags& f) {
  std::string source = fmt::format("model prediction: paratune {} analytic cost model, calibration {}", paratune::version(),
                                   f.calibration.empty() ? "shipped (data/calibration.json, fitted to data/published-runs's published runs)"
                                                         : f.calibration);
  if (!f.profile.empty()) source += fmt::format("; hardware profile {}: {}", f.profile, kProfileUse);
  return source;
}
nlohmann::json prediction_json(const SetupFlags& f) {
  nlohmann::json j = {{"kind", "model prediction"},
                      {"model", fmt::format("paratune {} analytic cost model", paratune::version())},
                      {"calibration", f.calibration.empty() ? "shipped" : f.calibration}};
  if (!f.profile.empty()) j["profile"] = {{"file", f.profile}, {"measured", kProfileUse}};
  return j;
}

ParallelConfig config_from(const std::string& text) {
  try {
    return parse_parallel_config(text);
  } catch (const Error& e) {
    throw e.with_context("--config");
  }
}

}  // namespace paratune::cli
