// The pipeline replay: closed forms for equal stages, dependencies under random configurations,
// gradient-sync placements, memory, determinism, malformed problems.
#include "paratune/sim/pipeline.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <tuple>

#include "paratune/spec/error.h"
#include "random_problem.h"

namespace paratune::sim {
namespace {

const Schedule kEverySchedule[] = {Schedule::kGPipe,        Schedule::kOneFOneB,
                                   Schedule::kInterleaved1F1B, Schedule::kZeroBubbleH1,
                                   Schedule::kInterleavedZeroBubble, Schedule::kZeroBubbleV,
                                   Schedule::kDualPipeV,    Schedule::kDualPipe};

// p ranks x v chunks of equal cost: a full stage takes t_f forward, t_b + t_w backward.
PipelineProblem uniform(int p, int v, int m, double tf, double tb, double tw, Schedule schedule) {
  PipelineProblem pb;
  pb.microbatches = m;
  pb.schedule = schedule;
  pb.grad_sync = GradSync::kShifted;
  for (int r = 0; r < p; ++r) {
    StageCost s;
    for (int c = 0; c < v; ++c) {
      ChunkCost cc;
      cc.forward_s = tf / v;
      cc.backward_input_s = tb / v;
      cc.backward_weight_s = tw / v;
      cc.activation_bytes = 1.0 / v;  // one micro-batch of the whole stage = 1
      s.chunks.push_back(cc);
    }
    pb.stages.push_back(s);
  }
  return pb;
}

TEST(Replay, OneFOneBAndGPipeMatchTheClosedForm) {
  // (m + p - 1)(t_f + t_b) with free communication (Narayanan et al. 2021, Sec. 2.2).
  for (Schedule s : {Schedule::kOneFOneB, Schedule::kGPipe})
    for (int p : {1, 2, 3, 4, 8})
      for (int m : {1, 2, 5, 8, 32}) {
        const SimulationResult r = simulate(uniform(p, 1, m, 1.0, 1.5, 0.5, s));
        EXPECT_DOUBLE_EQ(r.iteration_time_s, (m + p - 1) * 3.0) << to_string(s) << " p=" << p << " m=" << m;
        EXPECT_NEAR(r.bubble_fraction, static_cast<double>(p - 1) / m, 1e-12);
      }
}

TEST(Replay, InterleavedBubbleIsReducedByV) {
  // T = (m + (p - 1)/v)(t_f + t_b); bubble (p - 1)/(v m).
  for (int p : {2, 4, 8})
    for (int v : {2, 3, 4})
      for (int m : {p, 2 * p, 4 * p}) {
        const SimulationResult r = simulate(uniform(p, v, m, 1.0, 2.0, 0.0, Schedule::kInterleaved1F1B));
        EXPECT_NEAR(r.iteration_time_s, (m + static_cast<double>(p - 1) / v) * 3.0, 1e-9) << p << " " << v << " " << m;
        EXPECT_NEAR(r.bubble_fraction, static_cast<double>(p - 1) / (v * m), 1e-12) << p << " " << v << " " << m;
      }
}

TEST(Replay, ZeroBubbleH1MatchesThePaper) {
  // Qi et al. 2024, Sec. 3.1: with t_F = t_B = t_W the bubble is (p - 1)(t_F + t_B - t_W).
  for (int p : {2, 4, 8})
    for (int m : {p, 2 * p, 24}) {
      const SimulationResult r = simulate(uniform(p, 1, m, 1.0, 1.0, 1.0, Schedule::kZeroBubbleH1));
      EXPECT_DOUBLE_EQ(r.iteration_time_s, m * 3.0 + (p - 1) * 1.0) << "p=" << p << " m=" << m;
      const SimulationResult one = simulate(uniform(p, 1, m, 1.0, 1.0, 1.0, Schedule::kOneFOneB));
      EXPECT_LE(r.iteration_time_s, one.iteration_time_s);
      for (const auto& s : r.stages) EXPECT_LE(s.peak_activation_bytes, p + 1e-12);  // 1F1B's peak
    }
}

// A rank's program as text: F/B/I/W (forward, full backward, input gradient, weight gradient),
// then chunk.micro-batch.
std::string program_text(const std::vector<ScheduleOp>& program) {
  std::string out;
  for (const ScheduleOp& op : program) {
    const char kind = op.kind == OpKind::kForward ? 'F'
                      : op.kind == OpKind::kBackward ? 'B'
                      : op.kind == OpKind::kBackwardInput ? 'I' : 'W';
    out += fmt::format("{}{}{}.{}", out.empty() ? "" : " ", kind, op.chunk, op.microbatch);
  }
  return out;
}

TEST(Schedules, DualPipeVIsTheReferenceFigure) {
  // github.com/deepseek-ai/DualPipe images/dualpipev.png (4 ranks, 10 micro-batches), devices 0 and
  // 3 read cell by cell: an overlapped F&B cell is F then B; green-then-blue pairs are I then W.
  std::vector<std::vector<ScheduleOp>> ops;
  schedule_for(Schedule::kDualPipeV).build({4, 2, 10}, ops);
  EXPECT_EQ(program_text(ops[0]),
            "F0.0 F0.1 F0.2 F0.3 F0.4 F0.5 F0.6 F1.0 I1.0 W1.0 F1.1 I1.1 W1.1 F1.2 I1.2 W1.2 F1.3 F0.7 B1.3 F1.4 B0.0 "
            "F0.8 B1.4 F1.5 B0.1 F0.9 B1.5 F1.6 B0.2 B1.6 F1.7 B0.3 B1.7 F1.8 B0.4 B1.8 F1.9 B0.5 B1.9 I0.6 W0.6 I0.7 "
            "W0.7 I0.8 W0.8 I0.9 W0.9");
  EXPECT_EQ(program_text(ops[3]),
            "F0.0 F1.0 F0.1 F1.1 F0.2 F1.2 F0.3 F1.3 F0.4 B1.0 F1.4 B0.0 F0.5 B1.1 F1.5 B0.1 F0.6 B1.2 F1.6 B0.2 F0.7 "
            "B1.3 F1.7 B0.3 F0.8 B1.4 F1.8 B0.4 F0.9 B1.5 F1.9 B0.5 B1.6 B0.6 B1.7 B0.7 I1.8 I0.8 I1.9 I0.9 W1.8 W0.8 "
            "W1.9 W0.9");
}

TEST(Schedules, ZeroBubbleVIsThePapersScheduleUpToItsLastForward) {
  // The paper's implementation (github.com/sail-sg/zero-bubble-pipeline-parallelism @39f2c186,
  // megatron/core/pipeline_parallel/zerobubble/scheduler/zbv.py, PipelineGraph(4 stages, 8
  // micro-batches, F = B = W = 1, no communication cost, F memory 2, B and W -1) run with Python,
  // its best try_v_schedule): ranks 0 and 3 up to their last forward. After it the paper places the
  // remaining W passes greedily by cost; PyTorch's fixed order (what torchtitan runs) is ours.
  std::vector<std::vector<ScheduleOp>> ops;
  schedule_for(Schedule::kZeroBubbleV).build({4, 2, 8}, ops);
  auto up_to_last_forward = [](const std::string& text) { return text.substr(0, text.find("F1.7") + 4); };
  EXPECT_EQ(up_to_last_forward(program_text(ops[0])),
            "F0.0 F0.1 F0.2 F0.3 F0.4 F0.5 F0.6 F1.0 I1.0 W1.0 F1.1 I1.1 W1.1 F1.2 I1.2 W1.2 F1.3 I1.3 W1.3 F0.7 I0.0 "
            "W0.0 F1.4 I1.4 W1.4 I0.1 W0.1 F1.5 I1.5 W1.5 I0.2 W0.2 F1.6 I1.6 W1.6 I0.3 W0.3 F1.7");
  EXPECT_EQ(up_to_last_forward(program_text(ops[3])),
            "F0.0 F1.0 F0.1 F1.1 F0.2 F1.2 F0.3 F1.3 I1.0 W1.0 F0.4 I0.0 W0.0 F1.4 I1.1 W1.1 F0.5 I0.1 W0.1 F1.5 I1.2 "
            "W1.2 F0.6 I0.2 W0.2 F1.6 I1.3 W1.3 F0.7 I0.3 W0.3 F1.7");
}

TEST(Schedules, DualPipeRanksMirrorEachOther) {
  // Rank p-1-r runs rank r's program with the directions swapped: chunk 1 for chunk 0 and the
  // micro-batches of the other half (dualpipe.py: phase ^= is_in_second_half).
  for (int p : {2, 4, 8})
    for (int m : {2 * p, 2 * p + 2, 6 * p}) {
      std::vector<std::vector<ScheduleOp>> ops;
      schedule_for(Schedule::kDualPipe).build({p, 2, m}, ops);
      for (int r = 0; r < p; ++r) {
        std::vector<ScheduleOp> mirrored = ops[p - 1 - r];
        for (ScheduleOp& op : mirrored) {
          op.chunk = 1 - op.chunk;
          op.microbatch = (op.microbatch + m / 2) % m;
        }
        EXPECT_EQ(program_text(mirrored), program_text(ops[r])) << "p=" << p << " m=" << m << " rank " << r;
      }
    }
}

TEST(Schedules, VShapesAndDualPipePlaceTheirParts) {
  const PipelineShape v{4, 2, 8};
  for (Schedule s : {Schedule::kZeroBubbleV, Schedule::kDualPipeV}) {
    const PipelineSchedule& schedule = schedule_for(s);
    EXPECT_EQ(schedule.parts(v), 8);
    EXPECT_EQ(schedule.part_of(v, 0, 1), 7);  // rank 0 computes the loss
    EXPECT_EQ(schedule.place(v, 4, 0).rank, 3);  // the turn: parts 3 and 4 on the last rank
    EXPECT_EQ(schedule.place(v, 3, 0).rank, 3);
    EXPECT_EQ(schedule.place(v, 5, 0).rank, 2);
  }
  const PipelineSchedule& dual = schedule_for(Schedule::kDualPipe);
  EXPECT_EQ(dual.parts(v), 4);
  EXPECT_EQ(dual.microbatches_per_chunk(v), 4);
  EXPECT_EQ(dual.place(v, 0, 0).rank, 0);  // the first half enters at rank 0 ...
  EXPECT_EQ(dual.place(v, 0, 4).rank, 3);  // ... the second at rank 3, on the other copy
  EXPECT_EQ(dual.place(v, 0, 4).chunk, 1);
  EXPECT_EQ(pipeline_shape(Schedule::kDualPipe, 4, 1, 8).chunks, 2);
  EXPECT_EQ(pipeline_shape(Schedule::kZeroBubbleV, 4, 2, 8).chunks, 2);
}

TEST(Replay, DualPipeBubblesAreWithinTheReferenceFormula) {
  // DualPipe README: bubble (PP/2 - 1)(F&B + B - 3W), PP the pipeline stages (DualPipe: ranks;
  // DualPipeV: 2 x ranks), B a full backward (I + W), F&B an overlapped forward and backward. The
  // replay runs F&B as F then B (F&B = F + B), and F need not wait for B's gradient, so its idle time
  // per rank is at most the formula's. Activation per device: PP + 1 chunks (of its parts).
  for (const auto& [f, i, w] : {std::tuple{1.0, 1.0, 1.0}, {1.0, 1.5, 0.7}, {1.0, 2.0, 2.0}, {0.5, 1.0, 0.25}})
    for (int p : {2, 4, 8})
      for (int m : {2 * p, 4 * p, 6 * p}) {
        const double formula_unit = (f + i + w) + (i + w) - 3 * w;
        const SimulationResult dual = simulate(uniform(p, 2, m, 2 * f, 2 * i, 2 * w, Schedule::kDualPipe));
        const double dual_work = m * (f + i + w);  // m/2 micro-batches on each of two copies
        EXPECT_LE(dual.iteration_time_s - dual_work, (p / 2 - 1) * formula_unit + 1e-9) << p << " " << m;
        EXPECT_GE(dual.iteration_time_s, dual_work - 1e-9);
        for (const StageResult& r : dual.stages) EXPECT_DOUBLE_EQ(r.peak_activation_bytes, (p + 1) / 2.0);
        const SimulationResult v = simulate(uniform(p, 2, m, 2 * f, 2 * i, 2 * w, Schedule::kDualPipeV));
        const double v_work = 2 * m * (f + i + w);
        EXPECT_LE(v.iteration_time_s - v_work, (p - 1) * formula_unit + 1e-9) << p << " " << m;
        for (const StageResult& r : v.stages) EXPECT_DOUBLE_EQ(r.peak_activation_bytes, (2 * p + 1) / 2.0);
      }
}

TEST(Replay, ZeroBubbleVAndInterleavedZeroBubbleBeatTheirOneFOneBCousins) {
  // ZB-V (Qi et al. 2024, "Pipeline Parallelism with Controllable Memory"): with t_F = t_B = t_W
  // no bubble in the steady state (the time beyond the work does not grow with m), below ZB-H1's
  // (p - 1)(t_F + t_B - t_W) for the same stages, at 1F1B's peak memory (p stages' activations).
  for (int p : {2, 4, 8}) {
    double beyond = -1;
    for (int m : {2 * p, 3 * p, 8 * p}) {
      const SimulationResult zbv = simulate(uniform(p, 2, m, 1, 1, 1, Schedule::kZeroBubbleV));
      const double extra = zbv.iteration_time_s - 3.0 * m;
      if (beyond < 0) beyond = extra;
      EXPECT_NEAR(extra, beyond, 1e-9) << "p=" << p << " m=" << m;
      EXPECT_LT(extra, (p - 1) * 1.0 + 1e-9);  // ZB-H1: (p - 1)(1 + 1 - 1) for the same stages
      for (const StageResult& r : zbv.stages) EXPECT_DOUBLE_EQ(r.peak_activation_bytes, p);
      const SimulationResult izb = simulate(uniform(p, 2, m, 1, 1, 1, Schedule::kInterleavedZeroBubble));
      const SimulationResult i1f1b = simulate(uniform(p, 2, m, 1, 2, 0, Schedule::kInterleaved1F1B));
      EXPECT_LT(izb.iteration_time_s, i1f1b.iteration_time_s) << "p=" << p << " m=" << m;
    }
  }
}

TEST(Replay, PeakActivationsMatchTheSchedulesInFlightCounts) {
  const int p = 4, m = 12;
  const SimulationResult one = simulate(uniform(p, 1, m, 1, 2, 0, Schedule::kOneFOneB));
  const SimulationResult gpipe = simulate(uniform(p, 1, m, 1, 2, 0, Schedule::kGPipe));
  for (int r = 0; r < p; ++r) {
    EXPECT_DOUBLE_EQ(one.stages[r].peak_activation_bytes, p - r);  // 1F1B: p - r micro-batches
    EXPECT_DOUBLE_EQ(gpipe.stages[r].peak_activation_bytes, m);
  }
  // Interleaved (Megatron-LM): rank r holds 2(p - r - 1) + (v - 1)p + 1 chunks, each 1/v of a stage.
  const int v = 2;
  const SimulationResult inter = simulate(uniform(p, v, m, 1, 2, 0, Schedule::kInterleaved1F1B));
  for (int r = 0; r < p; ++r)
    EXPECT_NEAR(inter.stages[r].peak_activation_bytes, (2.0 * (p - r - 1) + (v - 1) * p + 1) / v, 1e-12) << r;
}

// Each schedule's closed-form peak_in_flight() = counting its programs = the replay's peak.
TEST(Replay, EverySchedulesPeakInFlightIsWhatItsProgramsAndTheReplayHold) {
  for (Schedule schedule : kEverySchedule)
    for (int p : {1, 2, 3, 4, 8})
      for (int v : {1, 2, 3})
        for (int m : {1, 2, 3, 4, 7, 8, 16, 24}) {
          const PipelineShape shape{p, v, m};
          const PipelineSchedule& s = schedule_for(schedule);
          try {
            s.check(shape);
          } catch (const Error&) {
            continue;
          }
          std::vector<std::vector<ScheduleOp>> ops;
          s.build(shape, ops);
          const std::vector<int> closed = s.peak_in_flight(shape);
          const std::string where = fmt::format("{} p={} v={} m={}", to_string(schedule), p, v, m);
          EXPECT_EQ(closed, count_in_flight(ops)) << where;
          const SimulationResult replay = simulate(uniform(p, v, m, 1, 2, 1, schedule));
          for (int r = 0; r < p; ++r)
            EXPECT_NEAR(replay.stages[r].peak_activation_bytes, closed[r] / static_cast<double>(v), 1e-12) << where;
        }
}

TEST(Replay, RecomputeWorkingSetAddsToThePeakDuringBackward) {
  PipelineProblem pb = uniform(2, 1, 4, 1, 2, 0, Schedule::kOneFOneB);
  for (auto& s : pb.stages) s.chunks[0].recompute_bytes = 0.25;
  const SimulationResult r = simulate(pb);
  EXPECT_DOUBLE_EQ(r.stages[0].peak_activation_bytes, 2.25);
  EXPECT_DOUBLE_EQ(r.stages[1].peak_activation_bytes, 1.25);
}

TEST(Replay, InBackwardGradSyncDelaysEveryEarlierStage) {
  // Comm-Shift's observation: reducing inside the last backward delays the gradient each stage
  // sends back, so the reductions add up along the drain: p·G instead of G after the flush.
  const int p = 4, m = 8;
  const double g = 0.5;
  PipelineProblem pb = uniform(p, 1, m, 1, 2, 0, Schedule::kOneFOneB);
  for (auto& s : pb.stages) s.chunks[0].grad_sync_s = g;
  pb.grad_sync = GradSync::kInBackward;
  const double in_backward = simulate(pb).iteration_time_s;
  pb.grad_sync = GradSync::kShifted;
  const double shifted = simulate(pb).iteration_time_s;
  EXPECT_DOUBLE_EQ(shifted, (m + p - 1) * 3.0 + g);
  EXPECT_DOUBLE_EQ(in_backward, (m + p - 1) * 3.0 + p * g);
  // Overlapped: with a 2 s backward and one bucket the reduction starts when the pass ends (the
  // bucket is ready then); with many buckets most of it hides behind the backward.
  pb.grad_sync = GradSync::kOverlapped;
  for (auto& s : pb.stages) s.chunks[0].grad_sync_buckets = 1;
  EXPECT_DOUBLE_EQ(simulate(pb).iteration_time_s, shifted);
  for (auto& s : pb.stages) s.chunks[0].grad_sync_buckets = 10;
  EXPECT_NEAR(simulate(pb).iteration_time_s, (m + p - 1) * 3.0 + g / 10, 1e-12);
}

TEST(Replay, UnevenStagesFollowTheSlowestStage) {
  // 1F1B with stage times t_i and free communication: the slowest stage is busy m·max t_i, and the
  // common closed form (m - 1)·max t_i + Σ t_i bounds the time from above (stages faster than the
  // bottleneck after it overlap their fill with its work).
  PipelineProblem pb = uniform(4, 1, 16, 1, 2, 0, Schedule::kOneFOneB);
  const std::vector<double> scale{1.0, 1.5, 1.0, 0.5};
  double sum = 0, max = 0;
  for (int r = 0; r < 4; ++r) {
    pb.stages[r].chunks[0].forward_s *= scale[r];
    pb.stages[r].chunks[0].backward_input_s *= scale[r];
    sum += 3 * scale[r];
    max = std::max(max, 3 * scale[r]);
  }
  const double t = simulate(pb).iteration_time_s;
  EXPECT_GT(t, 16 * max);
  EXPECT_LE(t, 15 * max + sum);
  // By hand: stage 1 (4.5 per micro-batch) starts after stage 0's first forward (1); after its three
  // warm-up forwards (ending at 5.5) it waits for micro-batch 0's gradient, which stages 2 and 3
  // return at 7 (1.5 idle); then it never idles; stage 0's last backward follows (2).
  EXPECT_DOUBLE_EQ(t, 1.0 + 16 * 4.5 + 1.5 + 2.0);
}

// ---- Property test over random problems -------------------------------------------------------------


TEST(Replay, RandomProblemsRespectEveryDependency) {
  std::mt19937 rng(2026);
  constexpr double eps = 1e-9;
  for (int trial = 0; trial < 300; ++trial) {
    const PipelineProblem pb = random_problem(rng);
    SCOPED_TRACE(::testing::Message() << "trial " << trial << " schedule " << to_string(pb.schedule) << " p="
                                      << pb.ranks() << " v=" << pb.chunks() << " m=" << pb.microbatches);
    const SimulationResult r = simulate(pb);
    const int p = pb.ranks();
    const PipelineSchedule& schedule = schedule_for(pb.schedule);
    const PipelineShape shape{p, pb.chunks(), pb.microbatches};
    const int last = schedule.parts(shape) - 1;
    // Index the passes and transfers by (kind, model part, micro-batch).
    std::map<std::tuple<int, int, int>, const Event*> pass, sent;
    for (const Event& e : r.events) {
      if (e.kind == EventKind::kSendForward || e.kind == EventKind::kSendBackward) {
        // A transfer leaves after its producer finished. Keyed by the receiving part (chunk is the
        // receiver's).
        sent[{static_cast<int>(e.kind), schedule.part_of(shape, e.peer, e.chunk), e.microbatch}] = &e;
      } else if (e.microbatch >= 0) {
        const int vs = schedule.part_of(shape, e.stage, e.chunk);
        EXPECT_EQ(schedule.place(shape, vs, e.microbatch).rank, e.stage) << "pass on a rank that does not hold it";
        ASSERT_TRUE(pass.emplace(std::make_tuple(static_cast<int>(e.kind), vs, e.microbatch), &e).second)
            << "pass replayed twice";
      }
    }
    // The pass that produces a part's input gradient: a full backward, or B of a split one (which
    // DualPipe mixes).
    auto input_gradient = [&](int vs, int mb) {
      const auto full = pass.find({static_cast<int>(EventKind::kBackward), vs, mb});
      return full != pass.end() ? full->second : pass.at({static_cast<int>(EventKind::kBackwardInput), vs, mb});
    };
    for (int vs = 0; vs <= last; ++vs)
      for (int mb = 0; mb < pb.microbatches; ++mb) {
        const Event* f = pass.at({static_cast<int>(EventKind::kForward), vs, mb});
        const Event* b = input_gradient(vs, mb);
        EXPECT_GE(b->start_s + eps, f->end_s) << "backward before its forward, part " << vs << " mb " << mb;
        if (b->kind == EventKind::kBackwardInput)
          EXPECT_GE(pass.at({static_cast<int>(EventKind::kBackwardWeight), vs, mb})->start_s + eps, b->end_s);
        // Transfers exist between parts on different ranks.
        const int rank = schedule.place(shape, vs, mb).rank;
        if (vs > 0 && schedule.place(shape, vs - 1, mb).rank != rank) {  // activation from vs - 1
          const Event* prev = pass.at({static_cast<int>(EventKind::kForward), vs - 1, mb});
          const Event* send = sent.at({static_cast<int>(EventKind::kSendForward), vs, mb});
          EXPECT_GE(send->start_s + eps, prev->end_s);
          EXPECT_GE(f->start_s + eps, send->end_s) << "forward before its activation arrived";
        } else if (vs > 0) {
          EXPECT_GE(f->start_s + eps, pass.at({static_cast<int>(EventKind::kForward), vs - 1, mb})->end_s);
        }
        if (vs < last && schedule.place(shape, vs + 1, mb).rank != rank) {  // gradient from vs + 1
          const Event* next = input_gradient(vs + 1, mb);
          const Event* send = sent.at({static_cast<int>(EventKind::kSendBackward), vs, mb});
          EXPECT_GE(send->start_s + eps, next->end_s);
          EXPECT_GE(b->start_s + eps, send->end_s) << "backward before its gradient arrived";
        } else if (vs < last) {
          EXPECT_GE(b->start_s + eps, input_gradient(vs + 1, mb)->end_s);
        }
      }
    // Streams and links run one thing at a time.
    std::map<std::pair<int, int>, double> lane_free;  // (stage, lane): when it is next free
    for (const Event& e : r.events) {
      if (e.lane == Lane::kGradSync && e.kind == EventKind::kGradSync && pb.grad_sync == GradSync::kInBackward)
        ADD_FAILURE() << "reduction off the compute stream with in-backward";
      if (e.lane == Lane::kP2P) continue;  // links checked below
      const std::pair<int, int> key{e.stage, static_cast<int>(e.lane)};
      EXPECT_GE(e.start_s + eps, lane_free[key]) << "overlap on stage " << e.stage << " lane " << static_cast<int>(e.lane);
      lane_free[key] = std::max(lane_free[key], e.end_s);
      EXPECT_LE(e.end_s, r.iteration_time_s + eps);
    }
    std::map<std::pair<int, int>, double> link_free;
    for (const Event& e : r.events) {
      if (e.lane != Lane::kP2P) continue;
      double& free = link_free[{e.stage, e.peer}];
      EXPECT_GE(e.start_s + eps, free) << "two transfers at once on link " << e.stage << "->" << e.peer;
      free = e.end_s;
    }
    // Accounting.
    for (const StageResult& s : r.stages) {
      EXPECT_NEAR(s.busy_s + s.idle_s, r.iteration_time_s, 1e-9);
      EXPECT_GE(s.bubble_s, -1e-9);
      double idle = 0;
      for (const IdleInterval& iv : s.idle_intervals) {
        EXPECT_LT(iv.start_s, iv.end_s);
        EXPECT_GE(iv.free_memory_bytes, 0);
        idle += iv.end_s - iv.start_s;
      }
      EXPECT_NEAR(idle, s.idle_s, 1e-9);
    }
    // The critical path is a chain of events that ends at the last one.
    ASSERT_FALSE(r.critical_path.empty());
    for (std::size_t i = 1; i < r.critical_path.size(); ++i)
      EXPECT_GE(r.events[r.critical_path[i]].start_s + eps, r.events[r.critical_path[i - 1]].end_s);
    // Same input, same output; the totals-only replay agrees.
    const SimulationResult again = simulate(pb);
    ASSERT_EQ(again.events.size(), r.events.size());
    for (std::size_t i = 0; i < r.events.size(); ++i) {
      EXPECT_EQ(again.events[i].start_s, r.events[i].start_s);
      EXPECT_EQ(again.events[i].stage, r.events[i].stage);
    }
    const SimulationResult fast = simulate(pb, SimulationOptions{.record = false});
    EXPECT_EQ(fast.iteration_time_s, r.iteration_time_s);
    EXPECT_EQ(fast.event_count, r.event_count);
    EXPECT_TRUE(fast.events.empty());
    for (int s = 0; s < p; ++s) {
      EXPECT_EQ(fast.stages[s].peak_activation_bytes, r.stages[s].peak_activation_bytes);
      EXPECT_EQ(fast.stages[s].bubble_s, r.stages[s].bubble_s);
    }
  }
}

// The O(p·v) bound the planner prunes with: never above the replay, and tight where it should be.
TEST(LowerBound, NeverAboveTheReplayAndExactForEqualStages) {
  std::mt19937 rng(7);
  int tight = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    PipelineProblem pb = random_problem(rng);
    if (trial % 2) pb.blocking_p2p = false;
    const double bound = iteration_time_lower_bound_s(pb);
    const double replay = simulate(pb, SimulationOptions{.record = false}).iteration_time_s;
    ASSERT_LE(bound, replay * (1 + 1e-12)) << "trial " << trial << " " << to_string(pb.schedule) << " p=" << pb.ranks()
                                           << " v=" << pb.chunks() << " m=" << pb.microbatches << " "
                                           << to_string(pb.grad_sync);
    if (bound > 0.999 * replay) ++tight;
  }
  EXPECT_GT(tight, 0);
  // 1F1B and GPipe, equal stages, free communication: (m + p - 1)(t_f + t_b) + overhead.
  for (Schedule schedule : {Schedule::kOneFOneB, Schedule::kGPipe}) {
    PipelineProblem pb = uniform(4, 1, 16, 1, 2, 0, schedule);
    pb.iteration_overhead_s = 0.5;
    EXPECT_DOUBLE_EQ(iteration_time_lower_bound_s(pb), (16 + 4 - 1) * 3 + 0.5) << to_string(schedule);
    EXPECT_DOUBLE_EQ(iteration_time_lower_bound_s(pb), simulate(pb).iteration_time_s) << to_string(schedule);
  }
  // A shifted reduction and the optimizer step come after rank 0's last backward.
  PipelineProblem pb = uniform(4, 1, 16, 1, 2, 0, Schedule::kOneFOneB);
  for (StageCost& s : pb.stages) {
    s.chunks[0].grad_sync_s = 0.25;
    s.optimizer_s = 0.125;
  }
  EXPECT_DOUBLE_EQ(iteration_time_lower_bound_s(pb), 19 * 3 + 0.25 + 0.125);
  EXPECT_DOUBLE_EQ(simulate(pb).iteration_time_s, 19 * 3 + 0.25 + 0.125);
}

TEST(Replay, MalformedProblemsAreRejectedNamingTheField) {
  PipelineProblem pb = uniform(2, 1, 4, 1, 2, 0, Schedule::kOneFOneB);
  pb.stages[1].chunks[0].forward_s = -1;
  try {
    simulate(pb);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stages[1].chunks[].forward_s=-1"), std::string::npos) << e.what();
  }
  pb = uniform(4, 2, 6, 1, 2, 0, Schedule::kInterleaved1F1B);
  EXPECT_THROW(simulate(pb), Error);  // m = 6 is not a multiple of p = 4
  pb = uniform(2, 2, 4, 1, 2, 0, Schedule::kOneFOneB);
  EXPECT_THROW(simulate(pb), Error);  // 1F1B runs one chunk per rank
  pb = uniform(2, 1, 4, 1, 2, 0, Schedule::kOneFOneB);
  pb.stages[0].chunks.push_back(pb.stages[0].chunks[0]);
  EXPECT_THROW(simulate(pb), Error);  // ragged chunks
  // 2^31 - 1 micro-batches: refused before any state is allocated (it was std::bad_alloc).
  pb = uniform(2, 1, 2147483647, 1, 2, 0, Schedule::kOneFOneB);
  try {
    simulate(pb);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "pipeline problem: ranks x chunks x microbatches = 4294967294 slots; at most 16777216");
  }
}

}  // namespace
}  // namespace paratune::sim
