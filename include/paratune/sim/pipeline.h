// Event-by-event replay of one training iteration of a pipeline-parallel job.
//
// Input: a PipelineProblem, i.e. what each pipeline rank's operations cost (built from the cost
// model by cost/pipeline.h, or by hand in tests) and the schedule. Output: the exact timeline under
// the data dependencies: every forward, backward, point-to-point transfer, data-parallel gradient
// reduction and optimizer step with its start and end, per-rank busy and idle time, idle intervals
// with the memory free during each (the bubbles), activation memory over time and the critical path.
//
// Model of execution (what "exact" means here):
// - Each rank has a compute stream that runs its schedule's operations one at a time, in the
//   schedule's order (sim/schedule.h). An operation starts when the stream is free and its input
//   has arrived: a forward needs the previous model part's activation, a backward the next part's
//   gradient (and its own forward), a weight-gradient pass its input-gradient pass. Which rank and
//   chunk hold a part is the schedule's (PipelineSchedule::place: looped, V-shaped or DualPipe's two
//   directions).
// - A point-to-point transfer starts when its producer finishes and the directed link to the peer
//   is free (links are full duplex and FIFO) and takes the link time. With `blocking_p2p` the
//   sender's compute stream waits for it (no overlap of P2P and compute).
// - Data-parallel gradient reduction follows `grad_sync` (see GradSync below). Then each rank runs
//   its optimizer step and any exposed parameter all-gather; the iteration ends when the slowest
//   rank has, plus a fixed per-iteration overhead.
// Because every stream and link executes in a fixed order, the replay is a longest-path evaluation
// of a DAG: its result does not depend on the order in which the simulator visits ranks, and equal
// input gives byte-identical output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "paratune/sim/schedule.h"
#include "paratune/spec/enums.h"

namespace paratune::sim {

// One micro-batch of one model chunk on one rank.
struct ChunkCost {
  double forward_s = 0;          // forward, incl. exposed TP/CP/EP communication
  double backward_input_s = 0;   // input gradient (B), incl. recompute and its exposed communication
  double backward_weight_s = 0;  // weight gradient (W); schedules that do not split run B + W together
  double activation_bytes = 0;   // held from the forward's start until the backward (W) ends
  double recompute_bytes = 0;    // extra working set while the backward recomputes (full recompute)
  double grad_sync_s = 0;        // data-parallel reduction of this chunk's gradients, run alone
  int grad_sync_buckets = 1;     // buckets of the overlapped reduction (Megatron: 40M parameters each)
};

// One pipeline rank (a pipeline stage; with interleaving it holds several chunks).
struct StageCost {
  std::vector<ChunkCost> chunks;       // v entries; which model part chunk c is: the schedule's part_of()
  double static_memory_bytes = 0;      // weights, gradients, optimizer state, buffers: all but activations
  double memory_capacity_bytes = 0;    // the GPU's memory, for the free memory of idle intervals
  double usable_memory_bytes = 0;      // the GPU's memory less the margin kept free: the stage fits when
                                       // its peak memory is at most this (0: not judged)
  double optimizer_s = 0;              // optimizer step in the update phase
  double param_gather_s = 0;           // exposed parameter all-gather after the step (ZeRO-1/2)
  double p2p_next_s = 0;               // one activation (or gradient) transfer to/from rank + 1
                                       // (the last rank: to rank 0, used by interleaving only)
};

struct PipelineProblem {
  int microbatches = 1;
  Schedule schedule = Schedule::kOneFOneB;
  // in-backward: after a chunk's last backward, its gradients are all-reduced on the compute stream
  //   before the input gradient goes to the previous stage (what Comm-Shift removes; Hosoki et al.,
  //   CCGrid 2025).
  // shifted: each rank reduces all its gradients in the update phase, after its last backward.
  // overlapped: the chunk's gradients are reduced bucket by bucket on a separate stream while its
  //   last backward still runs (Megatron-LM overlap-grad-reduce).
  GradSync grad_sync = GradSync::kOverlapped;
  // Fraction of the last backward during which overlapped buckets become ready (the rest of that
  // backward produces no complete bucket): Calibration::dp_overlap.
  double overlap_window = 1.0;
  bool blocking_p2p = false;
  double iteration_overhead_s = 0;
  std::vector<StageCost> stages;  // p ranks

  [[nodiscard]] int ranks() const { return static_cast<int>(stages.size()); }
  [[nodiscard]] int chunks() const { return stages.empty() ? 0 : static_cast<int>(stages.front().chunks.size()); }
};

// Throws Error naming the field when the problem is malformed (negative times, ragged chunks, ...).
void validate(const PipelineProblem& problem);

enum class EventKind : std::uint8_t {
  kForward,
  kBackward,
  kBackwardInput,
  kBackwardWeight,
  kSendForward,   // activation to the next model part
  kSendBackward,  // gradient to the previous model part
  kGradSync,      // data-parallel gradient reduction (one bucket when overlapped)
  kOptimizer,
  kParamGather,
  kOverhead,
};
const char* to_string(EventKind kind);

// Where an event runs: the rank's compute stream, its P2P transfers, its gradient-reduction stream.
enum class Lane : std::uint8_t { kCompute, kP2P, kGradSync };

struct Event {
  EventKind kind;
  Lane lane;
  std::int32_t stage;       // rank that runs it (the sender for transfers)
  std::int32_t peer;        // receiving rank of a transfer, else -1
  std::int32_t microbatch;  // -1 when not per micro-batch
  std::int32_t chunk;       // -1 when not per chunk
  double start_s;
  double end_s;
  std::int32_t cause;  // index of the event whose end let this one start (-1: time 0 or its own lane)
};

struct IdleInterval {
  double start_s = 0;
  double end_s = 0;
  double free_memory_bytes = 0;  // capacity - static - activations held during the interval
};

struct MemoryPoint {
  double time_s;
  double activation_bytes;
};

struct StageResult {
  double busy_s = 0;            // compute stream busy (passes, blocking comm, optimizer, overhead)
  double compute_s = 0;         // forward and backward passes only
  double idle_s = 0;            // iteration_time_s - busy_s
  double bubble_s = 0;          // idle time before the pipeline flush (pipeline_time_s)
  double blocking_comm_s = 0;   // compute stream held by in-backward reductions, blocking sends,
                                // exposed parameter gathers
  double blocking_p2p_s = 0;    // ... of which blocking sends (blocking_p2p)
  double compute_end_s = 0;     // end of the rank's last pass
  double update_start_s = 0;    // when its optimizer step starts (all its gradients reduced)
  double end_s = 0;             // end of its optimizer step and parameter gather
  double peak_activation_bytes = 0;
  double peak_memory_bytes = 0;  // static + peak activations
  std::vector<IdleInterval> idle_intervals;        // recorded runs only
  std::vector<MemoryPoint> activation_timeline;    // recorded runs only: value after each change
};

struct SimulationOptions {
  // Keep every event, the idle intervals and memory timelines, and the critical path. Off, the
  // replay computes only the totals (what `estimate` needs) and allocates almost nothing.
  bool record = true;
};

struct SimulationResult {
  double iteration_time_s = 0;
  double pipeline_time_s = 0;  // the flush: end of the last forward/backward pass on any rank
  // Idle compute before the flush over busy compute before it, summed over ranks; for equal stages
  // and free communication (p - 1) / (v m) with interleaving, (p - 1) / m with 1F1B or GPipe.
  double bubble_fraction = 0;
  std::int64_t event_count = 0;  // passes + transfers + reductions + updates simulated
  std::vector<StageResult> stages;
  std::vector<Event> events;     // recorded runs only, in execution order
  std::vector<int> critical_path;  // indices into events, first to last
};

SimulationResult simulate(const PipelineProblem& problem, const SimulationOptions& options = {});

// A lower bound on simulate(problem).iteration_time_s in O(p·v), without replaying: the longest of
// two dependency chains per rank s, (1) micro-batch 0's forward through ranks 0..s-1, then all of
// rank s's passes, then its update (reduction tail, optimizer step, parameter gather) and (2) the
// same up to rank s's last pass, then the last micro-batch's input gradient back through ranks
// s-1..0 and rank 0's update. (DualPipe, whose micro-batches also enter at the last rank: chain (1)
// without the forward through earlier ranks.) Exact for equal stages with free communication under 1F1B and GPipe
// ((m + p - 1)·(t_f + t_b)). The planner skips replays that this shows cannot win.
double iteration_time_lower_bound_s(const PipelineProblem& problem);

}  // namespace paratune::sim
