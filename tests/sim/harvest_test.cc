// Hydro's bubble harvest (sim/harvest.h): trial work goes into the simulated idle intervals only,
// sized to the memory left beside the job's peak; the surrogate footprint narrows every width.
#include "paratune/sim/harvest.h"

#include <gtest/gtest.h>

#include <random>

#include "paratune/cost/surrogate_footprint.h"
#include "paratune/spec/error.h"
#include "paratune/spec/model.h"
#include "random_problem.h"

namespace paratune::sim {
namespace {

// The property the coordinator lives by: over random problems (every schedule, gradient-sync
// placement, blocking or not), no placed window overlaps any of its stage's compute-stream events,
// each lies inside one idle interval, and the members resident fit beside the stage's peak.
TEST(BubbleHarvest, NeverPlacesWorkIntoABusyInterval) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> step(0.02, 0.6), memory(1, 30);
  int windows = 0;
  for (int trial_case = 0; trial_case < 300; ++trial_case) {
    const PipelineProblem problem = random_problem(rng);
    const SimulationResult result = simulate(problem);
    HarvestTrial trial;
    trial.step_time_s = step(rng);
    trial.memory_bytes = memory(rng);
    trial.runtime_memory_bytes = 2;
    trial.switch_s = 0.01;
    const BubbleHarvest harvest = pack_bubbles(problem, result, trial);
    ASSERT_EQ(harvest.stages.size(), problem.stages.size());
    for (const HarvestWindow& w : harvest.windows) {
      ++windows;
      const StageResult& stage = result.stages[static_cast<std::size_t>(w.stage)];
      EXPECT_NEAR(w.end_s - w.start_s, static_cast<double>(w.steps) * w.members * trial.step_time_s, 1e-9);
      bool inside = false;
      for (const IdleInterval& idle : stage.idle_intervals)
        inside = inside || (w.start_s >= idle.start_s + trial.switch_s - 1e-12 && w.end_s <= idle.end_s + 1e-12);
      EXPECT_TRUE(inside) << "case " << trial_case << ": window [" << w.start_s << ", " << w.end_s << "] of stage "
                          << w.stage << " is in no idle interval";
      for (const Event& e : result.events)
        if (e.lane == Lane::kCompute && e.stage == w.stage && e.end_s > e.start_s)
          EXPECT_FALSE(e.start_s < w.end_s - 1e-12 && w.start_s < e.end_s - 1e-12)
              << "case " << trial_case << ": window [" << w.start_s << ", " << w.end_s << "] of stage " << w.stage
              << " overlaps " << to_string(e.kind) << " [" << e.start_s << ", " << e.end_s << "]";
    }
    for (const StageHarvest& h : harvest.stages) {
      EXPECT_LE(trial.runtime_memory_bytes + h.members * trial.memory_bytes, h.free_memory_bytes + 1e-9);
      EXPECT_LE(h.trial_busy_s, h.idle_s + 1e-9);
    }
  }
  EXPECT_GT(windows, 100);  // the property was exercised
}

// Two GPipe stages, 4 micro-batches of 1 s forward and 2 s backward: stage 0 idles 3 s between its
// last forward and the first gradient (t = 4 .. 7), stage 1 for the first 1 s; a 0.5 s trial step
// with 0.1 s to switch fits 5 steps alone, or 2 steps of a pair, in the 3 s bubble.
TEST(BubbleHarvest, PicksTheGroupSizeThatPlacesTheMostSteps) {
  PipelineProblem problem;
  problem.microbatches = 4;
  problem.schedule = Schedule::kGPipe;
  problem.grad_sync = GradSync::kShifted;
  for (int r = 0; r < 2; ++r) {
    StageCost s;
    s.memory_capacity_bytes = 100;
    s.static_memory_bytes = 10;
    ChunkCost c;
    c.forward_s = 1;
    c.backward_input_s = 2;
    c.activation_bytes = 5;
    s.chunks.push_back(c);
    problem.stages.push_back(s);
  }
  const SimulationResult result = simulate(problem);
  HarvestTrial trial;
  trial.step_time_s = 0.5;
  trial.memory_bytes = 10;
  trial.switch_s = 0.1;
  BubbleHarvest harvest = pack_bubbles(problem, result, trial);
  // Peak: 10 static + 4 x 5 activations = 30 of 100: 7 members fit; one member places the most.
  EXPECT_DOUBLE_EQ(harvest.stages[0].free_memory_bytes, 70);
  EXPECT_EQ(harvest.stages[0].members, 1);
  double stage0_steps = 0;
  for (const HarvestWindow& w : harvest.windows)
    if (w.stage == 0 && w.start_s >= 4 && w.end_s <= 7) stage0_steps += static_cast<double>(w.steps);
  EXPECT_EQ(stage0_steps, 5);
  // Memory for none: nothing placed.
  trial.memory_bytes = 80;
  harvest = pack_bubbles(problem, result, trial);
  EXPECT_TRUE(harvest.windows.empty());
  for (const StageHarvest& h : harvest.stages) EXPECT_EQ(h.members, 0);
  // A step longer than every bubble: nothing placed either.
  trial.memory_bytes = 10;
  trial.step_time_s = 20;
  EXPECT_TRUE(pack_bubbles(problem, result, trial).windows.empty());
  trial.step_time_s = 0;
  EXPECT_THROW(pack_bubbles(problem, result, trial), Error);
}

TEST(SurrogateFootprint, NarrowsEveryWidthAndNamesOneItCannotDivide) {
  ModelSpec m;
  m.name = "toy";
  m.num_layers = 4;
  m.hidden_size = 1024;
  m.num_attention_heads = 8;
  m.ffn_hidden_size = 4096;
  m.vocab_size = 1000;
  validate(m);
  const ModelSpec s = narrowed_model(m, 8);
  EXPECT_EQ(s.hidden_size, 128);
  EXPECT_EQ(s.ffn_hidden_size, 512);
  EXPECT_EQ(s.num_attention_heads, 8);
  EXPECT_EQ(s.head_size(), 16);
  EXPECT_EQ(s.num_layers, 4);
  EXPECT_EQ(s.vocab_size, 1000);
  try {
    narrowed_model(m, 3);
    FAIL() << "a ratio that does not divide was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hidden_size 1024 is not divisible by it"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace paratune::sim
