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
#include "paratune/spec/parallel.h"

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
  std::int32_t chunk;       // model chunk on this rank, 0 .. v-1 (which model part: part_of())
};

// The shape a schedule is built for: p ranks, v chunks per rank, m micro-batches.
struct PipelineShape {
  int ranks = 1;
  int chunks = 1;
  int microbatches = 1;
};

// Where a model part runs for one micro-batch: on `rank`, as its chunk `chunk`.
struct PartPlacement {
  int rank = 0;
  int chunk = 0;
};

class PipelineSchedule {
 public:
  virtual ~PipelineSchedule() = default;
  [[nodiscard]] virtual Schedule kind() const = 0;
  // True when the schedule runs (some) backwards as separate B and W operations (zero-bubble
  // family; DualPipe splits some and runs the rest whole).
  [[nodiscard]] virtual bool splits_backward() const { return false; }

  // Placement. The model is cut into parts() consecutive parts; a micro-batch's forward visits them
  // in order and its backward in reverse. Looped schedules (GPipe, 1F1B, interleaved, ZB-H1,
  // interleaved zero-bubble) put part k on rank k mod p as chunk k / p; V-shapes (ZB-V, DualPipeV)
  // put parts r and 2p-1-r on rank r; DualPipe cuts the model into p parts held twice: chunk 0 of
  // rank r is part r (micro-batches entering at rank 0), chunk 1 is part p-1-r (entering at rank p-1).
  [[nodiscard]] virtual bool looped() const { return true; }  // part k on rank k mod p
  [[nodiscard]] virtual int parts(const PipelineShape& s) const { return s.ranks * s.chunks; }
  [[nodiscard]] virtual int part_of(const PipelineShape& s, int rank, int chunk) const { return chunk * s.ranks + rank; }
  [[nodiscard]] virtual PartPlacement place(const PipelineShape& s, int part, int /*microbatch*/) const {
    return {part % s.ranks, part / s.ranks};
  }
  // Micro-batches each chunk runs: m, except DualPipe's m / 2 per direction.
  [[nodiscard]] virtual int microbatches_per_chunk(const PipelineShape& s) const { return s.microbatches; }
  // True when every rank's program begins with micro-batch 0's forward of chunk 0 (part r arrives
  // through ranks 0..r-1): the lower bound's fill (pipeline.h) needs it.
  [[nodiscard]] virtual bool starts_from_rank_zero() const { return true; }

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

// peak_in_flight() counted by walking the per-rank programs: a forward allocates, a full backward
// or a W pass frees.
std::vector<int> count_in_flight(const std::vector<std::vector<ScheduleOp>>& ops);

// The replay's shape for a configuration's pp, vpp and micro-batches: chunks = vpp, except
// DualPipe's two parameter copies (vpp = 1: the model in pp parts, each rank holding two).
PipelineShape pipeline_shape(Schedule schedule, int pp, int vpp, int microbatches);

// A configuration's per-chunk values (chunk c of rank r at index c·pp + r, as chunk_layers() and
// chunk_mtp_layers() give them) in model order: entry k is the part k of the schedule's placement.
std::vector<int> by_model_part(const ParallelConfig& config, const std::vector<int>& per_chunk);

// The implementation for a schedule name; never null.
const PipelineSchedule& schedule_for(Schedule schedule);

}  // namespace paratune::sim
