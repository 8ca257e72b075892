#include "paratune/report/hpo_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "paratune/hpo/fusion.h"
#include "paratune/report/tune_report.h"
#include "paratune/spec/units.h"

namespace paratune {
namespace {

std::string objective_text(const std::optional<double>& v) { return v ? fmt::format("{:.6g}", *v) : "-"; }

std::string best_line(const store::StoredTrial& t, const std::string& objective) {
  std::string out = fmt::format("best: trial {}  {}\n  {} {}", t.number, params_words(t.params_json), objective,
                                objective_text(t.objective));
  if (t.throughput) out += fmt::format(", {:.4g} steps/s", *t.throughput);
  if (t.peak_memory_bytes) out += fmt::format(", peak memory {}", units::format_bytes(*t.peak_memory_bytes));
  out += fmt::format("\n  reproduce: {}\n", t.command);
  return out;
}

// Percentile by linear interpolation between order statistics of sorted `v`.
double quantile(const std::vector<double>& v, double q) {
  const double position = q * static_cast<double>(v.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(position));
  const std::size_t upper = std::min(lower + 1, v.size() - 1);
  return v[lower] + (position - static_cast<double>(lower)) * (v[upper] - v[lower]);
}

// Per step: the values the trials reported there, best first.
std::map<std::int64_t, std::vector<double>> values_by_step(const std::vector<hpo::TrialRecord>& records,
                                                           hpo::Direction direction) {
  std::map<std::int64_t, std::vector<double>> by_step;
  for (const hpo::TrialRecord& r : records)
    for (const hpo::IntermediateValue& v : r.curve) by_step[v.step].push_back(v.value);
  for (auto& [step, values] : by_step)
    std::sort(values.begin(), values.end(),
              [&](double a, double b) { return hpo::as_loss(direction, a) < hpo::as_loss(direction, b); });
  return by_step;
}


// "2 dp": the slots a trial's last run had and the strategy it trained with (its hpo_json, written
// when a run ends); "" when it has no strategy.
std::string placement(const store::StoredTrial& t) {
  const nlohmann::json j = nlohmann::json::parse(t.hpo_json.empty() ? "{}" : t.hpo_json, nullptr, false);
  if (!j.is_object() || !j.contains("strategy") || !j["strategy"].is_string() || j["strategy"].get<std::string>().empty())
    return "";
  const std::size_t slots = j.contains("slots") && j["slots"].is_array() ? j["slots"].size() : 0;
  return fmt::format("{} {}", slots > 0 ? std::to_string(slots) : "?", j["strategy"].get<std::string>());
}

}  // namespace

std::string format_hpo_trials(const std::vector<store::StoredTrial>& trials, std::optional<std::size_t> best,
                              const std::string& objective) {
  // A "ranks" column (slots and strategy) when the trials trained with a strategy.
  const bool placed = std::any_of(trials.begin(), trials.end(), [](const auto& t) { return !placement(t).empty(); });
  auto ranks_cell = [&](const std::string& text) { return placed ? fmt::format(" {:<12}", text) : std::string(); };
  std::string out = fmt::format("{:>5}  {:<12} {:>4} {:>6} {:>12} {:>14} {:>11}{}  {}\n", "trial", "status", "rung",
                                "steps", objective.substr(0, 12), "throughput", "peak memory", ranks_cell("ranks"),
                                "parameters");
  for (const store::StoredTrial& t : trials) {
    const std::string where = placement(t);
    out += fmt::format("{:>5}  {:<12} {:>4} {:>6} {:>12} {:>14} {:>11}{}  {}\n", t.number, t.status,
                       t.rung ? std::to_string(*t.rung) : "-", t.steps, objective_text(t.objective),
                       t.throughput ? fmt::format("{:.4g} st/s", *t.throughput) : "-",
                       t.peak_memory_bytes ? units::format_bytes(*t.peak_memory_bytes) : "-",
                       ranks_cell(where.empty() ? "-" : where), params_words(t.params_json));
    if (!t.reason.empty() && t.status != "completed") out += fmt::format("{:>7}{}\n", "", t.reason);
  }
  out += best ? best_line(trials[*best], objective) : "best: none (no trial completed with a value of the objective)\n";
  return out;
}

std::string format_curves(const std::vector<hpo::TrialRecord>& records, const std::string& objective,
                          hpo::Direction direction, std::size_t max_rows) {
  const auto by_step = values_by_step(records, direction);
  if (by_step.empty()) return "";
  // Rows spread evenly over the steps that have values, the last always included.
  std::vector<std::int64_t> steps;
  steps.reserve(by_step.size());
  for (const auto& [step, values] : by_step) steps.push_back(step);
  std::vector<std::int64_t> shown;
  const std::size_t rows = std::min(max_rows, steps.size());
  for (std::size_t i = 0; i < rows; ++i)
    shown.push_back(steps[rows == 1 ? steps.size() - 1 : i * (steps.size() - 1) / (rows - 1)]);
  std::string out = fmt::format("learning curves ({}, {}): the trials' values at each step\n", objective,
                                hpo::to_string(direction));
  out += fmt::format("{:>8} {:>7} {:>12} {:>12} {:>12}\n", "step", "trials", "best", "median", "worst");
  for (std::int64_t step : shown) {
    const std::vector<double>& v = by_step.at(step);
    out += fmt::format("{:>8} {:>7} {:>12.6g} {:>12.6g} {:>12.6g}\n", step, v.size(), v.front(), quantile(v, 0.5),
                       v.back());
  }
  return out;
}

nlohmann::ordered_json curves_json(const std::vector<hpo::TrialRecord>& records, hpo::Direction direction) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& [step, v] : values_by_step(records, direction))
    out.push_back({{"step", step}, {"trials", v.size()}, {"best", v.front()}, {"median", quantile(v, 0.5)},
                   {"worst", v.back()}});
  return out;
}

std::string format_pruning(const std::vector<store::StoredTrial>& trials) {
  std::map<int, int> by_rung;
  int without_rung = 0;
  for (const store::StoredTrial& t : trials) {
    if (t.status != "pruned") continue;
    if (t.rung) ++by_rung[*t.rung];
    else ++without_rung;
  }
  if (by_rung.empty() && without_rung == 0) return "";
  std::string out = "pruned:";
  for (const auto& [rung, n] : by_rung) out += fmt::format(" {} at rung {};", n, rung);
  if (without_rung > 0) out += fmt::format(" {} before the first rung (stopped on their curve);", without_rung);
  out.back() = '\n';
  return out;
}

std::string format_importance(const std::vector<hpo::Importance>& importance, std::size_t completed) {
  if (importance.empty()) return "";
  std::string out = fmt::format(
      "parameter importance: the share of the objective's variance each parameter's main effect explains on its "
      "own (epsilon^2 over {} completed trials; effects overlap, so the shares need not sum to 100%; "
      "hpo/importance.h)\n",
      completed);
  for (const hpo::Importance& i : importance)
    out += fmt::format("  {:<20} {:>5.1f}%  {}\n", i.parameter, 100 * i.share,
                       std::string(static_cast<std::size_t>(std::lround(20 * i.share)), '#'));
  return out;
}

nlohmann::ordered_json importance_json(const std::vector<hpo::Importance>& importance) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const hpo::Importance& i : importance)
    out.push_back({{"parameter", i.parameter}, {"share", i.share}, {"groups", i.groups}, {"trials", i.trials}});
  return out;
}

// --fuse auto's probe (hpo/fusion.h to_json(FusionProbe)).
static std::string format_fusion_probe(const nlohmann::ordered_json& probe) {
  std::string out = fmt::format("fusion probe ({} steps each; trial-steps/s of full trials, start-up and final "
                                "evaluation included; memory budget {}):\n",
                                hpo::kFusionProbeSteps,
                                probe["memory_budget_bytes"].get<double>() > 0
                                    ? units::format_bytes(probe["memory_budget_bytes"].get<double>())
                                    : std::string("unknown"));
  out += fmt::format("  {:>4}  {:>11}  {:>11}  {:>13}  {:>11}  {}\n", "B", "step time", "start-up", "trial-steps/s",
                     "peak memory", "status");
  for (const auto& run : probe["runs"])
    out += fmt::format("  {:>4}  {:>9.4f} s  {:>9.2f} s  {:>13.3f}  {:>11}  {}\n", run["size"].get<int>(),
                       run["step_time_s"].get<double>(), run["fixed_s"].get<double>(), run["trial_steps_per_s"].get<double>(),
                       run["peak_memory_bytes"].is_null() ? std::string("-")
                                                          : units::format_bytes(run["peak_memory_bytes"].get<double>()),
                       run["status"].get<std::string>());
  out += fmt::format("  chose B = {}: {}\n", probe["chosen"].get<int>(), probe["reason"].get<std::string>());
  return out;
}

std::string format_hpo_study(const hpo::HpoSummary& s) {
  std::string out = fmt::format("study '{}': {} sampler, {} pruner, objective {} ({})\n", s.name, s.sampler, s.pruner,
                                s.objective, hpo::to_string(s.direction));
  out += fmt::format("this run: {} new trials, {} promotions, {} reused, {} requeued{}; {} after {}\n", s.started,
                     s.promotions, s.reused, s.requeued,
                     s.retried_failed > 0 ? fmt::format(" ({} failed before: --retry-failed)", s.retried_failed) : "",
                     tune::to_string(s.stop), units::format_duration(s.elapsed_s));
  if (s.reaped > 0 || s.dropped > 0)
    out += fmt::format("worker: {} trials of dead workers marked interrupted (no heartbeat), {} results of runs "
                       "taken from this worker dropped\n",
                       s.reaped, s.dropped);
  if (s.fused_groups > 0)
    out += fmt::format("fused: {} of the new trials trained in {} fused groups\n", s.fused_trials, s.fused_groups);
  if (!s.fusion_probe.is_null()) out += format_fusion_probe(s.fusion_probe);
  std::map<std::string, int> counts;
  for (const store::StoredTrial& t : s.trials) ++counts[t.status];
  out += "trials:";
  for (const auto& [status, n] : counts) out += fmt::format(" {} {};", n, status);
  out.back() = '\n';
  out += failure_line(s.trials);
  out += format_pruning(s.trials);
  // The five best completed trials.
  std::vector<std::size_t> completed;
  for (std::size_t i = 0; i < s.trials.size(); ++i)
    if (s.trials[i].status == "completed" && s.trials[i].objective) completed.push_back(i);
  std::stable_sort(completed.begin(), completed.end(), [&](std::size_t a, std::size_t b) {
    return hpo::as_loss(s.direction, *s.trials[a].objective) < hpo::as_loss(s.direction, *s.trials[b].objective);
  });
  if (!completed.empty()) out += fmt::format("\n{:>5}  {:>12}  {}\n", "trial", s.objective.substr(0, 12), "parameters");
  for (std::size_t k = 0; k < std::min<std::size_t>(5, completed.size()); ++k) {
    const store::StoredTrial& t = s.trials[completed[k]];
    out += fmt::format("{:>5}  {:>12}  {}\n", t.number, objective_text(t.objective), params_words(t.params_json));
  }
  out += "\n";
  out += s.best ? best_line(s.trials[*s.best], s.objective) : "best: none (no trial completed with a value of the objective)\n";
  return out;
}

nlohmann::ordered_json to_json(const hpo::HpoSummary& s) {
  nlohmann::ordered_json j{{"study", s.name},
                           {"sampler", s.sampler},
                           {"pruner", s.pruner},
                           {"objective", s.objective},
                           {"direction", hpo::to_string(s.direction)},
                           {"reused", s.reused},
                           {"requeued", s.requeued},
                           {"retried_failed", s.retried_failed},
                           {"started", s.started},
                           {"promotions", s.promotions},
                           {"reaped", s.reaped},
                           {"dropped", s.dropped},
                           {"fused_groups", s.fused_groups},
                           {"fused_trials", s.fused_trials},
                           {"stop", tune::to_string(s.stop)},
                           {"elapsed_s", s.elapsed_s}};
  if (!s.fusion_probe.is_null()) j["fusion_probe"] = s.fusion_probe;
  j.update(trials_json(s.trials, s.best));
  return j;
}

std::string format_retrain(const hpo::RetrainResult& r) {
  std::string out = fmt::format("retrain ({}, study '{}'{}): {} after {} steps{}\n", params_words(r.trial.params_json),
                                r.study, r.reused ? ", reused" : "", r.trial.status, r.trial.steps,
                                r.trial.reason.empty() ? "" : " (" + r.trial.reason + ")");
  for (const auto& [name, value] : r.final) out += fmt::format("  {:<20} {:.6g}\n", name, value);
  out += fmt::format("  reproduce: {}\n", r.trial.command);
  return out;
}

nlohmann::ordered_json to_json(const hpo::RetrainResult& r) {
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  for (const auto& [name, value] : r.final) metrics[name] = value;
  return {{"study", r.study}, {"reused", r.reused}, {"trial", to_json(r.trial)}, {"final_metrics", metrics}};
}

std::string format_transfer(const hpo::Transfer& t) {
  std::string out = fmt::format("transfer to the target (muP; surrogate {:g}x narrower: {} -> {}):\n", t.ratio,
                                t.surrogate_widths, t.target_widths);
  out += fmt::format("  the target's hyperparameters: {} (muP keeps the global values: its per-layer factors, which\n"
                     "  made the surrogate train like the target, are 1 at the target's width)\n",
                     params_words(t.hyperparameters.dump()));
  out += fmt::format("  {:<8} {:>14} {:>14} {:>16} {:>16}   ({})\n", "weights", "lr surrogate", "lr target", "decay surrogate",
                     "decay target", t.optimizer);
  for (const hpo::RoleRates& r : t.rates)
    out += fmt::format("  {:<8} {:>14.6g} {:>14.6g} {:>16.6g} {:>16.6g}\n", r.role, r.surrogate_lr, r.target_lr,
                       r.surrogate_weight_decay, r.target_weight_decay);
  return out;
}

nlohmann::ordered_json to_json(const hpo::Transfer& t) {
  nlohmann::ordered_json rates = nlohmann::ordered_json::array();
  for (const hpo::RoleRates& r : t.rates)
    rates.push_back({{"role", r.role},
                     {"surrogate_lr", r.surrogate_lr},
                     {"target_lr", r.target_lr},
                     {"surrogate_weight_decay", r.surrogate_weight_decay},
                     {"target_weight_decay", r.target_weight_decay}});
  return {{"surrogate_ratio", t.ratio},
          {"optimizer", t.optimizer},
          {"surrogate_widths", t.surrogate_widths},
          {"target_widths", t.target_widths},
          {"hyperparameters", t.hyperparameters},
          {"rates", rates}};
}

}  // namespace paratune
