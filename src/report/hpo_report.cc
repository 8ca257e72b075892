#include "paratune/report/hpo_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "paratune/hpo/pareto.h"
#include "paratune/report/tune_report.h"
#include "paratune/spec/error.h"
#include "paratune/spec/units.h"

namespace paratune {
namespace {

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

}  // namespace

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
  auto number = [](const std::optional<double>& v) {
    return v && std::isfinite(*v) ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
  };
  return {{"study", r.study},
          {"of_trial", r.of_trial},
          {"search_objective", number(r.search_objective)},
          {"objective", number(r.objective)},
          {"reused", r.reused},
          {"trial", to_json(r.trial)},
          {"final_metrics", metrics}};
}

std::string format_reevaluations(const std::vector<hpo::RetrainResult>& runs, std::optional<std::size_t> chosen,
                                 const std::string& objective) {
  std::string out = fmt::format("  {:>6} {:>16} {:>16}  {:<12} {}\n", "trial", objective + " (search)",
                                objective + " (retrained)", "status", "parameters");
  auto value = [](const std::optional<double>& v) { return v ? fmt::format("{:.6g}", *v) : std::string("-"); };
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const hpo::RetrainResult& r = runs[i];
    out += fmt::format("  {:>6} {:>16} {:>16}  {:<12} {}{}{}\n", r.of_trial, value(r.search_objective),
                       value(r.objective), r.trial.status, params_words(r.trial.params_json),
                       r.trial.reason.empty() ? "" : " (" + r.trial.reason + ")", chosen == i ? "  <- chosen" : "");
  }
  return out;
}

std::string format_reevaluation(const hpo::Reevaluation& r, const std::string& objective) {
  return fmt::format("retrained the {} best of {} distinct completed configurations ({}):\n", r.runs.size(),
                     r.candidates, r.rule) +
         format_reevaluations(r.runs, r.chosen, objective);
}

nlohmann::ordered_json to_json(const hpo::Reevaluation& r, const std::string& objective) {
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const hpo::RetrainResult& run : r.runs) runs.push_back(to_json(run));
  return {{"objective", objective},
          {"k", r.k},
          {"rule", r.rule},
          {"candidates", r.candidates},
          {"chosen", r.chosen ? nlohmann::ordered_json(r.runs[*r.chosen].of_trial) : nlohmann::ordered_json(nullptr)},
          {"runs", runs}};
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

ParetoFront pareto_front_of(const std::vector<store::StoredTrial>& trials, const std::vector<std::string>& objectives,
                            const std::vector<hpo::Direction>& directions) {
  ParetoFront front;
  front.objectives = objectives;
  front.directions = directions;
  if (objectives.empty()) return front;
  std::vector<hpo::pareto::Losses> points;
  hpo::pareto::Losses worst;
  for (const store::StoredTrial& t : trials) {
    const std::optional<std::vector<double>> v = hpo::trial_values(t, objectives);
    if (!v) continue;
    points.push_back(hpo::pareto::losses_of(*v, directions));
    if (worst.empty()) worst = points.back();
    for (std::size_t i = 0; i < worst.size(); ++i) worst[i] = std::max(worst[i], points.back()[i]);
  }
  front.completed = points.size();
  front.members = hpo::pareto_front_trials(trials, objectives, directions);
  for (const std::size_t i : front.members) front.values.push_back(*hpo::trial_values(trials[i], objectives));
  if (points.empty()) return front;
  for (std::size_t i = 0; i < worst.size(); ++i)  // back from losses to each objective's own sign
    front.reference.push_back(directions[i] == hpo::Direction::kMinimize ? worst[i] : -worst[i]);
  try {
    front.hypervolume = hpo::pareto::hypervolume(points, worst);
  } catch (const Error&) {  // past the size limit of 3 or more objectives: the front is shown without it
  }
  return front;
}

std::string format_pareto_front(const std::vector<store::StoredTrial>& trials, const ParetoFront& front) {
  if (front.objectives.empty()) return "";
  std::string out = fmt::format("Pareto front ({} of {} completed trials; {}), by {}:\n", front.members.size(),
                                front.completed, [&] {
                                  std::string what;
                                  for (std::size_t i = 0; i < front.objectives.size(); ++i)
                                    what += fmt::format("{}{} {}", i ? ", " : "", front.objectives[i],
                                                        hpo::to_string(front.directions[i]));
                                  return what;
                                }(),
                                front.objectives.front());
  out += fmt::format("{:>5}", "trial");
  for (const std::string& name : front.objectives) out += fmt::format("  {:>12}", name.substr(0, 12));
  out += "  parameters\n";
  for (std::size_t k = 0; k < front.members.size(); ++k) {
    out += fmt::format("{:>5}", trials[front.members[k]].number);
    for (const double v : front.values[k]) out += fmt::format("  {:>12.6g}", v);
    out += "  " + params_words(trials[front.members[k]].params_json) + "\n";
  }
  if (front.members.empty()) out += "  none: no trial completed with every objective\n";
  if (front.hypervolume) {
    std::string reference;
    for (std::size_t i = 0; i < front.reference.size(); ++i) reference += fmt::format("{}{:.6g}", i ? ", " : "", front.reference[i]);
    out += fmt::format("hypervolume {:.6g} against the reference ({}): the worst value of each objective among the "
                       "completed trials\n",
                       *front.hypervolume, reference);
  }
  return out;
}

nlohmann::ordered_json pareto_front_json(const std::vector<store::StoredTrial>& trials, const ParetoFront& front) {
  nlohmann::ordered_json directions = nlohmann::ordered_json::array(), members = nlohmann::ordered_json::array();
  for (const hpo::Direction d : front.directions) directions.push_back(hpo::to_string(d));
  for (std::size_t k = 0; k < front.members.size(); ++k) {
    const store::StoredTrial& t = trials[front.members[k]];
    members.push_back({{"number", t.number},
                       {"values", front.values[k]},
                       {"params", nlohmann::ordered_json::parse(t.params_json, nullptr, false)}});
  }
  return {{"objectives", front.objectives},
          {"directions", directions},
          {"trials", members},
          {"completed", front.completed},
          {"reference", front.reference},
          {"reference_rule", "the worst value of each objective among the completed trials"},
          {"hypervolume", front.hypervolume ? nlohmann::ordered_json(*front.hypervolume) : nullptr}};
}

}  // namespace paratune
