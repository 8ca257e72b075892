// The paratune program: parse flags, call the library, print, choose the exit code.
// Exit codes: 0 success, 2 bad input (paratune::Error), 3 `plan` found nothing that fits or `tune`
// had no completed trial, 4 the study store stayed unavailable for longer than --store-retry
// (store::StoreUnavailable: a database server down, a full disk; run the command again when it is
// back), 128 + signal when `tune` was interrupted, 1 any other failure.
#include <CLI/CLI.hpp>
#include <fmt/format.h>


#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill()/sigaction(), not in <csignal>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <exception>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "flag_checks.h"
#include "option_flags.h"
#include "paratune/calib/memory_runs.h"
#include "paratune/calib/published_runs.h"
#include "paratune/calib/prediction_intervals.h"
#include "paratune/calib/published_mfu.h"
#include "how_sure.h"
#include "plan_progress.h"
#include "progress_line.h"
#include "paratune/cost/estimate.h"
#include "paratune/cost/model_stats.h"
#include "paratune/cost/surrogate_footprint.h"
#include "paratune/hpo/bubble_coordinator.h"
#include "paratune/hpo/fusion.h"
#include "paratune/hpo/importance.h"
#include "paratune/hpo/pruner.h"
#include "paratune/hpo/retrain.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/study.h"
#include "paratune/plan/planner.h"
#include "paratune/dashboard/server.h"
#include "paratune/report/estimate_report.h"
#include "paratune/report/harvest_report.h"
#include "paratune/report/hpo_report.h"
#include "paratune/report/html_page.h"
#include "paratune/report/study_data.h"
#include "paratune/launch/launch.h"
#include "paratune/launch/schema_check.h"
#include "paratune/report/plan_report.h"
#include "paratune/report/sim_report.h"
#include "paratune/report/tune_report.h"
#include "paratune/sim/harvest.h"
#include "paratune/spec/input_file.h"
#include "paratune/spec/io.h"
#include "paratune/spec/option_error.h"
#include "paratune/spec/presets.h"
#include "paratune/spec/units.h"
#include "paratune/store/study_copy.h"
#include "paratune/store/study_store.h"
#include "paratune/trial/command.h"
#include "paratune/trial/runner.h"
#include "paratune/trial/slurm_backend.h"
#include "paratune/trial/ssh_backend.h"
#include "paratune/tune/bayes.h"
#include "paratune/tune/derived_space.h"
#include "paratune/tune/study.h"
#include "paratune/version.h"

namespace {

using namespace paratune;
using cli::Ends;
using cli::real_number;
using cli::whole_number;
using launch::Framework;  // `plan --emit` / `--framework` (src/launch)
using launch::FrameworkTarget;
using launch::launch_settings;
using launch::LaunchSettings;
using launch::LaunchTarget;
using launch::parse_framework_target;
using launch::parse_searched_frameworks;
constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();
// Slots and ranks of one host (trial slots, a harvest job's ranks): more is not a machine.
constexpr std::int64_t kMaxHostSlots = 4096;

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
};

// `required`: false for `tune`, where the setup is one of two ways to give the search space.
void add_setup_flags(CLI::App* app, SetupFlags& f, bool required = true) {
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

// The training's setup against the model (a sequence longer than its learned positions), named by
// the flag that set it.
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

// What made a predicted figure, said next to it: the figures of plan, estimate and simulate come
// from the analytic model, not from a measurement.
std::string prediction_source(const SetupFlags& f) {
  return fmt::format("model prediction: paratune {} analytic cost model, calibration {}", paratune::version(),
                     f.calibration.empty() ? "shipped (data/calibration.json, fitted to data/published-runs's published runs)"
                                           : f.calibration);
}
nlohmann::json prediction_json(const SetupFlags& f) {
  return {{"kind", "model prediction"},
          {"model", fmt::format("paratune {} analytic cost model", paratune::version())},
          {"calibration", f.calibration.empty() ? "shipped" : f.calibration}};
}

// JSON output never fails on a string that is not UTF-8 (such a byte is written as U+FFFD): the
// stores hand out printable text, and this keeps any other path from ending in an internal error.
template <typename Json>
void write_json(const Json& j) {
  std::cout << j.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
}
void write_json(const nlohmann::json& j) { write_json<nlohmann::json>(j); }  // for write_json({...})

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path);
  out << content;
  out.close();
  if (!out) throw Error(fmt::format("{}: cannot write file", path));
}

ParallelConfig config_from(const std::string& text) {
  try {
    return parse_parallel_config(text);
  } catch (const Error& e) {
    throw e.with_context("--config");
  }
}

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

// `paratune simulate`: replay one iteration of the configuration's pipeline schedule.
int run_simulate(const SetupFlags& setup, const SimulateFlags& f, bool json) {
  const ModelSpec model = load_model(setup.model);
  const ClusterSpec cluster = load_cluster(setup.cluster);
  const TrainingSpec training = training_from(setup);
  check_training_fits_model(model, training);
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
  const Calibration calibration = calibration_from(setup);
  const EstimateOptions options{setup.memory_margin};
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
  nlohmann::json comparison = nlohmann::json::array();
  std::string comparison_text;
  if (f.compare_grad_sync) {
    double in_backward_s = 0;
    comparison_text = "\ngradient-sync placement (same configuration):\n";
    for (GradSync g : {GradSync::kInBackward, GradSync::kShifted, GradSync::kOverlapped}) {
      ParallelConfig c = config;
      c.grad_sync = g;
      c.overlap_grad_reduce = true;
      const double t = sim::simulate(problem_for(c), sim::SimulationOptions{.record = false}).iteration_time_s;
      if (g == GradSync::kInBackward) in_backward_s = t;
      const double gain = in_backward_s / t - 1;
      comparison.push_back({{"grad_sync", to_string(g)}, {"iteration_time_s", t}, {"tokens_per_s", tokens / t},
                            {"speedup_over_in_backward", gain}});
      comparison_text += fmt::format("  {:<12} {:>11}  {:>12.0f} tokens/s  {:+.2f}% vs in-backward\n", to_string(g),
                                     units::format_duration(t), tokens / t, 100 * gain);
    }
  }

  // Hydro's bubble harvest: the surrogate's footprint from the cost model, packed into the idle
  // intervals; every GPU of a stage (dp x tp x cp of them) has the stage's timeline.
  std::optional<HarvestReport> harvest;
  if (f.harvest_ratio != 0) {
    if (!meshes.empty()) throw Error("--harvest-ratio: stage meshes give stages different GPU counts; not supported");
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
    harvest = std::move(r);
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
  if (f.compare_grad_sync) j["grad_sync_comparison"] = comparison;
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
  std::cout << format_simulation(result, problem) << comparison_text;
  if (harvest) std::cout << format_harvest(*harvest);
  std::cout << "(" << prediction_source(setup) << ")\n";
  if (!f.trace_path.empty()) std::cout << "wrote " << f.trace_path << " (Chrome trace: open in ui.perfetto.dev)\n";
  if (!f.svg_path.empty()) std::cout << "wrote " << f.svg_path << "\n";
  if (!f.html_path.empty()) std::cout << "wrote " << f.html_path << " (HTML report: open in a browser)\n";
  return 0;
}

struct PlanFlags {
  std::vector<std::string> fix, allow, max;
  std::string base;
  std::string framework = "any";
  std::string emit;
  int top = 5;
  int keep = 16;
  int threads = 1;
  bool no_baselines = false;
  std::string html_path;
};

// --framework (parse_searched_frameworks) with --emit X: X's runnable plans; a --framework other than
// any or X beside it is an error (the launch would be for a plan its framework was not asked for).
std::vector<Framework> searched_frameworks(const std::string& text, std::optional<Framework> emit) {
  std::vector<Framework> chosen;
  try {
    chosen = parse_searched_frameworks(text);
  } catch (const Error& e) {
    throw e.with_context("--framework");
  }
  if (!emit) return chosen;
  if (text != "any" && chosen != std::vector<Framework>{*emit})
    throw Error(fmt::format("--framework {} with --emit {}: --emit searches only what {} runs; give --framework any "
                            "or {}, or leave it out",
                            text, to_string(*emit), to_string(*emit), to_string(*emit)));
  return {*emit};
}

// `paratune plan`: search every axis for the fastest configuration that fits.
int run_plan(const SetupFlags& setup, const PlanFlags& f, bool json) {
  const ModelSpec model = load_model(setup.model);
  const ClusterSpec cluster = load_cluster(setup.cluster);
  const TrainingSpec training = training_from(setup);
  check_training_fits_model(model, training);
  plan::PlanOptions options;
  for (const std::string& text : f.fix) plan::add_constraints(options.space, text, plan::ConstraintKind::kFix, "--fix");
  for (const std::string& text : f.allow) plan::add_constraints(options.space, text, plan::ConstraintKind::kAllow, "--allow");
  for (const std::string& text : f.max) plan::add_constraints(options.space, text, plan::ConstraintKind::kMax, "--max");
  if (!f.base.empty()) {
    try {
      options.base = parse_parallel_config(f.base);
    } catch (const Error& e) {
      throw e.with_context("--base");
    }
  }
  std::optional<Framework> framework;  // --emit's
  LaunchTarget target{.version = "", .nodes = cluster.nodes, .gpus_per_node = cluster.gpus_per_node, .gpu = cluster.gpu.name};
  std::string emit_name;  // "megatron@0.20.0-dev"
  if (!f.emit.empty()) {
    try {
      const FrameworkTarget t = parse_framework_target(f.emit);
      framework = t.framework;
      target.version = t.version;
      emit_name = to_string(t);
    } catch (const Error& e) {
      throw e.with_context("--emit");
    }
  }
  options.frameworks = searched_frameworks(f.framework, framework);
  options.top = f.top;
  options.keep = std::max(f.keep, f.top);
  options.threads = f.threads;
  options.estimate.memory_margin = setup.memory_margin;
  options.baselines = !f.no_baselines;
  const Calibration calibration = calibration_from(setup);
  plan::PlanProgress progress;  // shown on a terminal when the search takes more than a second
  options.progress = &progress;
  plan::PlanResult result;
  {
    cli::PlanProgressDisplay display(progress, cli::progress_after_s());
    result = plan::plan(model, cluster, training, options, calibration);
  }

  std::optional<LaunchSettings> launch;
  if (framework && !result.plans.empty())
    launch = launch_settings(*framework, result.plans.front().estimate.config, model, training, target);
  nlohmann::json j = to_json(result);
  if (launch) j["launch"] = {{"framework", emit_name}, {"text", launch->text}, {"cannot_express", launch->cannot_express}};
  j["predicted_by"] = prediction_json(setup);
  // How sure: intervals belong to the shipped calibration.
  const PredictionInterval interval = cli::shipped_interval(setup.calibration, model, cluster, training);
  const cli::Ties ties = cli::statistical_ties(result, interval);
  if (!result.plans.empty()) {
    j["interval"] = cli::interval_json(result.plans.front().estimate.iteration_time_s, interval);
    j["mfu_above_published"] = mfu_above_published(result.plans.front().estimate.mfu, cluster.gpu, training.precision);
    j["tied_with_winner"] = ties.tied_ranks;
    j["preferred_among_tied"] = ties.preferred_rank;
  }
  if (!f.html_path.empty()) {
    // The winner's iteration replayed event by event, for its timeline.
    std::optional<sim::PipelineProblem> problem;
    std::optional<sim::SimulationResult> simulated;
    if (!result.plans.empty()) {
      problem = pipeline_problem(model, cluster, training, result.plans.front().estimate.config, calibration,
                                 options.estimate);
      simulated = sim::simulate(*problem);
    }
    write_file(f.html_path,
               plan_html(nlohmann::ordered_json(j), simulated ? &*simulated : nullptr, problem ? &*problem : nullptr,
                         fmt::format("paratune plan: {} on {} ({} x {}), seq {}, global batch {}", model.name,
                                     cluster.name, cluster.num_gpus(), cluster.gpu.name, training.seq_len,
                                     training.global_batch)));
  }
  if (json) {
    write_json(j);
  } else {
    std::cout << format_plan(result, model, cluster, training) << cli::format_ties(result, interval, ties);
    if (!result.plans.empty())
      if (const std::string above = mfu_above_published(result.plans.front().estimate.mfu, cluster.gpu,
                                                          training.precision);
          !above.empty())
        std::cout << "  the winner's " << above << "\n";
    std::cout << "(" << prediction_source(setup) << ")\n";
    if (!launch && !result.plans.empty())
      for (const launch::FrameworkVerdict& v : result.plans.front().frameworks)
        if (v.reasons.empty()) {
          std::cout << fmt::format("the winner's launch settings: the same command with --emit {}\n", to_string(v.framework));
          break;
        }
    if (launch) {
      std::cout << fmt::format("\n{} launch for the winner:\n{}", emit_name, launch->text);
      if (!launch->cannot_express.empty()) {
        std::cout << fmt::format("\nnot expressible in {}:\n", emit_name);
        for (const std::string& line : launch->cannot_express) std::cout << "  - " << line << "\n";
      }
    }
    if (!f.html_path.empty()) std::cout << "wrote " << f.html_path << " (HTML report: open in a browser)\n";
  }
  return result.plans.empty() ? 3 : 0;
}

struct TuneFlags {
  std::string space_path;
  std::vector<std::string> fix, allow, max;  // narrow a derived space, as for `plan`
  std::string command;
  std::string study_path;
  std::string study_name = "main";
  std::string trials_dir;
  std::string algo = "grid";
  std::uint64_t seed = 0;
  std::string budget, memory_limit, timeout, hang, grace = "10s";
  int max_trials = 0;
  bool retry_failed = false;
  int steps = 20;
  int parallel = 1;
  std::optional<int> slots;  // --slots: the same as --parallel, named for two-level parallelism
  int trial_ranks = 1;
  std::string strategy;
  std::string slot_devices;
  std::string slot_cpus;
  std::string backend = "local";  // local | ssh | slurm
  std::string hosts;              // --backend ssh: the hosts file
  std::vector<std::string> ssh_options;
  std::string ssh_config;
  // --backend slurm (trial/slurm_backend.h).
  std::string slurm_partition, slurm_account, slurm_qos, slurm_constraint;
  std::string slurm_time, slurm_mem_per_slot, slurm_poll = "1s";
  int slurm_cpus_per_slot = 1, slurm_gpus_per_slot = 0;
  std::vector<std::string> sbatch_options;
  std::string step_time_regex;
  int min_steps = 5;
  int initial = 4;
  std::set<std::string> given;  // the flags on the command line (to refuse those that would do nothing)
  std::optional<bool> seed_from_plan;  // default: on when a model is given
  // Hyperparameter studies (hpo/study.h).
  std::string objective = hpo::kThroughputObjective;
  std::string direction;  // required with a metric objective
  std::string pruner = "none";
  double eta = 3;
  long long min_resource = 0;
  int pruner_startup = 5;
  long long pruner_warmup = 0;
  double percentile = 25;
  bool retrain = false;
  std::optional<int> retrain_steps;  // default: --steps
  double surrogate_ratio = 1;
  std::string fuse;  // "auto" or a size (hpo/fusion.h); empty: no fusion
  // Worker mode (tune::WorkerOptions).
  bool worker = false;
  std::string worker_name;  // empty: HOSTNAME:PID
  std::string heartbeat = "10s", heartbeat_timeout = "60s";
  // How long store calls retry while the store is unavailable (store::StoreUnavailable).
  std::string store_retry = "60s";
};

// A hyperparameter study rather than a search of parallel configurations: a metric objective, a
// pruner, a hyperparameter sampler, trials of several ranks, or a space with typed or conditional
// parameters.
bool is_hpo_study(const TuneFlags& f) {
  if (f.objective != hpo::kThroughputObjective || f.algo == "tpe" || f.algo == "gp" || f.trial_ranks != 1 ||
      !f.strategy.empty() || f.given.contains("--surrogate-ratio") || f.given.contains("--fuse"))
    return true;
  if (f.algo != "grid" && f.algo != "random") return false;  // a model-based search of configurations
  if (f.pruner != "none") return true;
  if (f.space_path.empty()) return false;
  const hpo::Space space = hpo::Space::load(f.space_path);
  return std::any_of(space.parameters().begin(), space.parameters().end(), [](const hpo::ParamSpec& p) {
    return p.type != hpo::ParamType::kCategorical || !p.when.empty();
  });
}

// Set by SIGINT / SIGTERM: the study stops its trials, stores them as interrupted and returns.
std::atomic<int> g_stop_signal{0};
extern "C" void on_stop_signal(int signal) { g_stop_signal.store(signal); }

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;  // no SA_RESTART: the runner's poll() wakes up at once
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

// Progress of a study on stderr: on a terminal a live block (a status line and a table of the
// running trials, report/tune_report.h format_progress) under the log of started and finished
// trials; otherwise only the log lines. max_trials and budget_s: the run's --max-trials and
// --budget (0: none), for the ETA.
class ConsoleObserver final : public tune::StudyObserver {
 public:
  ConsoleObserver(std::uint64_t valid_points, int max_trials, double budget_s)
      : terminal_(::isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {
    view_.valid_points = valid_points;
    view_.max_trials = max_trials;
    view_.budget_s = budget_s;
  }
  ~ConsoleObserver() override { clear(); }

  void trial_started(const store::StoredTrial& t) override { log(format_trial_started(t)); }
  void trial_finished(const store::StoredTrial& t) override { log(format_trial_finished(t)); }
  void note(const std::string& line) override { log(line); }
  void progress(const std::vector<tune::TrialProgress>& running, int finished, const store::StoredTrial* best) override {
    if (!terminal_) return;
    // The first count is what the store had (reused trials): the ETA's rate counts this run's.
    if (!finished_before_) finished_before_ = finished;
    clear();
    view_.finished = finished;
    view_.finished_this_run = std::max(0, finished - *finished_before_);
    view_.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    view_.best = best;
    // Lines cut to the terminal's width: a wrapped line would break the cursor-up count.
    winsize size{};
    view_.width = ::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1 ? size.ws_col - 1 : 200;
    std::istringstream block(format_progress(running, view_));
    view_.best = nullptr;  // not kept past the call
    drawn_lines_ = 0;
    for (std::string line; std::getline(block, line); ++drawn_lines_)
      std::fprintf(stderr, "%s\n", line.substr(0, view_.width).c_str());
    std::fflush(stderr);
  }

 private:
  void log(const std::string& line) {
    clear();
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  }
  // Erases the live block (cursor up, clear to the end of the screen).
  void clear() {
    if (drawn_lines_ == 0) return;
    std::fprintf(stderr, "\x1b[%dA\x1b[J", drawn_lines_);
    drawn_lines_ = 0;
  }
  bool terminal_;
  ProgressView view_;
  std::optional<int> finished_before_;
  std::chrono::steady_clock::time_point start_;
  int drawn_lines_ = 0;
};

double optional_duration(const std::string& text, const char* flag) {
  if (text.empty()) return 0;
  try {
    return units::parse_duration(text);
  } catch (const Error& e) {
    throw e.with_context(flag);
  }
}

trial::TrialLimits limits_from(const TuneFlags& f) {
  trial::TrialLimits limits;
  limits.timeout_s = optional_duration(f.timeout, "--timeout");
  limits.hang_s = optional_duration(f.hang, "--hang");
  limits.grace_s = optional_duration(f.grace, "--grace");
  if (!f.memory_limit.empty()) {
    try {
      limits.memory_limit_bytes = units::parse_bytes(f.memory_limit);
      // No trial runs in under a mebibyte: a smaller limit is a unit slip (a bare number is bytes).
      if (limits.memory_limit_bytes < units::kMiB)
        throw Error(fmt::format("{} is less than any trial's memory; a bare number is in bytes: write the unit, e.g. "
                                "80GiB",
                                units::format_bytes(limits.memory_limit_bytes)));
    } catch (const Error& e) {
      throw e.with_context("--memory-limit");
    }
  }
  return limits;
}

// "4 slot(s)", "6 slot(s) on 2 hosts over ssh": for the line a study starts with.
std::string slots_line(const trial::Backend& backend) {
  if (const auto* ssh = dynamic_cast<const trial::SshBackend*>(&backend))
    return fmt::format("{} slot(s) on {} host(s) over ssh", backend.slots(), ssh->hosts().size());
  if (backend.name() == "slurm") return fmt::format("{} slot(s) in flight as Slurm jobs", backend.slots());
  return fmt::format("{} slot(s)", backend.slots());
}

// A flag that would do nothing in this study is refused rather than ignored.
void refuse_flags(const TuneFlags& f, const std::vector<std::string>& flags, const std::string& why) {
  for (const std::string& flag : flags)
    if (f.given.contains(flag)) throw Error(fmt::format("{}: {}", flag, why));
}

// Default: next to an SQLite study file, one directory per study of the file (s.db: s.trials for the
// study "main", s.NAME.trials for another, so that two studies of one file never write each other's
// trial directories); for a study on PostgreSQL, NAME.trials in the current directory. Where the study
// name becomes part of a path, it must not lead out of that directory.
std::filesystem::path trials_dir_from(const TuneFlags& f) {
  if (!f.trials_dir.empty()) return f.trials_dir;
  if (store::is_postgres_locator(f.study_path)) {
    tune::validate_study_name_as_path(f.study_name);
    return std::filesystem::path(f.study_name + ".trials");
  }
  if (f.study_name == "main") return std::filesystem::path(f.study_path).replace_extension(".trials");
  tune::validate_study_name_as_path(f.study_name);
  return std::filesystem::path(f.study_path).replace_extension("." + f.study_name + ".trials");
}

const std::vector<std::string> kSlurmFlags{"--slurm-partition", "--slurm-account",  "--slurm-qos",
                                           "--slurm-constraint", "--slurm-time",     "--slurm-cpus-per-slot",
                                           "--slurm-gpus-per-slot", "--slurm-mem-per-slot", "--slurm-poll",
                                           "--sbatch-option"};

std::unique_ptr<trial::Backend> slurm_backend_from(const TuneFlags& f) {
  refuse_flags(f, {"--slot-devices", "--slot-cpus"},
               "belongs to --backend local; with --backend slurm each trial asks Slurm for --slurm-gpus-per-slot "
               "and --slurm-cpus-per-slot per slot");
  if (f.slots && f.given.contains("--parallel"))
    throw Error("--slots and --parallel: give one (--slots is the newer name: the slots trials are packed onto)");
  trial::SlurmOptions options;
  options.slots = f.slots.value_or(f.parallel);
  options.partition = f.slurm_partition;
  options.account = f.slurm_account;
  options.qos = f.slurm_qos;
  options.constraint = f.slurm_constraint;
  options.time_limit_s = optional_duration(f.slurm_time, "--slurm-time");
  options.cpus_per_slot = f.slurm_cpus_per_slot;
  options.gpus_per_slot = f.slurm_gpus_per_slot;
  if (!f.slurm_mem_per_slot.empty()) {
    try {
      options.memory_per_slot_bytes = units::parse_bytes(f.slurm_mem_per_slot);
    } catch (const Error& e) {
      throw e.with_context("--slurm-mem-per-slot");
    }
  }
  options.poll_s = optional_duration(f.slurm_poll, "--slurm-poll");
  options.extra_sbatch_options = f.sbatch_options;
  auto backend = std::make_unique<trial::SlurmBackend>(options);
  backend->check_with_slurm();  // a partition or account Slurm refuses: said now, not by every trial
  return backend;
}

std::unique_ptr<trial::Backend> backend_from(const TuneFlags& f) {
  if (f.backend != "slurm") refuse_flags(f, kSlurmFlags, "belongs to --backend slurm");
  if (f.backend == "slurm") {
    refuse_flags(f, {"--hosts", "--ssh-option", "--ssh-config"}, "belongs to --backend ssh");
    return slurm_backend_from(f);
  }
  if (f.backend == "ssh") {
    refuse_flags(f, {"--parallel", "--slots", "--slot-devices", "--slot-cpus"},
                 "belongs to --backend local; with --backend ssh the hosts file gives each host's slots= and "
                 "slot-devices=");
    if (f.hosts.empty()) throw Error("--backend ssh: needs --hosts FILE (one host per line: host [slots=N] [slot-devices=LIST])");
    trial::SshOptions options;
    options.options = f.ssh_options;
    options.config_file = f.ssh_config;
    return std::make_unique<trial::SshBackend>(trial::parse_hosts_file(f.hosts), options);
  }
  refuse_flags(f, {"--hosts", "--ssh-option", "--ssh-config"}, "belongs to --backend ssh");
  if (f.slots && f.given.contains("--parallel"))
    throw Error("--slots and --parallel: give one (--slots is the newer name: the slots trials are packed onto)");
  std::vector<std::string> slot_devices;
  if (!f.slot_devices.empty()) slot_devices = trial::parse_slot_devices(f.slot_devices);
  std::vector<std::vector<int>> slot_cpus;
  if (!f.slot_cpus.empty()) slot_cpus = trial::parse_slot_cpus(f.slot_cpus);
  return std::make_unique<trial::LocalBackend>(f.slots.value_or(f.parallel), slot_devices, slot_cpus);
}

// --worker, --heartbeat, --heartbeat-timeout (both kinds of study).
tune::WorkerOptions worker_options_from(const TuneFlags& f) {
  tune::WorkerOptions worker;
  worker.enabled = f.worker;
  if (f.worker) {
    worker.heartbeat_s = optional_duration(f.heartbeat, "--heartbeat");
    worker.heartbeat_timeout_s = optional_duration(f.heartbeat_timeout, "--heartbeat-timeout");
  }
  return worker;
}

// --store-retry: 0 (fail at the first unavailability) or more.
double store_retry_from(const TuneFlags& f) {
  try {
    return units::parse_duration(f.store_retry);
  } catch (const Error& e) {
    throw e.with_context("--store-retry");
  }
}

// A study file this run creates is removed again when the run fails before any trial is stored in
// it (a bad placeholder, an unsatisfiable option found after the store opened): an input error
// leaves nothing behind. Not for workers (`shared`): another worker may be starting on the same new
// file. Declared before the store, so that the store is closed first.
class NewStudyFile {
 public:
  NewStudyFile(const std::string& locator, bool shared) {
    std::error_code ec;
    if (!shared && !store::is_postgres_locator(locator) && !std::filesystem::exists(locator, ec) && !ec)
      path_ = locator;
  }
  NewStudyFile(const NewStudyFile&) = delete;
  NewStudyFile& operator=(const NewStudyFile&) = delete;
  ~NewStudyFile() {
    if (path_.empty() || std::uncaught_exceptions() == 0) return;
    try {
      const std::unique_ptr<store::StudyStore> store = store::open_store(path_, store::Access::kReadOnly);
      for (const store::StudyInfo& s : store->studies())
        if (!store->trials(s.id).empty()) return;
    } catch (...) {
      return;  // not a study file we can read: leave it
    }
    std::error_code ignored;
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + suffix, ignored);
  }

 private:
  std::string path_;
};

// `paratune tune` for training hyperparameters: a sampler, a pruner and a metric objective.

// The pruner options of a study from the flags (a pruner's own flags are checked by the caller).
hpo::PrunerOptions pruner_options_from(const TuneFlags& f, int steps, hpo::Direction direction) {
  hpo::PrunerOptions o;
  o.direction = direction;
  o.max_resource = steps;
  o.min_resource = f.min_resource;
  o.eta = f.eta;
  o.startup_trials = f.pruner_startup;
  o.warmup_steps = f.pruner_warmup;
  o.percentile = f.percentile;
  // q_min's default (5) gives way to a shorter --steps; a --min-steps given is checked.
  o.min_steps = f.given.contains("--min-steps") ? f.min_steps : std::min(f.min_steps, steps);
  return o;
}

int run_hpo_tune(const SetupFlags& setup, const TuneFlags& f, bool json) {
  if (f.worker && f.retrain)
    throw Error("--retrain with --worker: every worker would retrain the best trial when it ends; when the workers "
                "are done, run the same command once without --worker, with --retrain (a study at its --max-trials "
                "starts no new trial)");
  refuse_flags(f, {"--seed-from-plan", "--no-seed-from-plan"},
               "belongs to the model-based searches of parallel configurations (bo, xgboost, costmodel, oppa)");
  if (f.pruner != "oppa")
    refuse_flags(f, {"--min-steps"}, fmt::format("belongs to OPPA's early termination (--algo oppa, --pruner oppa), "
                                                 "not --pruner {}",
                                                 f.pruner));
  if (f.pruner != "asha" && f.pruner != "hyperband")
    refuse_flags(f, {"--eta", "--min-resource"}, fmt::format("rungs belong to --pruner asha or hyperband, not {}", f.pruner));
  if (f.pruner != "median" && f.pruner != "percentile")
    refuse_flags(f, {"--pruner-startup", "--pruner-warmup"},
                 fmt::format("belongs to --pruner median or percentile, not {}", f.pruner));
  if (f.pruner != "percentile") refuse_flags(f, {"--percentile"}, fmt::format("belongs to --pruner percentile, not {}", f.pruner));
  if (!f.retrain) refuse_flags(f, {"--retrain-steps"}, "needs --retrain");
  if (f.space_path.empty())
    throw Error("tune: a hyperparameter study (--objective, --pruner, --algo tpe|gp or typed parameters) needs "
                "--space FILE; --model derives a space of parallel configurations, searched for throughput");
  if (!setup.model.empty() || !f.fix.empty() || !f.allow.empty() || !f.max.empty())
    throw Error("tune: --model/--fix/--allow/--max derive a space of parallel configurations; a hyperparameter study "
                "searches its --space file");
  const hpo::Space space = hpo::Space::load(f.space_path);
  hpo::HpoOptions options;
  options.name = f.study_name;
  options.command = f.command;
  options.steps = f.steps;
  options.objective = f.objective;
  if (f.direction.empty() && f.objective != hpo::kThroughputObjective)
    throw Error(fmt::format("--objective {}: give --direction minimize or maximize (e.g. minimize a loss, maximize "
                            "an accuracy)",
                            f.objective));
  try {
    options.direction = f.direction.empty() ? hpo::Direction::kMaximize : hpo::parse_direction(f.direction);
  } catch (const Error& e) {
    throw e.with_context("--direction");
  }
  options.max_trials = f.max_trials;
  options.budget_s = optional_duration(f.budget, "--budget");
  options.retry_failed = f.retry_failed;
  options.limits = limits_from(f);
  options.step_time_regex = f.step_time_regex;
  options.trials_dir = trials_dir_from(f);
  options.trial_ranks = f.trial_ranks;
  options.strategy = f.strategy;
  options.surrogate_ratio = f.surrogate_ratio;
  if (f.fuse == "auto") {
    options.fuse_auto = true;
  } else if (!f.fuse.empty()) {
    int size = 0;
    const auto [end, ec] = std::from_chars(f.fuse.data(), f.fuse.data() + f.fuse.size(), size);
    if (ec != std::errc() || end != f.fuse.data() + f.fuse.size()) throw Error(fmt::format("--fuse {}: must be auto or a size from 1 to {}", f.fuse, hpo::kMaxFusedTrials));
    options.fuse = size;
  }
  options.worker = worker_options_from(f);
  hpo::validate(options);
  const std::unique_ptr<trial::Backend> backend_ptr = backend_from(f);
  const trial::Backend& backend = *backend_ptr;

  hpo::SamplerKind kind{};
  try {
    kind = hpo::parse_sampler(f.algo);
  } catch (const Error&) {
    throw Error(fmt::format("--algo {}: searches value lists of parallel configurations for throughput; a "
                            "hyperparameter study uses grid, random, tpe or gp",
                            f.algo));
  }
  hpo::SamplerOptions sampler_options;
  sampler_options.direction = options.direction;
  sampler_options.seed = f.seed;
  sampler_options.startup_trials = f.given.contains("--initial") ? f.initial : -1;
  sampler_options.max_trials = static_cast<std::size_t>(std::max(0, f.max_trials));
  if (kind == hpo::SamplerKind::kGrid && space.finite() && f.max_trials > 0 &&
      static_cast<std::size_t>(f.max_trials) < space.enumerate().size())
    std::cerr << fmt::format("paratune tune: grid: --max-trials {} covers {} of the {} configurations, spread evenly "
                             "over the grid\n",
                             f.max_trials, f.max_trials, space.enumerate().size());
  const std::unique_ptr<hpo::Sampler> sampler = hpo::make_sampler(kind, space, sampler_options);
  const hpo::PrunerOptions pruner_options = pruner_options_from(f, options.steps, options.direction);
  hpo::PrunerKind pruner_kind{};
  try {
    pruner_kind = hpo::parse_pruner(f.pruner);
  } catch (const Error& e) {
    throw e.with_context("--pruner");
  }
  const std::unique_ptr<hpo::Pruner> pruner = hpo::make_pruner(pruner_kind, pruner_options);
  const NewStudyFile new_file(f.study_path, f.worker);
  const std::unique_ptr<store::StudyStore> store =
      store::open_store(f.study_path, store::Access::kReadWrite, store_retry_from(f));
  if (!f.worker_name.empty()) store->set_worker_name(f.worker_name);

  std::cerr << fmt::format("paratune tune: {} hyperparameters, {} sampler, {} pruner, objective {} ({}), up to {} "
                           "steps per trial, {}, {} per trial{}; study {} ('{}'){}, trials in {}\n",
                           space.size(), sampler->name(), pruner->name(), options.objective,
                           hpo::to_string(options.direction), options.steps, slots_line(backend), options.trial_ranks,
                           options.strategy.empty() ? "" : " (" + options.strategy + ")", store->locator(), options.name,
                           f.worker ? fmt::format(" as worker {}", store->worker_name()) : "",
                           options.trials_dir.string());
  // As Python's tune() warns (and Optuna's optimize() without n_trials or timeout behaves): with
  // neither limit a sampler such as TPE proposes forever, so say so before the first trial.
  if (options.max_trials <= 0 && options.budget_s <= 0)
    std::cerr << "paratune tune: warning: no --max-trials/--budget: trials run until the grid's end or Ctrl-C\n";
  install_stop_handlers();
  hpo::HpoSummary summary;
  {
    ConsoleObserver observer(0, options.max_trials, options.budget_s);
    summary = hpo::run_hpo(space, options, *store, backend, *sampler, *pruner, observer, g_stop_signal);
  }
  if (!json) std::cout << format_hpo_study(summary) << std::flush;  // before the retrain, which may take long
  std::optional<hpo::Transfer> transfer;
  if (options.surrogate_ratio != 1 && summary.best) {
    transfer = hpo::transfer_to_target(space, options, hpo::Config::parse(summary.trials[*summary.best].params_json));
    if (!json) std::cout << "\n" << format_transfer(*transfer) << std::flush;
  }
  std::optional<hpo::RetrainResult> retrained;
  if (f.retrain && summary.best && summary.stop != tune::StopReason::kInterrupted) {
    const store::StoredTrial& best = summary.trials[*summary.best];
    const int steps = f.retrain_steps.value_or(options.steps);
    std::cerr << fmt::format("paratune tune: retraining trial {} for {} steps{}\n", best.number, steps,
                             transfer ? " at the target's width" : "");
    retrained = hpo::retrain_best(space, options, best, steps, *store, backend, g_stop_signal);
  }
  if (json) {
    nlohmann::ordered_json j = to_json(summary);
    if (transfer) j["transfer"] = to_json(*transfer);
    if (retrained) j["retrain"] = to_json(*retrained);
    write_json(j);
  } else if (retrained) {
    std::cout << "\n" << format_retrain(*retrained);
  }
  if (summary.stop == tune::StopReason::kInterrupted || g_stop_signal.load() != 0) return 128 + g_stop_signal.load();
  if (retrained && retrained->trial.status != "completed") return 1;
  return summary.best ? 0 : 3;
}

struct HarvestFlags {
  std::string job, trial, trial_params, out = "harvest", svg, timeout;
  int ranks = 2;
  bool baseline = false;
  std::size_t timeline_first_step = 3, timeline_steps = 2;
};

// `paratune harvest`: a pipeline job with tuning trials in its bubbles (hpo/bubble_coordinator.h),
// and, with --baseline, the same job alone first.
int run_harvest_command(const HarvestFlags& f, bool json) {
  hpo::HarvestOptions options;
  options.job_argv = trial::split_words(f.job);
  options.ranks = f.ranks;
  options.trial_argv = trial::split_words(f.trial);
  options.timeout_s = optional_duration(f.timeout, "--timeout");
  if (!f.trial_params.empty()) {
    std::istringstream in(read_input_file(f.trial_params, "trial-parameter list (--trial-params)"));
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !(j.is_object() || (j.is_array() && !j.empty())))
        throw Error(fmt::format("{}:{}: each line is one trial's PARATUNE_PARAMS: a JSON object, or an array of "
                                "them (a fused group)",
                                f.trial_params, n));
      options.trial_params.push_back(j.dump());
    }
  }
  if (options.trial_argv.empty()) throw Error("--trial: the tuning trial's command is required");
  if (options.trial_params.empty()) throw Error("--trial-params: the file must name at least one trial");
  HarvestMeasurement m;
  m.ranks = f.ranks;
  if (f.baseline) {
    hpo::HarvestOptions alone = options;
    alone.trial_argv.clear();
    alone.dir = std::filesystem::path(f.out) / "baseline";
    std::cerr << "paratune harvest: the job alone ...\n";
    m.baseline = hpo::run_harvest(alone);
  }
  options.dir = std::filesystem::path(f.out) / "harvest";
  std::cerr << "paratune harvest: the job with trials in its bubbles ...\n";
  m.harvest = hpo::run_harvest(options);
  if (!f.svg.empty()) write_file(f.svg, harvest_timeline_svg(m, f.timeline_first_step, f.timeline_steps));
  if (json) write_json(to_json(m));
  else std::cout << format_harvest_measurement(m) << (f.svg.empty() ? "" : "wrote " + f.svg + "\n");
  return m.harvest.job_exit_code == 0 && (!m.baseline || m.baseline->job_exit_code == 0) ? 0 : 1;
}

// `paratune tune`: run real trials over a search space and find the fastest configuration.
// Exit codes: 0 done with a best trial, 3 no trial completed, 128 + signal when interrupted.
// A search of parallel configurations for throughput (grid, random, bo, xgboost, costmodel, oppa) over
// a space file or the planner's derived space, in the one study loop (tune::run_configuration_study).
int run_tune(const SetupFlags& setup, const TuneFlags& f, bool json) {
  if (!f.worker) refuse_flags(f, {"--worker-name", "--heartbeat", "--heartbeat-timeout"}, "belongs to --worker");
  if (is_hpo_study(f)) return run_hpo_tune(setup, f, json);
  refuse_flags(f, {"--direction", "--retrain", "--retrain-steps"},
               "belongs to hyperparameter studies (--objective METRIC, --algo tpe|gp or a typed space); this study "
               "searches parallel configurations for throughput");
  tune::Algorithm algo{};
  try {
    algo = tune::parse_algorithm(f.algo);
  } catch (const Error& e) {
    throw e.with_context("--algo");
  }
  // OPPA's early termination is --algo oppa's own pruner; --pruner names another (none turns it off).
  const hpo::PrunerKind implied = algo == tune::Algorithm::kOppa ? hpo::PrunerKind::kOppa : hpo::PrunerKind::kNone;
  hpo::PrunerKind pruner_kind = implied;
  if (f.given.contains("--pruner")) {
    try {
      pruner_kind = hpo::parse_pruner(f.pruner);
    } catch (const Error& e) {
      throw e.with_context("--pruner");
    }
  }
  const std::string pruner_name = hpo::to_string(pruner_kind);
  if (pruner_kind != hpo::PrunerKind::kAsha && pruner_kind != hpo::PrunerKind::kHyperband)
    refuse_flags(f, {"--eta", "--min-resource"}, fmt::format("rungs belong to --pruner asha or hyperband, not {}", pruner_name));
  if (pruner_kind != hpo::PrunerKind::kMedian && pruner_kind != hpo::PrunerKind::kPercentile)
    refuse_flags(f, {"--pruner-startup", "--pruner-warmup"},
                 fmt::format("belongs to --pruner median or percentile, not {}", pruner_name));
  if (pruner_kind != hpo::PrunerKind::kPercentile)
    refuse_flags(f, {"--percentile"}, fmt::format("belongs to --pruner percentile, not {}", pruner_name));
  if (pruner_kind != hpo::PrunerKind::kOppa)
    refuse_flags(f, {"--min-steps"}, fmt::format("belongs to OPPA's early termination (--algo oppa, --pruner oppa), "
                                                 "not --pruner {}",
                                                 pruner_name));
  const bool derived = f.space_path.empty();
  const bool has_model = !setup.model.empty();
  if (has_model && (setup.cluster.empty() || setup.seq_len == 0 || setup.global_batch == 0))
    throw Error("tune: --model needs --cluster, --seq-len and --global-batch too");
  if (derived && !has_model)
    throw Error("tune: give --space FILE, or --model, --cluster, --seq-len and --global-batch to search the "
                "configurations the planner's model says fit");
  if (!derived && (!f.fix.empty() || !f.allow.empty() || !f.max.empty()))
    throw Error("tune: --fix/--allow/--max narrow the space derived from --model; with --space FILE, edit the file");
  std::optional<hpo::Space> file_space;
  std::optional<tune::DerivedSpace> derived_space;
  if (derived) {
    plan::SearchSpace axes;
    for (const std::string& text : f.fix) plan::add_constraints(axes, text, plan::ConstraintKind::kFix, "--fix");
    for (const std::string& text : f.allow) plan::add_constraints(axes, text, plan::ConstraintKind::kAllow, "--allow");
    for (const std::string& text : f.max) plan::add_constraints(axes, text, plan::ConstraintKind::kMax, "--max");
    derived_space = tune::derive_space(load_model(setup.model), load_cluster(setup.cluster), training_from(setup), axes,
                                       calibration_from(setup), EstimateOptions{setup.memory_margin});
  } else {
    file_space = hpo::Space::load(f.space_path);
  }
  const hpo::Space& space = derived ? derived_space->space : *file_space;
  const tune::SearchSpace view = tune::SearchSpace::of(space);  // the configurations as the searches index them

  hpo::HpoOptions options;
  options.name = f.study_name;
  options.command = f.command;
  options.steps = f.steps;
  options.max_trials = f.max_trials;
  options.budget_s = optional_duration(f.budget, "--budget");
  options.retry_failed = f.retry_failed;
  options.limits = limits_from(f);
  options.step_time_regex = f.step_time_regex;
  options.trials_dir = trials_dir_from(f);
  options.worker = worker_options_from(f);
  hpo::validate(options);
  const std::unique_ptr<hpo::Pruner> pruner =
      hpo::make_pruner(pruner_kind, pruner_options_from(f, options.steps, hpo::Direction::kMaximize));
  const std::unique_ptr<trial::Backend> backend_ptr = backend_from(f);
  const trial::Backend& backend = *backend_ptr;
  tune::BayesOptions bayes;
  bayes.algorithm = algo;
  bayes.steps = options.steps;
  bayes.initial_points = f.initial;
  bayes.seed = f.seed;
  bayes.memory_limit_bytes = options.limits.memory_limit_bytes;
  std::optional<tune::Prior> prior;
  std::string prior_line;
  const bool ordered = algo == tune::Algorithm::kGrid || algo == tune::Algorithm::kRandom;
  if (ordered) {
    if (f.seed_from_plan)
      throw Error(fmt::format("--{}seed-from-plan: belongs to --algo oppa and costmodel, not {}",
                              *f.seed_from_plan ? "" : "no-", f.algo));
    const std::size_t points = view.enumerate().size();
    if (algo == tune::Algorithm::kGrid && f.max_trials > 0 && static_cast<std::size_t>(f.max_trials) < points)
      std::cerr << fmt::format("paratune tune: grid: --max-trials {} covers {} of the {} valid points{}\n", f.max_trials,
                               f.max_trials, points,
                               view.is_listed() ? ", the first in the space's own order (fastest predicted first)"
                                                : ", spread evenly over the grid");
  } else {
    tune::validate(bayes);
    if (has_model) {
      const ClusterSpec cluster = load_cluster(setup.cluster);
      // The model's memory limit when none is given: what one GPU has.
      if (bayes.memory_limit_bytes <= 0) bayes.memory_limit_bytes = cluster.gpu.memory_bytes;
      if (algo == tune::Algorithm::kOppa || algo == tune::Algorithm::kCostModel)
        prior = tune::cost_model_prior(view, load_model(setup.model), cluster, training_from(setup),
                                       calibration_from(setup));
    }
    // Seeding ranks points by the cost-model prior, which only oppa and costmodel have.
    const bool ranks_by_prior = algo == tune::Algorithm::kOppa || algo == tune::Algorithm::kCostModel;
    bayes.seed_from_prior = f.seed_from_plan.value_or(has_model && ranks_by_prior);
    if (bayes.seed_from_prior && !has_model)
      throw Error("--seed-from-plan: needs --model, --cluster, --seq-len and --global-batch (the plan's predictions)");
    if (bayes.seed_from_prior && !ranks_by_prior)
      throw Error(fmt::format("--seed-from-plan: --algo {} has no cost-model prior to rank points by (use oppa or "
                              "costmodel)", f.algo));
    if (prior)
      prior_line = fmt::format("; prior: paratune's cost model{}{}", prior->kernel_only.empty() ? "" : fmt::format(
                                   " (kernel only: {})", fmt::join(prior->kernel_only, ", ")),
                               prior->unmapped_points ? fmt::format(", {} points the model rejects", prior->unmapped_points) : "");
    else if (ranks_by_prior)
      prior_line = "; prior: OPPA's App. D forms (no --model)";
    const int seeded = (bayes.initial_points + 1) / 2;  // bayes.cc: half of the initial designs, rounded up
    prior_line += bayes.seed_from_prior ? fmt::format("; first {}: the plan's best predictions (--seed-from-plan)",
                                                      seeded == 1 ? "design" : fmt::format("{} designs", seeded))
                                        : "; first designs: random";
  }
  if (pruner_kind != hpo::PrunerKind::kNone) prior_line += fmt::format("; pruner {}", pruner_name);
  const std::unique_ptr<hpo::Sampler> sampler = tune::make_configuration_sampler(
      space, view, std::move(prior), bayes, static_cast<std::size_t>(std::max(0, f.max_trials)));
  const NewStudyFile new_file(f.study_path, f.worker);
  const std::unique_ptr<store::StudyStore> store =
      store::open_store(f.study_path, store::Access::kReadWrite, store_retry_from(f));
  if (!f.worker_name.empty()) store->set_worker_name(f.worker_name);

  const std::uint64_t valid = view.enumerate().size();
  // The same phrase as the summary's first line (format_study), from the same figures.
  const std::uint64_t cartesian = view.is_listed() ? 0 : view.cartesian_size();
  const std::uint64_t planned = derived ? derived_space->candidates : 0;
  std::cerr << fmt::format("paratune tune: {}, {} search{}, {} steps per trial, {}; study {} ('{}'){}, trials in {}\n",
                           format_space_size(valid, cartesian, planned), f.algo, prior_line, options.steps, slots_line(backend), store->locator(), options.name,
                           f.worker ? fmt::format(" as worker {}", store->worker_name()) : "",
                           options.trials_dir.string());
  install_stop_handlers();
  tune::StudySummary summary;
  {
    ConsoleObserver observer(valid, options.max_trials, options.budget_s);
    summary = tune::run_configuration_study(space, view, options, *store, backend, *sampler, *pruner,
                                            pruner_kind == implied ? nullptr : pruner.get(), observer, g_stop_signal);
  }
  summary.planned_points = planned;  // the loop sees the listed configurations only, not how they were derived
  if (json) write_json(to_json(summary));
  else std::cout << format_study(summary);
  if (summary.stop == tune::StopReason::kInterrupted) return 128 + g_stop_signal.load();
  return summary.best ? 0 : 3;
}

// `paratune study show` of a hyperparameter study: its trials, learning curves, pruning and which
// parameters mattered.
int show_hpo_study(const std::string& path, const store::StudyInfo& study, const store::StudyStore& store,
                   const nlohmann::json& identity, bool json) {
  const std::string objective = identity.value("objective", std::string(hpo::kThroughputObjective));
  const hpo::Direction direction = hpo::parse_direction(identity.value("direction", std::string("maximize")));
  const std::vector<store::StoredTrial> trials = store.trials(study.id, true);
  const std::optional<std::size_t> best = hpo::best_hpo_trial(trials, direction);
  std::vector<hpo::TrialRecord> records;
  for (const store::StoredTrial& t : trials)
    if (t.status != "interrupted") records.push_back(hpo::record_of(t, objective));
  const hpo::Space space = hpo::Space::parse(identity["space"].dump(), fmt::format("{} (study '{}')", path, study.name));
  const std::vector<hpo::Importance> importance = hpo::parameter_importance(space, records);
  const auto completed = static_cast<std::size_t>(std::count_if(
      records.begin(), records.end(), [](const hpo::TrialRecord& r) { return r.state == hpo::TrialRecord::State::kCompleted; }));
  if (json) {
    nlohmann::ordered_json j{{"study", study.name}, {"config", identity}};
    j.update(trials_json(trials, best));
    j["curves"] = curves_json(records, direction);
    j["importance"] = importance_json(importance);
    j["model"] = study.model_json.empty() ? nlohmann::ordered_json(nullptr)
                                          : nlohmann::ordered_json::parse(study.model_json, nullptr, false);
    write_json(j);
    return 0;
  }
  // Trials are commands, or calls of a program's own function (hpo/ask_tell.h: identity "runner").
  const std::string command = identity.value("command", "");
  const std::string trials_are = command.empty() && identity.contains("runner")
                                     ? fmt::format("trials: {} (in-process)", identity.value("runner", ""))
                                     : fmt::format("command: {}", command);
  const std::string steps = identity["steps"] == 0 ? "no fixed number of steps per trial"
                                                    : fmt::format("up to {} steps per trial", identity["steps"].dump());
  std::cout << fmt::format("study '{}' in {}\n{}\nobjective: {} ({}), {}, pruner {}\n\n", study.name, path,
                           trials_are, objective, hpo::to_string(direction), steps, identity["pruner"].dump());
  std::cout << format_hpo_trials(trials, best, objective);
  for (const std::string& part : {format_pruning(trials), format_curves(records, objective, direction),
                                  format_importance(importance, completed)})
    if (!part.empty()) std::cout << "\n" << part;
  return 0;
}

// choose_study (report/study_data.h); its errors are about --study-name when there are studies to
// choose from (a store with none is the store's problem, whatever the flag).
const store::StudyInfo& study_named(const std::vector<store::StudyInfo>& studies, const std::string& name,
                                    const std::string& locator) {
  try {
    return choose_study(studies, name, locator);
  } catch (const Error& e) {
    if (studies.empty()) throw;
    throw e.with_context("--study-name");
  }
}

// How `study show` and `report` open a store: read-write where they may (an SQLite file of an older
// schema is upgraded in place), read-only where the file or its directory cannot be written (a
// read-only mount, someone else's file: reading needs no write) and where the file is empty (its
// creator has not committed yet: a reader waits for it rather than making a study of it).
store::Access reading_access(const std::string& locator) {
  if (store::is_postgres_locator(locator)) return store::Access::kReadWrite;
  const std::filesystem::path path(locator);
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  const bool empty = std::filesystem::file_size(path, ec) == 0 && !ec;
  return !empty && ::access(path.c_str(), W_OK) == 0 && ::access(dir.c_str(), W_OK) == 0 ? store::Access::kReadWrite
                                                                                         : store::Access::kReadOnly;
}

// `paratune study show`: every trial of a stored study and the best one.
int run_study_show(const std::string& locator, const std::string& name, bool json) {
  if (!store::is_postgres_locator(locator) && !std::filesystem::exists(locator))
    throw Error(fmt::format("{}: no such study file", locator));
  const std::unique_ptr<store::StudyStore> opened = store::open_store(locator, reading_access(locator));
  const store::StudyStore& store = *opened;
  const std::string path = store.locator();  // a PostgreSQL URI with its password masked
  const std::vector<store::StudyInfo> studies = store.studies();
  const store::StudyInfo* study = &study_named(studies, name, path);
  const nlohmann::json identity = nlohmann::json::parse(study->config_json, nullptr, false);
  if (identity.is_object() && identity.value("kind", "") == "hpo") return show_hpo_study(path, *study, store, identity, json);
  const std::vector<store::StoredTrial> trials = store.trials(study->id);
  const std::optional<std::size_t> best = tune::best_trial(trials);
  if (json) {
    nlohmann::ordered_json j{{"study", study->name}, {"config", identity}};
    j.update(trials_json(trials, best));
    j["model"] = study->model_json.empty() ? nlohmann::ordered_json(nullptr)
                                           : nlohmann::ordered_json::parse(study->model_json, nullptr, false);
    write_json(j);
    return 0;
  }
  std::cout << fmt::format("study '{}' in {}\n", study->name, path);
  if (identity.is_object() && identity.contains("command"))
    std::cout << fmt::format("command: {}\nsteps per trial: {}\n\n", identity["command"].get<std::string>(),
                             identity["steps"].dump());
  std::cout << format_trials(trials, best);
  if (const std::string predictions = format_predictions(trials); !predictions.empty()) std::cout << "\n" << predictions;
  if (const std::string model = format_model(study->model_json); !model.empty()) std::cout << "\n" << model;
  return 0;
}

// `paratune report STUDY --html FILE`: the study as one self-contained HTML page.
int run_report(const std::string& locator, const std::string& name, const std::string& html_path) {
  if (html_path.empty()) throw Error("report: give --html FILE (the report is one self-contained HTML file)");
  if (!store::is_postgres_locator(locator) && !std::filesystem::exists(locator))
    throw Error(fmt::format("{}: no such study file", locator));
  const std::unique_ptr<store::StudyStore> store = store::open_store(locator, reading_access(locator));
  const std::vector<store::StudyInfo> studies = store->studies();
  const store::StudyInfo& study = study_named(studies, name, store->locator());
  write_file(html_path, study_html(*store, study));
  std::cout << fmt::format("wrote {} (study '{}': HTML report, open in a browser)\n", html_path, study.name);
  return 0;
}

// `paratune dashboard STUDY`: the study's views, live, until Ctrl-C.
int run_dashboard(dashboard::DashboardOptions options, const std::string& poll) {
  options.poll_s = optional_duration(poll, "--poll");
  dashboard::DashboardServer server(options);
  const int port = server.bind();
  if (!dashboard::is_loopback_host(options.host))
    std::cerr << fmt::format("paratune dashboard: warning: listening on {}, not only this machine: anyone who can reach "
                             "it can read the study (its commands, parameters and paths); there is no login\n",
                             options.host);
  std::cout << fmt::format("paratune dashboard: {} at {} (Ctrl-C to stop)\n", store::mask_locator(options.locator),
                           dashboard::dashboard_url(options.host, port))
            << std::flush;
  install_stop_handlers();
  server.serve(g_stop_signal);
  return 0;
}

// `paratune study copy FROM TO [--study NAME]`.
int run_study_copy(const std::string& from_locator, const std::string& to_locator, const std::string& name, bool json) {
  if (!store::is_postgres_locator(from_locator) && !std::filesystem::exists(from_locator))
    throw Error(fmt::format("{}: no such study file", from_locator));
  const std::unique_ptr<store::StudyStore> from = store::open_store(from_locator);
  const std::unique_ptr<store::StudyStore> to = store::open_store(to_locator);
  const store::CopySummary copied = store::copy_studies(*from, *to, name);
  if (json) {
    write_json({{"from", from->locator()},
                {"to", to->locator()},
                {"studies", copied.studies},
                {"trials", copied.trials},
                {"steps", copied.steps},
                {"metrics", copied.metrics}});
    return 0;
  }
  std::cout << fmt::format("copied {} ({} trials, {} steps, {} metrics) from {} to {}\n", join(copied.studies),
                           copied.trials, copied.steps, copied.metrics, from->locator(), to->locator());
  return 0;
}

int run_presets(bool json) {
  if (json) {
    nlohmann::json j{{"models", model_preset_names()}, {"gpus", nlohmann::json::array()}, {"clusters", nlohmann::json::array()}};
    for (const auto& g : gpu_presets()) j["gpus"].push_back(to_json(g));
    for (const auto& c : cluster_presets()) {
      auto n = to_json(c.node);
      n["source"] = c.source;
      j["clusters"].push_back(n);
    }
    write_json(j);
    return 0;
  }
  // The counts the cost model uses (count_parameters), and the published ones where they differ by
  // more than 0.5% (the source's rounding, or what the model spec leaves out).
  std::cout << "models (parameters as paratune counts them; published in brackets where > 0.5% apart):\n";
  for (const auto& p : model_presets()) {
    const ParamCounts counted = count_parameters(p.spec);
    const auto differs = [](double a, double b) { return std::abs(a - b) > 0.005 * b; };
    const bool published_differs = differs(counted.total, p.published_total_params) ||
                                   differs(counted.active, p.published_active_params);
    std::cout << fmt::format("  {:<16} {:>8} total {:>8} active{}\n", p.spec.name, units::format_count(counted.total),
                             units::format_count(counted.active),
                             published_differs ? fmt::format("  [{} / {}]", units::format_count(p.published_total_params),
                                                             units::format_count(p.published_active_params))
                                               : "");
  }
  std::cout << "\ngpus:\n";
  for (const auto& g : gpu_presets())
    std::cout << fmt::format("  {:<12} {:>9}  bf16 {:>6.1f}  fp16 {:>6.1f}  fp8 {:>6.1f} TFLOP/s  HBM {}\n", g.name,
                             units::format_bytes(g.memory_bytes), g.peak_bf16_flops_per_s / 1e12,
                             g.peak_fp16_flops_per_s / 1e12, g.peak_fp8_flops_per_s / 1e12,
                             units::format_bandwidth(g.hbm_bandwidth_bytes_per_s));
  std::cout << "\nclusters (per node; use NAME:NODES):\n";
  for (const auto& c : cluster_presets())
    std::cout << fmt::format("  {:<22} {} x {:<10} intra {:>10}  inter {:>10}  ({})\n", c.node.name,
                             c.node.gpus_per_node, c.node.gpu.name,
                             units::format_bandwidth(c.node.intra_node_bandwidth_bytes_per_s),
                             units::format_bandwidth(c.node.inter_node_bandwidth_bytes_per_s), c.source);
  return 0;
}

// After a failed parse: the first command word that is no command, or flag the command has not,
// with what it may have meant ("" when neither: CLI11's own message is the better one).
std::string unknown_command_or_flag(const CLI::App& app, int argc, char** argv) {
  const auto subcommands_of = [](const CLI::App& parent) {
    return parent.get_subcommands([](const CLI::App*) { return true; });
  };
  const CLI::App* command = &app;
  std::string path;  // the command words so far: "plan", "study show"
  int i = 1;
  // The command words: `plan`, `study show`.
  for (; i < argc && argv[i][0] != '-'; ++i) {
    const std::vector<const CLI::App*> subs = subcommands_of(*command);
    if (subs.empty()) break;  // a positional argument of the command
    const CLI::App* sub = nullptr;
    std::vector<std::string> names;
    for (const CLI::App* candidate : subs) {
      names.push_back(candidate->get_name());
      if (candidate->get_name() == argv[i]) sub = candidate;
    }
    if (sub == nullptr)
      return fmt::format("{}{}", path.empty() ? "" : path + ": ", unknown_name_message("command", argv[i], names));
    command = sub;
    path += (path.empty() ? "" : " ") + command->get_name();
  }
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!arg.starts_with("--") || arg == "--") continue;
    const std::string flag(arg.substr(0, arg.find('=')));
    if (command->get_option_no_throw(flag) != nullptr || flag == "--help") continue;
    std::vector<std::string> flags;
    for (const CLI::Option* o : command->get_options())
      for (const std::string& long_name : o->get_lnames()) flags.push_back("--" + long_name);
    const std::string suggestion = closest_match(flag, flags);
    return fmt::format("{}unknown flag '{}'{}; `paratune{} --help` lists them", path.empty() ? "" : path + ": ", flag,
                       suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion),
                       path.empty() ? "" : " " + path);
  }
  return "";
}

}  // namespace

int run_main(int argc, char** argv) {
  CLI::App app{"paratune: plan, simulate and tune parallel training of large neural networks"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("paratune {} (commit {})", paratune::version(), paratune::build_commit()));

  bool json = false;
  auto* presets = app.add_subcommand("presets", "list model, GPU and cluster presets");
  presets->add_flag("--json", json, "machine-readable output");

  std::string model_arg;
  int model_seq_len = 4096;
  auto* model_cmd = app.add_subcommand("model", "parameters and FLOPs per token of a model");
  model_cmd->add_option("model", model_arg, "preset name or model file")->required();
  model_cmd->add_option("--seq-len", model_seq_len, "sequence length for attention FLOPs")
      ->capture_default_str()
      ->transform(whole_number(1, kIntMax));
  model_cmd->add_flag("--json", json, "machine-readable output");

  SetupFlags setup;
  std::string config_text;
  auto* estimate_cmd = app.add_subcommand("estimate", "predict time, MFU and memory of one configuration");
  add_setup_flags(estimate_cmd, setup);
  estimate_cmd->add_option("--config", config_text, "e.g. \"dp=8,tp=8,pp=4,mbs=1,zero=1,recompute=selective,vpp=2\"")
      ->required();
  estimate_cmd->add_flag("--json", json, "machine-readable output");

  SetupFlags sim_setup;
  SimulateFlags sim_flags;
  auto* simulate_cmd = app.add_subcommand("simulate", "replay one iteration's pipeline schedule event by event");
  add_setup_flags(simulate_cmd, sim_setup);
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
  simulate_cmd->add_flag("--json", json, "machine-readable output");

  SetupFlags plan_setup;
  PlanFlags plan_flags;
  auto* plan_cmd = app.add_subcommand("plan", "find the fastest parallel configuration that fits (searches every axis)");
  add_setup_flags(plan_cmd, plan_setup);
  plan_cmd->add_option("--fix", plan_flags.fix, "fix axes, e.g. tp=8 or tp=8,pp=4 (repeatable)");
  plan_cmd->add_option("--allow", plan_flags.allow, "allowed values, e.g. zero=0,1 or schedule=1f1b,zb-h1 (repeatable)");
  plan_cmd->add_option("--max", plan_flags.max, "upper bounds, e.g. pp=16 or mbs=4 (repeatable; mbs defaults to <= 16)");
  plan_cmd->add_option("--base", plan_flags.base,
                       "settings that are not searched, e.g. \"tp_comm_overlap=true,overlap_p2p=false\"");
  plan_cmd->add_option("--top", plan_flags.top, "plans to rank")->capture_default_str()->transform(whole_number(1, kIntMax));
  plan_cmd->add_option("--keep", plan_flags.keep, "level-1 survivors refined first (K)")
      ->capture_default_str()
      ->transform(whole_number(1, kIntMax));
  plan_cmd->add_option("--threads", plan_flags.threads, "worker threads (same result for every count)")
      ->capture_default_str()
      ->transform(whole_number(1, plan::kMaxPlanThreads));
  plan_cmd->add_option("--html", plan_flags.html_path,
                       "write a self-contained HTML report: ranked plans, time breakdown, memory per stage, the "
                       "winner's timeline, the launch (opens offline)");
  plan_cmd->add_option("--framework", plan_flags.framework,
                       "rank only plans a framework runs as planned: any (one of the three) | megatron | torchtitan | "
                       "deepspeed (optionally @VERSION) | none (the whole space, plans no framework runs labelled so)")
      ->capture_default_str();
  plan_cmd->add_option("--emit", plan_flags.emit,
                       "search only what this framework can run and write its launch settings for the winner: "
                       "megatron | torchtitan | deepspeed, optionally @VERSION (megatron@core_v0.19.0; default: the "
                       "newest paratune has a schema of)");
  plan_cmd->add_flag("--no-baselines", plan_flags.no_baselines, "skip the expert and 3-axis baselines");
  plan_cmd->add_flag("--json", json, "machine-readable output");

  SetupFlags tune_setup;
  TuneFlags tune_flags;
  HarvestFlags harvest_flags;
  auto* harvest_cmd = app.add_subcommand(
      "harvest", "run a pipeline job of paratune-train with tuning trials paused in its compute and resumed in its "
                 "bubbles (Hydro's Coordinator); measure both");
  harvest_cmd->add_option("--job", harvest_flags.job, "the pipeline job, e.g. 'paratune-train --ranks 2 --strategy gpipe ...'")
      ->required();
  harvest_cmd->add_option("--ranks", harvest_flags.ranks, "the job's ranks (one trial slot beside each)")
      ->capture_default_str()
      ->transform(whole_number(1, kMaxHostSlots));
  harvest_cmd->add_option("--trial", harvest_flags.trial, "a tuning trial's command (paratune-train ...)")->required();
  harvest_cmd->add_option("--trial-params", harvest_flags.trial_params,
                          "a file of the trials' PARATUNE_PARAMS, one JSON per line (an array: a fused group), taken in "
                          "turn")
      ->required();
  harvest_cmd->add_option("--out", harvest_flags.out, "where the logs, bubbles and trials go")->capture_default_str();
  harvest_cmd->add_flag("--baseline", harvest_flags.baseline, "run the job alone first, to measure the slowdown");
  harvest_cmd->add_option("--svg", harvest_flags.svg, "write both runs on one timeline (SVG)");
  harvest_cmd->add_option("--timeline-first-step", harvest_flags.timeline_first_step, "the timeline's first job step")
      ->capture_default_str()
      ->transform(whole_number(0, kInt64Max));
  harvest_cmd->add_option("--timeline-steps", harvest_flags.timeline_steps, "job steps the timeline shows")
      ->capture_default_str()
      ->transform(whole_number(1, kInt64Max));
  harvest_cmd->add_option("--timeout", harvest_flags.timeout, "stop the job after this long (e.g. 10m)");
  harvest_cmd->add_flag("--json", json, "machine-readable output");

  auto* tune_cmd = app.add_subcommand("tune", "run real training trials over a search space and find the fastest configuration");
  tune_cmd->add_option("--space", tune_flags.space_path, "search-space file (YAML/JSON: parameters, constraints)");
  add_setup_flags(tune_cmd, tune_setup, false);
  tune_cmd->add_option("--fix", tune_flags.fix, "with --model: fix axes of the derived space, e.g. tp=8");
  tune_cmd->add_option("--allow", tune_flags.allow, "with --model: allowed values, e.g. zero=0,1");
  tune_cmd->add_option("--max", tune_flags.max, "with --model: upper bounds, e.g. pp=4");
  tune_cmd->add_option("--command", tune_flags.command,
                       "trial command template, e.g. 'torchrun --nproc-per-node {gpus} train.py --tp {tp}'; "
                       "placeholders: the parameters, {gpus} {config} {steps} {trial_id} {trial_dir} (hyperparameter studies: "
                       "{ranks} {strategy}, and no {gpus})")
      ->required();
  tune_cmd->add_option("--study", tune_flags.study_path,
                       "study store (created, or resumed): an SQLite file, or postgresql://[user[:password]@]host[:port]/db")->required();
  tune_cmd->add_option("--study-name", tune_flags.study_name, "study within the file")->capture_default_str();
  tune_cmd->add_option("--trials-dir", tune_flags.trials_dir, "where trial directories go (default: STUDY.trials)");
  tune_cmd->add_option("--algo", tune_flags.algo,
                       "grid | random | tpe | gp (hyperparameters) | bo | xgboost | costmodel | oppa (parallel "
                       "configurations)")
      ->capture_default_str();
  tune_cmd->add_option("--objective", tune_flags.objective,
                       "a metric the trials report (e.g. val_loss, val_accuracy), or throughput")
      ->capture_default_str();
  tune_cmd->add_option("--direction", tune_flags.direction, "minimize | maximize (required with a metric objective)");
  tune_cmd->add_option("--pruner", tune_flags.pruner, "none | median | percentile | asha | hyperband | oppa")
      ->capture_default_str();
  tune_cmd->add_option("--eta", tune_flags.eta, "asha/hyperband: reduction factor between rungs")
      ->capture_default_str()
      ->transform(real_number(1, kInf, Ends::kOpenLow, "each rung keeps the best 1/eta"));
  tune_cmd->add_option("--min-resource", tune_flags.min_resource,
                       "asha/hyperband: steps of the first rung (0: --steps / eta^3)")
      ->capture_default_str()
      ->transform(whole_number(0, kInt64Max));
  tune_cmd->add_option("--pruner-startup", tune_flags.pruner_startup,
                       "median/percentile: completed trials before any is stopped")
      ->capture_default_str()
      ->transform(whole_number(0, kIntMax));
  tune_cmd->add_option("--pruner-warmup", tune_flags.pruner_warmup, "median/percentile: no stop before this step")
      ->capture_default_str()
      ->transform(whole_number(0, kInt64Max));
  tune_cmd->add_option("--percentile", tune_flags.percentile, "percentile pruner: keep trials within the best P %")
      ->capture_default_str()
      ->transform(real_number(0, 100, Ends::kOpen));
  tune_cmd->add_flag("--retrain", tune_flags.retrain,
                     "hyperparameter studies: train the best configuration again for --retrain-steps and report "
                     "its final metrics (e.g. test_accuracy)");
  tune_cmd->add_option("--retrain-steps", tune_flags.retrain_steps, "steps of the retrain (default: --steps)")
      ->transform(whole_number(1, kIntMax));
  tune_cmd->add_option("--surrogate-ratio", tune_flags.surrogate_ratio,
                       "hyperparameter studies of paratune-train: trials train the model with every width / S under "
                       "muP (Hydro's surrogates); the best is transferred to, and --retrain trains, the target")
      ->capture_default_str()
      ->transform(real_number(1, kInf, Ends::kClosed, "the surrogate is that many times narrower"));
  tune_cmd->add_option("--fuse", tune_flags.fuse,
                       "hyperparameter studies of paratune-train: up to B trials that differ only in optimizer "
                       "options train as one fused model in one process (HFTA/Hydro); auto: B from a probe of "
                       "B = 1, 2, 4, ... fused");
  tune_cmd->add_option("--seed", tune_flags.seed, "seed of random orders and designs")
      ->capture_default_str()
      ->transform(cli::seed_number());
  tune_cmd->add_option("--min-steps", tune_flags.min_steps, "oppa (--algo or --pruner): steps before a trial may be stopped early (q_min)")
      ->capture_default_str()
      ->transform(whole_number(1, kIntMax));
  auto* initial_option = tune_cmd->add_option("--initial", tune_flags.initial,
                                              "model-based searches: designs before the model picks (tpe: 10 and gp: "
                                              "max(5, 2 x parameters) unless given)")
                             ->capture_default_str()
                             ->transform(whole_number(0, kIntMax));
  // A flag function, not add_flag(optional<bool>&): CLI11 2.1 treats a type constructible from an
  // integer as a flag count and sets it to 0 (false) before parsing, which made the default "off".
  tune_cmd->add_flag_function(
      "--seed-from-plan,!--no-seed-from-plan", [&](std::int64_t n) { tune_flags.seed_from_plan = n > 0; },
      "oppa/costmodel: first designs from the cost model's best predictions (default: on with --model)");
  tune_cmd->add_option("--budget", tune_flags.budget, "wall time of this run, e.g. 30m (running trials are stopped)");
  tune_cmd->add_option("--max-trials", tune_flags.max_trials, "trials in the study in all, reused ones included")
      ->transform(whole_number(0, kIntMax, "0: no limit"));
  tune_cmd->add_flag("--worker", tune_flags.worker,
                     "one of several workers (any hosts) running the study together through the store: claims "
                     "trials without duplicates, sends heartbeats, re-runs the trials of workers that died (README: "
                     "Many workers, one study)");
  tune_cmd->add_option("--worker-name", tune_flags.worker_name,
                       "--worker: this worker's name in the store, unique (default: HOSTNAME:PID)");
  tune_cmd->add_option("--heartbeat", tune_flags.heartbeat,
                       "--worker: how often the worker's running trials are marked alive")
      ->capture_default_str();
  tune_cmd->add_option("--heartbeat-timeout", tune_flags.heartbeat_timeout,
                       "--worker: a running trial with no heartbeat for this long is marked interrupted and runs again")
      ->capture_default_str();
  tune_cmd->add_option("--store-retry", tune_flags.store_retry,
                       "while the study store is unavailable (a database server restarting, a full disk), retry "
                       "for this long, then exit 4 (0: exit at once)")
      ->capture_default_str();
  tune_cmd->add_flag("--retry-failed", tune_flags.retry_failed,
                     "on resume, run the configurations of failed trials again (off: a failed trial stays failed)");
  tune_cmd->add_option("--steps", tune_flags.steps,
                       "training steps per trial (PARATUNE_MAX_STEPS); a throughput study needs >= 2 (its first "
                       "step is warm-up)")
      ->capture_default_str()
      ->transform(whole_number(1, kIntMax));
  tune_cmd->add_option("--memory-limit", tune_flags.memory_limit, "a measured peak above it is infeasible, e.g. 80GiB");
  tune_cmd->add_option("--parallel", tune_flags.parallel, "--backend local: trials at once")
      ->capture_default_str()
      ->transform(whole_number(1, kMaxHostSlots));
  tune_cmd->add_option("--slots", tune_flags.slots,
                       "--backend local: slots of this host trials are packed onto (cores or GPUs; the newer name of --parallel)")
      ->transform(whole_number(1, kMaxHostSlots));
  tune_cmd->add_option("--trial-ranks", tune_flags.trial_ranks,
                       "hyperparameter studies: slots each trial takes, {ranks} (a space parameter 'ranks' overrides)")
      ->capture_default_str()
      ->transform(whole_number(1, kMaxHostSlots));
  tune_cmd->add_option("--strategy", tune_flags.strategy,
                       "hyperparameter studies: how each trial trains across its ranks, {strategy}: none | dp | mp | "
                       "gpipe | dp+gpipe | auto (paratune-train trials: the fastest by paratune's cost model, per "
                       "trial)");
  tune_cmd->add_option("--slot-devices", tune_flags.slot_devices,
                       "--backend local: CUDA_VISIBLE_DEVICES per slot, e.g. \"0,1;2,3\" (one entry per slot)");
  tune_cmd->add_option("--slot-cpus", tune_flags.slot_cpus,
                       "--backend local: CPUs per slot, e.g. \"0;1\" or \"0-3;4-7\": a trial runs on its slots' CPUs only");
  tune_cmd->add_option("--backend", tune_flags.backend,
                       "where trials run: local (this host; --slots, --slot-devices, --slot-cpus), ssh (the hosts "
                       "of --hosts, one ssh connection per trial) or slurm (one sbatch job per trial; --slots trials "
                       "in flight, --slurm-* options)")
      ->capture_default_str()
      ->check(CLI::IsMember({"local", "ssh", "slurm"}));
  tune_cmd->add_option("--hosts", tune_flags.hosts,
                       "--backend ssh: hosts file, one host per line as ssh takes it (host, user@host, a ~/.ssh/config "
                       "alias), optionally slots=N and slot-devices=\"0,1;2,3\"; '#' comments");
  tune_cmd->add_option("--ssh-option", tune_flags.ssh_options,
                       "--backend ssh: an ssh option NAME=VALUE, passed as -o (repeatable); BatchMode=yes is always "
                       "set");
  tune_cmd->add_option("--ssh-config", tune_flags.ssh_config,
                       "--backend ssh: ssh configuration file, passed as -F (default: ssh's own, ~/.ssh/config)");
  tune_cmd->add_option("--slurm-partition", tune_flags.slurm_partition, "--backend slurm: sbatch --partition");
  tune_cmd->add_option("--slurm-account", tune_flags.slurm_account, "--backend slurm: sbatch --account");
  tune_cmd->add_option("--slurm-qos", tune_flags.slurm_qos, "--backend slurm: sbatch --qos");
  tune_cmd->add_option("--slurm-constraint", tune_flags.slurm_constraint, "--backend slurm: sbatch --constraint");
  tune_cmd->add_option("--slurm-time", tune_flags.slurm_time,
                       "--backend slurm: each job's time limit (sbatch --time), e.g. 2h; Slurm ending a job for it "
                       "makes the trial a timeout");
  tune_cmd->add_option("--slurm-cpus-per-slot", tune_flags.slurm_cpus_per_slot,
                       "--backend slurm: CPUs per trial slot (sbatch --cpus-per-task = slots x this)")
      ->capture_default_str();
  tune_cmd->add_option("--slurm-gpus-per-slot", tune_flags.slurm_gpus_per_slot,
                       "--backend slurm: GPUs per trial slot (sbatch --gpus = slots x this; 0: none asked for)")
      ->capture_default_str();
  tune_cmd->add_option("--slurm-mem-per-slot", tune_flags.slurm_mem_per_slot,
                       "--backend slurm: memory per trial slot (sbatch --mem), e.g. 64GiB; Slurm's OUT_OF_MEMORY makes "
                       "the trial oom");
  tune_cmd->add_option("--slurm-poll", tune_flags.slurm_poll,
                       "--backend slurm: how often each running trial's job state is asked (scontrol)")
      ->capture_default_str();
  tune_cmd->add_option("--sbatch-option", tune_flags.sbatch_options,
                       "--backend slurm: another sbatch option, as sbatch takes it (repeatable), e.g. --exclusive");
  tune_cmd->add_option("--timeout", tune_flags.timeout, "wall-clock limit per trial, e.g. 10m");
  tune_cmd->add_option("--hang", tune_flags.hang, "stop a trial with no new step for this long, e.g. 2m");
  tune_cmd->add_option("--grace", tune_flags.grace, "SIGTERM to SIGKILL delay when stopping a trial")
      ->capture_default_str();
  tune_cmd->add_option("--step-time-regex", tune_flags.step_time_regex,
                       "regex for step times in other log formats: group 1 seconds, optional group 2 step");
  tune_cmd->add_flag("--json", json, "machine-readable result on stdout (progress stays on stderr)");

  std::string show_path, show_name;
  auto* study_cmd = app.add_subcommand("study", "inspect stored tuning studies");
  study_cmd->require_subcommand(1);
  auto* show_cmd = study_cmd->add_subcommand("show", "list a study's trials and the best one");
  show_cmd->add_option("study", show_path, "study store: SQLite file or postgresql:// URI")->required();
  show_cmd->add_option("--study-name", show_name, "study within the file (needed when it holds several)");
  show_cmd->add_flag("--json", json, "machine-readable output");
  std::string copy_from, copy_to, copy_name;
  auto* copy_cmd = study_cmd->add_subcommand(
      "copy", "copy studies with every trial, step and metric between stores (SQLite files, postgresql:// URIs)");
  copy_cmd->add_option("from", copy_from, "study store to copy from")->required();
  copy_cmd->add_option("to", copy_to, "study store to copy into (created if needed; a study of the same name there "
                                      "is never overwritten)")->required();
  copy_cmd->add_option("--study", copy_name, "copy this study only (default: every study)");
  copy_cmd->add_flag("--json", json, "machine-readable summary");

  std::string report_path, report_name, report_html;
  auto* report_cmd = app.add_subcommand("report", "write a study as one self-contained HTML report (opens offline)");
  report_cmd->add_option("study", report_path, "study store: SQLite file or postgresql:// URI")->required();
  report_cmd->add_option("--study-name", report_name, "study within the store (needed when it holds several)");
  report_cmd->add_option("--html", report_html, "the HTML file to write")->required();

  dashboard::DashboardOptions dashboard_options;
  std::string dashboard_poll = "2s";
  auto* dashboard_cmd = app.add_subcommand(
      "dashboard", "serve a study's report live over HTTP while `paratune tune` runs (reads the store only)");
  dashboard_cmd->add_option("study", dashboard_options.locator, "study store: SQLite file or postgresql:// URI (it may "
                                                                "not exist yet: the page waits for it)")->required();
  dashboard_cmd->add_option("--study-name", dashboard_options.study_name, "study within the store (needed when it holds several)");
  dashboard_cmd->add_option("--host", dashboard_options.host, "address to listen on (default 127.0.0.1: this machine "
                                                              "only; another address warns: there is no login)")
      ->capture_default_str();
  dashboard_cmd->add_option("--port", dashboard_options.port, "port (0: any free one, printed)")->capture_default_str();
  dashboard_cmd->add_option("--poll", dashboard_poll, "how often the page reads the study")->capture_default_str();

  std::string runs_path, calibration_in, calibration_out;
  auto* validate_cmd = app.add_subcommand("validate", "compare predictions with published training runs");
  std::string memory_runs_path;
  auto* validate_runs_opt = validate_cmd->add_option("--runs", runs_path, "CSV with the columns of published_runs.csv");
  auto* validate_memory_opt = validate_cmd->add_option(
      "--memory-runs", memory_runs_path,
      "CSV with the columns of memory_runs.csv: predicted peak memory against measured runs");
  validate_cmd->callback([validate_runs_opt, validate_memory_opt] {
    if (validate_runs_opt->count() == 0 && validate_memory_opt->count() == 0)
      throw CLI::ValidationError("validate", "needs --runs FILE, --memory-runs FILE or both");
  });
  validate_cmd->add_option("--calibration", calibration_in, "calibration JSON (default: shipped)");
  validate_cmd->add_flag("--json", json, "machine-readable output");

  auto* calibrate_cmd = app.add_subcommand("calibrate", "fit the calibration coefficients to published runs");
  calibrate_cmd->add_option("--runs", runs_path, "CSV with the columns of published_runs.csv")->required();
  calibrate_cmd->add_option("--output,-o", calibration_out, "where to write the fitted calibration JSON")->required();
  calibrate_cmd->add_option("--calibration", calibration_in, "starting point (default: shipped)");
  bool loso = false;
  FitOptions fit_options;
  calibrate_cmd->add_flag("--loso", loso,
                          "leave-one-source-out: fit without each source and predict it (per-source table; the "
                          "fitted coefficients start from their priors; -o gets the fit on all rows)");
  std::string intervals_out;
  calibrate_cmd
      ->add_option("--intervals", intervals_out,
                   "with --loso: write the prediction intervals of each class of rows (held-out errors' 5th and 95th "
                   "percentiles; data/prediction-intervals.json)")
      ->needs("--loso");
  calibrate_cmd->add_option("--max-evaluations", fit_options.max_evaluations, "objective evaluations per fit")
      ->transform(whole_number(1, kIntMax));
  calibrate_cmd->add_option("--threads", fit_options.threads, "rows estimated in parallel (0 = hardware threads)")
      ->transform(whole_number(0, plan::kMaxPlanThreads, "0: hardware threads"));
  calibrate_cmd->add_flag("--json", json, "machine-readable output (the fit's or the leave-one-source-out report)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // An unknown command or flag is named with a suggestion; CLI11 says the rest.
    if (const std::string problem = unknown_command_or_flag(app, argc, argv); !problem.empty()) {
      std::cerr << "paratune: error: " << problem << "\n";
      return 2;
    }
    return app.exit(e) == 0 ? 0 : 2;
  }
  for (const CLI::Option* option : tune_cmd->get_options())
    if (option->count() > 0) tune_flags.given.insert(option->get_name());
  (void)initial_option;

  try {
    if (*presets) return run_presets(json);
    if (*model_cmd) {
      const ModelSpec model = load_model(model_arg);
      if (json) write_json(model_summary_json(model, model_seq_len));
      else std::cout << format_model_summary(model, model_seq_len);
      return 0;
    }
    if (*estimate_cmd) {
      const ModelSpec model = load_model(setup.model);
      const ClusterSpec cluster = load_cluster(setup.cluster);
      const TrainingSpec training = training_from(setup);
      check_training_fits_model(model, training);
      const ParallelConfig config = config_from(config_text);
      const Calibration calibration = calibration_from(setup);
      Estimate result;
      try {
        result = estimate(model, cluster, training, config, calibration, EstimateOptions{setup.memory_margin});
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
    if (*simulate_cmd) return run_simulate(sim_setup, sim_flags, json);
    if (*plan_cmd) return run_plan(plan_setup, plan_flags, json);
    if (*tune_cmd) return run_tune(tune_setup, tune_flags, json);
    if (*harvest_cmd) return run_harvest_command(harvest_flags, json);
    if (*show_cmd) return run_study_show(show_path, show_name, json);
    if (*copy_cmd) return run_study_copy(copy_from, copy_to, copy_name, json);
    if (*report_cmd) return run_report(report_path, report_name, report_html);
    if (*dashboard_cmd) return run_dashboard(dashboard_options, dashboard_poll);
    const Calibration start = calibration_in.empty() ? default_calibration() : load_calibration(calibration_in);
    if (*validate_cmd) {
      // Both files read before anything is printed: a bad input fails before any output.
      const auto runs = runs_path.empty() ? std::vector<PublishedRun>{} : read_published_runs(runs_path);
      const auto memory_runs = memory_runs_path.empty() ? std::vector<MemoryRun>{} : read_memory_runs(memory_runs_path);
      std::optional<ValidationReport> report;
      std::optional<MemoryValidationReport> memory_report;
      if (!runs_path.empty()) report = validate_runs(runs, start);
      if (!memory_runs_path.empty()) memory_report = validate_memory_runs(memory_runs, start);
      if (json) {
        // One file: the time report as before; with both, {"time": ..., "memory": ...}.
        if (report && memory_report) write_json({{"time", to_json(*report)}, {"memory", to_json(*memory_report)}});
        else if (report) write_json(to_json(*report));
        else write_json(to_json(*memory_report));
      } else {
        if (memory_report) std::cout << "memory against measured runs (" << memory_runs_path << "):\n"
                                     << format_memory_validation(*memory_report) << (report ? "\n" : "");
        if (report) std::cout << format_validation(*report);
      }
      // No estimated row is no validation: a mean error of 0% over nothing must not pass a script's check.
      if (report && report->rows.empty())
        throw Error(fmt::format("--runs {}: no row could be estimated ({} rows, {} skipped{})", runs_path, runs.size(),
                                report->skipped.size(), report->skipped.empty() ? "" : ": the reasons are listed above"));
      if (memory_report && memory_report->rows.empty())
        throw Error(fmt::format("--memory-runs {}: no row could be predicted ({} rows, {} skipped)", memory_runs_path,
                                memory_runs.size(), memory_report->skipped.size()));
      return 0;
    }
    if (*calibrate_cmd) {
      const auto runs = read_published_runs(runs_path);
      // A fit takes about a minute (LOSO: one per source): say where it is, on a terminal only.
      cli::ProgressLine progress;
      if (progress.enabled())
        fit_options.on_progress = [&progress](const FitProgress& p) {
          progress.show(fmt::format("calibrate: {}: evaluation {} of at most {}, best objective {:.2f}%", p.stage,
                                    p.evaluation, p.max_evaluations, p.best_objective));
        };
      auto write_calibration = [&](const Calibration& c) {
        std::ofstream out(calibration_out);
        if (!out) throw Error(fmt::format("{}: cannot write file", calibration_out));
        out << to_json(c).dump(2) << "\n";
      };
      if (loso) {
        const LosoReport report = leave_one_source_out(runs, start, fit_options);
        progress.clear();
        write_calibration(report.full.calibration);
        if (!intervals_out.empty()) {
          std::ofstream out(intervals_out);
          if (!out) throw Error(fmt::format("--intervals {}: cannot write file", intervals_out));
          out << to_json(interval_table(report.held_out)).dump(2) << "\n";
        }
        if (json) write_json(to_json(report));
        else
          std::cout << format_loso(report) << format_bounds(report.full.at_bounds) << "wrote " << calibration_out
                    << " (the fit on all rows)\n";
        return 0;
      }
      const CalibrationFit fit = fit_calibration(runs, start, fit_options);
      progress.clear();
      write_calibration(fit.calibration);
      if (json) {
        write_json({{"calibration", to_json(fit.calibration)},
                    {"parameters", fit.parameters},
                    {"rows_used", fit.rows_used},
                    {"evaluations", fit.evaluations},
                    {"seconds", fit.seconds},
                    {"at_bounds", to_json(fit.at_bounds)},
                    {"before", to_json(fit.before)},
                    {"after", to_json(fit.after)}});
        return 0;
      }
      std::cout << fmt::format("fitted {} coefficients on {} rows in {} evaluations ({:.1f} s)\n", fit.parameters_fitted,
                               fit.rows_used, fit.evaluations, fit.seconds);
      std::cout << fmt::format("mean |error| {:.2f}% -> {:.2f}%, max {:.2f}% -> {:.2f}%\n", fit.before.mean_abs_pct_error,
                               fit.after.mean_abs_pct_error, fit.before.max_abs_pct_error, fit.after.max_abs_pct_error);
      std::cout << format_source_summary(fit.after);
      std::cout << format_bounds(fit.at_bounds);
      std::cout << "wrote " << calibration_out << "\n";
      return 0;
    }
  } catch (const OptionError& e) {
    // The library names its options' fields; the user typed flags (option_flags.h).
    const CLI::App* command = app.get_subcommands().empty() ? &app : app.get_subcommands().front();
    const auto option = [&](std::string_view flag) { return command->get_option_no_throw(std::string(flag)); };
    std::cerr << "paratune: error: "
              << e.render([&](std::string_view field) {
                   return cli::flag_for(
                       command->get_name(), field, [&](std::string_view flag) { return option(flag) != nullptr; },
                       [&](std::string_view flag) { return option(flag) != nullptr && option(flag)->count() > 0; });
                 })
              << "\n";
    return 2;
  } catch (const store::StoreUnavailable& e) {
    std::cerr << "paratune: error: store unavailable: " << e.what() << "\n";
    return store::kStoreUnavailableExitCode;
  } catch (const Error& e) {
    std::cerr << "paratune: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "paratune: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// What a command printed must reach its reader: a full disk or a closed file behind the standard
// output (`paratune plan --json > /dev/full`) is an error, not a lost result with exit 0.
int main(int argc, char** argv) {
  const int status = run_main(argc, argv);
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "paratune: cannot write the standard output (%s): what it printed is lost or incomplete\n",
                 std::strerror(errno));
    return status == 0 ? 1 : status;
  }
  return status;
}
