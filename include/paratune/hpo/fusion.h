// Inter-trial fusion in the search (HFTA, Wang et al. MLSys 2021; Hydro's "inter-trial fusion",
// data/papers/README.md#hydro-surrogate-tuning-slides): `paratune tune --fuse B` (or `--fuse auto`)
// starts up to B trials whose configurations differ only in their trainer's fusable options
// (hpo/trainer_program.h; paratune-train's are train/options.h fusable_options(): learning rate,
// momentum, betas, decay, schedule, ...) as ONE process training them as one fused model
// (PARATUNE_PARAMS a JSON array; src/trainer/fused_*.h).
//
// How the controller packs groups (src/hpo/controller.cc): when a slot is free it takes the next
// proposal and keeps asking the sampler for more while they share every non-fusable value (batch
// size, widths, seed, ...: the "shared key") and the pruner's first rung, up to B; the first
// proposal that does not match waits for the next group (a group of one runs as a plain trial).
// Each member is a trial of its own in the store (its own number, directory and command: the one
// that reproduces it alone, which fusion matches to 1e-5, tests/trainer/fused_train_test.cc); the
// group's process runs in the first member's directory (the others' records name it: "fused" in
// their configuration), and each member's metrics are the lines that name it ("member": b,
// trial/protocol.h).
//
// A pruned member is stopped from the search's point of view at once (stored as pruned, its later
// lines ignored) while the process keeps training the others; its share of the fused compute is
// wasted until the group ends (no re-packing: the stacked weights would have to be rebuilt). The
// group's process is stopped when no member is left. A diverged member fails alone. Fused groups do
// not checkpoint, so an ASHA promotion of a member runs it again from step 0, alone.
//
// --fuse auto measures before the first group (Hydro profiles 1 vs 2 fused trials to extrapolate
// memory): the first proposal fused B = 1, 2, 4, ... times, kFusionProbeSteps steps each, on one
// slot. Each run gives its steady step time t(B) and its fixed cost (start-up, data, the final
// evaluation: its wall time less the steps), so a full trial of --steps S costs
// fixed(B) + S t(B) for B trials: the rate compared is B S / (fixed(B) + S t(B)) trial-steps/s
// (fusion amortizes the start-up even where its steps are no faster). The largest size whose rate
// beats every smaller one's by kFusionMinGain is kept; doubling goes on while the memory
// extrapolated from B = 1 and 2 (linear in B) stays within the budget (the memory limit, else the
// host memory available per slot: paratune-train reports its peak resident memory on the CPU), up
// to the cap, and stops after two sizes in a row gain nothing (the rate need not be monotone: small
// fused kernels can be slower at B = 2 and faster at 8).
//
// A group that runs out of memory or over the memory limit (oom, infeasible), or fails before its
// first step, is split: each member runs again alone, and later groups are half as large. A group's
// wall-clock timeout is the trial's times its size (it does that many trials' work).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "paratune/hpo/space.h"
#include "paratune/hpo/study.h"
#include "paratune/trial/protocol.h"
#include "paratune/trial/runner.h"

namespace paratune::hpo {

inline constexpr int kMaxFusedTrials = 64;      // --fuse's upper bound
inline constexpr double kFusionMinGain = 0.05;  // auto: a larger size must raise the per-trial rate 5%
inline constexpr int kFusionProbeSteps = 8;     // auto: steps per probe run (the first 2 are warm-up)
inline constexpr double kFusionProbeHangS = 300;  // auto: a probe run without a step for this long is stopped

// Throws OptionError (naming fuse or fuse_auto) unless fusion can work with the rest of the
// options: the study's trainer fuses (trainer_of; paratune-train does), the objective is a metric (a
// fused member has no throughput of its own), and each trial trains on one slot without a parallel
// strategy.
void validate_fusion(const HpoOptions& options);
// Throws Error when the command uses the placeholder of a fusable parameter or {config} (members
// differ in them: the trainer reads them from PARATUNE_PARAMS), or the space has "ranks".
void check_fusion_space(const Space& space, const HpoOptions& options);

// The configuration's values that fused trials must share (all but the trainer's fusable
// parameters), as JSON.
std::string shared_key(const Config& config, const TrainerProgram& trainer);

// What one member of a fused group reported: the group's steps and memory, the metrics that name
// it (without "member"), its divergence if any.
trial::TrialOutput member_output(const trial::TrialOutput& group, int member);
std::optional<std::string> member_divergence(const trial::TrialOutput& group, int member);

// One probe run of --fuse auto.
struct FusionProbeRun {
  int size = 1;
  std::string status;                      // the run's status (completed, oom, failed, ...)
  double step_time_s = 0;                  // median after warm-up
  double fixed_s = 0;                      // start-up and final evaluation: wall time less the steps
  double trial_steps_per_s = 0;            // for a full trial: size S / (fixed_s + S step_time_s)
  std::optional<double> peak_memory_bytes;
  std::optional<double> predicted_memory_bytes;  // extrapolated before running (size > 2)
};

struct FusionProbe {
  std::vector<FusionProbeRun> runs;
  double memory_budget_bytes = 0;  // 0: unknown, not checked
  int chosen = 1;
  std::string reason;  // why the doubling stopped
};

// The memory a fused group of `size` needs, extrapolated linearly from sizes 1 and 2.
std::optional<double> extrapolated_memory(const std::vector<FusionProbeRun>& runs, int size);

// The rate a probe run predicts for full trials of `steps` steps (FusionProbeRun::trial_steps_per_s).
double full_trial_rate(int size, double step_time_s, double fixed_s, int steps);

// --fuse auto's choice from runs measured so far (the rule above): the size to keep, and the next
// size to measure (none when done). `cap`: no larger size is tried.
struct FusionDecision {
  std::optional<int> next;  // the size to measure next
  int chosen = 1;
  std::string reason;
};
FusionDecision decide_fusion(const std::vector<FusionProbeRun>& runs, double memory_budget_bytes, int cap);

// Runs the probe for `config` on the backend's first slot (dir: where the probe runs keep logs). A
// probe run gets the study's limits, and a hang limit of kFusionProbeHangS when the study has none.
// Once `should_stop` says so (Ctrl-C, the budget), the run in progress is stopped and the probe
// returns what it has (reason "interrupted").
FusionProbe probe_fusion(const Space& space, const HpoOptions& options, const trial::Backend& backend,
                         const Config& config, const std::filesystem::path& dir,
                         const std::function<bool()>& should_stop);

nlohmann::ordered_json to_json(const FusionProbe& probe);

// The memory this machine has available per slot (MemAvailable / slots); 0 if unknown.
double available_memory_per_slot(int slots);

}  // namespace paratune::hpo
