// Hydro's Coordinator on paper (data/papers/README.md#hydro-surrogate-tuning-slides, "Bubble
// Squeezing"): how much tuning work fits into a pipeline job's bubbles. From one simulated
// iteration (sim/pipeline.h: each stage's idle intervals, its peak memory and the GPU's capacity)
// and a tuning trial's footprint, place fused trial steps into the idle intervals only.
//
// The rules, per pipeline stage:
// - A tuning trial is resident on the GPU for the whole iteration (paused during the job's compute,
//   resumed in its bubbles: Hydro interleaves, it does not swap), so its memory must fit beside the
//   job's peak: capacity - the stage's peak memory >= runtime + B x the trial's memory. That bounds
//   the fused group's size B.
// - A fused step of B members takes B x the trial's step time (no fusion speed-up assumed: a bound
//   from below, where Hydro measures gains from fusion on GPUs) and is not split: it runs inside
//   one idle interval, after a switch-in time (pausing and resuming the trial), or not at all.
// - B is chosen per stage to maximize the member-steps placed (more members each take longer, so
//   short bubbles may fit only small groups).
// Every GPU of a stage (its data-, tensor-, context- and expert-parallel peers) has the stage's
// timeline, so the harvest scales by GPUs per stage.
#pragma once

#include <cstdint>
#include <vector>

#include "paratune/sim/pipeline.h"

namespace paratune::sim {

struct HarvestTrial {
  double step_time_s = 0;            // one member's training step on one GPU
  double memory_bytes = 0;           // one member: weights, gradients, optimizer state, activations
  double runtime_memory_bytes = 0;   // the trial process's own (CUDA context, workspace), once
  double switch_s = 0;               // pausing and resuming it, per idle interval used
  int max_members = 64;              // the largest fused group
};

// Trial work placed into one idle interval of one stage: `steps` fused steps of `members` members
// from start_s to end_s.
struct HarvestWindow {
  int stage = 0;
  double start_s = 0, end_s = 0;
  int members = 0;
  std::int64_t steps = 0;
};

struct StageHarvest {
  int stage = 0;
  double idle_s = 0;                   // the stage's idle time in the iteration
  double free_memory_bytes = 0;        // capacity - the stage's peak memory
  int members = 0;                     // the fused group's size (0: no member fits, or no bubble fits a step)
  double trial_busy_s = 0;             // the trial's GPU time placed in the iteration
  double member_steps = 0;             // members x steps placed in the iteration
};

struct BubbleHarvest {
  double iteration_time_s = 0;
  std::vector<StageHarvest> stages;
  std::vector<HarvestWindow> windows;  // in stage, then time order
};

// Needs a recorded simulation (idle intervals) of `problem`. Throws Error on a trial with a step
// time or memory that is not > 0, a negative runtime memory or switch time, or max_members < 1.
BubbleHarvest pack_bubbles(const PipelineProblem& problem, const SimulationResult& result, const HarvestTrial& trial);

}  // namespace paratune::sim
