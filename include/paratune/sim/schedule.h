// Pipeline schedules: the order in which each pipeline rank runs its forward and backward passes.
//
// A schedule is a static program per rank: a list of operations (forward, backward, or the two
// halves of a split backward) on (micro-batch, model chunk). The simulator (sim/pipeline.h) replays
// these lists against the data dependencies between ranks; a schedule never deals with time.
//
// Adding a schedule: add its name to `Schedule` in spec/enums.h, implement `PipelineSchedule`
// (one function that writes the per-rank lists), and return it from `schedule_for`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "paratune/spec/enums.h"

namespace paratune::sim {

enum class OpKind : std::uint8_t {
  kForward,
  kBackward,        // full backward: input gradient and weight gradient together
  kBackwardInput,   // B of a split backward: input gradient only (what the previous stage waits for)
  kBackwardWeight,  // W of a split backward: weight gradient, needed by no other stage
};

struct ScheduleOp {
  OpKind kind;
  std::int32_t microbatch;  // 0 .. m-1
  std::int32_t chunk;       // model chunk on this rank, 0 .. v-1 (virtual stage = chunk * p + rank)
};

// The shape a schedule is built for: p ranks, v chunks per rank, m micro-batches.
struct PipelineShape {
  int ranks = 1;
  int chunks = 1;
  int microbatches = 1;
};

class PipelineSchedule {
 public:
  virtual ~PipelineSchedule() = default;
  [[nodiscard]] virtual Schedule kind() const = 0;
  // True when the schedule runs backward as separate B and W operations (zero-bubble family).
  [[nodiscard]] virtual bool splits_backward() const { return false; }
  // Throws Error when the shape is not supported (e.g. interleaving with m not a multiple of p).
  virtual void check(const PipelineShape& shape) const;
  // ops[r] = the program of rank r. Every (kind, micro-batch, chunk) appears exactly once.
  virtual void build(const PipelineShape& shape, std::vector<std::vector<ScheduleOp>>& ops) const = 0;
  // Per rank, the most (micro-batch, chunk) pairs whose activations it holds at once: a forward
  // allocates them when it starts, the backward (its W pass when split) frees them when it ends.
  // It follows from the order alone, so every schedule states it in closed form (O(p), what the
  // planner's memory bound needs); count_in_flight() below is the reference a test holds it to.
  [[nodiscard]] virtual std::vector<int> peak_in_flight(const PipelineShape& shape) const = 0;
};

// peak_in_flight() counted by walking the per-rank programs.
std::vector<int> count_in_flight(const std::vector<std::vector<ScheduleOp>>& ops, bool splits_backward);

// The implementation for a schedule name; never null.
const PipelineSchedule& schedule_for(Schedule schedule);

}  // namespace paratune::sim
