#include "paratune/report/study_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "paratune/hpo/ask_tell.h"
#include "paratune/hpo/importance.h"
#include "paratune/hpo/retrain.h"
#include "paratune/hpo/study.h"
#include "paratune/report/hpo_report.h"
#include "paratune/report/tune_report.h"
#include "paratune/spec/error.h"

namespace paratune {
namespace {

bool is_retrain(const store::StudyInfo& s) { return s.name.find(".retrain.") != std::string::npos; }

nlohmann::ordered_json parsed_or_null(const std::string& text) {
  if (text.empty()) return nullptr;
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::ordered_json(nullptr) : j;
}

// A search of parallel configurations: each listed parameter's main effect on the throughput, as
// hpo::parameter_importance measures it (hpo::explained_share: epsilon squared of the trials grouped
// by the parameter's value), over the completed trials; nothing below hpo::kMinImportanceTrials.
nlohmann::ordered_json listed_importance(const std::vector<store::StoredTrial>& trials) {
  std::vector<nlohmann::json> params;
  std::vector<double> values;  // throughput
  for (const store::StoredTrial& t : trials)
    if (t.status == "completed" && t.throughput && std::isfinite(*t.throughput)) {
      nlohmann::json p = nlohmann::json::parse(t.params_json, nullptr, false);
      if (p.is_object()) {
        params.push_back(std::move(p));
        values.push_back(*t.throughput);
      }
    }
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  if (values.size() < hpo::kMinImportanceTrials) return out;
  std::vector<std::pair<double, nlohmann::ordered_json>> shares;
  for (const auto& [name, value] : params.front().items()) {
    std::map<std::string, int> index;  // a value's text -> its group
    std::vector<int> groups;
    for (const nlohmann::json& p : params) {
      const std::string key = p.contains(name) ? p[name].dump() : "-";
      groups.push_back(index.emplace(key, static_cast<int>(index.size())).first->second);
    }
    const std::optional<double> share = hpo::explained_share(groups, values);
    if (!share) continue;  // more values than the trials can tell apart
    shares.emplace_back(*share, nlohmann::ordered_json{{"parameter", name}, {"share", *share}, {"groups", index.size()},
                                                       {"trials", values.size()}});
  }
  std::stable_sort(shares.begin(), shares.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& s : shares) out.push_back(std::move(s.second));
  return out;
}

// Each parameter's type from the space in the study's identity: a hyperparameter space says it
// (hpo::Space::describe); a search of configurations lists each parameter's values
// (tune::SearchSpace::describe), which are categorical in that order. A define-by-run study has
// none: `analysed`, the space its trials revealed (TrialAnalysis::space).
nlohmann::ordered_json parameter_types(const nlohmann::ordered_json& identity, const std::optional<hpo::Space>& analysed) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  const bool stated = identity.is_object() && identity.contains("space") && identity["space"].is_object();
  if (!stated && !analysed) return out;
  const nlohmann::ordered_json space = stated ? identity["space"] : analysed->describe();
  if (!space.contains("parameters") || !space["parameters"].is_object()) return out;
  for (const auto& [name, p] : space["parameters"].items()) {
    if (p.is_array()) {
      out[name] = {{"type", "categorical"}, {"choices", p}};
    } else if (p.is_object() && p.contains("type")) {
      nlohmann::ordered_json described{{"type", p["type"]}, {"log", p.value("log", false)}};
      for (const char* key : {"low", "high", "choices"})
        if (p.contains(key)) described[key] = p[key];
      out[name] = std::move(described);
    }
  }
  return out;
}

}  // namespace

nlohmann::ordered_json reevaluations_json(const store::StudyStore& store, const std::string& name,
                                          const StudyObjective& measured) {
  const std::vector<hpo::RetrainResult> runs = hpo::stored_reevaluations(store, name, measured.objective);
  const std::optional<std::size_t> chosen = hpo::best_reevaluation(runs, measured.direction);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const hpo::RetrainResult& r : runs) list.push_back(to_json(r));
  return {{"chosen", chosen ? nlohmann::ordered_json(runs[*chosen].of_trial) : nlohmann::ordered_json(nullptr)},
          {"runs", list}};
}

const store::StudyInfo& choose_study(const std::vector<store::StudyInfo>& studies, const std::string& name,
                                     const std::string& locator) {
  if (studies.empty()) throw Error(fmt::format("{}: holds no study", locator));
  const auto searches = std::count_if(studies.begin(), studies.end(), [](const auto& s) { return !is_retrain(s); });
  std::vector<std::string> names;
  const store::StudyInfo* chosen = nullptr;
  for (const store::StudyInfo& s : studies) {
    names.push_back(s.name);
    if ((name.empty() && searches == 1 && !is_retrain(s)) || s.name == name) chosen = &s;
  }
  if (chosen) return *chosen;
  std::string listed;
  for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
  throw Error(fmt::format("{}: {}", locator,
                          name.empty() ? fmt::format("holds several studies; choose one by name ({})", listed)
                                       : unknown_name_message("study", name, names)));
}

StudyObjective study_objective(const store::StudyInfo& study) {
  const nlohmann::json identity = nlohmann::json::parse(study.config_json, nullptr, false);
  StudyObjective measured;
  if (!identity.is_object() || identity.value("kind", "") != "hpo") return measured;
  measured.hpo = true;
  measured.objective = identity.value("objective", measured.objective);
  measured.direction = hpo::parse_direction(identity.value("direction", std::string("maximize")));
  if (identity.contains("objectives") && identity["objectives"].is_array() && identity.contains("directions") &&
      identity["directions"].is_array() && identity["objectives"].size() == identity["directions"].size()) {
    for (const auto& o : identity["objectives"]) measured.objectives.push_back(o.get<std::string>());
    for (const auto& d : identity["directions"]) measured.directions.push_back(hpo::parse_direction(d.get<std::string>()));
  }
  return measured;
}

namespace {

// The study's space: as created, or (define-by-run) as its trials revealed it; none for a search of
// configurations.
std::optional<hpo::Space> study_space(const store::StudyStore& store, const store::StudyInfo& study,
                                      const std::vector<store::StoredTrial>& trials) {
  const nlohmann::ordered_json identity = parsed_or_null(study.config_json);
  if (!identity.is_object()) return std::nullopt;
  // The space as the study was created, its parameters in their order.
  if (identity.contains("space"))
    return hpo::Space::parse(identity["space"].dump(), fmt::format("{} (study '{}')", store.locator(), study.name));
  // Define-by-run (create_study): the space its trials revealed.
  if (!identity.contains("space_by")) return std::nullopt;
  std::vector<hpo::ParamSpec> revealed = hpo::revealed_parameters(trials);
  if (revealed.empty()) return std::nullopt;
  return hpo::Space(std::move(revealed), {}, fmt::format("{} (study '{}', as its trials revealed it)", store.locator(),
                                                         study.name));
}

}  // namespace

TrialAnalysis analyse_trials(const store::StudyStore& store, const store::StudyInfo& study,
                             const std::vector<store::StoredTrial>& trials) {
  const StudyObjective measured = study_objective(study);
  TrialAnalysis analysis;
  for (const store::StoredTrial& t : trials)
    if (t.status != "interrupted")
      analysis.records.push_back(hpo::record_of(t, measured.objective, measured.objectives));
  analysis.space = study_space(store, study, trials);
  if (analysis.space) analysis.importance = hpo::parameter_importance(*analysis.space, analysis.records);
  return analysis;
}

nlohmann::ordered_json study_data(const store::StudyStore& store, const store::StudyInfo& study) {
  const nlohmann::ordered_json identity = parsed_or_null(study.config_json);
  const StudyObjective measured = study_objective(study);
  const std::vector<store::StoredTrial> trials = store.trials(study.id, /*with_steps=*/measured.hpo);
  const TrialAnalysis analysis = measured.hpo ? analyse_trials(store, study, trials) : TrialAnalysis{};
  nlohmann::ordered_json out{{"study", study.name},
                             {"config", identity},
                             {"kind", measured.hpo ? "hpo" : "configurations"},
                             {"parameters", parameter_types(identity, analysis.space)},
                             {"objective", measured.objective},
                             {"direction", hpo::to_string(measured.direction)}};
  // Several objectives have a Pareto front, not one best.
  out.update(trials_json(trials, measured.objectives.empty() ? hpo::best_hpo_trial(trials, measured.direction)
                                                             : std::nullopt));
  const bool throughput = measured.objective == hpo::kThroughputObjective;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const store::StoredTrial& t = trials[i];
    nlohmann::ordered_json& j = out["trials"][i];
    const std::optional<double> value = throughput ? t.throughput : t.objective;
    j["value"] = value ? nlohmann::ordered_json(*value) : nullptr;
    if (!measured.hpo) continue;
    nlohmann::ordered_json curve = nlohmann::ordered_json::array();
    for (const trial::MetricReport& m : t.metrics)
      if (m.name == measured.objective) curve.push_back({m.step.value_or(0), m.value});
    j["curve"] = std::move(curve);
  }
  if (!measured.hpo) {
    out["importance"] = listed_importance(trials);
  } else {
    out["curves"] = curves_json(analysis.records, measured.direction);
    out["importance"] = importance_json(analysis.importance);
    // Only a study with retrains has the key: what an older study shows stays as it was.
    if (auto re = reevaluations_json(store, study.name, measured); !re["runs"].empty()) out["reevaluations"] = std::move(re);
  }
  if (!measured.objectives.empty()) {  // only then: what a study of one objective shows stays as it was
    for (std::size_t i = 0; i < trials.size(); ++i) {
      const std::optional<std::vector<double>> v = hpo::trial_values(trials[i], measured.objectives);
      out["trials"][i]["values"] = v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
    }
    nlohmann::ordered_json front =
        pareto_front_json(trials, pareto_front_of(trials, measured.objectives, measured.directions));
    out["objectives"] = measured.objectives;
    out["directions"] = front["directions"];
    out["pareto_front"] = std::move(front);
  }
  out["model"] = parsed_or_null(study.model_json);
  return out;
}

}  // namespace paratune
