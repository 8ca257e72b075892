#include "study_console.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace paratune::cli {

ConsoleObserver::ConsoleObserver(std::uint64_t valid_points, int max_trials, double budget_s)
    : terminal_(::isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {
  view_.valid_points = valid_points;
  view_.max_trials = max_trials;
  view_.budget_s = budget_s;
}

ConsoleObserver::~ConsoleObserver() { clear(); }

void ConsoleObserver::trial_started(const store::StoredTrial& t) { log(format_trial_started(t)); }
void ConsoleObserver::trial_finished(const store::StoredTrial& t) { log(format_trial_finished(t)); }
void ConsoleObserver::note(const std::string& line) { log(line); }

void ConsoleObserver::progress(const std::vector<tune::TrialProgress>& running, int finished,
                               const store::StoredTrial* best) {
  if (!terminal_) return;
  // The first count is what the store had (reused trials): the ETA's rate counts this run's.
  if (!finished_before_) finished_before_ = finished;
  clear();
  view_.finished = finished;
  view_.finished_this_run = std::max(0, finished - *finished_before_);
  view_.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  view_.best = best;
  // Lines cut to the terminal's width: a wrapped line would break the cursor-up count.
  winsize size{};
  view_.width = ::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1 ? size.ws_col - 1 : 200;
  std::istringstream block(format_progress(running, view_));
  view_.best = nullptr;  // not kept past the call
  drawn_lines_ = 0;
  for (std::string line; std::getline(block, line); ++drawn_lines_)
    std::fprintf(stderr, "%s\n", line.substr(0, view_.width).c_str());
  std::fflush(stderr);
}

void ConsoleObserver::log(const std::string& line) {
  clear();
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

void ConsoleObserver::clear() {
  if (drawn_lines_ == 0) return;
  std::fprintf(stderr, "\x1b[%dA\x1b[J", drawn_lines_);
  drawn_lines_ = 0;
}

}  // namespace paratune::cli
