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
  for (Schedule schedule : {Schedule::kGPipe, Schedule::kOneFOneB, Schedule::kInterleaved1F1B, Schedule::kZeroBubbleH1})
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
          EXPECT_EQ(closed, count_in_flight(ops, s.splits_backward())) << where;
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
    const int p = pb.ranks(), v = pb.chunks(), last = p * v - 1;
    // Index the passes and transfers by (kind, virtual stage, micro-batch).
    std::map<std::tuple<int, int, int>, const Event*> pass, sent;
    for (const Event& e : r.events) {
      const int vs = e.chunk * p + e.stage;
      if (e.kind == EventKind::kSendForward || e.kind == EventKind::kSendBackward) {
        // A transfer leaves after its producer finished (producer: virtual stage vs on the sender).
        // Keyed by the receiving virtual stage (chunk is the receiver's).
        sent[{static_cast<int>(e.kind), e.chunk * p + e.peer, e.microbatch}] = &e;
      } else if (e.microbatch >= 0) {
        ASSERT_TRUE(pass.emplace(std::make_tuple(static_cast<int>(e.kind), vs, e.microbatch), &e).second)
            << "pass replayed twice";
      }
    }
    const bool split = pb.schedule == Schedule::kZeroBubbleH1;
    const int b_kind = static_cast<int>(split ? EventKind::kBackwardInput : EventKind::kBackward);
    for (int vs = 0; vs <= last; ++vs)
      for (int mb = 0; mb < pb.microbatches; ++mb) {
        const Event* f = pass.at({static_cast<int>(EventKind::kForward), vs, mb});
        const Event* b = pass.at({b_kind, vs, mb});
        EXPECT_GE(b->start_s + eps, f->end_s) << "backward before its forward, vs " << vs << " mb " << mb;
        if (split) EXPECT_GE(pass.at({static_cast<int>(EventKind::kBackwardWeight), vs, mb})->start_s + eps, b->end_s);
        if (vs > 0 && p > 1) {  // activation from vs - 1: sent after it was computed, received before use
          const Event* prev = pass.at({static_cast<int>(EventKind::kForward), vs - 1, mb});
          const Event* send = sent.at({static_cast<int>(EventKind::kSendForward), vs, mb});
          EXPECT_GE(send->start_s + eps, prev->end_s);
          EXPECT_GE(f->start_s + eps, send->end_s) << "forward before its activation arrived";
        }
        if (vs < last && p > 1) {  // gradient from vs + 1
          const Event* next = pass.at({b_kind, vs + 1, mb});
          const Event* send = sent.at({static_cast<int>(EventKind::kSendBackward), vs, mb});
          EXPECT_GE(send->start_s + eps, next->end_s);
          EXPECT_GE(b->start_s + eps, send->end_s) << "backward before its gradient arrived";
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
