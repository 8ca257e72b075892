#include "paratune/report/study_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "paratune/hpo/importance.h"
#include "paratune/hpo/study.h"
#include "paratune/report/hpo_report.h"
#include "paratune/report/tune_report.h"
#include "paratune/spec/error.h"
#include "paratune/tune/study.h"

namespace paratune {
namespace {

bool is_retrain(const store::StudyInfo& s) { return s.name.find(".retrain.") != std::string::npos; }

nlohmann::ordered_json parsed_or_null(const std::string& text) {
  if (text.empty()) return nullptr;
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::ordered_json(nullptr) : j;
}

// A search of parallel configurations: each listed parameter's main effect on the throughput, as
// hpo::parameter_importance measures it (eta squared: the share of the variance between the groups
// of trials that share the parameter's value), over the completed trials; nothing below 4 of them.
nlohmann::ordered_json listed_importance(const std::vector<store::StoredTrial>& trials) {
  std::vector<std::pair<nlohmann::json, double>> done;  // (params, throughput)
  for (const store::StoredTrial& t : trials)
    if (t.status == "completed" && t.throughput && std::isfinite(*t.throughput)) {
      nlohmann::json params = nlohmann::json::parse(t.params_json, nullptr, false);
      if (params.is_object()) done.emplace_back(std::move(params), *t.throughput);
    }
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  if (done.size() < 4) return out;
  double mean = 0;
  for (const auto& d : done) mean += d.second;
  mean /= static_cast<double>(done.size());
  double total = 0;
  for (const auto& d : done) total += (d.second - mean) * (d.second - mean);
  std::vector<std::pair<double, nlohmann::ordered_json>> shares;
  for (const auto& [name, value] : done.front().first.items()) {
    std::map<std::string, std::pair<double, int>> groups;  // value -> (sum, count)
    for (const auto& d : done) {
      auto& [sum, count] = groups[d.first.contains(name) ? d.first[name].dump() : "-"];
      sum += d.second;
      ++count;
    }
    double between = 0;
    for (const auto& [group, sc] : groups) between += sc.second * (sc.first / sc.second - mean) * (sc.first / sc.second - mean);
    const double share = total > 0 ? between / total : 0;
    shares.emplace_back(share, nlohmann::ordered_json{{"parameter", name}, {"share", share}, {"groups", groups.size()}});
  }
  std::stable_sort(shares.begin(), shares.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& s : shares) out.push_back(std::move(s.second));
  return out;
}

}  // namespace

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

nlohmann::ordered_json study_data(const store::StudyStore& store, const store::StudyInfo& study) {
  const nlohmann::ordered_json identity = parsed_or_null(study.config_json);
  const bool hpo = identity.is_object() && identity.value("kind", "") == "hpo";
  const std::vector<store::StoredTrial> trials = store.trials(study.id, /*with_steps=*/hpo);
  nlohmann::ordered_json out{{"study", study.name}, {"config", identity}, {"kind", hpo ? "hpo" : "configurations"}};
  if (!hpo) {
    out["objective"] = "throughput";
    out["direction"] = "maximize";
    out.update(trials_json(trials, tune::best_trial(trials)));
    for (std::size_t i = 0; i < trials.size(); ++i)
      out["trials"][i]["value"] = trials[i].throughput ? nlohmann::ordered_json(*trials[i].throughput) : nullptr;
    out["importance"] = listed_importance(trials);
    out["model"] = parsed_or_null(study.model_json);
    return out;
  }
  const std::string objective = identity.value("objective", std::string(hpo::kThroughputObjective));
  const hpo::Direction direction = hpo::parse_direction(identity.value("direction", std::string("maximize")));
  out["objective"] = objective;
  out["direction"] = hpo::to_string(direction);
  out.update(trials_json(trials, hpo::best_hpo_trial(trials, direction)));
  std::vector<hpo::TrialRecord> records;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const store::StoredTrial& t = trials[i];
    nlohmann::ordered_json& j = out["trials"][i];
    const std::optional<double> value = objective == hpo::kThroughputObjective ? t.throughput : t.objective;
    j["value"] = value ? nlohmann::ordered_json(*value) : nullptr;
    nlohmann::ordered_json curve = nlohmann::ordered_json::array();
    for (const trial::MetricReport& m : t.metrics)
      if (m.name == objective) curve.push_back({m.step.value_or(0), m.value});
    j["curve"] = std::move(curve);
    if (t.status != "interrupted") records.push_back(hpo::record_of(t, objective));
  }
  out["curves"] = curves_json(records, direction);
  // The identity holds the space as the study was created: importance over it.
  out["importance"] = nlohmann::ordered_json::array();
  if (identity.contains("space")) {
    const hpo::Space space = hpo::Space::parse(identity["space"].dump(), fmt::format("{} (study '{}')", store.locator(), study.name));
    out["importance"] = importance_json(hpo::parameter_importance(space, records));
  }
  out["model"] = parsed_or_null(study.model_json);
  return out;
}

}  // namespace paratune
