// The strategy cost model behind --strategy auto (train/strategy_cost.h): its formulas on synthetic
// profiles where the answer can be worked by hand, the choice it makes when one cost dominates, and
// the profile file's checks. The real profile is measured in the trainer tests.
#include "paratune/train/strategy_cost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "paratune/spec/error.h"

namespace paratune::train {
namespace {

// An MLP of four dense units (784-64-64-64-10) whose every unit takes `per_sample` seconds per
// sample, measured at batches 1 and 1024.
StrategyProfile linear_profile(int ranks, double per_sample, LinearCost allreduce = {}, LinearCost p2p = {}) {
  StrategyProfile p;
  p.ranks = ranks;
  p.threads = 1;
  p.batches = {1, 1024};
  p.unit_seconds.assign(4, {per_sample, per_sample * 1024});
  p.allreduce = allreduce;
  p.p2p = p2p;
  return p;
}

TrainOptions mlp(Strategy strategy, int ranks, int batch) {
  TrainOptions o;
  o.model = Workload::kMlp;
  o.mlp_hidden = {64, 64, 64};
  o.strategy = strategy;
  o.ranks = ranks;
  o.batch_size = batch;
  o.epochs = 1;
  return o;
}

TEST(StrategyCost, FitsLatencyAndBandwidthExactlyOnALine) {
  const LinearCost c = fit_linear_cost({{256, 1e-4 + 256e-9}, {65536, 1e-4 + 65536e-9}, {1 << 20, 1e-4 + 1048576e-9}});
  EXPECT_NEAR(c.latency_s, 1e-4, 1e-10);
  EXPECT_NEAR(c.seconds_per_byte, 1e-9, 1e-15);
  // Times that fall with size (noise) give no negative bandwidth: a flat latency.
  const LinearCost flat = fit_linear_cost({{256, 2e-4}, {65536, 1e-4}});
  EXPECT_EQ(flat.seconds_per_byte, 0);
  EXPECT_GT(flat.latency_s, 0);
}

TEST(StrategyCost, UnitTimesInterpolateBetweenAndExtendBeyondTheMeasuredBatches) {
  StrategyProfile p;
  p.batches = {4, 16, 64};
  p.unit_seconds = {{1.0, 2.0, 8.0}};
  EXPECT_DOUBLE_EQ(p.unit_time(0, 10), 1.5);    // between 4 and 16
  EXPECT_DOUBLE_EQ(p.unit_time(0, 40), 5.0);    // between 16 and 64
  EXPECT_DOUBLE_EQ(p.unit_time(0, 128), 16.0);  // along the last segment
  EXPECT_DOUBLE_EQ(p.unit_time(0, 0), 2.0 / 3.0);  // along the first segment
  EXPECT_DOUBLE_EQ(std::max(0.0, p.unit_time(0, -100)), 0.0);  // never below zero
}

// dp over 2 ranks, batch 64: each replica runs 32 samples through 4 units of 1 ms per sample; its
// gradients, in buckets of 0.05 MiB, and the loss are all-reduced after the backward pass.
TEST(StrategyCost, DataParallelStepIsTheReplicaComputePlusTheAllReduces) {
  TrainOptions o = mlp(Strategy::kDp, 2, 64);
  o.overlap = false;
  o.bucket_mb = 0.05;
  resolve(o);
  const LinearCost allreduce{2e-3, 1e-9};
  const StrategyProfile p = linear_profile(2, 1e-3, allreduce);
  std::int64_t parameters = 0;
  for (const UnitShape& u : workload_units(o)) parameters += u.parameters;
  const double bytes = 4.0 * parameters, bucket = 52428;  // 13107 floats
  const double full = std::floor(bytes / bucket), rest = bytes - full * bucket;
  ASSERT_GT(full, 1);
  const double compute = 4 * 32 * 1e-3, loss = allreduce.seconds(8);
  const StrategyPrediction s = predict_step(o, workload_units(o), p);
  EXPECT_NEAR(s.step_s, compute + full * allreduce.seconds(bucket) + allreduce.seconds(rest) + loss, 1e-12);
  EXPECT_NEAR(s.compute_s, compute, 1e-12);
  // With overlap the backward of units 2-4 (2/3 of their 96 ms) hides every bucket but the last.
  o.overlap = true;
  EXPECT_NEAR(predict_step(o, workload_units(o), p).step_s, compute + allreduce.seconds(rest) + loss, 1e-12);
}

// GPipe over 2 stages of 2 units each, 4 micro-batches of 16 samples: a micro-batch's stage work is
// 2 x 16 ms plus sending one boundary tensor (its output forward, or its input's gradient back),
// and the schedule takes (m - 1) x the slowest + the sum over stages (Huang et al. 2019).
TEST(StrategyCost, GpipeFollowsTheFillAndDrainFormula) {
  TrainOptions o = mlp(Strategy::kGpipe, 2, 64);
  o.micro_batches = 4;
  o.stage_layers = {2, 2};
  resolve(o);
  const LinearCost p2p{1e-4, 1e-9};
  const StrategyPrediction s = predict_step(o, workload_units(o), linear_profile(2, 1e-3, {}, p2p));
  const double boundary = p2p.seconds(4.0 * 16 * 64);  // 16 samples x 64 floats after unit 2
  const double stage = 2 * 16 * 1e-3 + boundary;
  EXPECT_NEAR(s.step_s, 3 * stage + 2 * stage, 1e-12);
  EXPECT_EQ(s.stage_layers, (std::vector<int>{2, 2}));
  // mp is the same pipeline with one micro-batch: the stages take turns on the whole batch.
  TrainOptions m = mlp(Strategy::kMp, 2, 64);
  m.stage_layers = {2, 2};
  resolve(m);
  const StrategyPrediction mp = predict_step(m, workload_units(m), linear_profile(2, 1e-3, {}, p2p));
  EXPECT_NEAR(mp.step_s, 2 * (2 * 64 * 1e-3 + p2p.seconds(4.0 * 64 * 64)), 1e-12);
}

TEST(StrategyCost, TheChoiceFollowsTheDominantCost) {
  // Collectives free: every strategy computes the same samples, and dp runs both ranks at once.
  const std::vector<StrategyPrediction> free = rank_strategies(mlp(Strategy::kNone, 2, 64), linear_profile(2, 1e-3));
  ASSERT_EQ(free.size(), 3u);  // dp, gpipe, mp (no dp+gpipe with 2 ranks)
  EXPECT_EQ(free.front().strategy, Strategy::kDp);
  // A costly all-reduce (1 s) and cheap sends: a pipeline wins.
  const std::vector<StrategyPrediction> slow_allreduce =
      rank_strategies(mlp(Strategy::kNone, 2, 64), linear_profile(2, 1e-3, {1.0, 0}, {1e-5, 0}));
  EXPECT_EQ(slow_allreduce.front().strategy, Strategy::kGpipe);
  EXPECT_EQ(slow_allreduce.back().strategy, Strategy::kDp);
  // Four ranks also offer dp x pp = 2 x 2.
  const std::vector<StrategyPrediction> four = rank_strategies(mlp(Strategy::kNone, 4, 64), linear_profile(4, 1e-3));
  EXPECT_TRUE(std::any_of(four.begin(), four.end(), [](const StrategyPrediction& p) {
    return p.strategy == Strategy::kDpGpipe && p.dp == 2 && p.pp == 2;
  }));
  // One rank: none, whatever the costs.
  const std::vector<StrategyPrediction> one = rank_strategies(mlp(Strategy::kDp, 1, 64), linear_profile(1, 1e-3));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one.front().strategy, Strategy::kNone);
}

TEST(StrategyCost, AStrategyTheOptionsRefuseIsLeftOutWithItsReason) {
  TrainOptions o = mlp(Strategy::kNone, 2, 63);  // 63 samples split over neither 2 replicas nor 4 micro-batches
  std::vector<std::string> rejected;
  const std::vector<StrategyPrediction> ranked = rank_strategies(o, linear_profile(2, 1e-3), &rejected);
  ASSERT_EQ(ranked.size(), 1u);
  EXPECT_EQ(ranked.front().strategy, Strategy::kMp);
  ASSERT_EQ(rejected.size(), 2u);
  EXPECT_NE(rejected[0].find("dp: "), std::string::npos) << rejected[0];
  EXPECT_NE(rejected[1].find("gpipe: "), std::string::npos) << rejected[1];
}

TEST(StrategyCost, AProfileOfAnotherModelOrRankCountIsRefused) {
  TrainOptions o = mlp(Strategy::kDp, 2, 64);
  resolve(o);
  EXPECT_THROW((void)predict_step(o, workload_units(o), linear_profile(4, 1e-3)), Error);
  StrategyProfile three_units = linear_profile(2, 1e-3);
  three_units.unit_seconds.pop_back();
  EXPECT_THROW((void)predict_step(o, workload_units(o), three_units), Error);
}

TEST(StrategyCost, ProfileFilesRoundTripAndBadFieldsAreNamed) {
  const StrategyProfile p = linear_profile(2, 1e-3, {1e-4, 2e-9}, {3e-5, 4e-10});
  const StrategyProfile back = StrategyProfile::from_json(p.to_json(), "p.json");
  EXPECT_EQ(back.unit_seconds, p.unit_seconds);
  EXPECT_EQ(back.batches, p.batches);
  EXPECT_DOUBLE_EQ(back.p2p.seconds_per_byte, 4e-10);
  auto error_of = [](nlohmann::json j) {
    try {
      (void)StrategyProfile::from_json(j, "p.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  nlohmann::json j = p.to_json();
  j["batches"] = {16, 4};
  EXPECT_NE(error_of(j).find("p.json: batches: value 4"), std::string::npos) << error_of(j);
  j = p.to_json();
  j["unit_seconds"][1] = {1.0};
  EXPECT_NE(error_of(j).find("p.json: unit_seconds[1]"), std::string::npos) << error_of(j);
  j = p.to_json();
  j["allreduce"]["latency_s"] = -1;
  EXPECT_NE(error_of(j).find("p.json: allreduce.latency_s: value -1"), std::string::npos) << error_of(j);
  j = p.to_json();
  j.erase("ranks");
  EXPECT_NE(error_of(j).find("p.json: ranks"), std::string::npos) << error_of(j);
}

TEST(StrategyCost, ProfileArgumentsNameTheModelShapesOnly) {
  TrainOptions o = mlp(Strategy::kDp, 2, 64);
  o.lr = 0.5;
  const std::vector<std::string> args = profile_model_arguments(o);
  const std::vector<std::string> expected{"--model", "mlp", "--optimizer", "adamw", "--mlp-hidden=64,64,64"};
  EXPECT_EQ(args, expected);
  // They read back as the same model.
  TrainOptions read = read_train_options(args, "", "");
  EXPECT_EQ(read.mlp_hidden, o.mlp_hidden);
}

}  // namespace
}  // namespace paratune::train
