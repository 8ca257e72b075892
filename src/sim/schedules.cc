// The shipped pipeline schedules. Each writes, per rank, the static order of its operations; the
// simulator supplies the timing. Ranks are 0-based, rank 0 holds the embedding.
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <functional>

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

std::vector<int> count_in_flight(const std::vector<std::vector<ScheduleOp>>& ops) {
  std::vector<int> out;
  for (const std::vector<ScheduleOp>& program : ops) {
    int held = 0, peak = 0;
    for (const ScheduleOp& op : program) {
      if (op.kind == OpKind::kForward) peak = std::max(peak, ++held);
      if (op.kind == OpKind::kBackwardWeight || op.kind == OpKind::kBackward) --held;
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


// Interleaved zero-bubble: PyTorch's ScheduleInterleavedZeroBubble (torch/distributed/pipelining/
// schedules.py, what torchtitan runs as "InterleavedZeroBubble"; Qi et al. 2024's ZB-H1 idea over
// looped chunks). Forwards and input gradients follow the interleaved order of PyTorch's
// Interleaved1F1B in rounds of r_m = m / max(1, m // p) micro-batches (chunk (k / r_m) mod v), with
// (v - 1)·r_m + (p - 1 - rank) warm-up forwards (one per hop from the last rank, not two); each
// input gradient B is followed by the W pass of the B `rank` places earlier (the first `rank` are
// deferred), the remaining W passes close the iteration. Every rank holds at most
// min((v - 1)·r_m + p, m·v) chunks.
class InterleavedZeroBubble final : public PipelineSchedule {
 public:
  Schedule kind() const override { return Schedule::kInterleavedZeroBubble; }
  bool splits_backward() const override { return true; }
  void check(const PipelineShape& s) const override {
    if (s.ranks < 1 || s.chunks < 2 || s.microbatches < 1)
      throw Error(fmt::format("interleaved-zb needs pp >= 1, vpp >= 2 and m >= 1 (got p={}, v={}, m={})", s.ranks,
                              s.chunks, s.microbatches));
    if (s.microbatches % rounds(s) != 0)
      throw Error(fmt::format("interleaved-zb needs the number of micro-batches ({}) to be a multiple of "
                              "max(1, m / pp) = {} (PyTorch's interleaved schedules run whole rounds)",
                              s.microbatches, rounds(s)));
  }
  void build(const PipelineShape& s, std::vector<std::vector<ScheduleOp>>& ops) const override {
    const int p = s.ranks, v = s.chunks, total = s.microbatches * v, per_round = s.microbatches / rounds(s);
    ops.assign(p, {});
    for (int r = 0; r < p; ++r) {
      auto& list = ops[r];
      list.reserve(3 * static_cast<std::size_t>(total));
      const int warmup = warmup_forwards(s, r);
      auto forward_chunk = [&](int step) { return (step / per_round) % v; };
      auto backward_chunk = [&](int step) { return v - 1 - ((step - warmup) / per_round) % v; };
      std::vector<int> forwards(v, 0), inputs(v, 0), weights(v, 0);
      std::vector<int> backward_steps;  // the step of each B, in order: its W follows `r` Bs later
      std::size_t weights_done = 0;
      auto run_w = [&] {
        const int c = backward_chunk(backward_steps[weights_done++]);
        list.push_back({OpKind::kBackwardWeight, weights[c]++, c});
      };
      for (int step = 0; step < total + warmup; ++step) {
        if (step < total) {
          const int c = forward_chunk(step);
          list.push_back(forward(forwards[c]++, c));
        }
        if (step < warmup) continue;
        const int c = backward_chunk(step);
        list.push_back({OpKind::kBackwardInput, inputs[c]++, c});
        backward_steps.push_back(step);
        if (step - warmup >= r) run_w();
      }
      while (weights_done < backward_steps.size()) run_w();
    }
  }
  std::vector<int> peak_in_flight(const PipelineShape& s) const override {
    const int per_round = s.microbatches / rounds(s);
    return std::vector<int>(static_cast<std::size_t>(s.ranks),
                            std::min((s.chunks - 1) * per_round + s.ranks, s.microbatches * s.chunks));
  }

 private:
  static int rounds(const PipelineShape& s) { return std::max(1, s.microbatches / s.ranks); }
  static int warmup_forwards(const PipelineShape& s, int r) {
    const int per_round = s.microbatches / rounds(s);
    return std::min((s.chunks - 1) * per_round + (s.ranks - 1 - r), s.microbatches * s.chunks);
  }
};

// The V placement shared by ZB-V and DualPipeV: rank r holds parts r (chunk 0) and 2p-1-r (chunk 1),
// so a micro-batch goes down the ranks and back up, and rank 0 both embeds it and computes its loss.
class VShapeSchedule : public PipelineSchedule {
 public:
  bool looped() const override { return false; }
  int part_of(const PipelineShape& s, int rank, int chunk) const override {
    return chunk == 0 ? rank : 2 * s.ranks - 1 - rank;
  }
  PartPlacement place(const PipelineShape& s, int part, int /*microbatch*/) const override {
    return part < s.ranks ? PartPlacement{part, 0} : PartPlacement{2 * s.ranks - 1 - part, 1};
  }
};

// ZB-V: PyTorch's ScheduleZBVZeroBubble (torchtitan "ZBVZeroBubble"), the fixed-order form of Qi et
// al. 2024's ZB-V ("Pipeline Parallelism with Controllable Memory", V-shape, zero bubble at 1F1B's
// activation memory). Rank r of p, n = max(m, 2p - 1) micro-batches (those >= m are dropped):
//   warm-up: 2(p - r) - 1 x F0; r x (F1, F0); (p - r) x (F1, B1, W1)
//   steady, until every forward ran: F0 (while any is left), B0, W0, F1, B1, W1
//   cool-down: r x (B1, B0); (p - r) x (B0, W0); the remaining W1, then the remaining W0.
// (F0/B0/W0: chunk 0; F1/B1/W1: chunk 1; B: input gradient.) For m >= 2p - 1 every rank holds at
// most 2p chunks, p whole stages: 1F1B's rank 0. Up to the last forward this is the order the
// paper's own implementation (sail-sg/zero-bubble-pipeline-parallelism, zbv.py) finds for equal
// F, B and W (a test holds it to that); the cool-down's W placement is PyTorch's fixed one.
class ZeroBubbleV final : public VShapeSchedule {
 public:
  Schedule kind() const override { return Schedule::kZeroBubbleV; }
  bool splits_backward() const override { return true; }
  void check(const PipelineShape& s) const override {
    if (s.ranks < 1 || s.chunks != 2 || s.microbatches < 1)
      throw Error(fmt::format("zb-v needs exactly vpp = 2 chunks per rank (a V: ranks 0..p-1 and back), pp >= 1 and "
                              "m >= 1 (got p={}, v={}, m={})",
                              s.ranks, s.chunks, s.microbatches));
  }
  void build(const PipelineShape& s, std::vector<std::vector<ScheduleOp>>& ops) const override {
    ops.assign(s.ranks, {});
    for (int r = 0; r < s.ranks; ++r) ops[r] = program(s, r);
  }
  std::vector<int> peak_in_flight(const PipelineShape& s) const override {
    std::vector<int> out;
    out.reserve(static_cast<std::size_t>(s.ranks));
    for (int r = 0; r < s.ranks; ++r)  // below 2p - 1 micro-batches (m < 2p: O(p) ops) count the program
      out.push_back(s.microbatches >= 2 * s.ranks - 1 ? 2 * s.ranks : count_in_flight({program(s, r)}).front());
    return out;
  }

 private:
  static std::vector<ScheduleOp> program(const PipelineShape& s, int r) {
    const int p = s.ranks, n = std::max(s.microbatches, 2 * p - 1);
    std::vector<ScheduleOp> list;
    list.reserve(6 * static_cast<std::size_t>(n));
    int f[2] = {0, 0}, b[2] = {0, 0};
    auto push = [&](OpKind kind, int chunk, int mb) {
      if (mb < s.microbatches) list.push_back({kind, mb, chunk});
    };
    auto F = [&](int c) { push(OpKind::kForward, c, f[c]++); };
    auto BW = [&](int c) {  // B then its W at once
      push(OpKind::kBackwardInput, c, b[c]);
      push(OpKind::kBackwardWeight, c, b[c]++);
    };
    for (int k = 0; k < 2 * (p - r) - 1; ++k) F(0);
    for (int k = 0; k < r; ++k) F(1), F(0);
    for (int k = 0; k < p - r; ++k) F(1), BW(1);
    while (f[1] < f[0] || f[0] < n) {
      if (f[0] < n) F(0);
      BW(0);
      F(1);
      BW(1);
    }
    int w[2] = {b[0], b[1]};
    for (int k = 0; k < r; ++k) {
      push(OpKind::kBackwardInput, 1, b[1]++);
      push(OpKind::kBackwardInput, 0, b[0]++);
    }
    for (int k = 0; k < p - r; ++k) {
      push(OpKind::kBackwardInput, 0, b[0]++);
      push(OpKind::kBackwardWeight, 0, w[0]++);
    }
    while (w[1] < b[1]) push(OpKind::kBackwardWeight, 1, w[1]++);
    while (w[0] < b[0]) push(OpKind::kBackwardWeight, 0, w[0]++);
    return list;
  }
};

// DeepSeek's DualPipe family (github.com/deepseek-ai/DualPipe, dualpipe.py and dualpipev.py @3da1bbe),
// one program per rank in two "phases". P ranks, this one the R-th, M micro-batches per phase:
//   1: 2(P - R - 1) x F0                 2: (R + 1) x (F0, F1)
//   3: (P - R - 1) x (B1 split, W, F1)    4: (M - 2P + R + 1) x (F0, B1, F1, B0)
//   5: (P - R - 1) x (B1, F1, B0)         6: (R + 1) x (B1, B0), split from the middle one on
//   7: (P - R - 1) x (W, B0 split)        8: (R + 1) x W
// where a split B runs the input gradient and queues its W, and W runs the oldest queued one (the
// reference's WeightGradStore is FIFO). Steps 4 and 5 run F and B of different micro-batches
// together in the reference (overlapped_forward_backward hides the expert all-to-all); the replay
// runs them one after the other, F first, so it charges that overlap nowhere. Peak: 2P + 1 chunks.
std::vector<ScheduleOp> dualpipe_program(int P, int R, int M, int rank, const std::function<int(int)>& chunk_of_phase,
                                         const std::function<int(int, int)>& microbatch_of) {
  std::vector<ScheduleOp> list;
  list.reserve(6 * static_cast<std::size_t>(M));
  int f[2] = {0, 0}, b[2] = {0, 0};
  std::deque<std::pair<int, int>> queued;  // (chunk, micro-batch) of split Bs whose W has not run
  auto F = [&](int phase) {
    const int c = chunk_of_phase(phase);
    list.push_back({OpKind::kForward, microbatch_of(c, f[phase]++), c});
  };
  auto B = [&](int phase, bool split) {
    const int c = chunk_of_phase(phase), mb = microbatch_of(c, b[phase]++);
    list.push_back({split ? OpKind::kBackwardInput : OpKind::kBackward, mb, c});
    if (split) queued.emplace_back(c, mb);
  };
  auto W = [&] {
    if (queued.empty())
      throw Error(fmt::format("DualPipe program of rank {}: a W pass with no split backward queued", rank));
    list.push_back({OpKind::kBackwardWeight, queued.front().second, queued.front().first});
    queued.pop_front();
  };
  for (int k = 0; k < 2 * (P - R - 1); ++k) F(0);
  for (int k = 0; k < R + 1; ++k) F(0), F(1);
  for (int k = 0; k < P - R - 1; ++k) B(1, true), W(), F(1);
  for (int k = 0; k < M - 2 * P + R + 1; ++k) F(0), B(1, false), F(1), B(0, false);
  for (int k = 0; k < P - R - 1; ++k) B(1, false), F(1), B(0, false);
  bool split = false;
  for (int k = 0; k < R + 1; ++k) {
    if (k == (R + 1) / 2 && R % 2 == 1) split = true;
    B(1, split);
    if (k == (R + 1) / 2 && R % 2 == 0) split = true;
    B(0, split);
  }
  for (int k = 0; k < P - R - 1; ++k) W(), B(0, true);
  for (int k = 0; k < R + 1; ++k) W();
  if (!queued.empty()) throw Error(fmt::format("DualPipe program of rank {}: {} W passes never ran", rank, queued.size()));
  return list;
}

// DualPipeV (torchtitan "DualPipeV"): the V placement; phase 0 is chunk 0 (part r), phase 1 chunk 1.
class DualPipeV final : public VShapeSchedule {
 public:
  Schedule kind() const override { return Schedule::kDualPipeV; }
  bool splits_backward() const override { return true; }
  void check(const PipelineShape& s) const override {
    if (s.ranks < 1 || s.chunks != 2)
      throw Error(fmt::format("dualpipev needs exactly vpp = 2 chunks per rank (got p={}, v={})", s.ranks, s.chunks));
    if (s.microbatches < 2 * s.ranks)
      throw Error(fmt::format("dualpipev needs at least 2·pp = {} micro-batches (got {}; DualPipeV.step asserts it)",
                              2 * s.ranks, s.microbatches));
  }
  void build(const PipelineShape& s, std::vector<std::vector<ScheduleOp>>& ops) const override {
    ops.assign(s.ranks, {});
    for (int r = 0; r < s.ranks; ++r)
      ops[r] = dualpipe_program(s.ranks, r, s.microbatches, r, [](int phase) { return phase; },
                                [](int, int k) { return k; });
  }
  std::vector<int> peak_in_flight(const PipelineShape& s) const override {
    return std::vector<int>(static_cast<std::size_t>(s.ranks), 2 * s.ranks + 1);
  }
};

// DualPipe: micro-batches 0..m/2-1 enter at rank 0 and run on chunk 0 (part r of one parameter copy),
// m/2..m-1 enter at rank p-1 and run on chunk 1 (part p-1-r of the other copy). The ranks of the
// first half run phase 0 = the first direction; those of the second half mirror them.
class DualPipe final : public PipelineSchedule {
 public:
  Schedule kind() const override { return Schedule::kDualPipe; }
  bool splits_backward() const override { return true; }
  bool looped() const override { return false; }
  int parts(const PipelineShape& s) const override { return s.ranks; }
  int part_of(const PipelineShape& s, int rank, int chunk) const override {
    return chunk == 0 ? rank : s.ranks - 1 - rank;
  }
  PartPlacement place(const PipelineShape& s, int part, int microbatch) const override {
    return microbatch < s.microbatches / 2 ? PartPlacement{part, 0} : PartPlacement{s.ranks - 1 - part, 1};
  }
  int microbatches_per_chunk(const PipelineShape& s) const override { return s.microbatches / 2; }
  bool starts_from_rank_zero() const override { return false; }
  void check(const PipelineShape& s) const override {
    if (s.ranks < 2 || s.ranks % 2 != 0 || s.chunks != 2)
      throw Error(fmt::format("dualpipe needs an even pp >= 2 and its two parameter copies as vpp = 2 chunks "
                              "(got p={}, v={})",
                              s.ranks, s.chunks));
    if (s.microbatches % 2 != 0 || s.microbatches < 2 * s.ranks)
      throw Error(fmt::format("dualpipe needs an even number of micro-batches, at least 2·pp = {} (got {}; "
                              "DualPipe.step asserts it)",
                              2 * s.ranks, s.microbatches));
  }
  void build(const PipelineShape& s, std::vector<std::vector<ScheduleOp>>& ops) const override {
    const int half = s.ranks / 2, m = s.microbatches / 2;
    ops.assign(s.ranks, {});
    for (int r = 0; r < s.ranks; ++r) {
      const int second_half = r >= half ? 1 : 0;
      ops[r] = dualpipe_program(half, std::min(r, s.ranks - 1 - r), m, r,
                                [second_half](int phase) { return phase ^ second_half; },
                                [m](int chunk, int k) { return chunk * m + k; });
    }
  }
  std::vector<int> peak_in_flight(const PipelineShape& s) const override {
    return std::vector<int>(static_cast<std::size_t>(s.ranks), s.ranks + 1);
  }
};

}  // namespace

PipelineShape pipeline_shape(Schedule schedule, int pp, int vpp, int microbatches) {
  return {pp, schedule == Schedule::kDualPipe ? 2 : vpp, microbatches};
}

std::vector<int> by_model_part(const ParallelConfig& config, const std::vector<int>& per_chunk) {
  const PipelineSchedule& schedule = schedule_for(config.schedule);
  const PipelineShape shape{config.pp, config.vpp, 1};  // the configuration's chunks: DualPipe's first copy
  std::vector<int> out(per_chunk.size(), 0);
  for (int r = 0; r < config.pp; ++r)
    for (int ch = 0; ch < config.vpp; ++ch)
      out[static_cast<std::size_t>(schedule.part_of(shape, r, ch))] =
          per_chunk[static_cast<std::size_t>(ch) * config.pp + r];
  return out;
}

const PipelineSchedule& schedule_for(Schedule schedule) {
  static const GPipe gpipe;
  static const OneFOneB one_f_one_b;
  static const Interleaved1F1B interleaved;
  static const ZeroBubbleH1 zb_h1;
  static const InterleavedZeroBubble interleaved_zb;
  static const ZeroBubbleV zb_v;
  static const DualPipeV dualpipe_v;
  static const DualPipe dualpipe;
  switch (schedule) {
    case Schedule::kGPipe: return gpipe;
    case Schedule::kOneFOneB: return one_f_one_b;
    case Schedule::kInterleaved1F1B: return interleaved;
    case Schedule::kZeroBubbleH1: return zb_h1;
    case Schedule::kInterleavedZeroBubble: return interleaved_zb;
    case Schedule::kZeroBubbleV: return zb_v;
    case Schedule::kDualPipeV: return dualpipe_v;
    case Schedule::kDualPipe: return dualpipe;
  }
  throw Error("unknown schedule");  // unreachable: the switch covers every enumerator
}

}  // namespace paratune::sim
