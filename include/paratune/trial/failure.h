// How a trial failed, and whether running its configuration again would fail the same way (issue
// 21 item 17). The searches feed every failure, with its kind, to a feasibility model (tune/bayes.h,
// hpo/sampler.h), and none runs a configuration again whose failure is deterministic.
//
// Deterministic, decided from what the runner recorded (trial/runner.h):
//   refused       exited by itself with a non-zero code before reporting its first step: the
//                 program refused the configuration at start-up (an argument check, Megatron's
//                 "num_attention_heads must be divisible by tp" assertion, exit 3 of a program
//                 that says "invalid configuration"). A start-up failure that is really transient
//                 (a rendezvous port in use) is misread as this; a study that suspects one runs the
//                 configuration by hand or in a new study.
//   oom           out of memory (the framework's message, or SIGKILL paratune did not send): the
//                 memory a configuration needs is a function of the configuration.
//   over-memory   ran, but its reported peak exceeds --memory-limit: measured, so the same again.
// Not deterministic (learned from, but a later study may try the configuration again):
//   crashed       failed after its first step, was killed by a signal, or ended without a usable
//                 measurement (a NCCL error, a node fault, a diverged loss, a segfault);
//   timeout       ran past --timeout or hung past --hang.
#pragma once

#include <string_view>

#include "paratune/trial/runner.h"

namespace paratune::trial {

enum class FailureKind { kNone, kRefused, kOom, kOverMemory, kCrashed, kTimeout };
// "none" "refused" "oom" "over-memory" "crashed" "timeout"
const char* to_string(FailureKind kind);

// The kind of failure of a trial that ended with `status` after reporting `steps` steps, its leader
// having exited with `exit_code` (-1 when killed) or been killed by `exit_signal` (0 when it
// exited). kNone for completed, early-stopped and interrupted trials.
FailureKind classify_failure(TrialStatus status, int exit_code, int exit_signal, long long steps);

// Running the same configuration again would fail the same way (see above).
inline bool is_deterministic(FailureKind kind) {
  return kind == FailureKind::kRefused || kind == FailureKind::kOom || kind == FailureKind::kOverMemory;
}

// The model-based searches (tune/bayes.h, hpo/sampler.h) propose only configurations their
// feasibility model thinks more likely to run than not, P(runs) >= kLikelyToRun, as long as there
// is any; among those they weigh their acquisition by P(runs) (Gelbart et al. 2014). Weighing alone
// is not enough: where n trials failed and none ran, a calibrated P(runs) is about 1 / (n + 1) (the
// rule of succession), a factor an optimistic model of a region it never measured outweighs, and
// the search goes on paying for failures one at a time (on issue 21 item 17's case, tpe weighing by
// P(runs) alone still ran 8-9 of 30 trials in the failing region, gp 9; restricted, 2-4). Restricting the proposals to where the configuration probably runs is
// SafeOpt's "safe set" (Sui et al. 2015, "Safe Exploration for Optimization with Gaussian
// Processes", ICML) with a probability in place of its confidence bound.
inline constexpr double kLikelyToRun = 0.5;

}  // namespace paratune::trial
