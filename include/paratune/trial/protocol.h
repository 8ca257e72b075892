// What a running trial says about itself: the `@paratune` line protocol, Megatron-LM's log lines,
// a user regex for anything else, and out-of-memory messages.
//
// The protocol (docs/trial-protocol.md; other programs speak it): a line on stdout or stderr that
// starts with "@paratune " followed by one JSON object, one of
//   {"step": 7, "step_time_s": 0.512}              one per training step (step >= 0, 1 µs <= time
//                                                  <= one week: kMinStepTimeS, kMaxStepTimeS)
//   {"peak_memory_bytes": 123456789}               may repeat; the maximum counts (0 .. 2^60)
//   {"metric": "loss", "value": 2.31, "step": 7}   any named metric; "step" is optional
//   {"oom": true}                                  the trial ran out of memory
//   {"checkpoint_step": 26}                        it saved a checkpoint after step 26 in
//                                                  PARATUNE_CHECKPOINT_DIR; run again with the same
//                                                  directory, it resumes after that step
// A process that trains a fused group of trials (PARATUNE_PARAMS a JSON array, hpo/fusion.h) says
// whose each metric is, and which member diverged (its later values are not sent):
//   {"member": 2, "metric": "loss", "value": 2.31, "step": 7}
//   {"member": 2, "diverged": "the train loss is nan at step 7"}
// Its step lines and memory are the group's (one process).
// A backend that runs the trial elsewhere through a local wrapper (the Slurm backend's
// paratune-slurm-job, trial/slurm_job.h) says where and when the trial really started -- time in
// a queue is not the trial's: its timeout and hang clocks start again here -- and how it ended
// when the scheduler knows better than an exit code:
//   {"queued": "slurm job 42 (Priority)"}                    waiting for resources: no limit runs
//   {"started": "slurm job 42 on node7"}                     where it runs (stored with the trial)
//   {"ended": "oom", "reason": "Slurm: OUT_OF_MEMORY"}        one of oom, timeout, failed, interrupted
// A serving program (docs/trial-protocol.md, "Serving"; started with PARATUNE_SERVE=1) says so
// once, then ends each assignment it was handed on stdin; a paused trial it keeps in memory rather
// than on disk says so on its checkpoint line:
//   {"serve": 1}                                   it serves (protocol version 1)
//   {"done": "study-0007"}                         the assignment of that trial id is over
//   {"done": "study-0007", "failed": "why"}        ... and it failed (like a non-zero exit)
//   {"checkpoint_step": 26, "in_memory": true}     resumable after step 26 from this process's
//                                                  memory (on disk only once it spills it)
// Each also carries "token": the runner's secret for this trial's backend (ParserOptions::
// backend_token), which the program itself never sees; without it such a line is malformed.
// Built in besides: Megatron-LM's "elapsed time per iteration (ms): X" (with "iteration N/" for the
// step number) and its memory report ("max reserved: X" in MB, else "max allocated"), a
// `step_time_regex` (RE2 syntax: linear time, no recursion, so no trial line can exhaust the stack;
// matched against a line's first kMaxMatchedLineBytes) whose first group is the step time in
// seconds (a second group, if any, the step number), and the usual out-of-memory messages (CUDA out of memory, OutOfMemoryError,
// std::bad_alloc, RESOURCE_EXHAUSTED). Once a trial has sent one protocol step, other step sources
// are ignored so nothing is counted twice. A malformed protocol line (bad JSON, unknown keys, wrong
// types or values) is counted and otherwise ignored, never fatal.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace re2 {
class RE2;
}

namespace paratune::trial {

// How much of a line the built-in log parsers and the step-time regex look at (a protocol line's
// JSON is parsed whole).
inline constexpr std::size_t kMaxMatchedLineBytes = std::size_t{64} * 1024;

// What counts as a measurement. A step time is finite and from 1 µs to one week: no training step
// is faster than a microsecond, and a time such as 1e-320 s (subnormal) would be an infinite
// throughput that wins every comparison. A peak memory is finite and from 0 to 2^60 bytes (1 EiB).
// A step or memory report outside them, from any source (protocol, Megatron log, --step-time-regex),
// is a malformed line: counted, never a measurement.
inline constexpr double kMinStepTimeS = 1e-6;
inline constexpr double kMaxStepTimeS = 7 * 24 * 3600.0;
inline constexpr double kMaxPeakMemoryBytes = 0x1p60;
// The serving protocol's version ({"serve": 1}).
inline constexpr int kServeVersion = 1;
[[nodiscard]] bool plausible_step_time(double seconds);
[[nodiscard]] bool plausible_peak_memory(double bytes);

struct StepReport {
  std::int64_t step = 0;
  double step_time_s = 0;
};

struct MetricReport {
  std::string name;
  double value = 0;
  std::optional<std::int64_t> step;
  std::optional<int> member;  // whose, in a fused group
};

// A fused group's member that diverged (it is dropped from the group's training).
struct MemberDivergence {
  int member = 0;
  std::string reason;
};

// How a wrapping backend saw the trial end (the "ended" protocol line): `status` is one of "oom",
// "timeout", "failed", "interrupted" (trial::TrialStatus names), `reason` one line.
struct BackendEnd {
  std::string status;
  std::string reason;
};

// What one line carried (at most one kind of report per line).
struct LineReport {
  enum class Kind {
    kNothing, kStep, kPeakMemory, kMetric, kOom, kCheckpoint, kDiverged, kQueued, kStarted, kEnded, kServe, kDone,
    kMalformed
  } kind = Kind::kNothing;
  StepReport step;
  double peak_memory_bytes = 0;
  MetricReport metric;
  std::int64_t checkpoint_step = 0;
  bool checkpoint_in_memory = false;  // kCheckpoint: held by a serving process, not on disk
  MemberDivergence diverged;
  std::string location;  // kQueued, kStarted
  BackendEnd ended;      // kEnded
  int serve_version = 0;  // kServe
  std::string done_trial;    // kDone: the trial id whose assignment ended
  std::string done_failure;  // kDone: why it failed; empty: it did not
  std::string problem;  // kMalformed: what was wrong
};

struct ParserOptions {
  ParserOptions() = default;
  explicit ParserOptions(std::string regex, std::string token = {})
      : step_time_regex(std::move(regex)), backend_token(std::move(token)) {}
  // RE2 regex; group 1: step time in seconds, optional group 2: step number. Empty: none.
  std::string step_time_regex;
  // The wrapping backend's secret for this trial (LaunchCommand::backend_token): queued, started
  // and ended lines count only with "token": this value. Empty: no such line counts (a trial
  // must not switch its own limits off or say how it ended).
  std::string backend_token;
};

// Everything a trial reported so far.
struct TrialOutput {
  std::vector<StepReport> steps;
  std::optional<double> peak_memory_bytes;  // the largest reported
  std::vector<MetricReport> metrics;
  bool oom = false;
  std::string oom_line;               // the first line that said so
  std::optional<std::int64_t> checkpoint_step;  // the last checkpoint the trial said it saved
  bool checkpoint_in_memory = false;            // ... held in a serving process's memory
  std::vector<MemberDivergence> diverged;       // fused members that diverged, in order
  std::string location;                         // the last "started" line's; empty: none
  bool queued = false;                          // a "queued" line came, and no "started" line since
  std::optional<BackendEnd> ended;              // the first "ended" line's
  std::int64_t lines = 0;
  std::int64_t malformed_lines = 0;
  std::string first_malformed;        // the first malformed protocol line's problem
};

class OutputParser {
 public:
  // Throws OptionError (step_time_regex) if the regex does not compile or has no group.
  explicit OutputParser(const ParserOptions& options = {});

  // Parses one line (without its newline), adds what it reports to `output()` and returns it.
  LineReport feed(std::string_view line);
  [[nodiscard]] const TrialOutput& output() const { return output_; }

 private:
  LineReport parse_protocol(std::string_view text);
  [[nodiscard]] LineReport step_line(double seconds, std::optional<double> step) const;
  [[nodiscard]] static LineReport memory_line(double bytes);
  std::shared_ptr<const re2::RE2> step_regex_;
  std::string backend_token_;
  bool protocol_steps_ = false;  // a protocol step was seen: other step sources are ignored
  std::int64_t implicit_step_ = 0;
  TrialOutput output_;
};

}  // namespace paratune::trial
