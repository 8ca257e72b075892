// The replay engine. Reading order: validation, the per-run state, executing one operation (with
// the transfer it produces), the update phase, and the driver loop that visits ranks.
#include "paratune/sim/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "paratune/spec/error.h"
#include "paratune/spec/parallel.h"

namespace paratune::sim {

const char* to_string(EventKind kind) {
  switch (kind) {
    case EventKind::kForward: return "F";
    case EventKind::kBackward: return "B";
    case EventKind::kBackwardInput: return "B(input)";
    case EventKind::kBackwardWeight: return "W";
    case EventKind::kSendForward: return "send activation";
    case EventKind::kSendBackward: return "send gradient";
    case EventKind::kGradSync: return "grad sync";
    case EventKind::kOptimizer: return "optimizer";
    case EventKind::kParamGather: return "param gather";
    case EventKind::kOverhead: return "overhead";
  }
  return "?";
}

void validate(const PipelineProblem& problem) {
  if (problem.stages.empty()) throw Error("pipeline problem: stages is empty (need at least one rank)");
  if (problem.microbatches < 1)
    throw Error(fmt::format("pipeline problem: microbatches={} must be >= 1", problem.microbatches));
  // State per (rank, chunk, micro-batch) slot: bounded, or 2^31 micro-batches end in std::bad_alloc.
  if (const std::int64_t slots = static_cast<std::int64_t>(problem.ranks()) *
                                 static_cast<std::int64_t>(problem.stages.front().chunks.size()) * problem.microbatches;
      slots > kMaxPipelineSlots)
    throw Error(fmt::format("pipeline problem: ranks x chunks x microbatches = {} slots; at most {}", slots,
                            kMaxPipelineSlots));
  if (!(problem.overlap_window >= 0 && problem.overlap_window <= 1))
    throw Error(fmt::format("pipeline problem: overlap_window={} must be in [0, 1]", problem.overlap_window));
  if (!(problem.iteration_overhead_s >= 0))
    throw Error(fmt::format("pipeline problem: iteration_overhead_s={} must be >= 0", problem.iteration_overhead_s));
  const std::size_t v = problem.stages.front().chunks.size();
  auto non_negative = [](double value, int stage, const char* field) {
    if (!(value >= 0) || !std::isfinite(value))
      throw Error(fmt::format("pipeline problem: stages[{}].{}={} must be a finite number >= 0", stage, field, value));
  };
  for (int r = 0; r < problem.ranks(); ++r) {
    const StageCost& s = problem.stages[r];
    if (s.chunks.size() != v || v == 0)
      throw Error(fmt::format("pipeline problem: stages[{}] has {} chunks, stages[0] has {} (must be equal, >= 1)", r,
                              s.chunks.size(), v));
    non_negative(s.static_memory_bytes, r, "static_memory_bytes");
    non_negative(s.memory_capacity_bytes, r, "memory_capacity_bytes");
    non_negative(s.optimizer_s, r, "optimizer_s");
    non_negative(s.param_gather_s, r, "param_gather_s");
    non_negative(s.p2p_next_s, r, "p2p_next_s");
    for (const ChunkCost& c : s.chunks) {
      non_negative(c.forward_s, r, "chunks[].forward_s");
      non_negative(c.backward_input_s, r, "chunks[].backward_input_s");
      non_negative(c.backward_weight_s, r, "chunks[].backward_weight_s");
      non_negative(c.activation_bytes, r, "chunks[].activation_bytes");
      non_negative(c.recompute_bytes, r, "chunks[].recompute_bytes");
      non_negative(c.grad_sync_s, r, "chunks[].grad_sync_s");
      if (c.grad_sync_buckets < 1)
        throw Error(fmt::format("pipeline problem: stages[{}].chunks[].grad_sync_buckets={} must be >= 1", r,
                                c.grad_sync_buckets));
    }
  }
}

namespace {

constexpr double kNotYet = -1;  // "this output has not been produced yet" (all real times are >= 0)

// What one rank's streams look like while the replay runs.
struct RankState {
  std::size_t next_op = 0;
  bool waiting = false;       // blocked on an input another rank has not produced yet
  double compute_free = 0;    // when the compute stream is next free
  int last_compute = -1;      // event index of the last compute-lane event
  double sync_free = 0;       // when the gradient-reduction stream is next free
  int last_sync = -1;
  double activations = 0;     // activation bytes held now
  double idle = 0;            // compute-stream idle so far
  double idle_at_last_pass = 0;  // ... up to the start of its last pass
};

class Replay {
 public:
  Replay(const PipelineProblem& problem, const SimulationOptions& options)
      : pb_(problem),
        record_(options.record),
        p_(problem.ranks()),
        v_(problem.chunks()),
        m_(problem.microbatches),
        shape_{p_, v_, m_},
        schedule_(schedule_for(problem.schedule)) {
    schedule_.check(shape_);
    schedule_.build(shape_, ops_);
    parts_ = schedule_.parts(shape_);
    const std::size_t slots = static_cast<std::size_t>(parts_) * m_;
    forward_arrival_.assign(slots, kNotYet);
    backward_arrival_.assign(slots, kNotYet);
    forward_done_.assign(slots, kNotYet);
    input_grad_done_.assign(slots, kNotYet);
    if (record_) {
      forward_arrival_event_.assign(slots, -1);
      backward_arrival_event_.assign(slots, -1);
      forward_done_event_.assign(slots, -1);
      input_grad_done_event_.assign(slots, -1);
    }
    ranks_.assign(p_, RankState{});
    link_free_.assign(static_cast<std::size_t>(p_) * p_, 0);
    link_last_.assign(static_cast<std::size_t>(p_) * p_, -1);
    result_.stages.assign(p_, StageResult{});
    pre_update_free_.assign(p_, 0);
    // The op after which a chunk's gradients are complete: its last full backward or W pass.
    last_grad_op_.assign(p_, std::vector<std::size_t>(v_, 0));
    for (int r = 0; r < p_; ++r)
      for (std::size_t i = 0; i < ops_[r].size(); ++i)
        if (completes_gradient(ops_[r][i].kind)) last_grad_op_[r][ops_[r][i].chunk] = i;
    if (record_) {
      std::size_t events = 0;
      for (const auto& list : ops_) events += 2 * list.size();
      result_.events.reserve(events + 8 * static_cast<std::size_t>(p_));
    }
  }

  SimulationResult run() {
    // Ranks with work they may be able to do; a rank blocked on a missing input leaves the list
    // until the transfer that brings the input wakes it.
    runnable_.reserve(p_);
    for (int r = p_ - 1; r >= 0; --r) runnable_.push_back(r);
    while (!runnable_.empty()) {
      const int r = runnable_.back();
      runnable_.pop_back();
      advance(r);
    }
    for (int r = 0; r < p_; ++r)
      if (ranks_[r].next_op != ops_[r].size()) {
        const ScheduleOp& op = ops_[r][ranks_[r].next_op];
        throw Error(fmt::format("schedule {} deadlocks: rank {} waits forever at {} of micro-batch {} chunk {}",
                                to_string(pb_.schedule), r, to_string(event_kind(op.kind)), op.microbatch, op.chunk));
      }
    update_phase();
    return std::move(result_);
  }

 private:
  static EventKind event_kind(OpKind kind) {
    switch (kind) {
      case OpKind::kForward: return EventKind::kForward;
      case OpKind::kBackward: return EventKind::kBackward;
      case OpKind::kBackwardInput: return EventKind::kBackwardInput;
      case OpKind::kBackwardWeight: return EventKind::kBackwardWeight;
    }
    return EventKind::kForward;
  }
  // A full backward or a W pass: the chunk's weight gradient for that micro-batch is done, and
  // its activations are freed.
  static bool completes_gradient(OpKind kind) { return kind == OpKind::kBackward || kind == OpKind::kBackwardWeight; }
  [[nodiscard]] std::size_t slot(int part, int microbatch) const { return static_cast<std::size_t>(part) * m_ + microbatch; }

  int add_event(EventKind kind, Lane lane, int stage, int peer, int mb, int chunk, double start, double end,
                int cause) {
    ++result_.event_count;
    if (!record_) return -1;
    result_.events.push_back(Event{kind, lane, stage, peer, mb, chunk, start, end, cause});
    return static_cast<int>(result_.events.size()) - 1;
  }

  // Appends an event to rank r's compute stream at `start` (>= compute_free), recording the idle
  // gap before it with the memory free during the gap.
  int add_compute(int r, EventKind kind, int mb, int chunk, double start, double duration, int cause) {
    RankState& rs = ranks_[r];
    StageResult& out = result_.stages[r];
    if (start > rs.compute_free) {
      rs.idle += start - rs.compute_free;
      if (record_) out.idle_intervals.push_back({rs.compute_free, start, free_memory(r)});
    }
    const int id = add_event(kind, Lane::kCompute, r, -1, mb, chunk, start, start + duration, cause);
    rs.compute_free = start + duration;
    rs.last_compute = id;
    out.busy_s += duration;
    return id;
  }

  // Memory free on rank r now (activations change only when a pass starts or ends, so this holds
  // through an idle interval).
  [[nodiscard]] double free_memory(int r) const {
    const StageCost& s = pb_.stages[r];
    return std::max(0.0, s.memory_capacity_bytes - s.static_memory_bytes - ranks_[r].activations);
  }

  void change_activations(int r, double delta, double time) {
    RankState& rs = ranks_[r];
    rs.activations += delta;
    StageResult& out = result_.stages[r];
    out.peak_activation_bytes = std::max(out.peak_activation_bytes, rs.activations);
    if (record_) out.activation_timeline.push_back({time, rs.activations});
  }

  // Sends the output of (part, micro-batch) from rank r to where part `to_part` runs for that
  // micro-batch over the directed link, FIFO behind earlier transfers on it.
  void send(int r, int to_part, int mb, bool forward_direction, double ready, int cause) {
    const PartPlacement to = schedule_.place(shape_, to_part, mb);
    const int q = to.rank;
    double& arrival = forward_direction ? forward_arrival_[slot(to_part - 1, mb)]
                                        : backward_arrival_[slot(to_part + 1, mb)];
    int* arrival_event = record_ ? (forward_direction ? &forward_arrival_event_[slot(to_part - 1, mb)]
                                                      : &backward_arrival_event_[slot(to_part + 1, mb)])
                                 : nullptr;
    if (q == r) {  // same rank (a single-rank pipeline with chunks, a V's turn): nothing to send
      arrival = ready;
      if (arrival_event) *arrival_event = cause;
      return;
    }
    // Directed link r -> q, shared by activations and gradients that travel the same way (with two
    // ranks and interleaving, rank 0 sends both to rank 1). Boundary b joins ranks b and b+1 mod p:
    // b is the rank of the lower part when the path steps up the ranks (looped schedules, the
    // first leg of a V), the rank of the upper part when it steps down (a V's second leg).
    const std::size_t link = static_cast<std::size_t>(r) * p_ + q;
    double& link_free = link_free_[link];
    int& link_last = link_last_[link];
    const int lower = forward_direction ? r : q, upper = forward_direction ? q : r;
    const int boundary = upper == (lower + 1) % p_ ? lower : upper;
    const double start = std::max(ready, link_free);
    const double end = start + pb_.stages[boundary].p2p_next_s;
    const int id = add_event(forward_direction ? EventKind::kSendForward : EventKind::kSendBackward, Lane::kP2P, r, q,
                             mb, to.chunk, start, end, start > ready ? link_last : cause);
    link_free = end;
    link_last = id;
    arrival = end;
    if (arrival_event) *arrival_event = id;
    if (pb_.blocking_p2p) {  // the sender's compute stream waits for the transfer
      RankState& rs = ranks_[r];
      result_.stages[r].busy_s += end - rs.compute_free;
      result_.stages[r].blocking_comm_s += end - rs.compute_free;
      result_.stages[r].blocking_p2p_s += end - rs.compute_free;
      rs.compute_free = end;
    }
    if (ranks_[q].waiting) {  // the receiver was blocked on (possibly) this input
      ranks_[q].waiting = false;
      runnable_.push_back(q);
    }
  }

  // Runs rank r's operations until one needs an input that does not exist yet.
  void advance(int r) {
    RankState& rs = ranks_[r];
    const std::vector<ScheduleOp>& list = ops_[r];
    const int last_part = parts_ - 1;
    while (rs.next_op < list.size()) {
      const ScheduleOp& op = list[rs.next_op];
      const int part = schedule_.part_of(shape_, r, op.chunk);
      const std::size_t here = slot(part, op.microbatch);
      // The input this operation waits for, and the event that produced it.
      double input = 0;
      int input_event = -1;
      switch (op.kind) {
        case OpKind::kForward:
          if (part > 0) {
            input = forward_arrival_[slot(part - 1, op.microbatch)];
            if (record_) input_event = forward_arrival_event_[slot(part - 1, op.microbatch)];
          }
          break;
        case OpKind::kBackward:
        case OpKind::kBackwardInput:
          assert(forward_done_[here] != kNotYet && "schedule runs a backward before its forward");
          if (part < last_part) {
            input = backward_arrival_[slot(part + 1, op.microbatch)];
            if (record_) input_event = backward_arrival_event_[slot(part + 1, op.microbatch)];
          } else {
            input = forward_done_[here];
            if (record_) input_event = forward_done_event_[here];
          }
          break;
        case OpKind::kBackwardWeight:
          input = input_grad_done_[here];
          if (record_) input_event = input_grad_done_event_[here];
          break;
      }
      if (input == kNotYet) {
        rs.waiting = true;
        return;
      }
      const double start = std::max(rs.compute_free, input);
      const int cause = input > rs.compute_free ? input_event : rs.last_compute;
      execute(r, op, part, here, start, cause);
      ++rs.next_op;
    }
  }

  void execute(int r, const ScheduleOp& op, int part, std::size_t here, double start, int cause) {
    const ChunkCost& cost = pb_.stages[r].chunks[op.chunk];
    StageResult& out = result_.stages[r];
    double duration = 0;
    switch (op.kind) {
      case OpKind::kForward: duration = cost.forward_s; break;
      case OpKind::kBackward: duration = cost.backward_input_s + cost.backward_weight_s; break;
      case OpKind::kBackwardInput: duration = cost.backward_input_s; break;
      case OpKind::kBackwardWeight: duration = cost.backward_weight_s; break;
    }
    // Activations: a forward allocates its chunk's activations when it starts; a backward that
    // recomputes holds the recomputed working set while it runs; the activations are freed when
    // the backward (its W pass when split) ends.
    if (op.kind == OpKind::kForward) change_activations(r, cost.activation_bytes, start);
    const bool recomputes = op.kind == OpKind::kBackward || op.kind == OpKind::kBackwardInput;
    if (recomputes && cost.recompute_bytes > 0) change_activations(r, cost.recompute_bytes, start);
    const int id = add_compute(r, event_kind(op.kind), op.microbatch, op.chunk, start, duration, cause);
    ranks_[r].idle_at_last_pass = ranks_[r].idle;
    const double end = start + duration;
    out.compute_s += duration;
    out.compute_end_s = end;
    if (recomputes && cost.recompute_bytes > 0) change_activations(r, -cost.recompute_bytes, end);
    if (completes_gradient(op.kind)) change_activations(r, -cost.activation_bytes, end);

    const bool grads_complete = ranks_[r].next_op == last_grad_op_[r][op.chunk];  // op is ops_[r][next_op]
    if (grads_complete) reduce_chunk_gradients(r, op.chunk, start, end, id);

    const int last_part = parts_ - 1;
    switch (op.kind) {
      case OpKind::kForward:
        forward_done_[here] = end;
        if (record_) forward_done_event_[here] = id;
        if (part < last_part) send(r, part + 1, op.microbatch, true, end, id);
        break;
      case OpKind::kBackward:
      case OpKind::kBackwardInput: {
        input_grad_done_[here] = end;
        if (record_) input_grad_done_event_[here] = id;
        // An in-backward reduction holds the compute stream before the gradient can leave.
        const double ready = ranks_[r].compute_free;
        if (part > 0) send(r, part - 1, op.microbatch, false, ready, ranks_[r].last_compute);
        break;
      }
      case OpKind::kBackwardWeight: break;
    }
  }

  // Data-parallel reduction of one chunk's gradients, right after the pass that completes them.
  void reduce_chunk_gradients(int r, int chunk, double pass_start, double pass_end, int pass_event) {
    const ChunkCost& cost = pb_.stages[r].chunks[chunk];
    RankState& rs = ranks_[r];
    switch (pb_.grad_sync) {
      case GradSync::kInBackward: {
        // On the compute stream, before anything else (including the send of the input gradient).
        if (cost.grad_sync_s <= 0) return;
        const int id = add_event(EventKind::kGradSync, Lane::kCompute, r, -1, -1, chunk, pass_end,
                                 pass_end + cost.grad_sync_s, pass_event);
        rs.compute_free = pass_end + cost.grad_sync_s;
        rs.last_compute = id;
        result_.stages[r].busy_s += cost.grad_sync_s;
        result_.stages[r].blocking_comm_s += cost.grad_sync_s;
        break;
      }
      case GradSync::kOverlapped: {
        // Buckets fill as the pass produces gradients: bucket j of n is ready at
        // end - window * duration * (1 - (j + 1) / n); the reduction stream runs them in order.
        const int n = cost.grad_sync_buckets;
        const double duration = pass_end - pass_start;
        for (int j = 0; j < n; ++j) {
          const double ready = pass_end - pb_.overlap_window * duration * (1.0 - static_cast<double>(j + 1) / n);
          const double start = std::max(ready, rs.sync_free);
          const double end = start + cost.grad_sync_s / n;
          rs.last_sync = add_event(EventKind::kGradSync, Lane::kGradSync, r, -1, -1, chunk, start, end,
                                   start > ready ? rs.last_sync : pass_event);
          rs.sync_free = end;
        }
        break;
      }
      case GradSync::kShifted: break;  // in the update phase
    }
  }

  void update_phase() {
    double latest_end = 0;
    for (int r = 0; r < p_; ++r) {
      const StageCost& s = pb_.stages[r];
      RankState& rs = ranks_[r];
      StageResult& out = result_.stages[r];
      result_.pipeline_time_s = std::max(result_.pipeline_time_s, out.compute_end_s);
      if (pb_.grad_sync == GradSync::kShifted) {
        double total = 0;
        for (const ChunkCost& c : s.chunks) total += c.grad_sync_s;
        if (total > 0) {
          const double start = std::max(rs.compute_free, rs.sync_free);
          rs.last_sync = add_event(EventKind::kGradSync, Lane::kGradSync, r, -1, -1, -1, start, start + total,
                                   rs.last_compute);
          rs.sync_free = start + total;
        }
      }
      pre_update_free_[r] = rs.compute_free;
      const bool sync_later = rs.sync_free > rs.compute_free;
      const double update_start = std::max(rs.compute_free, rs.sync_free);
      out.update_start_s = update_start;
      int last = rs.last_compute;
      if (s.optimizer_s > 0)
        last = add_compute(r, EventKind::kOptimizer, -1, -1, update_start, s.optimizer_s,
                           sync_later ? rs.last_sync : rs.last_compute);
      double end = update_start + s.optimizer_s;
      if (s.param_gather_s > 0) {
        // Exposed parameter all-gather: nothing else runs on the rank until the parameters are back.
        const int id = add_event(EventKind::kParamGather, Lane::kGradSync, r, -1, -1, -1, end, end + s.param_gather_s, last);
        rs.last_sync = id;
        out.busy_s += s.param_gather_s;
        out.blocking_comm_s += s.param_gather_s;
        rs.compute_free = end + s.param_gather_s;
        end += s.param_gather_s;
      }
      out.end_s = end;
      latest_end = std::max(latest_end, end);
    }
    // Critical path: back from the event that ends last, through the event that released each one.
    if (record_) {
      int tail = -1;
      for (int i = 0; i < static_cast<int>(result_.events.size()); ++i)
        if (tail < 0 || result_.events[i].end_s > result_.events[tail].end_s) tail = i;
      for (int i = tail; i >= 0; i = result_.events[i].cause) result_.critical_path.push_back(i);
      std::reverse(result_.critical_path.begin(), result_.critical_path.end());
    }
    result_.iteration_time_s = latest_end + pb_.iteration_overhead_s;
    double bubble = 0, compute = 0;
    for (int r = 0; r < p_; ++r) {
      StageResult& out = result_.stages[r];
      RankState& rs = ranks_[r];
      if (pb_.iteration_overhead_s > 0) add_compute(r, EventKind::kOverhead, -1, -1, latest_end, pb_.iteration_overhead_s, -1);
      else if (record_ && rs.compute_free < latest_end)
        out.idle_intervals.push_back({rs.compute_free, latest_end, free_memory(r)});
      out.idle_s = result_.iteration_time_s - out.busy_s;
      out.peak_memory_bytes = pb_.stages[r].static_memory_bytes + out.peak_activation_bytes;
      // Bubble: compute-stream idle before the flush T_f = pipeline_time_s. Up to the rank's last
      // pass it is the idle accumulated so far; after it the stream is busy in
      // [last pass end, pre-update free] (blocking reductions) and [update start, end].
      const double flush = result_.pipeline_time_s;
      const double after_busy = std::max(0.0, std::min(pre_update_free_[r], flush) - out.compute_end_s) +
                                std::max(0.0, std::min(out.end_s, flush) - out.update_start_s);
      out.bubble_s = rs.idle_at_last_pass + (flush - out.compute_end_s) - after_busy;
      bubble += out.bubble_s;
      compute += out.compute_s;
    }
    result_.bubble_fraction = compute > 0 ? bubble / compute : 0;
  }

  const PipelineProblem& pb_;
  const bool record_;
  const int p_, v_, m_;
  const PipelineShape shape_;
  const PipelineSchedule& schedule_;
  int parts_ = 0;  // model parts a micro-batch passes through (PipelineSchedule::parts)
  std::vector<std::vector<ScheduleOp>> ops_;
  std::vector<std::vector<std::size_t>> last_grad_op_;
  // Per (part, micro-batch): when the forward output reached the next part, the backward output
  // reached the previous one, the forward finished, the input gradient finished.
  std::vector<double> forward_arrival_, backward_arrival_, forward_done_, input_grad_done_;
  std::vector<int> forward_arrival_event_, backward_arrival_event_, forward_done_event_, input_grad_done_event_;
  std::vector<RankState> ranks_;
  std::vector<double> link_free_;  // per directed link sender * p + receiver: when it is next free
  std::vector<int> link_last_;     // ... and the transfer that last used it
  std::vector<double> pre_update_free_;  // compute stream free after the last pass and its blocking work
  std::vector<int> runnable_;
  SimulationResult result_;
};

}  // namespace

SimulationResult simulate(const PipelineProblem& problem, const SimulationOptions& options) {
  validate(problem);
  return Replay(problem, options).run();
}

// Two chains of the replay, for every rank s (see the header):
//   own:   fill_s + m·work_s + tail_s
//   drain: fill_s + m·work_s (split backward: forwards and B passes only) + the last micro-batch's
//          input gradient back through ranks s-1..0 + rank 0's last W (split) + tail_0
// m: micro-batches per chunk. fill_s: micro-batch 0 through chunk 0 of ranks 0..s-1 and their
// links (every schedule from rank 0 starts with that forward, and the last input gradient leaves a
// rank from chunk 0, part s, looped or V); tail: what follows a rank's last pass, which completes
// its chunk 0's gradients in every schedule from rank 0: that chunk's in-backward reduction, all
// reductions (shifted) or the overlapped buckets that cannot start before the pass ends, then the
// optimizer step and exposed parameter gather. A split schedule's full backwards count only their
// input-gradient part in the drain chain, which keeps it a bound.
double iteration_time_lower_bound_s(const PipelineProblem& problem) {
  validate(problem);
  const int p = problem.ranks(), v = problem.chunks();
  const PipelineSchedule& schedule = schedule_for(problem.schedule);
  const PipelineShape shape{p, v, problem.microbatches};
  const double m = schedule.microbatches_per_chunk(shape);
  const bool split = schedule.splits_backward();
  // From rank 0 (every schedule but DualPipe): micro-batch 0's forward arrives through ranks
  // 0..s-1, and the last input gradient leaves through them; both on chunk 0 (part r).
  const bool from_rank_zero = schedule.starts_from_rank_zero();
  auto last_pass_s = [&](const ChunkCost& c) {
    return split ? c.backward_weight_s : c.backward_input_s + c.backward_weight_s;
  };
  // What follows the rank's last pass when that pass completes chunk c's gradients.
  auto tail_after_s = [&](const StageCost& s, const ChunkCost& c) {
    double sync = 0;
    switch (problem.grad_sync) {
      case GradSync::kInBackward: sync = c.grad_sync_s; break;
      case GradSync::kShifted:
        for (const ChunkCost& k : s.chunks) sync += k.grad_sync_s;
        break;
      case GradSync::kOverlapped: {
        // Bucket j is ready window·pass·(1 - (j+1)/n) before the pass ends; the first one and all
        // after it take the whole reduction, the last alone takes 1/n of it.
        const double n = c.grad_sync_buckets;
        sync = std::max(c.grad_sync_s / n, c.grad_sync_s - problem.overlap_window * last_pass_s(c) * (1 - 1 / n));
        break;
      }
    }
    return sync + s.optimizer_s + s.param_gather_s;
  };
  // The last pass completes chunk 0's gradients in the schedules from rank 0; DualPipe's ranks
  // end on either chunk: the smaller tail of the two.
  auto tail_s = [&](const StageCost& s) {
    if (from_rank_zero) return tail_after_s(s, s.chunks.front());
    double least = std::numeric_limits<double>::infinity();
    for (const ChunkCost& c : s.chunks) least = std::min(least, tail_after_s(s, c));
    return least;
  };
  const double tail_0 = tail_s(problem.stages.front());
  double fill = 0, bound = 0;
  double chain = 0;  // ranks s-1..0: input-gradient passes (with their in-backward reductions) and links
  for (int r = 0; r < p; ++r) {
    const StageCost& s = problem.stages[static_cast<std::size_t>(r)];
    double work = 0, critical_work = 0, earlier_syncs = 0;
    for (int c = 0; c < v; ++c) {
      const ChunkCost& k = s.chunks[static_cast<std::size_t>(c)];
      work += k.forward_s + k.backward_input_s + k.backward_weight_s;
      critical_work += k.forward_s + k.backward_input_s + (split ? 0 : k.backward_weight_s);
      if (c > 0 && problem.grad_sync == GradSync::kInBackward) earlier_syncs += k.grad_sync_s;
    }
    const ChunkCost& first = s.chunks.front();
    const double own = fill + m * work + earlier_syncs + tail_s(s);
    bound = std::max(bound, own);
    if (!from_rank_zero) continue;
    const double in_backward = problem.grad_sync == GradSync::kInBackward ? first.grad_sync_s : 0;
    double drain = fill + m * critical_work + (split ? 0 : earlier_syncs) + chain + tail_0;
    if (r > 0 && !split) drain += in_backward;  // before its input gradient leaves
    if (split) drain += last_pass_s(problem.stages.front().chunks.front());  // rank 0's last W
    bound = std::max(bound, drain);
    // Rank r as an earlier rank for the ranks after it.
    fill += first.forward_s + s.p2p_next_s;
    chain += s.p2p_next_s + (split ? first.backward_input_s : first.backward_input_s + first.backward_weight_s) +
             (r > 0 && !split ? in_backward : 0);
  }
  return bound + problem.iteration_overhead_s;
}

}  // namespace paratune::sim
