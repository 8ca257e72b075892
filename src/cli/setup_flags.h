// The flags that set up a prediction -- the model, the cluster and the training (--model, --cluster,
// --seq-len, ...) -- shared by estimate, simulate, plan and tune, and what the commands make of them.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include <optional>

#include "paratune/cost/calibration.h"
#include "paratune/cost/hardware_profile.h"
#include "paratune/cost/stage_model.h"
#include "paratune/spec/model.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/training.h"

namespace paratune::cli {

struct SetupFlags {
  std::string model;
  std::string cluster;
  int seq_len = 0;
  int global_batch = 0;
  std::string precision = "bf16";
  std::string fp8_recipe = "delayed";
  bool fp8_param_gather = false;
  std::string moe_balancing = "aux-loss";
  double moe_capacity_factor = 0;
  std::string optimizer = "adamw";
  bool no_flash_attention = false;
  std::string calibration;
  double memory_margin = 0.05;
  std::string profile;  // --profile: a hardware profile (`paratune profile`); empty: none
};

// What a command that takes the setup flags holds: them, its own flags and --json.
template <typename Own>
struct SetupCommandFlags {
  SetupFlags setup;
  Own own;
  bool json = false;
};

// `required`: false for `tune`, where the setup is one of two ways to give the search space.
void add_setup_flags(CLI::App* app, SetupFlags& f, bool required = true);

TrainingSpec training_from(const SetupFlags& f);

// The training's setup against the model (a sequence longer than its learned positions), named by
// the flag that set it.
void check_training_fits_model(const ModelSpec& model, const TrainingSpec& training);

Calibration calibration_from(const SetupFlags& f);

// --profile's hardware profile, read and checked against the model, cluster and training (Error
// with the reason, under --profile); nullopt without the flag.
std::optional<HardwareProfile> profile_from(const SetupFlags& f, const ModelSpec& model, const ClusterSpec& cluster,
                                            const TrainingSpec& training);
// The cost model's options: --memory-margin and the profile (which must outlive them).
EstimateOptions estimate_options(const SetupFlags& f, const std::optional<HardwareProfile>& profile);

// What made a predicted figure, said next to it: the figures of plan, estimate and simulate come
// from the analytic model, not from a measurement.
std::string prediction_source(const SetupFlags& f);
nlohmann::json prediction_json(const SetupFlags& f);

// --config of estimate and simulate.
ParallelConfig config_from(const std::string& text);

}  // namespace paratune::cli
