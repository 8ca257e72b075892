// What the hyperparameter controller keeps of a trial beyond the store's columns (its hpo_json),
// shared by study.cc (reading stored trials) and the study loop (controller.cc and its parts).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "paratune/hpo/trial_record.h"

namespace paratune::hpo {

struct TrialState {
  int bracket = 0;
  std::optional<std::int64_t> checkpoint_step;  // the last checkpoint its program announced
  std::string checkpoint_dir;                   // where (a directory name inside the trial's)
  int runs = 0;
  std::vector<int> slots;                       // the backend's slots of its last run
  std::string strategy;                         // how it trained across them
};

std::string state_json(const TrialState& state);
// Missing or malformed fields keep their defaults (the JSON is ours, written by state_json).
TrialState parse_state(const std::string& text);

// A stored status as samplers and pruners see it: oom, infeasible, failed and timeout are kFailed.
TrialRecord::State state_of(const std::string& status);

// How a trial stored with `status` failed (trial/failure.h): kNone unless state_of(status) is
// kFailed; "failed" is the runner's kFailed (a controller's judgement "reported no objective" was
// stored with the exit code 0 of a run that ended by itself, so it reads as crashed).
trial::FailureKind failure_of(const std::string& status, int exit_code, int exit_signal, long long steps);

// "lr=0.01,batch_size=64": the {config} placeholder.
std::string config_word(const Config& config);

}  // namespace paratune::hpo
