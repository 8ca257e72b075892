// `paratune simulate`: replay one iteration of a configuration's pipeline schedule event by event.
#include <fmt/format.h>

#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "flag_checks.h"
#include "output.h"
#include "paratune/cost/estimate.h"
#include "paratune/cost/surrogate_footprint.h"
#include "paratune/report/harvest_report.h"
#include "paratune/report/html_page.h"
#include "paratune/report/sim_report.h"
#include "paratune/sim/harvest.h"
#include "paratune/spec/enums.h"
#include "paratune/spec/error.h"
#include "paratune/spec/io.h"
#include "paratune/spec/units.h"
#include "setup_flags.h"

namespace paratune::cli {
namespace {

struct SimulateFlags {
  std::string config;
  std::string schedule;
  std::string grad_sync;
  std::string stage_mesh;
  std::string trace_path;
  std::string svg_path;
  std::string html_path;
  bool compare_grad_sync = false;
  // Bubble harvest (sim/harvest.h): muP surrogates `harvest_ratio` times narrower as tuning trials.
  int harvest_ratio = 0;
  std::string harvest_switch = "1ms";
  std::string harvest_runtime = "1GiB";
  int harvest_max_members = 64;
};

// --config with --schedule and --grad-sync applied.
ParallelConfig simulated_config(const SimulateFlags& f) {
  ParallelConfig config = config_from(f.config);
  try {
    if (!f.schedule.empty()) config.schedule = parse_enum<Schedule>(f.schedule);
    if (!f.grad_sync.empty()) config.grad_sync = parse_enum<GradSync>(f.grad_sync);
  } catch (const Error& e) {
    throw e.with_context("--schedule/--grad-sync");
  }
  // Plain 1F1B has one model chunk per rank; with vpp > 1 resolve() would run the interleaved schedule
  // instead of the one asked for by name. Refused, so a comparison of schedules never compares one
  // with itself.
  if (!f.schedule.empty() && config.schedule == Schedule::kOneFOneB && config.vpp > 1)
    throw Error(fmt::format("--schedule {}: --config has vpp={}, and 1F1B with virtual stages is the interleaved "
                            "schedule; give --schedule interleaved-1f1b, or vpp=1 for plain 1F1B",
                            f.schedule, config.vpp));
  return config;
}

// --compare-grad-sync: the iteration time with each placement, as JSON and as text.
struct GradSyncComparison {
  nlohmann::json json = nlohmann::json::array();
  std::string text;
};

GradSyncComparison compare_grad_sync(const ParallelConfig& config, double tokens,
                                     const std::function<sim::PipelineProblem(const ParallelConfig&)>& problem_for) {
  GradSyncComparison comparison;
  double in_backward_s = 0;
  comparison.text = "\ngradient-sync placement (same configuration):\n";
  for (GradSync g : {GradSync::kInBackward, GradSync::kShifted, GradSync::kOverlapped}) {
    ParallelConfig c = config;
    c.grad_sync = g;
    c.overlap_grad_reduce = true;
    const double t = sim::simulate(problem_for(c), sim::SimulationOptions{.record = false}).iteration_time_s;
    if (g == GradSync::kInBackward) in_backward_s = t;
    const double gain = in_backward_s / t - 1;
    comparison.json.push_back({{"grad_sync", to_string(g)},
                               {"iteration_time_s", t},
                               {"tokens_per_s", tokens / t},
                               {"speedup_over_in_backward", gain}});
    comparison.text += fmt::format("  {:<12} {:>11}  {:>12.0f} tokens/s  {:+.2f}% vs in-backward\n", to_string(g),
                                   units::format_duration(t), tokens / t, 100 * gain);
  }
  return comparison;
}

// --harvest-ratio: the trials of the surrogate, their footprint and what of them the simulated
// iteration's bubbles hold.
HarvestReport bubble_harvest(const SimulateFlags& f, const ModelSpec& model, const ClusterSpec& cluster,
                             const TrainingSpec& training, const Calibration& calibration,
                             const sim::PipelineProblem& problem, const sim::SimulationResult& result,
                             const ParallelConfig& config) {
  HarvestReport r;
  try {
    r.footprint = surrogate_footprint(model, cluster, training, f.harvest_ratio, calibration);
  } catch (const Error& e) {
    throw e.with_context("--harvest-ratio");
  }
  r.trial.step_time_s = r.footprint.step_time_s;
  r.trial.memory_bytes = r.footprint.memory_bytes;
  try {
    r.trial.switch_s = units::parse_duration(f.harvest_switch);
  } catch (const Error& e) {
    throw e.with_context("--harvest-switch");
  }
  try {
    r.trial.runtime_memory_bytes = units::parse_bytes(f.harvest_runtime);
  } catch (const Error& e) {
    throw e.with_context("--harvest-runtime");
  }
  r.trial.max_members = f.harvest_max_members;
  r.harvest = sim::pack_bubbles(problem, result, r.trial);
  r.gpus_per_stage = config.dp * config.tp * config.cp;
  return r;
}

// `paratune simulate`: replay one iteration of the configuration's pipeline schedule.
int run_simulate(const SetupFlags& setup, const SimulateFlags& f, bool json) {
  const ModelSpec model = load_model(setup.model);
  const ClusterSpec cluster = load_cluster(setup.cluster);
  const TrainingSpec training = training_from(setup);
  check_training_fits_model(model, training);
  ParallelConfig config = simulated_config(f);
  const Calibration calibration = calibration_from(setup);
  const std::optional<HardwareProfile> profile = profile_from(setup, model, cluster, training);
  const EstimateOptions options = estimate_options(setup, profile);
  std::vector<StageMesh> meshes;
  if (!f.stage_mesh.empty()) {
    try {
      meshes = parse_stage_meshes(f.stage_mesh);
    } catch (const Error& e) {
      throw e.with_context("--stage-mesh");
    }
  }
  auto problem_for = [&](const ParallelConfig& c) {
    try {
      return meshes.empty() ? pipeline_problem(model, cluster, training, c, calibration, options)
                            : pipeline_problem_with_stage_meshes(model, cluster, training, c, meshes, calibration, options);
    } catch (const Error& e) {
      throw e.with_context(meshes.empty() ? "--config" : "--config/--stage-mesh");
    }
  };
  const SimulateFlags defaults;
  if (f.harvest_ratio == 0 && (f.harvest_switch != defaults.harvest_switch ||
                               f.harvest_runtime != defaults.harvest_runtime ||
                               f.harvest_max_members != defaults.harvest_max_members))
    throw Error("--harvest-switch/--harvest-runtime/--harvest-max-members: they describe the trials packed into the "
                "bubbles, and only --harvest-ratio packs any; give --harvest-ratio too");
  const sim::PipelineProblem problem = problem_for(config);
  if (meshes.empty()) config = resolve(config, model, cluster, training);  // shown with derived defaults
  const sim::SimulationResult result = sim::simulate(problem);
  const double tokens = static_cast<double>(training.global_batch) * training.seq_len;

  // Comm-Shift: the same configuration with each gradient-sync placement.
  GradSyncComparison comparison;
  if (f.compare_grad_sync) comparison = compare_grad_sync(config, tokens, problem_for);

  // Hydro's bubble harvest: the surrogate's footprint from the cost model, packed into the idle
  // intervals; every GPU of a stage (dp x tp x cp of them) has the stage's timeline.
  std::optional<HarvestReport> harvest;
  if (f.harvest_ratio != 0) {
    if (!meshes.empty()) throw Error("--harvest-ratio: stage meshes give stages different GPU counts; not supported");
    harvest = bubble_harvest(f, model, cluster, training, calibration, problem, result, config);
  }
  if (!f.trace_path.empty() || !f.svg_path.empty() || !f.html_path.empty()) {
    try {
      require_drawable(result, problem);
    } catch (const Error& e) {
      throw e.with_context("--trace/--svg/--html");
    }
  }
  if (!f.trace_path.empty()) write_file(f.trace_path, chrome_trace(result, problem).dump() + "\n");
  if (!f.svg_path.empty())
    write_file(f.svg_path,
               svg_timeline(result, problem,
                            fmt::format("{} on {} ({} x {}), seq {}, global batch {}", model.name, cluster.name,
                                        cluster.num_gpus(), cluster.gpu.name, training.seq_len, training.global_batch),
                            to_string(config) + (meshes.empty() ? "" : ", stage meshes " + f.stage_mesh)));
  nlohmann::json j = simulation_json(result, problem, config, training);
  if (!meshes.empty()) j["stage_mesh"] = f.stage_mesh;
  if (f.compare_grad_sync) j["grad_sync_comparison"] = comparison.json;
  if (harvest) j["harvest"] = to_json(*harvest);
  j["predicted_by"] = prediction_json(setup);
  if (!f.html_path.empty())
    write_file(f.html_path, simulate_html(nlohmann::ordered_json(j), result, problem,
                                          fmt::format("paratune simulate: {} on {} ({} x {}), seq {}, global batch {}",
                                                      model.name, cluster.name, cluster.num_gpus(), cluster.gpu.name,
                                                      training.seq_len, training.global_batch)));
  if (json) {
    write_json(j);
    return 0;
  }
  std::cout << fmt::format("paratune simulate: {} on {} ({} x {}), seq {}, global batch {}\n", model.name,
                           cluster.name, cluster.num_gpus(), cluster.gpu.name, training.seq_len, training.global_batch);
  std::cout << fmt::format("config: {}{}\n", to_string(config),
                           meshes.empty() ? "" : " with stage meshes " + f.stage_mesh);
  std::cout << fmt::format("tokens/s         {:.0f}\n", tokens / result.iteration_time_s);
  std::cout << format_simulation(result, problem) << comparison.text;
  if (harvest) std::cout << format_harvest(*harvest);
  std::cout << "(" << prediction_source(setup) << ")\n";
  if (!f.trace_path.empty()) std::cout << "wrote " << f.trace_path << " (Chrome trace: open in ui.perfetto.dev)\n";
  if (!f.svg_path.empty()) std::cout << "wrote " << f.svg_path << "\n";
  if (!f.html_path.empty()) std::cout << "wrote " << f.html_path << " (HTML report: open in a browser)\n";
  return 0;
}

}  // namespace

void add_simulate_command(CLI::App& app, Commands& commands) {
  const auto flags = std::make_shared<SetupCommandFlags<SimulateFlags>>();
  SimulateFlags& sim_flags = flags->own;
  auto* simulate_cmd = app.add_subcommand("simulate", "replay one iteration's pipeline schedule event by event");
  add_setup_flags(simulate_cmd, flags->setup);
  simulate_cmd->add_option("--config", sim_flags.config, "e.g. \"dp=8,tp=1,pp=4,mbs=2\"")->required();
  simulate_cmd->add_option("--schedule", sim_flags.schedule, "1f1b | interleaved-1f1b | gpipe | zb-h1 | interleaved-zb | zb-v | dualpipev | dualpipe (overrides --config)");
  simulate_cmd->add_option("--grad-sync", sim_flags.grad_sync, "in-backward | shifted | overlapped (overrides --config)");
  simulate_cmd->add_flag("--compare-grad-sync", sim_flags.compare_grad_sync,
                         "also replay with each gradient-sync placement (Comm-Shift gain)");
  simulate_cmd->add_option("--stage-mesh", sim_flags.stage_mesh,
                           "per-stage DPxTP meshes, e.g. 8x1,4x2,4x2,4x2 (Alpa-style; micro-batch = dp*mbs of --config)");
  simulate_cmd->add_option("--trace", sim_flags.trace_path, "write a Chrome trace-event JSON (Perfetto, chrome://tracing)");
  simulate_cmd->add_option("--svg", sim_flags.svg_path, "write an SVG timeline");
  simulate_cmd->add_option("--html", sim_flags.html_path,
                           "write a self-contained HTML report: the zoomable timeline and the stages (opens offline)");
  simulate_cmd->add_option("--harvest-ratio", sim_flags.harvest_ratio,
                           "Hydro's bubble harvest: how much tuning of the model's muP surrogate (every width / S) "
                           "fits into the pipeline bubbles, per stage and in GPU-hours per day")
      ->transform(whole_number(0, kIntMax, "0: no harvest"));
  simulate_cmd->add_option("--harvest-switch", sim_flags.harvest_switch,
                           "harvest: time to pause and resume a trial, per bubble used")
      ->capture_default_str();
  simulate_cmd->add_option("--harvest-runtime", sim_flags.harvest_runtime,
                           "harvest: a trial process's own GPU memory (CUDA context, workspace)")
      ->capture_default_str();
  simulate_cmd->add_option("--harvest-max-members", sim_flags.harvest_max_members,
                           "harvest: the largest fused group of trials")
      ->capture_default_str()
      ->transform(whole_number(1, kIntMax));
  simulate_cmd->add_flag("--json", flags->json, "machine-readable output");
  commands.push_back({simulate_cmd, [flags] { return run_simulate(flags->setup, flags->own, flags->json); }});
}

}  // namespace paratune::cli
