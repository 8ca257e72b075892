// The steps and metrics of ended trials, kept by a store between its reads of a study.
//
// Why: a worker's every claim and heartbeat reads the whole study with its outputs (the sampler and
// the pruner judge every trial's curve), which grows as trials x steps. But a trial's outputs change
// only when one of its runs ends: write_finish stores them in one transaction that also sets the
// trial's status, ended_unix_s (the run's end) and steps, and a hyperparameter study's objective and
// state (hpo_json, which counts its runs). So an ended trial whose row still shows all of these as
// they were when its outputs were read has those outputs still, and only running trials and trials
// that ended since need their steps and metrics read again. Each store keeps its own; safe to use
// from several threads.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "paratune/store/study_store.h"

namespace paratune::store {

class OutputCache {
 public:
  // Gives each trial of `trials` whose outputs are kept (and still current) those outputs; returns
  // the others, whose outputs the store must read, then pass to keep(). Their outputs must be empty.
  std::vector<StoredTrial*> fill(std::vector<StoredTrial>& trials) const;
  // Keeps the outputs of the ended trials among `read` (those fill() returned, now read).
  void keep(const std::vector<StoredTrial*>& read);
  [[nodiscard]] std::size_t size() const;

 private:
  // What identifies the run whose outputs are kept: its row as it was when they were read.
  struct Entry {
    int number = 0;
    std::string status;
    double started_unix_s = 0, ended_unix_s = 0;
    int steps = 0;
    std::optional<double> objective;
    std::string hpo_json;
    std::vector<std::int64_t> step_numbers;
    std::vector<double> step_times_s;
    std::vector<trial::MetricReport> metrics;
  };
  static bool current(const Entry& e, const StoredTrial& t);
  mutable std::mutex mutex_;
  std::unordered_map<std::int64_t, Entry> entries_;  // by trial id (guarded by mutex_)
};

}  // namespace paratune::store
