// How `paratune tune` shows a running study on the terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "paratune/report/tune_report.h"
#include "paratune/store/study_store.h"
#include "paratune/tune/study.h"

namespace paratune::cli {

// Progress of a study on stderr: on a terminal a live block (a status line and a table of the
// running trials, report/tune_report.h format_progress) under the log of started and finished
// trials; otherwise only the log lines. max_trials and budget_s: the run's --max-trials and
// --budget (0: none), for the ETA.
class ConsoleObserver final : public tune::StudyObserver {
 public:
  ConsoleObserver(std::uint64_t valid_points, int max_trials, double budget_s);
  ~ConsoleObserver() override;

  void trial_started(const store::StoredTrial& t) override;
  void trial_finished(const store::StoredTrial& t) override;
  void note(const std::string& line) override;
  void progress(const std::vector<tune::TrialProgress>& running, int finished, const store::StoredTrial* best) override;

 private:
  void log(const std::string& line);
  // Erases the live block (cursor up, clear to the end of the screen).
  void clear();
  bool terminal_;
  ProgressView view_;
  std::optional<int> finished_before_;
  std::chrono::steady_clock::time_point start_;
  int drawn_lines_ = 0;
};

}  // namespace paratune::cli
