#include "trial_state.h"

#include <nlohmann/json.hpp>

#include "paratune/tune/space.h"

namespace paratune::hpo {

std::string config_word(const Config& config) {
  std::string out;
  for (const auto& [name, value] : config.items()) out += (out.empty() ? "" : ",") + name + "=" + tune::word(value);
  return out;
}

std::string state_json(const TrialState& s) {
  nlohmann::ordered_json j{{"bracket", s.bracket}, {"runs", s.runs}};
  j["checkpoint_step"] = s.checkpoint_step ? nlohmann::ordered_json(*s.checkpoint_step) : nlohmann::ordered_json(nullptr);
  j["checkpoint_dir"] = s.checkpoint_dir;
  j["slots"] = s.slots;
  j["strategy"] = s.strategy;
  return j.dump();
}

TrialState parse_state(const std::string& text) {
  TrialState s;
  const nlohmann::json j = nlohmann::json::parse(text.empty() ? "{}" : text, nullptr, false);
  if (!j.is_object()) return s;
  if (j.contains("bracket") && j["bracket"].is_number_integer()) s.bracket = j["bracket"].get<int>();
  if (j.contains("runs") && j["runs"].is_number_integer()) s.runs = j["runs"].get<int>();
  if (j.contains("checkpoint_step") && j["checkpoint_step"].is_number_integer())
    s.checkpoint_step = j["checkpoint_step"].get<std::int64_t>();
  if (j.contains("checkpoint_dir") && j["checkpoint_dir"].is_string()) s.checkpoint_dir = j["checkpoint_dir"].get<std::string>();
  if (j.contains("slots") && j["slots"].is_array())
    for (const auto& slot : j["slots"])
      if (slot.is_number_integer()) s.slots.push_back(slot.get<int>());
  if (j.contains("strategy") && j["strategy"].is_string()) s.strategy = j["strategy"].get<std::string>();
  return s;
}

TrialRecord::State state_of(const std::string& status) {
  if (status == "completed") return TrialRecord::State::kCompleted;
  if (status == "pruned" || status == "early-stopped") return TrialRecord::State::kPruned;  // by OPPA's rule
  if (status == "running") return TrialRecord::State::kRunning;
  return TrialRecord::State::kFailed;  // oom, infeasible, failed, timeout
}

trial::FailureKind failure_of(const std::string& status, int exit_code, int exit_signal, long long steps) {
  if (state_of(status) != TrialRecord::State::kFailed) return trial::FailureKind::kNone;
  return trial::classify_failure(trial::parse_trial_status(status), exit_code, exit_signal, steps);
}

}  // namespace paratune::hpo
