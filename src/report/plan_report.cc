#include "paratune/report/plan_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <numeric>

#include "paratune/report/estimate_report.h"
#include "paratune/spec/io.h"
#include "paratune/spec/units.h"

namespace paratune {
namespace {

using units::format_bytes;
using units::format_duration;

std::vector<int> recomputed_layers(const Estimate& e) {
  std::vector<int> out;
  for (const StageEstimate& s : e.stages) out.push_back(s.recomputed_layers);
  return out;
}

nlohmann::json plan_json(const Estimate& e) {
  nlohmann::json j = to_json(e);
  nlohmann::json& config = j["config"];
  config["recompute_layers"] = recomputed_layers(e);  // per stage, whatever the recompute mode
  config.erase("stage_recompute_layers");
  config["text"] = to_string(e.config);  // for --config
  return j;
}

// "frameworks": the ones that can run it; "unsupported_by": {framework: [why, ...]} for the others.
void add_frameworks(nlohmann::json& j, const std::vector<launch::FrameworkVerdict>& verdicts) {
  if (verdicts.empty()) return;
  nlohmann::json runs = nlohmann::json::array(), not_runs = nlohmann::json::object();
  for (const launch::FrameworkVerdict& v : verdicts) {
    if (v.reasons.empty()) runs.push_back(to_string(v.framework));
    else not_runs[to_string(v.framework)] = v.reasons;
  }
  j["frameworks"] = runs;
  j["unsupported_by"] = not_runs;
}

nlohmann::json baseline_json(const plan::Baseline& b) {
  nlohmann::json j = b.estimate ? plan_json(*b.estimate) : nlohmann::json{{"fits", false}};
  j["rule"] = b.rule;
  add_frameworks(j, b.frameworks);
  return j;
}

// Initials of the frameworks that can run it, "-" for the others, in kFrameworks order ("MT-").
std::string runs_on(const std::vector<launch::FrameworkVerdict>& verdicts) {
  std::string out;
  for (const launch::FrameworkVerdict& v : verdicts)
    out += v.reasons.empty() ? static_cast<char>(std::toupper(to_string(v.framework)[0])) : '-';
  return out;
}

const char* level1_json_name(plan::Level1 l) {
  switch (l) {
    case plan::Level1::kTimed: return "timed";
    case plan::Level1::kDidNotFit: return "even-stages-do-not-fit";
    case plan::Level1::kNotReplayed: return "not-replayed";
    case plan::Level1::kNotCosted: return "exact-sweep";
  }
  return "?";
}

// The winner's level-1 time, or why it has none.
std::string level1_text(const plan::Plan& p) {
  switch (p.level1) {
    case plan::Level1::kTimed: return format_duration(p.level1_time_s);
    case plan::Level1::kDidNotFit: return "- (even stages do not fit; level 2's layout or recompute does)";
    case plan::Level1::kNotReplayed:
      return "- (not replayed at level 1: its pipeline bound could not make the K best)";
    case plan::Level1::kNotCosted:
      return "- (found in the exact sweep: its bound was below the N-th best plan, it was not costed at level 1)";
  }
  return "-";
}

std::string per_stage_memory(const Estimate& e) {
  std::vector<double> gib;
  for (const StageEstimate& s : e.stages) gib.push_back(s.memory.total_bytes() / (1024.0 * 1024 * 1024));
  if (gib.size() <= 4) return fmt::format("{:.1f} GiB", fmt::join(gib, "/"));
  const auto [lo, hi] = std::minmax_element(gib.begin(), gib.end());
  return fmt::format("{:.1f}-{:.1f} GiB", *lo, *hi);
}

// Why `b` lost to `a`: the time components that grew most, and the axes that differ.
std::string why_slower(const Estimate& a, const Estimate& b) {
  const TimeBreakdown& x = a.breakdown;
  const TimeBreakdown& y = b.breakdown;
  const std::vector<std::pair<const char*, double>> deltas{
      {"compute (incl. recompute)", y.compute_s - x.compute_s}, {"pipeline bubble", y.bubble_s - x.bubble_s},
      {"TP communication", y.tp_comm_s - x.tp_comm_s},          {"CP communication", y.cp_comm_s - x.cp_comm_s},
      {"EP all-to-all", y.ep_comm_s - x.ep_comm_s},             {"PP point-to-point", y.pp_comm_s - x.pp_comm_s},
      {"DP gradient sync", y.dp_comm_s - x.dp_comm_s},          {"ZeRO sharding comm", y.zero3_comm_s - x.zero3_comm_s},
      {"optimizer step", y.optimizer_s - x.optimizer_s}};
  std::vector<std::pair<const char*, double>> worse;
  for (const auto& d : deltas)
    if (d.second > 1e-3 * a.iteration_time_s) worse.push_back(d);
  std::sort(worse.begin(), worse.end(), [](const auto& l, const auto& r) { return l.second > r.second; });
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < std::min<std::size_t>(2, worse.size()); ++i)
    parts.push_back(fmt::format("{} +{}", worse[i].first, format_duration(worse[i].second)));
  const double slower = b.iteration_time_s / a.iteration_time_s - 1;
  std::string out = slower < 5e-4 ? std::string("ties with the winner (within 0.05%)")
                                  : fmt::format("{:.1f}% slower", 100 * slower);
  if (!parts.empty()) out += fmt::format(": {}", fmt::join(parts, ", "));
  // The axes where it differs from the winner.
  const nlohmann::json winner = to_json(a.config), other = to_json(b.config);
  std::vector<std::string> differs;
  for (const auto& [key, value] : other.items())
    if (winner.contains(key) && winner[key] != value)
      differs.push_back(fmt::format("{} {} instead of {}", key, value.dump(), winner[key].dump()));
  if (!differs.empty()) out += fmt::format("; differs in: {}", fmt::join(differs, ", "));
  if (a.peak_memory_bytes > b.peak_memory_bytes)
    out += fmt::format("; needs {} less memory", format_bytes(a.peak_memory_bytes - b.peak_memory_bytes));
  return out;
}

// "megatron, torchtitan or deepspeed", "torchtitan".
std::string frameworks_in_words(const std::vector<launch::Framework>& frameworks) {
  std::vector<std::string> names;
  names.reserve(frameworks.size());
  for (launch::Framework f : frameworks) names.push_back(to_string(f));
  if (names.size() <= 1) return names.empty() ? "" : names.front();
  const std::string last = names.back();
  names.pop_back();
  return fmt::format("{} or {}", fmt::join(names, ", "), last);
}

std::string speedup_line(const char* name, const plan::Baseline& b, const Estimate* best) {
  if (!b.estimate) return fmt::format("  {:<8} no configuration of the rule fits  ({})\n", name, b.rule);
  const Estimate& e = *b.estimate;
  std::string out = fmt::format("  {:<8} {}  {}  MFU {:.1f}%", name, compact_config(e.config),
                                format_duration(e.iteration_time_s), 100 * e.mfu);
  if (best) out += fmt::format("  -> best plan is {:.2f}x faster", e.iteration_time_s / best->iteration_time_s);
  return out + "\n";
}

}  // namespace

std::string compact_config(const ParallelConfig& c) {
  std::string out = fmt::format("dp={} tp={} pp={}", c.dp, c.tp, c.pp);
  if (c.vpp > 1) out += fmt::format(" vpp={}", c.vpp);
  if (c.cp > 1) out += fmt::format(" cp={}", c.cp);
  if (c.ep > 1) out += fmt::format(" ep={}", c.ep);
  if (c.etp > 0 && c.etp != c.tp) out += fmt::format(" etp={}", c.etp);
  if (c.ep_overlap) out += " ep-overlap";
  if (c.dispatcher != MoeDispatcher::kAllToAll) out += " " + to_string(c.dispatcher);
  out += fmt::format(" mbs={}", c.mbs);
  if (c.sequence_parallel) out += " sp";
  if (c.zero > 0) out += c.op == c.dp ? fmt::format(" zero={}", c.zero) : fmt::format(" zero={}/op={}", c.zero, c.op);
  if (c.recompute == RecomputeMode::kSelective) out += " rc=sel";
  if (c.recompute == RecomputeMode::kSelective && c.recompute_modules != kDefaultRecomputeModules)
    out += fmt::format("({})", fmt::join(recompute_module_names(c.recompute_modules), "+"));
  if (c.offload_modules != 0) out += " offload=" + offload_modules_text(c.offload_modules);
  if (c.recompute == RecomputeMode::kFull)
    out += !c.stage_recompute_layers.empty() ? fmt::format(" rc={}", fmt::join(c.stage_recompute_layers, "/"))
                                             : " rc=full";
  if (c.pp > 1) out += fmt::format(" {}", to_string(c.schedule));
  if (c.grad_sync != GradSync::kOverlapped) out += fmt::format(" {}", to_string(c.grad_sync));
  if (c.pp > 1) {
    const std::vector<int> even = even_stage_layers(static_cast<int>(std::accumulate(c.stage_layers.begin(), c.stage_layers.end(), 0)), c.pp);
    if (c.stage_layers != even) out += fmt::format(" layers={}", fmt::join(c.stage_layers, "/"));
  }
  return out;
}

nlohmann::json to_json(const plan::PlanResult& r) {
  nlohmann::json plans = nlohmann::json::array();
  for (const plan::Plan& p : r.plans) {
    nlohmann::json j = plan_json(p.estimate);
    // null when level 1 has no time for it; "level1" says why (timed, even-stages-do-not-fit,
    // not-replayed, exact-sweep).
    j["level1_time_s"] = p.level1 == plan::Level1::kTimed ? nlohmann::json(p.level1_time_s) : nlohmann::json();
    j["level1"] = level1_json_name(p.level1);
    j["lower_bound_s"] = p.lower_bound_s;
    add_frameworks(j, p.frameworks);
    plans.push_back(std::move(j));
  }
  const plan::SearchStats& s = r.stats;
  nlohmann::json j{{"plans", plans},
                   {"baselines", {{"expert", baseline_json(r.expert)}, {"three_axis", baseline_json(r.three_axis)}}},
                   {"search",
                    {{"groups", s.groups},
                     {"groups_pruned_memory", s.groups_pruned_memory},
                     {"groups_expanded", s.groups_expanded},
                     {"candidates_level1", s.candidates_level1},
                     {"unsupported_by_framework", s.unsupported},
                     {"pruned", s.pruned_memory + s.pruned_time},
                     {"pruned_memory", s.pruned_memory},
                     {"pruned_time", s.pruned_time},
                     {"level1_evaluated", s.level1_evaluated},
                     {"kept", s.kept},
                     {"level2_evaluated", s.level2_evaluated},
                     {"bounds_s", s.bounds_s},
                     {"level1_s", s.level1_s},
                     {"level2_s", s.level2_s},
                     {"elapsed_s", s.elapsed_s}}}};
  if (!r.plans.empty()) {
    const double best = r.plans.front().estimate.iteration_time_s;
    if (r.expert.estimate) j["speedup_over_expert"] = r.expert.estimate->iteration_time_s / best;
    if (r.three_axis.estimate) j["speedup_over_three_axis"] = r.three_axis.estimate->iteration_time_s / best;
  }
  nlohmann::json within = nlohmann::json::array();
  for (launch::Framework f : r.searched_within) within.push_back(to_string(f));
  j["searched_within"] = within;  // [] : the whole space (--framework none)
  if (!r.not_searched.empty()) {
    nlohmann::json skipped = nlohmann::json::object();
    for (const launch::FrameworkVerdict& v : r.not_searched) skipped[to_string(v.framework)] = v.reasons;
    j["not_searched"] = skipped;  // framework -> why it cannot build the model
  }
  if (r.searched_within.size() == 1) j["framework"] = to_string(r.searched_within.front());
  if (r.best_unrunnable) {
    nlohmann::json b = plan_json(r.best_unrunnable->estimate);
    add_frameworks(b, r.best_unrunnable->frameworks);
    j["best_unrunnable"] = std::move(b);
  }
  if (r.closest) j["closest"] = plan_json(*r.closest);
  if (!r.advice.empty()) j["advice"] = r.advice;
  return j;
}

std::string format_plan(const plan::PlanResult& r, const ModelSpec& model, const ClusterSpec& cluster,
                        const TrainingSpec& training) {
  std::string out = fmt::format("paratune plan: {} on {} ({} x {}), seq {}, global batch {}, {}\n", model.name,
                                cluster.name, cluster.num_gpus(), cluster.gpu.name, training.seq_len,
                                training.global_batch, to_string(training.precision));
  const plan::SearchStats& s = r.stats;
  out += fmt::format(
      "search: {} groups of candidates ({} pruned whole by the memory bound, {} expanded into {} level-1 "
      "candidates); pruned {} by the memory bound and {} by the time bound; {} costed with even stages; {} kept and "
      "{} refined in level 2; {:.2f} s\n\n",
      s.groups, s.groups_pruned_memory, s.groups_expanded, s.candidates_level1, s.pruned_memory, s.pruned_time,
      s.level1_evaluated, s.kept, s.level2_evaluated, s.elapsed_s);
  const std::string within = frameworks_in_words(r.searched_within);
  if (r.searched_within.empty())
    out += "the whole space (--framework none): plans no framework runs as planned are ranked too, marked ---\n\n";
  else
    out += fmt::format("only plans {} runs as planned: {} enumerated candidates {} were skipped (--framework none "
                       "ranks them too)\n\n",
                       within, s.unsupported, r.searched_within.size() == 1 ? "it cannot run" : "none of them runs");

  for (const launch::FrameworkVerdict& v : r.not_searched)
    for (const std::string& why : v.reasons) out += fmt::format("not searched: {}: {}\n\n", to_string(v.framework), why);

  if (r.plans.empty() && r.best_unrunnable) {
    // The constraints met the frameworks' limits: that, not memory, is why nothing is ranked.
    const plan::Plan& b = *r.best_unrunnable;
    out += fmt::format("NO CONFIGURATION THAT {} RUNS AS PLANNED FITS within the constraints; configurations no such "
                       "framework runs do fit: the best, {} ({}), cannot run because\n",
                       within, compact_config(b.estimate.config), format_duration(b.estimate.iteration_time_s));
    for (const launch::FrameworkVerdict& v : b.frameworks)
      if (std::find(r.searched_within.begin(), r.searched_within.end(), v.framework) != r.searched_within.end())
        for (const std::string& why : v.reasons) out += fmt::format("  not {}: {}\n", to_string(v.framework), why);
    out += "--framework none ranks such plans; or relax the --fix/--allow/--max that rule out what the frameworks run\n";
  } else if (r.plans.empty()) {
    out += "NO CONFIGURATION FITS.\n";
    if (r.closest)
      out += fmt::format("closest: {}\n  {}\n", compact_config(r.closest->config), r.closest->reason);
    if (!r.advice.empty()) {
      out += "what would fit:\n";
      for (const std::string& a : r.advice) out += "  - " + a + "\n";
    }
  } else {
    out += fmt::format(" {:>2}  {:<62} {:>10} {:>10} {:>6}  {:<22} {:<4} {}\n", "#", "configuration", "time", "tokens/s",
                       "MFU", "peak memory per stage", "fits", "runs on");
    for (std::size_t i = 0; i < r.plans.size(); ++i) {
      const Estimate& e = r.plans[i].estimate;
      out += fmt::format(" {:>2}  {:<62} {:>10} {:>10.0f} {:>5.1f}%  {:<22} {:<4} {}\n", i + 1, compact_config(e.config),
                         format_duration(e.iteration_time_s), e.tokens_per_s, 100 * e.mfu, per_stage_memory(e),
                         e.fits ? "yes" : "no", runs_on(r.plans[i].frameworks));
    }
    out += "     runs on: M = Megatron-LM, T = torchtitan, D = DeepSpeed, - = cannot run it as planned\n";
  }
  const Estimate* best = r.plans.empty() ? nullptr : &r.plans.front().estimate;
  if (r.expert.estimate || r.three_axis.estimate || !r.expert.rule.empty()) {
    out += "\nbaselines (same cost model):\n";
    out += speedup_line("expert", r.expert, best);
    out += speedup_line("3-axis", r.three_axis, best);
  }
  if (!best) return out;

  const plan::Plan& winner = r.plans.front();
  out += fmt::format("\nwinner: {}\n", to_string(best->config));
  out += fmt::format("  level 1 (even stages{}): {}; level 2: {}\n",
                     best->config.recompute == RecomputeMode::kFull ? ", every layer recomputed" : "",
                     level1_text(winner), format_duration(best->iteration_time_s));
  // Which frameworks can run it, and why the others cannot.
  std::vector<std::string> runs;
  for (const launch::FrameworkVerdict& v : winner.frameworks)
    if (v.reasons.empty()) runs.push_back(to_string(v.framework));
  if (!winner.frameworks.empty())
    out += fmt::format("  runs on: {}\n", runs.empty() ? std::string("none of megatron, torchtitan, deepspeed as planned")
                                                          : fmt::format("{}", fmt::join(runs, ", ")));
  for (const launch::FrameworkVerdict& v : winner.frameworks)
    for (const std::string& why : v.reasons) out += fmt::format("  not {}: {}\n", to_string(v.framework), why);
  // The estimate report from its figures on (its header repeats what is above).
  const std::string details = format_estimate(*best, model, cluster, training);
  out += "\n" + details.substr(details.find("iteration time"));
  if (best->config.pp > 1 || best->config.recompute == RecomputeMode::kFull) {
    out += "\nstage   layers  recomputed\n";
    for (std::size_t i = 0; i < best->stages.size(); ++i)
      out += fmt::format("  {:>3}  {:>7}  {:>10}\n", i, best->stages[i].layers, best->stages[i].recomputed_layers);
  }
  if (r.plans.size() > 1) {
    const Estimate& second = r.plans[1].estimate;
    out += fmt::format("\nrunner-up: {}\n  {}\n", compact_config(second.config), why_slower(*best, second));
  }
  return out;
}

std::string format_plan_progress(const plan::PlanProgress::Snapshot& p, double elapsed_s,
                                 std::optional<double> rate_per_s) {
  using plan::PlanProgress;
  const auto n = [](long long count) { return units::format_count(static_cast<double>(count)); };
  const std::string tail =
      fmt::format(" | {:.1f} s", elapsed_s) + (rate_per_s ? fmt::format(" | {}/s", units::format_count(*rate_per_s)) : "");
  switch (p.stage) {
    case PlanProgress::kStarting:
      return "plan: finding the mesh shapes" + tail;
    case PlanProgress::kBounds:
      return fmt::format("plan: bounding groups of candidates: {}, mesh shape {} of {}", n(p.groups_bounded),
                         p.meshes_done, p.meshes) +
             tail;
    case PlanProgress::kLevel1:
      return fmt::format("plan: level 1: estimated {} ({} candidates bounded, in {} groups that may fit)", n(p.estimated),
                         n(p.bounded), n(p.groups)) +
             tail;
    case PlanProgress::kLevel2:
      return fmt::format("plan: level 2: refined {} (of {} estimated, {} bounded)", n(p.refined), n(p.estimated),
                         n(p.bounded)) +
             tail;
    case PlanProgress::kBaselines:
      return fmt::format("plan: costing the baselines ({} bounded, {} estimated, {} refined)", n(p.bounded),
                         n(p.estimated), n(p.refined)) +
             tail;
    case PlanProgress::kAdvice:
      return "plan: nothing fits; searching what would (more GPUs, FP8, shorter sequences, no memory margin)" + tail;
    default:
      return "";
  }
}

}  // namespace paratune
