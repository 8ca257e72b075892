// Hydro's Coordinator, the pipeline job's side (docs/hydro.md, "Trials in a pipeline job's bubbles"; the coordinator is
// hpo/bubble_coordinator.h). With PARATUNE_BUBBLE_DIR set, a rank treats every wait for a pipeline
// peer's tensor as a bubble: it resumes (SIGCONT) the tuning trial the coordinator parked for it
// (the process group in DIR/rank-R.pgid), waits, and pauses the trial (SIGSTOP) again before its
// own compute goes on. Each bubble is appended to DIR/rank-R.bubbles ("start_s end_s", seconds of
// CLOCK_MONOTONIC) as it ends, and the rank pins itself to CPU R (mod the CPUs), where the
// coordinator pins that rank's trials.
//
// Why signals and not a cooperative yield: the job, not the trial, knows when its wait ends, and a
// trial that checked for it between its own steps would overrun into the job's compute by up to a
// step; SIGSTOP takes effect within microseconds. The coordinator also runs trials under
// SCHED_IDLE, so even the instants around the signals go to the job.
#pragma once

#include <string>

namespace paratune::train {

class BubbleGate {
 public:
  // Disabled unless PARATUNE_BUBBLE_DIR is set.
  explicit BubbleGate(int rank);
  ~BubbleGate();
  BubbleGate(const BubbleGate&) = delete;
  BubbleGate& operator=(const BubbleGate&) = delete;

  [[nodiscard]] bool enabled() const { return fd_ >= 0; }
  void enter();  // the rank starts waiting: resume its trial
  void leave();  // the wait is over: pause it, record the bubble

  // enter() now, leave() when it goes out of scope (also when the wait throws).
  class Bubble {
   public:
    explicit Bubble(BubbleGate& gate) : gate_(gate) { gate_.enter(); }
    ~Bubble() { gate_.leave(); }
    Bubble(const Bubble&) = delete;
    Bubble& operator=(const Bubble&) = delete;

   private:
    BubbleGate& gate_;
  };

 private:
  int rank_;
  std::string pgid_path_;
  int fd_ = -1;  // the bubbles file
  int trial_group_ = 0;  // resumed at enter (0: none)
  double entered_s_ = 0;
};

}  // namespace paratune::train
