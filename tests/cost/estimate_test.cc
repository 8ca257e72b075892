#include "paratune/cost/estimate.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "../test_util.h"
#include "paratune/spec/parallel.h"

namespace paratune {
namespace {

using testing::ModelBuilder;

// Llama-3.1-70B on 8 DGX H100, seq 4096, global batch 64.
Estimate llama70b_on_64_gpus(const char* config) {
  return estimate(find_model_preset("llama3.1-70b").spec, testing::dgx_h100(8), testing::training(4096, 64),
                  parse_parallel_config(config));
}

// Korthikanti et al. 2022, Eq. (2)-(4), with dropout, MHA, 4h GeLU MLP and unfused attention.
TEST(ActivationMemory, MatchesKorthikantiWithTensorParallelOnly) {
  const ModelSpec m = ModelBuilder().hidden(1024).heads(16).dropout(true).build();
  TrainingSpec t = testing::training(2048, 8);
  t.flash_attention = false;
  ParallelConfig p;
  p.mbs = 2;
  for (int tp : {1, 2, 4, 8}) {
    p.tp = tp;
    const double s = 2048, b = 2, h = 1024, a = 16;
    // s·b·h·(10 + 24/t + 5·a·s/(h·t))
    const double expected = s * b * h * (10 + 24.0 / tp + 5 * a * s / (h * tp));
    EXPECT_DOUBLE_EQ(layer_activation_bytes(m, t, p, false), expected) << "tp=" << tp;
  }
}

TEST(ActivationMemory, MatchesKorthikantiWithSequenceParallel) {
  const ModelSpec m = ModelBuilder().hidden(1024).heads(16).dropout(true).build();
  TrainingSpec t = testing::training(2048, 8);
  t.flash_attention = false;
  ParallelConfig p;
  p.mbs = 1;
  p.tp = 8;
  p.sequence_parallel = true;
  const double s = 2048, b = 1, h = 1024, a = 16;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, t, p, false), s * b * h / 8 * (34 + 5 * a * s / h));
  // Selective recompute drops the 5as/h term (Korthikanti Sec. 5).
  p.recompute = RecomputeMode::kSelective;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, t, p, false), s * b * h / 8 * 34);
}

TEST(ActivationMemory, FlashAttentionKeepsNoScores) {
  const ModelSpec m = ModelBuilder().hidden(1024).heads(16).dropout(true).build();
  const TrainingSpec t = testing::training(4096, 8);
  ParallelConfig p;
  const double with_flash = layer_activation_bytes(m, t, p, false);
  // 34·sbh plus the fp32 log-sum-exp per head and token.
  EXPECT_DOUBLE_EQ(with_flash, 4096.0 * 1024 * 34 + 4.0 * 4096 * 16);
}

ClusterSpec one_node(int gpus) {
  ClusterSpec c = testing::dgx_h100(1);
  c.gpus_per_node = gpus;
  return c;
}

TEST(Estimate, OneFOneBInFlightMicrobatchesPerStage) {
  const ModelSpec m = ModelBuilder().layers(8).build();
  const Estimate e = estimate(m, one_node(4), testing::training(512, 16), parse_parallel_config("pp=4,mbs=1"));
  ASSERT_EQ(e.stages.size(), 4u);
  for (int s = 0; s < 4; ++s) EXPECT_DOUBLE_EQ(e.stages[s].in_flight_microbatches, 4 - s);
  const Estimate g =
      estimate(m, one_node(4), testing::training(512, 16), parse_parallel_config("pp=4,mbs=1,schedule=gpipe"));
  EXPECT_DOUBLE_EQ(g.stages[3].in_flight_microbatches, 16);
}

TEST(Estimate, BreakdownAddsUpToIterationTime) {
  const ModelSpec m = find_model_preset("llama3.1-70b").spec;
  const Estimate e = estimate(m, testing::dgx_h100(8), testing::training(8192, 128),
                              parse_parallel_config("dp=2,tp=8,pp=4,vpp=5,mbs=1,zero=1,sp=true,recompute=full"));
  const TimeBreakdown& b = e.breakdown;
  const double sum = b.compute_s + b.bubble_s + b.tp_comm_s + b.cp_comm_s + b.ep_comm_s + b.pp_comm_s + b.dp_comm_s +
                     b.zero3_comm_s + b.optimizer_s + b.overhead_s;
  EXPECT_NEAR(sum, e.iteration_time_s, 1e-9 * e.iteration_time_s);
  EXPECT_GT(e.mfu, 0.2);
  EXPECT_LT(e.mfu, 0.8);
  EXPECT_GT(e.hfu, e.mfu);  // full recompute adds a forward
  EXPECT_TRUE(e.fits) << e.reason;
}

TEST(Estimate, InterleavingShrinksTheBubble) {
  const Estimate plain = llama70b_on_64_gpus("dp=2,tp=8,pp=4,mbs=1,zero=1,sp=true,recompute=full");
  const Estimate interleaved = llama70b_on_64_gpus("dp=2,tp=8,pp=4,vpp=5,mbs=1,zero=1,sp=true,recompute=full");
  // Fill and drain shrink v-fold; P2P waits do not (there are v times more hops), so "about 5x".
  EXPECT_LT(interleaved.breakdown.bubble_s * 4, plain.breakdown.bubble_s);
  // Summed over all stages less so: the last chunk carries the 128k-vocabulary LM head, and with
  // 4-layer chunks that imbalance makes the other stages wait (why Megatron offers uneven stages).
  EXPECT_LT(interleaved.bubble_fraction * 2, plain.bubble_fraction);
}

TEST(Estimate, SmallerMicrobatchAndWiderTpLoseGemmEfficiency) {
  const ModelSpec m = find_model_preset("llama3-8b").spec;
  const auto mfu = [&](const char* config) {
    return estimate(m, testing::dgx_h100(1), testing::training(2048, 64), parse_parallel_config(config)).mfu;
  };
  EXPECT_GT(mfu("dp=8,mbs=4,zero=1"), mfu("dp=8,mbs=1,zero=1"));
  EXPECT_GT(mfu("dp=4,tp=2,mbs=1,zero=1,sp=true"), mfu("dp=1,tp=8,mbs=1,zero=1,sp=true"));
}

TEST(Estimate, ZeroShardsOptimizerStates) {
  const ModelSpec m = find_model_preset("llama3-8b").spec;
  const auto mem = [&](const char* config) {
    return estimate(m, testing::dgx_h100(1), testing::training(2048, 64), parse_parallel_config(config)).stages[0].memory;
  };
  const MemoryBreakdown z0 = mem("dp=8,zero=0"), z1 = mem("dp=8,zero=1"), z3 = mem("dp=8,zero=3");
  EXPECT_NEAR(z1.optimizer_bytes * 8, z0.optimizer_bytes, 1e-6 * z0.optimizer_bytes);
  EXPECT_DOUBLE_EQ(z1.grads_bytes, z0.grads_bytes);
  EXPECT_LT(z3.weights_bytes, z0.weights_bytes / 4);
}

TEST(Estimate, ReportsWhyItDoesNotFit) {
  const ModelSpec m = find_model_preset("llama3.1-405b").spec;
  const Estimate e = estimate(m, testing::dgx_h100(1), testing::training(8192, 8), parse_parallel_config("tp=8"));
  EXPECT_FALSE(e.fits);
  EXPECT_NE(e.reason.find("stage 0 needs"), std::string::npos) << e.reason;
}

TEST(Estimate, MoeExpertParallelAddsAllToAll) {
  const ModelSpec m = find_model_preset("mixtral-8x7b").spec;
  const Estimate e = estimate(m, testing::dgx_h100(2), testing::training(4096, 64),
                              parse_parallel_config("dp=8,tp=2,ep=8,zero=1,sp=true,recompute=full"));
  EXPECT_GT(e.breakdown.ep_comm_s, 0);
  const Estimate no_ep = estimate(m, testing::dgx_h100(2), testing::training(4096, 64),
                                  parse_parallel_config("dp=8,tp=2,ep=1,zero=1,sp=true,recompute=full"));
  EXPECT_LT(e.stages[0].memory.weights_bytes, no_ep.stages[0].memory.weights_bytes);
}


// The estimate's parts add up, by hand: without a pipeline the bottleneck stage computes m
// micro-batches of forward + backward and nothing idles; the breakdown sums to the iteration time
// (docs/commands.md, "Output"); tokens/s and MFU follow from the time. (This replaced a test that compared
// `estimate` with `simulate`, which share the computation and could not disagree.)
TEST(Estimate, PartsAddUpByHand) {
  const ModelSpec m = find_model_preset("llama3.1-8b").spec;
  const TrainingSpec t = testing::training(4096, 64);
  for (const char* config : {"dp=8,mbs=1,zero=1,recompute=full", "dp=2,tp=4,mbs=2,zero=1,sp=true,recompute=selective",
                             "dp=2,tp=2,pp=2,mbs=1,zero=1,sp=true,recompute=full"}) {
    const ParallelConfig c = parse_parallel_config(config);
    const Estimate e = estimate(m, testing::dgx_h100(1), t, c);
    const TimeBreakdown& b = e.breakdown;
    const double parts = b.compute_s + b.bubble_s + b.tp_comm_s + b.cp_comm_s + b.ep_comm_s + b.pp_comm_s + b.dp_comm_s +
                         b.zero3_comm_s + b.optimizer_s + b.overhead_s;
    EXPECT_NEAR(parts, e.iteration_time_s, 1e-9 * e.iteration_time_s) << config;
    EXPECT_EQ(e.num_microbatches, 64 / (c.dp * c.mbs)) << config;
    const double tokens = 64.0 * 4096;
    EXPECT_NEAR(e.tokens_per_s, tokens / e.iteration_time_s, 1e-9 * e.tokens_per_s) << config;
    EXPECT_NEAR(e.mfu, e.model_flops / (e.iteration_time_s * 8 * 989e12), 0.01 * e.mfu) << config;  // H100 dense BF16 peak
    if (c.pp == 1) {
      EXPECT_DOUBLE_EQ(b.bubble_s, 0) << config;
      ASSERT_EQ(e.stages.size(), 1u);
      EXPECT_NEAR(b.compute_s, e.num_microbatches * e.stages[0].compute_s, 1e-9 * b.compute_s) << config;
    }
  }
}

TEST(EstimateAndSimulate, CommShiftOrdersThePlacements) {
  // Reducing inside the backward is never faster than after the flush, which is never faster than
  // overlapping it with the backward.
  const ModelSpec m = find_model_preset("gpt-j-6b").spec;
  ClusterSpec cluster = testing::dgx_h100(4);
  cluster.gpus_per_node = 4;
  cluster.nodes = 8;
  auto time = [&](const char* sync) {
    return estimate(m, cluster, testing::training(2048, 64),
                    parse_parallel_config(std::string("dp=8,pp=4,mbs=2,grad_sync=") + sync))
        .iteration_time_s;
  };
  EXPECT_GT(time("in-backward"), time("shifted"));
  EXPECT_GE(time("shifted"), time("overlapped"));
}

TEST(EstimateAndSimulate, StageMeshesCostEachStageOnItsOwnMesh) {
  const ModelSpec m = find_model_preset("gpt-j-6b").spec;
  ClusterSpec cluster = testing::dgx_h100(8);
  cluster.gpus_per_node = 4;
  const TrainingSpec t = testing::training(2048, 64);
  const ParallelConfig c = parse_parallel_config("dp=8,tp=1,pp=4,mbs=2");
  const auto meshes = parse_stage_meshes("(8x1),(4x2),(4x2),(4x2)");
  const sim::PipelineProblem mixed = pipeline_problem_with_stage_meshes(m, cluster, t, c, meshes);
  const sim::PipelineProblem plain = pipeline_problem(m, cluster, t, c);
  ASSERT_EQ(mixed.ranks(), 4);
  EXPECT_EQ(mixed.microbatches, plain.microbatches);
  EXPECT_DOUBLE_EQ(mixed.stages[0].chunks[0].forward_s, plain.stages[0].chunks[0].forward_s);  // same 8x1 mesh
  // 4x2: half the weights per GPU (TP) and twice the sequences per GPU: a different cost.
  EXPECT_NE(mixed.stages[1].chunks[0].grad_sync_s, plain.stages[1].chunks[0].grad_sync_s);
  EXPECT_THROW(pipeline_problem_with_stage_meshes(m, cluster, t, c, parse_stage_meshes("8x1,8x1,8x1")), Error);
  EXPECT_THROW(pipeline_problem_with_stage_meshes(m, cluster, t, c, parse_stage_meshes("8x1,4x2,4x2,2x2")), Error);
  EXPECT_THROW(parse_stage_meshes("8x1,4y2"), Error);
}


TEST(Estimate, PerStageRecomputeChangesOnlyThatStage) {
  const Estimate all = llama70b_on_64_gpus("dp=2,tp=8,pp=4,mbs=1,zero=1,sp=true,recompute=full");
  const Estimate mixed = llama70b_on_64_gpus("dp=2,tp=8,pp=4,mbs=1,zero=1,sp=true,recompute=full,recompute_layers=20/20/20/0");
  EXPECT_EQ(mixed.stages[3].recomputed_layers, 0);
  EXPECT_EQ(mixed.stages[0].recomputed_layers, 20);
  EXPECT_DOUBLE_EQ(mixed.stages[0].memory.activations_bytes, all.stages[0].memory.activations_bytes);
  EXPECT_GT(mixed.stages[3].memory.activations_bytes, 2 * all.stages[3].memory.activations_bytes);
  EXPECT_LT(mixed.stages[3].backward_s, all.stages[3].backward_s);
  EXPECT_EQ(parse_parallel_config(to_string(mixed.config)).stage_recompute_layers, (std::vector<int>{20, 20, 20, 0}));
  EXPECT_THROW(llama70b_on_64_gpus("dp=2,tp=8,pp=4,mbs=1,recompute=full,recompute_layers=20/20/20"), Error);
  EXPECT_THROW(llama70b_on_64_gpus("dp=2,tp=8,pp=4,mbs=1,recompute=full,recompute_layers=20/20/20/21"), Error);
  EXPECT_THROW(llama70b_on_64_gpus("dp=2,tp=8,pp=4,mbs=1,recompute=selective,recompute_layers=1/1/1/1"), Error);
}

TEST(EstimateOptions, MemoryMarginOutsideZeroToOneIsAnError) {
  const ModelSpec m = find_model_preset("llama3.1-70b").spec;
  const ParallelConfig c = parse_parallel_config("dp=2,tp=8,pp=4,mbs=1,zero=1");
  // -1 doubled the usable memory (a plan "fit" at 121 GiB on an 80 GB GPU); NaN, infinity and 1 or
  // more left none. Each is refused before any costing.
  for (double margin : {-1.0, -1e-9, 1.0, 2.0, std::numeric_limits<double>::quiet_NaN(),
                        std::numeric_limits<double>::infinity()}) {
    try {
      estimate(m, testing::dgx_h100(8), testing::training(4096, 64), c, default_calibration(), EstimateOptions{margin});
      ADD_FAILURE() << margin;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(fmt::format("memory_margin: {} must be a finite number >= 0 and < 1", margin), 0),
                0u)
          << e.what();
    }
  }
  for (double margin : {0.0, 0.05, 0.99})
    EXPECT_NO_THROW(estimate(m, testing::dgx_h100(8), testing::training(4096, 64), c, default_calibration(),
                             EstimateOptions{margin}));
}

}  // namespace
}  // namespace paratune
