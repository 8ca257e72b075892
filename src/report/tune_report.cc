#include "paratune/report/tune_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "paratune/hpo/fusion.h"
#include "paratune/report/hpo_report.h"
#include "paratune/spec/units.h"
#include "paratune/trial/failure.h"

namespace paratune {
namespace {

// "42s", "3m05s", "1h02m".
std::string clock(double seconds) {
  const long s = static_cast<long>(seconds);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
}

std::string throughput_text(const store::StoredTrial& t) {
  if (!t.throughput) return "-";
  return fmt::format("{:.4g} steps/s", *t.throughput);
}

std::string ci_text(const store::StoredTrial& t) {
  if (!t.throughput) return "";
  return fmt::format("[{:.4g}, {:.4g}]", t.throughput_ci_low, t.throughput_ci_high);
}

nlohmann::ordered_json ci_json(const store::StoredTrial& t) {
  if (!t.throughput) return nullptr;
  return nlohmann::ordered_json::array({t.throughput_ci_low, t.throughput_ci_high});
}

nlohmann::ordered_json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

// Trials by status, in the order of TrialStatus, "running" last.
std::vector<std::pair<std::string, int>> status_counts(const std::vector<store::StoredTrial>& trials) {
  std::map<std::string, int> counts;
  for (const store::StoredTrial& t : trials) ++counts[t.status];
  std::vector<std::string> names;
  for (int s = 0; s <= static_cast<int>(trial::TrialStatus::kInterrupted); ++s)
    names.emplace_back(trial::to_string(static_cast<trial::TrialStatus>(s)));
  names.emplace_back("pruned");  // hyperparameter studies (hpo/study.h)
  names.emplace_back("running");
  std::vector<std::pair<std::string, int>> out;
  for (const std::string& name : names)
    if (counts.contains(name)) out.emplace_back(name, counts[name]);
  return out;
}

std::string status_line(const std::vector<store::StoredTrial>& trials) {
  std::string out;
  for (const auto& [name, n] : status_counts(trials)) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, name);
  return out.empty() ? "no trials" : out;
}

std::string objective_text(const std::optional<double>& v) { return v ? fmt::format("{:.6g}", *v) : "-"; }

// "2 dp": the slots a trial's last run had and the strategy it trained with (its hpo_json, written
// when a run ends); "" when it has no strategy.
std::string placement(const store::StoredTrial& t) {
  const nlohmann::json j = nlohmann::json::parse(t.hpo_json.empty() ? "{}" : t.hpo_json, nullptr, false);
  if (!j.is_object() || !j.contains("strategy") || !j["strategy"].is_string() || j["strategy"].get<std::string>().empty())
    return "";
  const std::size_t slots = j.contains("slots") && j["slots"].is_array() ? j["slots"].size() : 0;
  return fmt::format("{} {}", slots > 0 ? std::to_string(slots) : "?", j["strategy"].get<std::string>());
}

// --fuse auto's probe (hpo/fusion.h to_json(FusionProbe)).
std::string format_fusion_probe(const nlohmann::ordered_json& probe) {
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

}  // namespace

std::string params_words(const std::string& params_json) {
  const nlohmann::ordered_json params = nlohmann::ordered_json::parse(params_json, nullptr, false);
  if (!params.is_object()) return params_json;
  std::string out;
  // Floats (sampled hyperparameters) to 4 significant digits: the stored command has them exactly.
  for (const auto& [name, value] : params.items())
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", name,
                       value.is_number_float() ? fmt::format("{:.4g}", value.get<double>()) : tune::word(value));
  return out;
}

nlohmann::ordered_json to_json(const store::StoredTrial& t) {
  return {{"number", t.number},
          {"params", nlohmann::ordered_json::parse(t.params_json, nullptr, false)},
          {"status", t.status},
          {"reason", t.reason},
          {"throughput", optional_json(t.throughput)},
          {"throughput_ci", ci_json(t)},
          {"step_time_s", t.throughput ? nlohmann::ordered_json(1 / *t.throughput) : nlohmann::ordered_json(nullptr)},
          {"peak_memory_bytes", optional_json(t.peak_memory_bytes)},
          {"steps", t.steps},
          {"malformed_lines", t.malformed_lines},
          {"exit_code", t.exit_code},
          {"exit_signal", t.exit_signal},
          {"started_unix_s", t.started_unix_s},
          {"ended_unix_s", t.ended_unix_s},
          {"dir", t.dir},
          {"command", t.command},
          {"prediction", t.prediction_json.empty() ? nlohmann::ordered_json(nullptr)
                                                   : nlohmann::ordered_json::parse(t.prediction_json, nullptr, false)},
          {"objective", optional_json(t.objective)},
          {"rung", t.rung ? nlohmann::ordered_json(*t.rung) : nlohmann::ordered_json(nullptr)},
          // A hyperparameter study's own record of the trial: its slots, strategy, runs, checkpoint.
          {"hpo", t.hpo_json.empty() ? nlohmann::ordered_json(nullptr)
                                     : nlohmann::ordered_json::parse(t.hpo_json, nullptr, false)},
          // Where it ran (the backend's name), the controller process that started it ("host:pid")
          // and when that controller last said it was alive.
          {"location", t.location},
          {"worker", t.worker},
          {"heartbeat_unix_s", optional_json(t.heartbeat_unix_s)}};
}

std::string format_predictions(const std::vector<store::StoredTrial>& trials) {
  std::string out;
  for (const store::StoredTrial& t : trials) {
    if (t.prediction_json.empty()) continue;
    const nlohmann::ordered_json p = nlohmann::ordered_json::parse(t.prediction_json, nullptr, false);
    if (!p.is_object()) continue;
    const auto number = [&](const char* key) -> std::optional<double> {
      if (p.contains(key) && p[key].is_number()) return p[key].get<double>();
      return std::nullopt;
    };
    std::string predicted = "-", error = "";
    if (const auto mu = number("predicted_throughput")) {
      const auto sd = number("predicted_throughput_sd");
      predicted = sd ? fmt::format("{:.4g} +- {:.2g}", *mu, *sd) : fmt::format("{:.4g}", *mu);
      if (t.throughput && *t.throughput > 0) error = fmt::format("{:+.1f}%", 100 * (*mu - *t.throughput) / *t.throughput);
    } else if (const auto prior = number("prior_throughput")) {
      predicted = fmt::format("{:.4g} (prior)", *prior);
      if (t.throughput && *t.throughput > 0) error = fmt::format("{:+.1f}%", 100 * (*prior - *t.throughput) / *t.throughput);
    }
    std::string memory = "-";
    const auto m = number("predicted_memory_bytes") ? number("predicted_memory_bytes") : number("prior_memory_bytes");
    if (m) memory = units::format_bytes(*m);
    const std::string measured_memory = t.peak_memory_bytes ? units::format_bytes(*t.peak_memory_bytes) : "-";
    const std::string p_fit = number("p_fit") ? fmt::format("{:.2f}", *number("p_fit")) : "";
    const std::string source = p.contains("source") && p["source"].is_string() ? p["source"].get<std::string>() : "";
    out += fmt::format("{:>5}  {:<13} {:>22} {:>12} {:>8}  {:>10} {:>10} {:>5}  {}\n", t.number, t.status, predicted,
                       throughput_text(t), error, memory, measured_memory, p_fit, source);
  }
  if (out.empty()) return out;
  return fmt::format("predicted vs measured (throughput in steps/s; memory = peak per GPU):\n{:>5}  {:<13} {:>22} {:>12} "
                     "{:>8}  {:>10} {:>10} {:>5}  {}\n",
                     "trial", "status", "predicted", "measured", "error", "pred. mem", "meas. mem", "P(fit)", "why chosen") +
         out;
}

std::string format_model(const std::string& model_json) {
  const nlohmann::ordered_json m = nlohmann::ordered_json::parse(model_json, nullptr, false);
  if (!m.is_object() || m.empty()) return "";
  std::string out = fmt::format("fitted model ({} search, prior: {}):\n", m.value("algorithm", "?"), m.value("prior", "?"));
  for (const char* which : {"throughput", "memory"}) {
    if (!m.contains(which)) continue;
    const nlohmann::ordered_json& g = m[which];
    // Shortest first: a short lengthscale means the quantity changes quickly along that knob (OPPA Table 5).
    std::vector<std::pair<double, std::string>> ls;
    for (const auto& [name, value] : g["lengthscales"].items()) ls.emplace_back(value.get<double>(), name);
    std::sort(ls.begin(), ls.end());
    out += fmt::format("  {} GP, learned lengthscales (shortest = matters most):", which);
    for (const auto& [value, name] : ls) out += fmt::format(" {} {:.3g}", name, value);
    out += "\n";
    if (g.contains("prior_coefficients")) {
      out += "    prior coefficients:";
      for (const auto& [name, value] : g["prior_coefficients"].items()) out += fmt::format(" {} {:.3g}", name, value.get<double>());
      out += "\n";
    }
  }
  if (m.contains("throughput_coefficients")) {  // costmodel: the fitted cost model alone
    out += "  throughput coefficients:";
    for (const auto& [name, value] : m["throughput_coefficients"].items()) out += fmt::format(" {} {:.3g}", name, value.get<double>());
    out += "\n";
  }
  if (m.contains("prior_note")) out += fmt::format("  ({})\n", m["prior_note"].get<std::string>());
  if (m.contains("feasibility") && m["feasibility"].is_object()) {  // tune/bayes.h "Failures"
    const nlohmann::ordered_json& f = m["feasibility"];
    std::string failures;
    for (const auto& [kind, n] : f["failures"].items()) failures += fmt::format("{}{} {}", failures.empty() ? "" : ", ", n.get<int>(), kind);
    std::vector<std::pair<double, std::string>> ls;
    for (const auto& [name, value] : f["lengthscales"].items()) {
      // A categorical of a hyperparameter study lists one per choice, all equal (one per parameter).
      const nlohmann::ordered_json& l = value.is_array() && !value.empty() ? value[0] : value;
      if (l.is_number()) ls.emplace_back(l.get<double>(), name);
    }
    std::sort(ls.begin(), ls.end());
    out += fmt::format("  feasibility classifier on {} trials (failed: {}), lengthscales (shortest = decides most):",
                       f["observations"].get<int>(), failures);
    for (const auto& [value, name] : ls) out += fmt::format(" {} {:.3g}", name, value);
    out += "\n";
  }
  return out;
}

nlohmann::ordered_json trials_json(const std::vector<store::StoredTrial>& trials, std::optional<std::size_t> best) {
  nlohmann::ordered_json out;
  if (best) {
    const store::StoredTrial& t = trials[*best];
    out["best"] = {{"number", t.number},
                   {"params", nlohmann::ordered_json::parse(t.params_json, nullptr, false)},
                   {"throughput", optional_json(t.throughput)},
                   {"throughput_ci", ci_json(t)},
                   {"peak_memory_bytes", optional_json(t.peak_memory_bytes)},
                   {"command", t.command}};
    if (t.objective) out["best"]["objective"] = *t.objective;
  } else {
    out["best"] = nullptr;
  }
  nlohmann::ordered_json counts = nlohmann::ordered_json::object();
  for (const auto& [name, n] : status_counts(trials)) counts[name] = n;
  out["status_counts"] = counts;
  out["failures"] = failures_json(trials);
  out["trials"] = nlohmann::ordered_json::array();
  for (const store::StoredTrial& t : trials) out["trials"].push_back(to_json(t));
  return out;
}

namespace {

// The failed trials' kinds and times (failures_json).
struct FailureCost {
  int trials = 0, never_again = 0;
  std::map<std::string, int> kinds;
  double seconds = 0, of_seconds = 0;
};

FailureCost failure_cost(const std::vector<store::StoredTrial>& trials) {
  FailureCost c;
  for (const store::StoredTrial& t : trials) {
    if (t.status == "running" || t.status == "interrupted") continue;
    const double seconds = std::max(0.0, t.ended_unix_s - t.started_unix_s);
    c.of_seconds += seconds;
    if (t.status != "oom" && t.status != "infeasible" && t.status != "failed" && t.status != "timeout") continue;
    const trial::FailureKind kind =
        trial::classify_failure(trial::parse_trial_status(t.status), t.exit_code, t.exit_signal, t.steps);
    ++c.trials;
    ++c.kinds[trial::to_string(kind)];
    c.never_again += trial::is_deterministic(kind) ? 1 : 0;
    c.seconds += seconds;
  }
  return c;
}

}  // namespace

nlohmann::ordered_json failures_json(const std::vector<store::StoredTrial>& trials) {
  const FailureCost c = failure_cost(trials);
  nlohmann::ordered_json kinds = nlohmann::ordered_json::object();
  for (const auto& [kind, n] : c.kinds) kinds[kind] = n;
  return {{"trials", c.trials},
          {"kinds", kinds},
          {"never_again", c.never_again},
          {"seconds", c.seconds},
          {"of_seconds", c.of_seconds}};
}

std::string failure_line(const std::vector<store::StoredTrial>& trials) {
  const FailureCost c = failure_cost(trials);
  if (c.trials == 0) return "";
  std::string kinds;
  for (const auto& [kind, n] : c.kinds) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, kind);
  return fmt::format("failed: {} trials ({}; {} never run again), {} of the {} the finished trials ran\n", c.trials, kinds,
                     c.never_again, units::format_duration(c.seconds), units::format_duration(c.of_seconds));
}

nlohmann::ordered_json to_json(const hpo::HpoSummary& s) {
  // Each kind of study with the keys it always had.
  nlohmann::ordered_json j =
      s.space ? nlohmann::ordered_json{{"study", s.name},
                                       {"algorithm", s.sampler},
                                       {"valid_points", s.space->valid_points},
                                       {"cartesian_points", s.space->cartesian_points},
                                       {"planned_points", s.space->planned_points},
                                       {"reused", s.reused},
                                       {"requeued", s.requeued},
                                       {"retried_failed", s.retried_failed},
                                       {"leftover_processes_killed", s.leftover_processes_killed},
                                       {"started", s.started},
                                       {"reaped", s.reaped},
                                       {"dropped", s.dropped}}
              : nlohmann::ordered_json{{"study", s.name},
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
                                       {"serving_processes", s.serving_processes},
                                       {"fused_trials", s.fused_trials}};
  j["stop"] = tune::to_string(s.stop);
  j["elapsed_s"] = s.elapsed_s;
  if (!s.fusion_probe.is_null()) j["fusion_probe"] = s.fusion_probe;
  j.update(trials_json(s.trials, s.best));
  if (!s.objectives.empty()) j["pareto_front"] = pareto_front_json(s.trials, pareto_front_of(s.trials, s.objectives, s.directions));
  return j;
}

std::string format_trial_started(const store::StoredTrial& t) {
  return fmt::format("trial {} started: {}", t.number, params_words(t.params_json));
}

std::string format_trial_finished(const store::StoredTrial& t) {
  std::string out = fmt::format("trial {} {}: {}", t.number, t.status, params_words(t.params_json));
  if (t.objective) out += fmt::format("  objective {:.6g}", *t.objective);
  if (t.rung) out += fmt::format("  rung {}", *t.rung);
  if (t.throughput) out += fmt::format("  {} {}", throughput_text(t), ci_text(t));
  if (t.peak_memory_bytes) out += fmt::format("  peak {}", units::format_bytes(*t.peak_memory_bytes));
  if (t.malformed_lines > 0) out += fmt::format("  {} malformed protocol lines ignored", t.malformed_lines);
  if (!t.reason.empty()) out += "  (" + t.reason + ")";
  return out;
}

namespace {

// The trials the study runs to: --max-trials, else (and at most) the space's valid points; 0: no
// count.
std::uint64_t trial_target(const ProgressView& v) {
  const std::uint64_t max_trials = v.max_trials > 0 ? static_cast<std::uint64_t>(v.max_trials) : 0;
  if (max_trials > 0 && v.valid_points > 0) return std::min(max_trials, v.valid_points);
  return max_trials > 0 ? max_trials : v.valid_points;
}

// A parameter's value as the table shows it: floats (sampled hyperparameters) to 4 significant
// digits, as params_words does.
std::string param_cell(const nlohmann::ordered_json& value) {
  return value.is_number_float() ? fmt::format("{:.4g}", value.get<double>()) : tune::word(value);
}

// `text` in at most `width` characters, ".." marking a cut.
std::string cut(const std::string& text, std::size_t width) {
  if (text.size() <= width) return text;
  if (width <= 2) return text.substr(0, width);
  return text.substr(0, width - 2) + "..";
}

struct Column {
  std::string header;
  std::vector<std::string> cells;
  bool right = true;  // numbers right-aligned, words left
  std::size_t width = 0;
};

std::size_t natural_width(const Column& c) {
  std::size_t w = c.header.size();
  for (const std::string& cell : c.cells) w = std::max(w, cell.size());
  return w;
}

std::size_t table_width(const std::vector<Column>& columns) {
  std::size_t w = 0;
  for (const Column& c : columns) w += c.width;
  return w + 2 * (columns.empty() ? 0 : columns.size() - 1);
}

}  // namespace

std::string progress_eta(const ProgressView& v) {
  std::vector<std::string> parts;
  const std::uint64_t target = trial_target(v);
  const std::uint64_t finished = static_cast<std::uint64_t>(std::max(0, v.finished));
  // Trials still to finish over the rate this run finished them at (running trials in parallel
  // included): (target - finished) * elapsed / finished_this_run.
  if (target > finished && v.finished_this_run > 0 && v.elapsed_s > 0) {
    const double eta_s = static_cast<double>(target - finished) * v.elapsed_s / v.finished_this_run;
    parts.push_back(fmt::format("ETA ~{} (estimate: {} trial{} finished in {})", clock(eta_s), v.finished_this_run,
                                v.finished_this_run == 1 ? "" : "s", clock(v.elapsed_s)));
  }
  if (v.budget_s > 0) parts.push_back(fmt::format("budget: {} left", clock(std::max(0.0, v.budget_s - v.elapsed_s))));
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string format_progress(const std::vector<tune::TrialProgress>& running, const ProgressView& v) {
  const std::uint64_t target = trial_target(v);
  std::string out = fmt::format("{} running, {}{} finished | {}", running.size(), v.finished,
                                target > 0 ? fmt::format(" of {}", target) : "", clock(v.elapsed_s));
  if (const std::string eta = progress_eta(v); !eta.empty()) out += " | " + eta;
  if (v.best)
    out += fmt::format(" | best: trial {} {} {}", v.best->number,
                       v.best->objective ? fmt::format("objective {:.6g}", *v.best->objective) : throughput_text(*v.best),
                       params_words(v.best->params_json));
  out += "\n";
  if (running.empty()) return out;

  // The parameters, in the order they first appear (a conditional one may be absent from a row).
  std::vector<nlohmann::ordered_json> params;
  std::vector<std::string> names;
  for (const tune::TrialProgress& r : running) {
    nlohmann::ordered_json p = nlohmann::ordered_json::parse(r.params_json, nullptr, false);
    if (!p.is_object()) p = nlohmann::ordered_json::object();
    for (const auto& [name, value] : p.items())
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    params.push_back(std::move(p));
  }
  // A metric objective: its value and step; otherwise the step time and steps/s.
  const auto with_metric = std::find_if(running.begin(), running.end(),
                                        [](const tune::TrialProgress& r) { return !r.metric_name.empty(); });
  const bool metric = with_metric != running.end();
  Column number{"trial", {}}, status{"status", {}, false}, steps{"steps", {}}, elapsed{"elapsed", {}};
  Column latest{metric ? with_metric->metric_name : "step time", {}};
  Column latest_detail{metric ? "at step" : "steps/s", {}};
  Column words{"parameters", {}, false};
  std::vector<Column> param_columns;
  param_columns.reserve(names.size());
  for (const std::string& name : names) param_columns.push_back({name, {}, false});
  for (std::size_t i = 0; i < running.size(); ++i) {
    const tune::TrialProgress& r = running[i];
    number.cells.push_back(std::to_string(r.number));
    for (std::size_t k = 0; k < names.size(); ++k)
      param_columns[k].cells.push_back(params[i].contains(names[k]) ? param_cell(params[i][names[k]]) : "-");
    words.cells.push_back(params_words(r.params_json));
    status.cells.push_back(r.status);
    if (metric) {
      latest.cells.push_back(r.metric_value ? fmt::format("{:.6g}", *r.metric_value) : "-");
      latest_detail.cells.push_back(r.metric_value ? std::to_string(r.metric_step) : "-");
    } else {
      latest.cells.push_back(r.last_step_time_s > 0 ? units::format_duration(r.last_step_time_s) : "-");
      latest_detail.cells.push_back(r.last_step_time_s > 0 ? fmt::format("{:.4g}", 1 / r.last_step_time_s) : "-");
    }
    steps.cells.push_back(fmt::format("{}/{}", r.steps, r.max_steps));
    elapsed.cells.push_back(clock(r.elapsed_s));
  }
  std::vector<Column> columns{number};
  columns.insert(columns.end(), param_columns.begin(), param_columns.end());
  for (Column* c : {&status, &latest, &latest_detail, &steps, &elapsed}) columns.push_back(*c);
  for (Column& c : columns) c.width = natural_width(c);
  if (v.width > 0 && table_width(columns) > v.width) {
    // One column of words instead, as wide as what is left (at least 10), cut to fit.
    columns.erase(columns.begin() + 1, columns.begin() + 1 + static_cast<long>(param_columns.size()));
    const std::size_t rest = table_width(columns) + 2;
    words.width = std::min(natural_width(words), std::max<std::size_t>(10, v.width > rest ? v.width - rest : 0));
    for (std::string& cell : words.cells) cell = cut(cell, words.width);
    columns.insert(columns.begin() + 1, words);
  }
  auto line = [&](auto&& text_of) {
    std::string row;
    for (std::size_t k = 0; k < columns.size(); ++k) {
      const std::string text = text_of(columns[k]);
      if (k > 0) row += "  ";
      row += columns[k].right ? fmt::format("{:>{}}", text, columns[k].width) : fmt::format("{:<{}}", text, columns[k].width);
    }
    while (!row.empty() && row.back() == ' ') row.pop_back();
    return row + "\n";
  };
  out += line([](const Column& c) { return c.header; });
  for (std::size_t i = 0; i < running.size(); ++i) out += line([&](const Column& c) { return c.cells[i]; });
  return out;
}

namespace {

// The best trial (hpo::best_hpo_trial) in three lines -- "best: trial 3  dp=2 tp=4", what it
// measured, the command that reproduces it -- or why there is none. What it measured: of a
// configuration study (`objective` empty) the throughput with its 95% CI and the step time, of a
// hyperparameter study the objective and the throughput.
std::string format_best(const std::vector<store::StoredTrial>& trials, std::optional<std::size_t> best,
                        const std::string& objective) {
  if (!best)
    return objective.empty() ? "best: none (no trial completed with a measured throughput)\n"
                             : "best: none (no trial completed with a value of the objective)\n";
  const store::StoredTrial& t = trials[*best];
  std::string out = fmt::format("best: trial {}  {}\n  ", t.number, params_words(t.params_json));
  if (objective.empty())
    out += fmt::format("throughput {} (95% CI {}), step time {}", throughput_text(t), ci_text(t),
                       units::format_duration(1 / *t.throughput));
  else
    out += fmt::format("{} {}{}", objective, objective_text(t.objective),
                       t.throughput ? fmt::format(", {:.4g} steps/s", *t.throughput) : "");
  if (t.peak_memory_bytes) out += fmt::format(", peak memory {}", units::format_bytes(*t.peak_memory_bytes));
  // An in-process trial (Python's create_study, ask/tell) has no command to run again.
  return out + (t.command.empty() ? "\n" : fmt::format("\n  reproduce: {}\n", t.command));
}

}  // namespace

std::string format_trials(const std::vector<store::StoredTrial>& trials, std::optional<std::size_t> best) {
  std::string out = fmt::format("{:>5}  {:<13} {:>16}  {:<22} {:>11} {:>6}  {}\n", "trial", "status", "throughput",
                                "95% CI", "peak memory", "steps", "parameters / reason");
  // Where trials ran is worth a line when it is not this host, and which worker when several shared
  // the study (--worker).
  std::set<std::string> workers;
  for (const store::StoredTrial& t : trials) workers.insert(t.worker);
  for (const store::StoredTrial& t : trials) {
    out += fmt::format("{:>5}  {:<13} {:>16}  {:<22} {:>11} {:>6}  {}\n", t.number, t.status, throughput_text(t),
                       ci_text(t), t.peak_memory_bytes ? units::format_bytes(*t.peak_memory_bytes) : "-", t.steps,
                       params_words(t.params_json));
    const bool remote = !t.location.empty() && t.location != "local";
    if (remote || workers.size() > 1)
      out += fmt::format("{:>7}where: {}{}\n", "", remote ? t.location : "local",
                         workers.size() > 1 ? fmt::format(" (worker {})", t.worker) : "");
    if (!t.reason.empty()) out += fmt::format("{:>7}reason: {}\n", "", t.reason);
  }
  out += fmt::format("\n{} trials: {}\n", trials.size(), status_line(trials));
  out += failure_line(trials);
  return out + format_best(trials, best, "");
}

std::string format_hpo_trials(const std::vector<store::StoredTrial>& trials, std::optional<std::size_t> best,
                              const std::string& objective, bool many_objectives) {
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
  return many_objectives ? out : out + format_best(trials, best, objective);
}

std::string format_space_size(const tune::SpaceSize& size) {
  if (size.planned_points > 0)
    return fmt::format("{} valid points (of {} configurations the planner enumerated; the rest are predicted not to "
                       "fit in memory)",
                       size.valid_points, size.planned_points);
  if (size.cartesian_points > 0)
    return fmt::format("{} valid points of {} combinations", size.valid_points, size.cartesian_points);
  return fmt::format("{} listed points", size.valid_points);
}

std::string format_study(const hpo::HpoSummary& s) {
  // What differs by kind is chosen here: a configuration study is told as it always was (its space's
  // size, the fastest trials with their confidence intervals), a hyperparameter study by its sampler,
  // pruner and objective.
  const bool configurations = s.space.has_value();
  std::string out;
  if (configurations) {
    out += fmt::format("study '{}' ({}): {}\n", s.name, s.sampler, format_space_size(*s.space));
    out += fmt::format("this run: {} trials started in {}; stopped: {}\n", s.started, clock(s.elapsed_s),
                       tune::to_string(s.stop));
    if (s.reused > 0 || s.requeued > 0)
      out += fmt::format("resumed: {} finished trials reused, {} interrupted trials run again{}{}\n", s.reused,
                         s.requeued,
                         s.retried_failed > 0
                             ? fmt::format(" ({} of them failed before: --retry-failed)", s.retried_failed)
                             : "",
                         s.leftover_processes_killed > 0
                             ? fmt::format(" ({} leftover processes killed)", s.leftover_processes_killed)
                             : "");
  } else {
    if (s.objectives.empty())
      out += fmt::format("study '{}': {} sampler, {} pruner, objective {} ({})\n", s.name, s.sampler, s.pruner,
                         s.objective, hpo::to_string(s.direction));
    else
      out += fmt::format("study '{}': {} sampler, {} pruner, objectives {}\n", s.name, s.sampler, s.pruner, [&] {
        std::string what;
        for (std::size_t i = 0; i < s.objectives.size(); ++i)
          what += fmt::format("{}{} ({})", i ? ", " : "", s.objectives[i], hpo::to_string(s.directions[i]));
        return what;
      }());
    out += fmt::format("this run: {} new trials, {} promotions, {} reused, {} requeued{}; {} after {}\n", s.started,
                       s.promotions, s.reused, s.requeued,
                       s.retried_failed > 0 ? fmt::format(" ({} failed before: --retry-failed)", s.retried_failed) : "",
                       tune::to_string(s.stop), units::format_duration(s.elapsed_s));
  }
  if (s.reaped > 0 || s.dropped > 0)
    out += fmt::format("worker: {} trials of dead workers marked interrupted (no heartbeat), {} results of {} "
                       "taken from this worker dropped\n",
                       s.reaped, s.dropped, configurations ? "trials" : "runs");
  if (s.fused_groups > 0)
    out += fmt::format("fused: {} of the new trials trained in {} fused groups\n", s.fused_trials, s.fused_groups);
  if (s.serving_processes > 0)
    out += fmt::format("served: {} runs by {} processes\n", s.started + s.promotions, s.serving_processes);
  if (!s.fusion_probe.is_null()) out += format_fusion_probe(s.fusion_probe);
  if (configurations) {
    out += fmt::format("trials: {}\n", status_line(s.trials));
  } else {
    std::map<std::string, int> counts;
    for (const store::StoredTrial& t : s.trials) ++counts[t.status];
    out += "trials:";
    for (const auto& [status, n] : counts) out += fmt::format(" {} {};", n, status);
    out.back() = '\n';
  }
  out += failure_line(s.trials);
  if (!configurations) out += format_pruning(s.trials);
  // Several objectives: the Pareto front, not the best.
  if (!s.objectives.empty())
    return out + "\n" + format_pareto_front(s.trials, pareto_front_of(s.trials, s.objectives, s.directions));
  // The five best completed trials, by the rule of the best (hpo::best_hpo_trial).
  std::vector<std::size_t> ranked;
  for (std::size_t i = 0; i < s.trials.size(); ++i)
    if (s.trials[i].status == "completed" && hpo::trial_value(s.trials[i])) ranked.push_back(i);
  const auto loss = [&](std::size_t i) { return hpo::as_loss(s.direction, *hpo::trial_value(s.trials[i])); };
  std::stable_sort(ranked.begin(), ranked.end(), [&](std::size_t a, std::size_t b) { return loss(a) < loss(b); });
  if (!ranked.empty())
    out += configurations ? "\nfastest completed trials:\n"
                          : fmt::format("\n{:>5}  {:>12}  {}\n", "trial", s.objective.substr(0, 12), "parameters");
  for (std::size_t k = 0; k < std::min<std::size_t>(5, ranked.size()); ++k) {
    const store::StoredTrial& t = s.trials[ranked[k]];
    out += configurations ? fmt::format("  {:>4}  {:>16}  {:<22} {}\n", t.number, throughput_text(t), ci_text(t),
                                        params_words(t.params_json))
                          : fmt::format("{:>5}  {:>12}  {}\n", t.number, objective_text(t.objective),
                                        params_words(t.params_json));
  }
  return out + "\n" + format_best(s.trials, s.best, configurations ? "" : s.objective);
}

}  // namespace paratune
