// `paratune plan`'s progress on stderr (report/plan_report.h format_plan_progress): shown only when
// stderr is a terminal and the search has taken more than a second, redrawn five times a second by a
// thread of its own that reads the planner's counters (plan::PlanProgress), erased when the search
// ends. A piped or redirected run prints nothing extra.
//
// PARATUNE_PROGRESS_AFTER_S (seconds, default 1) replaces the one-second wait; 0 draws the first
// line before the search starts, so a test sees it whatever the machine's speed.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "paratune/plan/planner.h"
#include "paratune/report/plan_report.h"
#include "paratune/spec/error.h"
#include "progress_line.h"

namespace paratune::cli {

// PARATUNE_PROGRESS_AFTER_S, or 1 when unset; throws Error naming the variable for anything but a
// finite number of seconds >= 0.
inline double progress_after_s() {
  const char* text = std::getenv("PARATUNE_PROGRESS_AFTER_S");
  if (!text) return 1;
  char* end = nullptr;
  const double s = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(s >= 0) || s > 1e9)
    throw Error(fmt::format("PARATUNE_PROGRESS_AFTER_S: '{}' must be a number of seconds >= 0", text));
  return s;
}

class PlanProgressDisplay {
 public:
  using Clock = std::chrono::steady_clock;

  // Watches `progress` (which must outlive the display) from now on.
  PlanProgressDisplay(const plan::PlanProgress& progress, double after_s)
      : progress_(progress), start_(Clock::now()), stage_seen_(start_) {
    if (!line_.enabled()) return;
    if (after_s <= 0) draw(start_);
    thread_ = std::thread([this, after_s] { run(after_s); });
  }
  ~PlanProgressDisplay() { stop(); }
  PlanProgressDisplay(const PlanProgressDisplay&) = delete;
  PlanProgressDisplay& operator=(const PlanProgressDisplay&) = delete;

  // Stops drawing and erases the line (before the results are printed).
  void stop() {
    {
      const std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    line_.clear();
  }

 private:
  static constexpr auto kPeriod = std::chrono::milliseconds(200);  // five lines a second at most

  void run(double after_s) {
    auto next = start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(after_s));
    std::unique_lock lock(mutex_);
    while (!wake_.wait_until(lock, next, [this] { return done_; })) {
      draw(Clock::now());
      next = Clock::now() + kPeriod;
    }
  }

  void draw(Clock::time_point now) {
    const plan::PlanProgress::Snapshot p = progress_.snapshot();
    if (p.stage != stage_) {  // a stage's rate counts from when it was first seen
      stage_ = p.stage;
      stage_seen_ = now;
      stage_count_seen_ = p.stage_count();
    }
    const auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
    std::optional<double> rate;
    if (now > stage_seen_ && p.stage_count() > 0)
      rate = static_cast<double>(p.stage_count() - stage_count_seen_) / seconds(now - stage_seen_);
    const std::string text = format_plan_progress(p, seconds(now - start_), rate);
    if (!text.empty()) line_.show(text);
  }

  const plan::PlanProgress& progress_;
  ProgressLine line_;
  Clock::time_point start_;
  int stage_ = -1;  // the stage last drawn; -1: none yet
  Clock::time_point stage_seen_;  // when it was first drawn
  long long stage_count_seen_ = 0;  // its count then
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace paratune::cli
