// The shipped pipeline schedules. Each writes, per rank, the static order of its operations; the
// simulator supplies the timing. Ranks are 0-based, rank 0 holds the embedding.
#include <fmt/format.h>

#include <algorithm>
#include <deque>

#include "paratune/sim/schedule.h"
#include "paratune/spec/error.h"

namespace paratune::sim {

void PipelineSchedule::check(const PipelineShape& shape) const {
  if (shape.ranks < 1 || shape.chunks < 1 || shape.microbatches < 1)
    throw Error(fmt::format("pipeline shape p={}, v={}, m={}: all must be >= 1", shape.ranks, shape.chunks,
                            shape.microbatches));
  if (shape.chunks > 1)
    throw Error(fmt::format("schedule {} runs one model chunk per rank; vpp={} needs interleaved-1f1b",
                            to_string(kind()), shape.chunks));
}

std::vector<int> count_in_flight(const std::vector<std::vector<ScheduleOp>>& ops, bool splits_backward) {
  std::vector<int> out;
  for (const std::vector<ScheduleOp>& program : ops) {
    int held = 0, peak = 0;
    for (const ScheduleOp& op : program) {
      if (op.kind == OpKind::kForward) peak = std::max(peak, ++held);
      const bool frees = op.kind == OpKind::kBackwardWeight || (op.kind == OpKind::kBackward && !splits_backward);
      if (frees) --held;
    }
    out.push_back(peak);
  }
  return out;
}

namespace {

ScheduleOp forward(int mb, int chunk = 0) { return {OpKind::kForward, mb, chunk}; }
ScheduleOp backward(int mb, int chunk = 0) { return {OpKind::kBackward, mb, chunk}; }

// GPipe (Huang et al. 2019): all forwards, then all backwards. Every stage holds the activations of
// all m micro-batches at the flush. Time (m + p - 1)(t_f + t_b) for equal stages.
class GPipe final : public PipelineSchedule {
 public:
  Schedule kind() const override { return Schedule::kGPipe; }
  void build(const PipelineShape& s, std::vector<std::vector<ScheduleOp>>& ops) const override {
    ops.assign(s.ranks, {});
    for (int r = 0; r < s.ranks; ++r) {
      auto& list = ops[r];
      list.reserve(2 * static_cast<std::size_t>(s.microbatches));
      for (int mb = 0; mb < s.microbatches; ++mb) list.push_back(forward(mb));
      for (int mb = 0; mb < s.microbatches; ++mb) list.push_back(backward(mb));
    }
  }
  std::vector<int> peak_in_flight(const PipelineShape& s) const override {
    return std::vector<int>(static_cast<std::size_t>(s.ranks), s.microbatches);
  }
};

// 1F1B / PipeDream-flush (Narayanan et al. 2021, Sec. 2.2): rank r runs p - r - 1 warm-up forwards,
// then alternates one forward and one backward, then drains. Rank r holds at most p - r micro-batches.
class OneFOneB final : public PipelineSchedule {
 public:
  Schedule kind() const override { return Schedule::kOneFOneB; }
  void build(const PipelineShape& s, std::vector<std::vector<ScheduleOp>>& ops) const override {
    ops.assign(s.ranks, {});
    for (int r = 0; r < s.ranks; ++r) {
      auto& list = ops[r];
      list.reserve(2 * static_cast<std::size_t>(s.microbatches));
      const int warmup = std::min(s.ranks - r - 1, s.microbatches);
      for (int k = 0; k < warmup; ++k) list.push_back(forward(k));
      for (int k = 0; k < s.microbatches - warmup; ++k) {
        list.push_back(forward(k + warmup));
        list.push_back(backward(k));
      }
      for (int k = s.microbatches - warmup; k < s.microbatches; ++k) list.push_back(backward(k));
    }
  }
  // The warm-up forwards and the first steady one, before the first backward frees anything.
  std::vector<int> peak_in_flight(const PipelineShape& s) const override {
    std::vector<int> out;
    out.reserve(static_cast<std::size_t>(s.ranks));
    for (int r = 0; r < s.ranks; ++r) out.push_back(std::min(s.ranks - r, s.microbatches));
    return out;
  }
};

// Interleaved 1F1B with v model chunks per rank (Narayanan et al. 2021, Sec. 2.2; the order of
// Megatron-LM's forward_backward_pipelining_with_interleaving): the k-th forward of a rank runs
// chunk (k / p) mod v on micro-batch (k / (p v)) p + k mod p; backwards visit the chunks in reverse.
// Warm-up: 2(p - r - 1) + (v - 1) p forwards (all m v of them when m == p).
class Interleaved1F1B final : public PipelineSchedule {
 public:
  Schedule kind() const override { return Schedule::kInterleaved1F1B; }
  void check(const PipelineShape& s) const override {
    if (s.ranks < 1 || s.chunks < 2 || s.microbatches < 1)
      throw Error(fmt::format("interleaved-1f1b needs pp >= 1, vpp >= 2 and m >= 1 (got p={}, v={}, m={})", s.ranks,
                              s.chunks, s.microbatches));
    if (s.microbatches % s.ranks != 0)
      throw Error(fmt::format("interleaved-1f1b needs the number of micro-batches ({}) to be a multiple of pp={}",
                              s.microbatches, s.ranks));
  }
  void build(const PipelineShape& s, std::vector<std::vector<ScheduleOp>>& ops) const override {
    const int p = s.ranks, v = s.chunks, total = s.microbatches * s.chunks;
    auto microbatch_of = [&](int k) { return (k / (p * v)) * p + k % p; };
    auto chunk_of = [&](int k, bool is_forward) {
      const int c = (k % (p * v)) / p;
      return is_forward ? c : v - 1 - c;
    };
    ops.assign(p, {});
    for (int r = 0; r < p; ++r) {
      auto& list = ops[r];
      list.reserve(2 * static_cast<std::size_t>(total));
      const int warmup = warmup_forwards(s, r);
      for (int k = 0; k < warmup; ++k) list.push_back(forward(microbatch_of(k), chunk_of(k, true)));
      for (int k = 0; k < total - warmup; ++k) {
        const int f = k + warmup;
        list.push_back(forward(microbatch_of(f), chunk_of(f, true)));
        list.push_back(backward(microbatch_of(k), chunk_of(k, false)));
      }
      for (int k = total - warmup; k < total; ++k) list.push_back(backward(microbatch_of(k), chunk_of(k, false)));
    }
  }
  std::vector<int> peak_in_flight(const PipelineShape& s) const override {
    std::vector<int> out;
    out.reserve(static_cast<std::size_t>(s.ranks));
    const int total = s.microbatches * s.chunks;
    for (int r = 0; r < s.ranks; ++r) out.push_back(std::min(warmup_forwards(s, r) + 1, total));
    return out;
  }

 private:
  static int warmup_forwards(const PipelineShape& s, int r) {
    const int p = s.ranks, v = s.chunks, total = s.microbatches * s.chunks;
    return s.microbatches == p ? total : std::min(2 * (p - r - 1) + (v - 1) * p, total);
  }
};

// ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", Sec. 3.1): 1F1B with the backward split
// into B (input gradient, on the critical path between stages) and W (weight gradient, needed by no
// other stage). Rank r keeps up to r W passes deferred in the steady state and runs one after each
// B in the drain, where 1F1B would wait for the next gradient; the rest close the iteration. Every
// rank then holds at most p micro-batches' activations (the 1F1B peak of rank 0), and for equal
// stages the bubble shrinks from (p - 1)(t_F + t_B + t_W) to (p - 1)(t_F + t_B - t_W).
class ZeroBubbleH1 final : public PipelineSchedule {
 public:
  Schedule kind() const override { return Schedule::kZeroBubbleH1; }
  bool splits_backward() const override { return true; }
  void build(const PipelineShape& s, std::vector<std::vector<ScheduleOp>>& ops) const override {
    ops.assign(s.ranks, {});
    for (int r = 0; r < s.ranks; ++r) {
      auto& list = ops[r];
      list.reserve(3 * static_cast<std::size_t>(s.microbatches));
      std::deque<int> deferred_w;
      auto run_b = [&](int mb, int keep_deferred) {
        list.push_back({OpKind::kBackwardInput, mb, 0});
        deferred_w.push_back(mb);
        if (static_cast<int>(deferred_w.size()) > keep_deferred) {
          list.push_back({OpKind::kBackwardWeight, deferred_w.front(), 0});
          deferred_w.pop_front();
        }
      };
      const int warmup = std::min(s.ranks - r - 1, s.microbatches);
      for (int k = 0; k < warmup; ++k) list.push_back(forward(k));
      for (int k = 0; k < s.microbatches - warmup; ++k) {
        list.push_back(forward(k + warmup));
        run_b(k, r);  // steady state: keep r W passes deferred
      }
      for (int k = s.microbatches - warmup; k < s.microbatches; ++k) run_b(k, 0);  // drain: one W per B
      for (int mb : deferred_w) list.push_back({OpKind::kBackwardWeight, mb, 0});
    }
  }
  // Rank r's p - r 1F1B micro-batches plus its r deferred W passes, all ranks min(p, m).
  std::vector<int> peak_in_flight(const PipelineShape& s) const override {
    return std::vector<int>(static_cast<std::size_t>(s.ranks), std::min(s.ranks, s.microbatches));
  }
};

}  // namespace

const PipelineSchedule& schedule_for(Schedule schedule) {
  static const GPipe gpipe;
  static const OneFOneB one_f_one_b;
  static const Interleaved1F1B interleaved;
  static const ZeroBubbleH1 zb_h1;
  switch (schedule) {
    case Schedule::kGPipe: return gpipe;
    case Schedule::kOneFOneB: return one_f_one_b;
    case Schedule::kInterleaved1F1B: return interleaved;
    case Schedule::kZeroBubbleH1: return zb_h1;
  }
  throw Error("unknown schedule");  // unreachable: the switch covers every enumerator
}

}  // namespace paratune::sim
