// A stored study as the Python module shows it (paratune.Study), read once when opened.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "paratune/store/study_store.h"

namespace paratune::python {

// A study store in a directory of its own that lives as long as something holds it: tune()'s
// in-memory storage (storage=None or ":memory:", Optuna's default), an SQLite file in a temporary
// directory removed with the last Study that reads it.
class TemporaryStore {
 public:
  TemporaryStore();  // makes the directory (in TMPDIR); Error when it cannot
  ~TemporaryStore();
  TemporaryStore(const TemporaryStore&) = delete;
  TemporaryStore& operator=(const TemporaryStore&) = delete;
  [[nodiscard]] std::string path() const { return (directory_ / "study.db").string(); }

 private:
  std::filesystem::path directory_;
};

struct StudyView {
  store::StudyInfo info;
  std::string storage;               // as given (reopened by to_html)
  std::string locator;               // the store, a PostgreSQL password masked
  nlohmann::ordered_json identity;   // what it was created with
  bool hpo = false;                  // a hyperparameter study (else parallel configurations)
  std::string objective, direction;
  std::vector<store::StoredTrial> trials;  // with steps and metrics, in number order
  std::optional<std::size_t> best;         // index into trials; none with several objectives
  std::vector<std::string> directions;     // each objective's, in order (one for one objective)
  std::vector<std::size_t> front;          // several objectives: the Pareto front, indices into trials
  nlohmann::ordered_json data;             // report/study_data.h's document
  std::shared_ptr<const TemporaryStore> temporary;  // an in-memory study's store, kept while it is read
};

// The study `name` of the store at `storage` (an SQLite file or a postgresql:// URI), opened
// read-only; `name` may be empty when the store holds one study. Throws Error naming the store.
StudyView read_study(const std::string& storage, const std::string& name);

}  // namespace paratune::python
