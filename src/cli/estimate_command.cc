// `paratune estimate`: time, MFU and memory of one configuration, as the cost model predicts them.
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "how_sure.h"
#include "output.h"
#include "paratune/calib/published_mfu.h"
#include "paratune/cost/estimate.h"
#include "paratune/report/estimate_report.h"
#include "paratune/spec/error.h"
#include "paratune/spec/io.h"
#include "setup_flags.h"

namespace paratune::cli {
namespace {

int run_estimate(const SetupFlags& setup, const std::string& config_text, bool json) {
  const ModelSpec model = load_model(setup.model);
  const ClusterSpec cluster = load_cluster(setup.cluster);
  const TrainingSpec training = training_from(setup);
  check_training_fits_model(model, training);
  const ParallelConfig config = config_from(config_text);
  const Calibration calibration = calibration_from(setup);
  const std::optional<HardwareProfile> profile = profile_from(setup, model, cluster, training);
  Estimate result;
  try {
    result = estimate(model, cluster, training, config, calibration, estimate_options(setup, profile));
  } catch (const Error& e) {
    throw e.with_context("--config");
  }
  const PredictionInterval interval = cli::shipped_interval(setup.calibration, model, cluster, training);
  if (json) {
    nlohmann::json j = to_json(result);
    j["predicted_by"] = prediction_json(setup);
    j["interval"] = cli::interval_json(result.iteration_time_s, interval);
    j["mfu_above_published"] = mfu_above_published(result.mfu, cluster.gpu, training.precision);
    write_json(j);
  } else {
    std::cout << format_estimate(result, model, cluster, training) << "\nhow sure: "
              << cli::format_interval(result.iteration_time_s, interval);
    if (const std::string above = mfu_above_published(result.mfu, cluster.gpu, training.precision); !above.empty())
      std::cout << "          " << above << "\n";
    std::cout << "(" << prediction_source(setup) << ")\n";
  }
  return 0;
}

}  // namespace

void add_estimate_command(CLI::App& app, Commands& commands) {
  const auto flags = std::make_shared<SetupCommandFlags<std::string>>();  // its own: --config
  auto* estimate_cmd = app.add_subcommand("estimate", "predict time, MFU and memory of one configuration");
  add_setup_flags(estimate_cmd, flags->setup);
  estimate_cmd
      ->add_option("--config", flags->own, "e.g. \"dp=8,tp=8,pp=4,mbs=1,zero=1,recompute=selective,vpp=2\"")
      ->required();
  estimate_cmd->add_flag("--json", flags->json, "machine-readable output");
  commands.push_back({estimate_cmd, [flags] { return run_estimate(flags->setup, flags->own, flags->json); }});
}

}  // namespace paratune::cli
