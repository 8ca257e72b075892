// `paratune plan`: search every axis for the fastest parallel configuration that fits.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "flag_checks.h"
#include "how_sure.h"
#include "output.h"
#include "paratune/calib/published_mfu.h"
#include "paratune/cost/estimate.h"
#include "paratune/plan/planner.h"
#include "paratune/plan/space.h"
#include "paratune/launch/launch.h"
#include "paratune/launch/schema_check.h"
#include "paratune/report/html_page.h"
#include "paratune/report/plan_report.h"
#include "paratune/spec/error.h"
#include "paratune/spec/io.h"
#include "plan_progress.h"
#include "setup_flags.h"

namespace paratune::cli {
namespace {

using launch::Framework;  // `plan --emit` / `--framework` (src/launch)
using launch::FrameworkTarget;
using launch::launch_settings;
using launch::LaunchSettings;
using launch::LaunchTarget;
using launch::parse_framework_target;
using launch::parse_searched_frameworks;

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
  const std::optional<HardwareProfile> profile = profile_from(setup, model, cluster, training);
  options.estimate = estimate_options(setup, profile);
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

}  // namespace

void add_plan_command(CLI::App& app, Commands& commands) {
  const auto flags = std::make_shared<SetupCommandFlags<PlanFlags>>();
  PlanFlags& plan_flags = flags->own;
  auto* plan_cmd = app.add_subcommand("plan", "find the fastest parallel configuration that fits (searches every axis)");
  add_setup_flags(plan_cmd, flags->setup);
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
  plan_cmd->add_flag("--json", flags->json, "machine-readable output");
  commands.push_back({plan_cmd, [flags] { return run_plan(flags->setup, flags->own, flags->json); }});
}

}  // namespace paratune::cli
