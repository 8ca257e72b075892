// Features that work only with paratune's own trainer (--strategy auto, --surrogate-ratio) check
// that the study's command runs it.
#pragma once

#include <filesystem>
#include <string>

#include "paratune/trial/command.h"

namespace paratune::hpo {

inline constexpr const char* kTrainerProgram = "paratune-train";

// The program a command template runs, as written ("" for an empty command).
inline std::string command_program(const std::string& command) {
  const std::vector<std::string> words = trial::split_words(command);
  return words.empty() ? "" : words.front();
}

// Whether it is paratune-train (by file name, wherever it is installed).
inline bool runs_trainer(const std::string& command) {
  return std::filesystem::path(command_program(command)).filename() == kTrainerProgram;
}

}  // namespace paratune::hpo
