// Published configurations against the planner. For each row of
// data/published-runs/published_runs.csv that paratune can read (model, cluster and metric known),
// the planner searches the same model, cluster, sequence length, global batch and precision, within
// the framework the published run used, and this program prints the planner's winner next to the
// published configuration: both predicted iteration times, the predicted gain t_published /
// t_winner, and the axes whose values differ.
//
// Every time and every gain printed here is a prediction of paratune's cost model (the default
// shipped calibration) for both configurations; nothing is a measurement. A gain above 1 says the
// cost model ranks the winner faster, not that the published run could have been faster.
//
//   bench_published_vs_plan [--runs CSV] [--json FILE] [--only-source S25] [--max-gpus N]
//                           [--threads N] [--progress]
//
// The published configuration is the one `paratune validate` estimates for the row (stated axes,
// with unstated ones searched or set to the framework's default, see calib/published_runs.h). It
// is re-estimated here with the planner's EstimateOptions so that both sides are judged against the
// same memory margin (validation uses the whole GPU memory, the planner keeps a margin free).
// Rows whose planner inputs are identical share one planner run; each row is still reported.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "paratune/calib/published_runs.h"
#include "paratune/launch/framework_support.h"
#include "paratune/plan/planner.h"
#include "paratune/report/plan_report.h"
#include "paratune/spec/io.h"

namespace {

using namespace paratune;

struct Args {
  std::string runs_path = PARATUNE_SOURCE_DIR "/data/published-runs/published_runs.csv";
  std::string json_path;
  std::string only_source;
  int max_gpus = 0;  // 0 = no limit
  int threads = 1;   // planner threads; the result does not depend on it
  bool progress = false;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--runs") && has_value) a.runs_path = argv[++i];
    else if (!std::strcmp(argv[i], "--json") && has_value) a.json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--only-source") && has_value) a.only_source = argv[++i];
    else if (!std::strcmp(argv[i], "--max-gpus") && has_value) a.max_gpus = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--threads") && has_value) a.threads = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--progress")) a.progress = true;
    else {
      std::cerr << "usage: bench_published_vs_plan [--runs CSV] [--json FILE] [--only-source ID] [--max-gpus N] "
                   "[--threads N] [--progress]\n";
      std::exit(2);
    }
  }
  return a;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
bool contains(const std::string& text, const char* word) { return text.find(word) != std::string::npos; }

// The framework the published run used, from the CSV's free-text `framework` column, so that the
// planner only proposes what that framework can run. Others (Composer / llm-foundry FSDP) search
// everything.
std::optional<launch::Framework> framework_of(const PublishedRun& run) {
  const std::string f = lower(run.get("framework"));
  if (contains(f, "megatron") || contains(f, "nemo")) return launch::Framework::kMegatron;
  if (contains(f, "torchtitan") || contains(f, "torchao")) return launch::Framework::kTorchtitan;
  if (contains(f, "deepspeed")) return launch::Framework::kDeepSpeed;
  return std::nullopt;
}

std::string framework_name(const std::optional<launch::Framework>& f) { return f ? to_string(*f) : "any"; }

// The flags the planner does not search (TP/DP/P2P overlap) are taken from the published
// configuration so that the comparison is about the searched axes only; the planner refuses a base
// that sets a searched axis (it would overwrite it).
ParallelConfig planner_base(const ParallelConfig& published) {
  ParallelConfig base;
  base.overlap_grad_reduce = published.overlap_grad_reduce;
  base.overlap_param_gather = published.overlap_param_gather;
  base.tp_comm_overlap = published.tp_comm_overlap;
  base.overlap_p2p = published.overlap_p2p;
  return base;
}

// Everything the planner's answer depends on; rows with equal keys share one planner run.
std::string planner_key(const RunSetup& s, const std::optional<launch::Framework>& framework,
                        const ParallelConfig& base) {
  return to_json(s.model).dump() + to_json(s.cluster).dump() + to_json(s.training).dump() +
         framework_name(framework) +
         fmt::format("|tpo={} ogr={} opg={} p2p={} gs={}", base.tp_comm_overlap, base.overlap_grad_reduce,
                     base.overlap_param_gather, base.overlap_p2p, to_string(base.grad_sync));
}

// --- What differs ----------------------------------------------------------------------------------

// Recompute as one value: none, selective, full (every layer) or full with the per-stage counts.
std::string recompute_text(const ParallelConfig& resolved) {
  if (resolved.recompute != RecomputeMode::kFull) return to_string(resolved.recompute);
  const std::vector<int> counts = recomputed_layers_per_stage(resolved);
  if (counts == resolved.stage_layers) return "full";
  return fmt::format("full[{}]", fmt::join(counts, "/"));
}

// compact_config, with a partial full recompute (recompute_layers = n of each stage's layers) shown
// as its per-stage counts: compact_config prints "rc=full" for it, the same as every layer.
std::string compact(ParallelConfig resolved) {
  if (resolved.recompute == RecomputeMode::kFull && resolved.stage_recompute_layers.empty()) {
    const std::vector<int> counts = recomputed_layers_per_stage(resolved);
    if (counts != resolved.stage_layers) resolved.stage_recompute_layers = counts;
  }
  return compact_config(resolved);
}

std::string on_off(bool v) { return v ? "on" : "off"; }

// "tp 8→4, pp 8→16, recompute none→selective": every axis whose value differs, in the published →
// winner direction. Both configurations are resolved (stage layers, op, schedule filled in).
std::string what_differs(const ParallelConfig& pub, const ParallelConfig& win, bool moe) {
  std::vector<std::string> out;
  auto axis = [&](const char* name, const std::string& a, const std::string& b) {
    if (a != b) out.push_back(fmt::format("{} {}→{}", name, a, b));
  };
  auto number = [&](const char* name, int a, int b) { axis(name, std::to_string(a), std::to_string(b)); };
  number("dp", pub.dp, win.dp);
  number("tp", pub.tp, win.tp);
  number("pp", pub.pp, win.pp);
  number("vpp", pub.vpp, win.vpp);
  number("cp", pub.cp, win.cp);
  number("ep", pub.ep, win.ep);
  if (moe) number("etp", pub.expert_tp(), win.expert_tp());  // a dense model has no expert layers
  number("mbs", pub.mbs, win.mbs);
  axis("recompute", recompute_text(pub), recompute_text(win));
  axis("sp", on_off(pub.sequence_parallel), on_off(win.sequence_parallel));
  number("zero", pub.zero, win.zero);
  // The optimizer-sharding degree is its own axis only under hybrid sharding (op < dp); otherwise
  // it follows dp and zero, already listed.
  auto hybrid = [](const ParallelConfig& c) { return c.zero > 0 && c.optimizer_shard_degree() != c.dp; };
  if (hybrid(pub) || hybrid(win)) number("op", pub.optimizer_shard_degree(), win.optimizer_shard_degree());
  axis("schedule", to_string(pub.schedule), to_string(win.schedule));
  axis("grad_sync", to_string(pub.grad_sync), to_string(win.grad_sync));
  axis("ep_overlap", on_off(pub.ep_overlap), on_off(win.ep_overlap));
  axis("dispatcher", to_string(pub.dispatcher), to_string(win.dispatcher));
  axis("offload", offload_modules_text(pub.offload_modules), offload_modules_text(win.offload_modules));
  axis("account_embedding", on_off(pub.account_embedding), on_off(win.account_embedding));
  axis("account_loss", on_off(pub.account_loss), on_off(win.account_loss));
  // Stage layouts are only comparable with the same number of stages; otherwise the pp change says it.
  if (pub.pp == win.pp && pub.pp > 1 && pub.stage_layers != win.stage_layers)
    axis("layers", fmt::format("{}", fmt::join(pub.stage_layers, "/")), fmt::format("{}", fmt::join(win.stage_layers, "/")));
  // Not searched (taken from the published configuration), listed in case the planner changed them.
  axis("tp_comm_overlap", on_off(pub.tp_comm_overlap), on_off(win.tp_comm_overlap));
  axis("overlap_grad_reduce", on_off(pub.overlap_grad_reduce), on_off(win.overlap_grad_reduce));
  axis("overlap_param_gather", on_off(pub.overlap_param_gather), on_off(win.overlap_param_gather));
  axis("overlap_p2p", on_off(pub.overlap_p2p), on_off(win.overlap_p2p));
  if (out.empty()) return "same configuration";
  return fmt::format("{}", fmt::join(out, ", "));
}

// --- Results ---------------------------------------------------------------------------------------

// One planner run, shared by every row with the same planner inputs.
struct Scenario {
  int index = 0;  // 1-based, in order of first appearance
  std::vector<std::string> row_ids;
  std::optional<launch::Framework> framework;
  std::optional<Estimate> winner;  // none: nothing fits, or the planner failed (see `note`)
  std::string note;
  plan::SearchStats stats;
};

struct RowOutcome {
  std::string row_id, source_id, model, gpus, seq, batch, precision;
  int scenario = 0;  // index into the scenario list (1-based); 0 when the row was not compared
  std::string published_config;
  double published_time_s = 0;
  bool published_fits = true;  // under the planner's memory margin
  std::string published_note;  // why it does not fit, or that validation already found it does not
  std::string winner_config;
  double winner_time_s = 0;
  double gain = 0;  // 0: no gain (no winner)
  std::string differs;
};

struct Skipped {
  std::string row_id, source_id, reason;
};

std::string precision_text(const TrainingSpec& t) {
  if (t.precision != Precision::kFP8) return to_string(t.precision);
  return "fp8-" + to_string(t.fp8_recipe);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Markdown cells must not contain '|'.
std::string cell(std::string s) {
  std::replace(s.begin(), s.end(), '|', '/');
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  const auto program_start = std::chrono::steady_clock::now();
  const Calibration& calibration = default_calibration();
  const plan::PlanOptions defaults;  // the planner's own EstimateOptions (memory margin)

  std::vector<PublishedRun> runs;
  try {
    runs = read_published_runs(args.runs_path);
  } catch (const Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }

  std::vector<RowOutcome> rows;
  std::vector<Skipped> skipped;
  std::vector<Scenario> scenarios;
  std::map<std::string, int> scenario_by_key;  // planner_key -> index into `scenarios`

  for (const PublishedRun& run : runs) {
    if (!args.only_source.empty() && run.source() != args.only_source) continue;
    RunSetup setup;
    try {
      setup = setup_for_run(run);
    } catch (const RowSkipped& e) {
      skipped.push_back({run.id(), run.source(), to_string(e.kind) + ": " + e.what()});
      continue;
    }
    if (args.max_gpus > 0 && setup.cluster.num_gpus() > args.max_gpus) {
      skipped.push_back({run.id(), run.source(), fmt::format("{} GPUs > --max-gpus {}", setup.cluster.num_gpus(),
                                                             args.max_gpus)});
      continue;
    }
    // The published configuration as `paratune validate` reads it (unstated axes chosen there).
    RowResult validation;
    try {
      validation = evaluate_run(setup, calibration);
    } catch (const Error& e) {
      skipped.push_back({run.id(), run.source(), std::string("validation: ") + e.what()});
      continue;
    }

    RowOutcome row;
    row.row_id = setup.row_id;
    row.source_id = setup.source_id;
    row.model = setup.model.name;
    row.gpus = fmt::format("{}×{}", setup.cluster.num_gpus(), setup.cluster.gpu.name);
    row.seq = std::to_string(setup.training.seq_len);
    row.batch = std::to_string(setup.training.global_batch);
    row.precision = precision_text(setup.training);

    // Re-estimate the published configuration under the planner's memory margin.
    const ParallelConfig published = parse_parallel_config(validation.config);
    Estimate published_estimate;
    try {
      published_estimate =
          estimate(setup.model, setup.cluster, setup.training, published, calibration, defaults.estimate);
    } catch (const Error& e) {
      skipped.push_back({row.row_id, row.source_id, std::string("re-estimating the published config: ") + e.what()});
      continue;
    }
    row.published_config = compact(published_estimate.config);
    row.published_time_s = published_estimate.iteration_time_s;
    row.published_fits = published_estimate.fits;
    if (!validation.fits)
      row.published_note = "does not fit even in the whole GPU memory (validation's memory-model error)";
    else if (!published_estimate.fits)
      row.published_note = fmt::format("does not fit under the planner's {:.0f}% memory margin: {}",
                                       100 * defaults.estimate.memory_margin, published_estimate.reason);

    // The planner, once per distinct set of inputs.
    const std::optional<launch::Framework> framework = framework_of(run);
    const ParallelConfig base = planner_base(published_estimate.config);
    const std::string key = planner_key(setup, framework, base);
    auto found = scenario_by_key.find(key);
    if (found == scenario_by_key.end()) {
      Scenario sc;
      sc.index = static_cast<int>(scenarios.size()) + 1;
      sc.framework = framework;
      plan::PlanOptions options;
      options.base = base;
      if (framework) options.frameworks = {*framework};  // else what any framework runs (the default)
      options.threads = args.threads;
      options.baselines = false;  // the published configuration is the baseline here
      options.advise = false;     // "what would fit" is not asked for
      // FP8 parameters (the published run's --fp8-param-gather / float8 all-gather) need a sharded
      // optimizer: resolve refuses zero=0 with them, but the planner's enumeration offers zero=0
      // and plan() then throws. Keep the training as published and leave zero=0 out of the search.
      if (setup.training.fp8_param_gather)
        plan::add_constraints(options.space, "zero=1,2,3", plan::ConstraintKind::kAllow, "fp8_param_gather");
      if (args.progress)
        std::cerr << fmt::format("scenario {}: row {} {} on {} ...\n", sc.index, row.row_id, row.model, row.gpus);
      try {
        const plan::PlanResult r = plan::plan(setup.model, setup.cluster, setup.training, options, calibration);
        sc.stats = r.stats;
        if (!r.plans.empty()) sc.winner = r.plans.front().estimate;
        else sc.note = "nothing fits";
      } catch (const Error& e) {
        sc.note = std::string("planner failed: ") + e.what();
      }
      if (args.progress) std::cerr << fmt::format("  {:.1f} s\n", sc.stats.elapsed_s);
      scenarios.push_back(std::move(sc));
      found = scenario_by_key.emplace(key, static_cast<int>(scenarios.size()) - 1).first;
    }
    Scenario& sc = scenarios[found->second];
    sc.row_ids.push_back(row.row_id);
    row.scenario = sc.index;
    if (sc.winner) {
      row.winner_config = compact(sc.winner->config);
      row.winner_time_s = sc.winner->iteration_time_s;
      row.gain = row.published_time_s / row.winner_time_s;
      row.differs = what_differs(published_estimate.config, sc.winner->config, setup.model.moe.has_value());
    } else {
      row.winner_config = sc.note;
      row.differs = "-";
    }
    rows.push_back(std::move(row));
  }

  // --- Table -----------------------------------------------------------------------------------
  fmt::print("# Published configurations against the planner (cost-model predictions, not measurements)\n\n");
  fmt::print("Runs: {}. Times are paratune's predicted iteration times with the default calibration; gain = "
             "t_published / t_winner. Planner restricted to the run's framework; published configuration re-estimated "
             "under the planner's {:.0f}% memory margin (* = does not fit there).\n\n",
             args.runs_path, 100 * defaults.estimate.memory_margin);
  fmt::print("| row | source | model | GPUs | seq | batch | precision | framework | published config | t_pub (s) | "
             "planner winner | t_win (s) | gain | what differs | scenario |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const RowOutcome& r : rows) {
    const Scenario& sc = scenarios[r.scenario - 1];
    fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.3f}{} | {} | {} | {} | {} | {} |\n", r.row_id,
               r.source_id, cell(r.model), r.gpus, r.seq, r.batch, r.precision, framework_name(sc.framework),
               r.published_config, r.published_time_s, r.published_fits ? "" : "*", cell(r.winner_config),
               r.gain > 0 ? fmt::format("{:.3f}", r.winner_time_s) : "-",
               r.gain > 0 ? fmt::format("{:.2f}x", r.gain) : "-", cell(r.differs), r.scenario);
  }

  // Notes on published configurations that do not fit.
  bool any_note = false;
  for (const RowOutcome& r : rows)
    if (!r.published_note.empty()) {
      if (!any_note) fmt::print("\nPublished configurations that do not fit in the cost model's memory:\n\n");
      any_note = true;
      fmt::print("- row {}: {}\n", r.row_id, cell(r.published_note));
    }

  // --- Planner runs ----------------------------------------------------------------------------
  double planner_total_s = 0;
  fmt::print("\n## Planner runs\n\n| scenario | rows | framework | level-1 candidates | unsupported by framework | "
             "level-2 refined | wall (s) |\n|---|---|---|---|---|---|---|\n");
  for (const Scenario& sc : scenarios) {
    planner_total_s += sc.stats.elapsed_s;
    fmt::print("| {} | {} | {} | {} | {} | {} | {:.2f} |\n", sc.index, fmt::join(sc.row_ids, ", "),
               framework_name(sc.framework), sc.stats.candidates_level1, sc.stats.unsupported,
               sc.stats.level2_evaluated, sc.stats.elapsed_s);
  }

  // --- Summary ---------------------------------------------------------------------------------
  constexpr double kNotableGain = 1.15;
  std::vector<double> gains;
  std::vector<const RowOutcome*> notable;
  for (const RowOutcome& r : rows)
    if (r.gain > 0) {
      gains.push_back(r.gain);
      if (r.gain > kNotableGain) notable.push_back(&r);
    }
  const double max_gain = gains.empty() ? 0 : *std::max_element(gains.begin(), gains.end());
  const double program_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - program_start).count();
  fmt::print("\n## Summary (predicted)\n\n");
  fmt::print("- rows compared: {} ({} with a planner winner), in {} planner scenarios; rows skipped: {}\n", rows.size(),
             gains.size(), scenarios.size(), skipped.size());
  fmt::print("- gain over the published configuration: median {:.2f}x, max {:.2f}x; rows with gain > {:.2f}: {}\n",
             median(gains), max_gain, kNotableGain, notable.size());
  for (const RowOutcome* r : notable)
    fmt::print("  - row {} ({} {}, {}): {:.2f}x: {}\n", r->row_id, r->source_id, cell(r->model), r->gpus, r->gain,
               cell(r->differs));
  fmt::print("- planner wall time: {:.1f} s in all ({} threads); program: {:.1f} s\n", planner_total_s, args.threads,
             program_s);

  if (!skipped.empty()) {
    fmt::print("\n## Skipped rows\n\n");
    for (const Skipped& s : skipped) fmt::print("- row {} ({}): {}\n", s.row_id, s.source_id, cell(s.reason));
  }

  // --- JSON ------------------------------------------------------------------------------------
  if (!args.json_path.empty()) {
    nlohmann::json j;
    j["note"] = "cost-model predictions (default calibration), not measurements; gain = t_published / t_winner";
    j["runs"] = args.runs_path;
    j["memory_margin"] = defaults.estimate.memory_margin;
    j["rows"] = nlohmann::json::array();
    for (const RowOutcome& r : rows) {
      nlohmann::json row{{"row_id", r.row_id},
                         {"source_id", r.source_id},
                         {"model", r.model},
                         {"gpus", r.gpus},
                         {"seq_len", r.seq},
                         {"global_batch", r.batch},
                         {"precision", r.precision},
                         {"scenario", r.scenario},
                         {"published_config", r.published_config},
                         {"published_time_s", r.published_time_s},
                         {"published_fits", r.published_fits},
                         {"published_note", r.published_note},
                         {"winner_config", r.winner_config},
                         {"differs", r.differs}};
      row["winner_time_s"] = r.gain > 0 ? nlohmann::json(r.winner_time_s) : nlohmann::json();
      row["gain"] = r.gain > 0 ? nlohmann::json(r.gain) : nlohmann::json();
      j["rows"].push_back(std::move(row));
    }
    j["scenarios"] = nlohmann::json::array();
    for (const Scenario& sc : scenarios)
      j["scenarios"].push_back({{"scenario", sc.index},
                                {"rows", sc.row_ids},
                                {"framework", framework_name(sc.framework)},
                                {"winner", sc.winner ? nlohmann::json(to_string(sc.winner->config)) : nlohmann::json()},
                                {"note", sc.note},
                                {"candidates_level1", sc.stats.candidates_level1},
                                {"unsupported", sc.stats.unsupported},
                                {"level2_evaluated", sc.stats.level2_evaluated},
                                {"elapsed_s", sc.stats.elapsed_s}});
    j["skipped"] = nlohmann::json::array();
    for (const Skipped& s : skipped)
      j["skipped"].push_back({{"row_id", s.row_id}, {"source_id", s.source_id}, {"reason", s.reason}});
    j["summary"] = {{"rows", rows.size()},
                    {"rows_with_winner", gains.size()},
                    {"scenarios", scenarios.size()},
                    {"median_gain", median(gains)},
                    {"max_gain", max_gain},
                    {"rows_gain_above_1_15", notable.size()},
                    {"planner_s", planner_total_s},
                    {"program_s", program_s}};
    std::ofstream(args.json_path) << j.dump(2) << "\n";
  }
  return 0;
}
