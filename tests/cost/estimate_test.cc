#include "paratune/cost/estimate.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "../test_util.h"
#include "paratune/spec/io.h"
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

// Megatron's --recompute-modules, module by module, on a small dense model: h = 1024, a = 16 heads
// of 64, 4h GeLU MLP, no dropout, unfused attention, s = T = 2048 tokens (mbs 1), tp 1, BF16 (b = 2).
// Kept by a layer without recompute, bytes, in units of T·h:
//   LN inputs 2·2, QKV input 2, MLP input 2            8
//   Q, K, V 2·3                                        6
//   attention output                                   2
//   MLP fc1 output 2·4, GeLU output 2·4                16   (mlp drops these)
//   = 32·T·h, plus the scores 2·a·s·T (softmax output, 2 bytes; core_attn drops them).
TEST(ActivationMemory, RecomputeModulesOfADenseLayerByHand) {
  ModelSpec m = ModelBuilder().hidden(1024).heads(16).build();
  m.gated_mlp = false;
  TrainingSpec t = testing::training(2048, 8);
  t.flash_attention = false;
  const double T = 2048, h = 1024, scores = 2.0 * 16 * 2048 * T;
  auto bytes = [&](const char* config) { return layer_activation_bytes(m, t, parse_parallel_config(config), false); };
  EXPECT_DOUBLE_EQ(bytes("recompute=none"), 32 * T * h + scores);
  EXPECT_DOUBLE_EQ(bytes("recompute=selective"), 32 * T * h);  // core_attn, the default
  EXPECT_DOUBLE_EQ(bytes("recompute=selective,recompute_modules=none"), 32 * T * h + scores);
  EXPECT_DOUBLE_EQ(bytes("recompute=selective,recompute_modules=mlp"), 16 * T * h + scores);
  EXPECT_DOUBLE_EQ(bytes("recompute=selective,recompute_modules=core_attn+mlp"), 16 * T * h);
  // Standard attention's input norm and a dense layer's pre-MLP norm are fused into the following
  // linear in Megatron-Core's TE specs: layernorm frees nothing here.
  EXPECT_DOUBLE_EQ(bytes("recompute=selective,recompute_modules=core_attn+layernorm"), 32 * T * h);
}

// The MoE layer of the two tests below: h = 1024, 16 heads, E = 8 experts of fe = 512, top-2, one
// shared expert of 512, GeLU.
ModelSpec small_moe_layer_model() {
  ModelSpec m = ModelBuilder().hidden(1024).heads(16).build();
  m.gated_mlp = false;
  m.moe = MoeSpec{.num_experts = 8, .top_k = 2, .expert_ffn_hidden_size = 512, .num_shared_experts = 1};
  return m;
}

// The same attention (h = 1024, 16 heads, flash: + 4·a·T fp32 log-sum-exp) in an MoE layer: E = 8
// experts of fe = 512, top-2, one shared expert of 512, GeLU, tp = etp = 1, balanced (R = 2T routed
// rows). Kept, bytes:
//   LN inputs, QKV input, MoE input                  8·T·h
//   Q, K, V + attention output                       8·T·h
//   permuted expert inputs 2·R·h                     4·T·h
//   expert fc1 output 2·R·fe                         2·T·h
//   expert activation output 2·R·fe                  2·T·h   (moe_act drops it)
//   router logits 4·T·E                              32·T
//   shared expert fc1 + activation (2 + 2)·T·512     2·T·h   (shared_experts drops it)
// layernorm drops the pre-MLP norm's output (the MoE input, 2·T·h); moe the whole MoE block's
// internals (10·T·h + 32·T), keeping its input.
TEST(ActivationMemory, RecomputeModulesOfAnMoeLayerByHand) {
  const ModelSpec m = small_moe_layer_model();
  const TrainingSpec t = testing::training(2048, 8);
  const double T = 2048, h = 1024, lse = 4.0 * 16 * T, router = 32 * T;
  auto bytes = [&](const char* config) { return layer_activation_bytes(m, t, parse_parallel_config(config), true); };
  EXPECT_DOUBLE_EQ(bytes("recompute=none"), 26 * T * h + lse + router);
  EXPECT_DOUBLE_EQ(bytes("recompute=selective"), 26 * T * h + lse + router);  // flash: core_attn frees no scores
  EXPECT_DOUBLE_EQ(bytes("recompute=selective,recompute_modules=moe_act"), 24 * T * h + lse + router);
  EXPECT_DOUBLE_EQ(bytes("recompute=selective,recompute_modules=shared_experts"), 24 * T * h + lse + router);
  EXPECT_DOUBLE_EQ(bytes("recompute=selective,recompute_modules=layernorm"), 24 * T * h + lse + router);
  EXPECT_DOUBLE_EQ(bytes("recompute=selective,recompute_modules=core_attn+moe_act+layernorm"), 22 * T * h + lse + router);
  EXPECT_DOUBLE_EQ(bytes("recompute=selective,recompute_modules=moe"), 16 * T * h + lse);
  // mlp is the dense MLP's: nothing on an MoE layer.
  EXPECT_DOUBLE_EQ(bytes("recompute=selective,recompute_modules=mlp"), 26 * T * h + lse + router);
}

// Activation offload on the MoE layer above (T = 2048, h = 1024; every tensor named holds >= 2^20
// elements, so each is offloaded), freed, in units of T·h:
//   core_attn   Q, K, V 2·3                       6
//   attn_proj   the projection's input 2          2
//   qkv_linear  the fused norm's input + QKV input 4
//   mlp_norm    the pre-MLP norm's input 2        2
//   expert_fc1  permuted expert inputs 2·R·h      4
//   moe_act     expert fc1 output 2·R·fe          2
TEST(ActivationMemory, OffloadModulesOfAnMoeLayerByHand) {
  const ModelSpec m = small_moe_layer_model();
  const TrainingSpec t = testing::training(2048, 8);
  const double T = 2048, h = 1024, lse = 4.0 * 16 * T, router = 32 * T;
  auto bytes = [&](const char* config) { return layer_activation_bytes(m, t, parse_parallel_config(config), true); };
  EXPECT_DOUBLE_EQ(bytes("offload_modules=core_attn"), 20 * T * h + lse + router);
  EXPECT_DOUBLE_EQ(bytes("offload_modules=core_attn+attn_proj"), 18 * T * h + lse + router);
  // Moved: also the attention kernel's saved output, whose GPU tensor is the projection's input.
  const OffloadBytes attention = layer_offload_bytes(m, t, parse_parallel_config("offload_modules=core_attn+attn_proj"),
                                                     true, 2, 1);
  EXPECT_DOUBLE_EQ(attention.freed, 8 * T * h);
  EXPECT_DOUBLE_EQ(attention.moved, 10 * T * h);
  EXPECT_DOUBLE_EQ(bytes("offload_modules=qkv_linear"), 22 * T * h + lse + router);
  EXPECT_DOUBLE_EQ(bytes("offload_modules=mlp_norm"), 24 * T * h + lse + router);
  EXPECT_DOUBLE_EQ(bytes("offload_modules=expert_fc1"), 22 * T * h + lse + router);
  EXPECT_DOUBLE_EQ(bytes("offload_modules=moe_act"), 24 * T * h + lse + router);
  // A recomputed core attention runs without the offload: only attn_proj's input leaves.
  EXPECT_DOUBLE_EQ(bytes("recompute=selective,offload_modules=core_attn+attn_proj"), 24 * T * h + lse + router);
  // On a dense layer the expert modules and mlp_norm have nothing to move.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, t, parse_parallel_config("offload_modules=core_attn+attn_proj"), false),
                   layer_activation_bytes(m, t, ParallelConfig{}, false) - 8 * T * h);
  // Tensors under Megatron's --min-offloaded-tensor-size (2^20 elements) stay: at T = 512, Q is
  // 512 x 1024 = 2^19 elements.
  const TrainingSpec short_seq = testing::training(512, 8);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, short_seq, parse_parallel_config("offload_modules=core_attn"), true),
                   layer_activation_bytes(m, short_seq, ParallelConfig{}, true));
  // FP8 (not MXFP8): the GPU kept the expert input's FP8 copy (1 byte), the offload moves the
  // unquantized BF16 input (2 bytes; experts.py set_save_original_input).
  TrainingSpec fp8 = t;
  fp8.precision = Precision::kFP8;
  fp8.fp8_recipe = Fp8Recipe::kTensorwise;
  const OffloadBytes fc1 = layer_offload_bytes(m, fp8, parse_parallel_config("offload_modules=expert_fc1"), true, 1, 1);
  EXPECT_DOUBLE_EQ(fc1.freed, 2 * T * h);
  EXPECT_DOUBLE_EQ(fc1.moved, 4 * T * h);
}

// The copies run beside the layer's compute; what is not hidden adds to the stage's time. For two
// host links slow enough that the copies are exposed, the difference in a stage's forward time is
// exactly layers x moved x (1/bw1 - 1/bw2): Llama-3-8B, tp 1, T = 8192: core_attn moves Q (T x 4096),
// K, V (T x 1024 each: 8 KV heads of 128) and flash attention's output (T x 4096), attn_proj its
// input (T x 4096), all BF16: 2·T·(4096 + 2·1024 + 4096 + 4096) = 2·8192·14336 bytes per layer, 32 layers.
TEST(Estimate, ActivationOffloadCopiesBeyondTheLayerTimeAreExposed) {
  const ModelSpec m = find_model_preset("llama3-8b").spec;
  const TrainingSpec t = testing::training(8192, 64);
  const ParallelConfig c = parse_parallel_config("dp=8,mbs=1,zero=1,offload_modules=core_attn+attn_proj");
  auto forward_s = [&](double link_bytes_per_s) {
    ClusterSpec cluster = testing::dgx_h100(1);
    cluster.gpu.host_link_bandwidth_bytes_per_s = link_bytes_per_s;
    return estimate(m, cluster, t, c).stages.at(0).forward_s;
  };
  const double moved = 2.0 * 8192 * 14336 * 32;
  EXPECT_NEAR(forward_s(1e9) - forward_s(2e9), moved * (1 / 1e9 - 1 / 2e9), 1e-9);
  // A fast link hides them: the same time as without offload.
  ClusterSpec fast = testing::dgx_h100(1);
  fast.gpu.host_link_bandwidth_bytes_per_s = 1e12;
  const Estimate hidden = estimate(m, fast, t, c);
  ParallelConfig no_offload = c;
  no_offload.offload_modules = 0;
  const Estimate plain = estimate(m, fast, t, no_offload);
  EXPECT_DOUBLE_EQ(hidden.iteration_time_s, plain.iteration_time_s);
  EXPECT_LT(hidden.peak_memory_bytes, plain.peak_memory_bytes);
}

// MLA (16 heads, q_lora 256, kv_lora 128, rope 32, nope 64, v 64): Q, K, V after the up-projections
// are 2·T·16·(2·96 + 64) = 8192·T bytes, which mla_up_proj drops (the latent vectors stay); its
// input norm is a module of its own, so layernorm drops its output, 2·T·h.
TEST(ActivationMemory, RecomputeModulesOfAnMlaLayerByHand) {
  ModelSpec m = ModelBuilder().hidden(1024).heads(16).build();
  m.mla = MlaSpec{.q_lora_rank = 256, .kv_lora_rank = 128, .qk_rope_head_dim = 32, .qk_nope_head_dim = 64, .v_head_dim = 64};
  const TrainingSpec t = testing::training(2048, 8);
  const double T = 2048, h = 1024;
  const ParallelConfig base = parse_parallel_config("recompute=selective");
  const double kept = layer_activation_bytes(m, t, base, false);
  EXPECT_DOUBLE_EQ(kept - layer_activation_bytes(m, t, parse_parallel_config("recompute=selective,recompute_modules=core_attn+mla_up_proj"), false),
                   8192 * T);
  EXPECT_DOUBLE_EQ(kept - layer_activation_bytes(m, t, parse_parallel_config("recompute=selective,recompute_modules=core_attn+layernorm"), false),
                   2 * T * h);
}

// The recompute re-runs the chosen modules' forward: mlp on Llama-3.1-8B (dp 8, 8 micro-batches a
// rank) adds the dense MLP's GEMM FLOPs, 2·T·ffn·h·(gate + 1) = 2·4096·14336·4096·3 per layer and
// micro-batch, over 32 layers and 64 sequences; and the time, and frees memory.
TEST(Estimate, RecomputeModulesAddTheirForwardTime) {
  const ModelSpec m = find_model_preset("llama3.1-8b").spec;
  const TrainingSpec t = testing::training(4096, 64);
  const Estimate attn = estimate(m, testing::dgx_h100(1), t, parse_parallel_config("dp=8,mbs=1,zero=1,recompute=selective"));
  const Estimate mlp = estimate(m, testing::dgx_h100(1), t,
                                parse_parallel_config("dp=8,mbs=1,zero=1,recompute=selective,recompute_modules=core_attn+mlp"));
  const double mlp_flops = 2.0 * 4096 * 14336 * 4096 * 3;
  EXPECT_NEAR(mlp.hardware_flops - attn.hardware_flops, 64 * 32 * mlp_flops, 1e-6 * 64 * 32 * mlp_flops);
  EXPECT_DOUBLE_EQ(mlp.model_flops, attn.model_flops);
  EXPECT_GT(mlp.breakdown.compute_s, attn.breakdown.compute_s);
  EXPECT_GT(mlp.iteration_time_s, attn.iteration_time_s);
  EXPECT_LT(mlp.peak_memory_bytes, attn.peak_memory_bytes);

  // moe re-runs the dispatch/combine all-to-all as well.
  const ModelSpec moe = load_model(std::string(PARATUNE_SOURCE_DIR) + "/examples/tiny-moe.yaml");
  const TrainingSpec tm = testing::training(2048, 32);
  const Estimate plain = estimate(moe, testing::dgx_h100(1), tm, parse_parallel_config("dp=8,ep=8,mbs=1,zero=1,recompute=selective"));
  const Estimate whole = estimate(moe, testing::dgx_h100(1), tm,
                                  parse_parallel_config("dp=8,ep=8,mbs=1,zero=1,recompute=selective,recompute_modules=moe"));
  EXPECT_GT(whole.breakdown.ep_comm_s, plain.breakdown.ep_comm_s);
  EXPECT_GT(whole.breakdown.compute_s, plain.breakdown.compute_s);
  EXPECT_GT(whole.hardware_flops, plain.hardware_flops);
  EXPECT_LT(whole.peak_memory_bytes, plain.peak_memory_bytes);
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

// A V (zb-v, dualpipev) puts the output layer and its logits on rank 0; DualPipe holds every rank's
// part twice (two parameter copies, DeepSeek-V3 Sec. 3.2.1) and runs half the micro-batches on each.
TEST(Estimate, VShapesAndDualPipePlaceLayersAsTheirSchedulesDo) {
  const ModelSpec m = find_model_preset("llama3.1-70b").spec;
  auto run = [&](const char* config) {
    return estimate(m, testing::dgx_h100(8), testing::training(4096, 128), parse_parallel_config(config));
  };
  const Estimate looped = run("dp=2,tp=8,pp=4,vpp=2,mbs=1,zero=1,sp=true,recompute=full");
  const Estimate v = run("dp=2,tp=8,pp=4,vpp=2,mbs=1,zero=1,sp=true,recompute=full,schedule=zb-v");
  // The 128k-vocabulary logits: on the last rank when looped, on rank 0 in a V.
  EXPECT_GT(looped.stages[3].memory.other_bytes, looped.stages[0].memory.other_bytes);
  EXPECT_GT(v.stages[0].memory.other_bytes, v.stages[3].memory.other_bytes);
  EXPECT_DOUBLE_EQ(v.stages[0].params, looped.stages[0].params + looped.stages[3].params -
                                           (looped.stages[1].params + looped.stages[2].params) / 2);
  const Estimate one = run("dp=2,tp=8,pp=4,mbs=1,zero=1,sp=true,recompute=full");
  const Estimate dual = run("dp=2,tp=8,pp=4,mbs=1,zero=1,sp=true,recompute=full,schedule=dualpipe");
  for (int s = 0; s < 4; ++s) {
    // Rank s holds parts s and 3 - s: its parameters are both 1F1B stages'.
    EXPECT_DOUBLE_EQ(dual.stages[s].params, one.stages[s].params + one.stages[3 - s].params) << s;
    EXPECT_EQ(dual.stages[s].layers, 40) << s;
  }
  // The same work per iteration: the bottleneck rank computes about what 1F1B's does (its two parts
  // on half the micro-batches each), and the model FLOPs are equal.
  EXPECT_DOUBLE_EQ(dual.model_flops, one.model_flops);
  EXPECT_NEAR(dual.breakdown.compute_s, one.breakdown.compute_s, 0.05 * one.breakdown.compute_s);
  EXPECT_LT(dual.bubble_fraction, one.bubble_fraction);
  // Its gradient reduction: each part's data-parallel reduction, as 1F1B's ranks s and 3 - s do
  // it, plus the sum of the two copies' gradient shards between those ranks.
  auto reduction_s = [&](const char* config, int rank) {
    const sim::PipelineProblem pb =
        pipeline_problem(m, testing::dgx_h100(8), testing::training(4096, 128), parse_parallel_config(config));
    double total = 0;
    for (const sim::ChunkCost& c : pb.stages[static_cast<std::size_t>(rank)].chunks) total += c.grad_sync_s;
    return total;
  };
  const char* one_config = "dp=2,tp=8,pp=4,mbs=1,zero=1,sp=true,recompute=full";
  const char* dual_config = "dp=2,tp=8,pp=4,mbs=1,zero=1,sp=true,recompute=full,schedule=dualpipe";
  for (int s = 0; s < 4; ++s)
    EXPECT_GT(reduction_s(dual_config, s), reduction_s(one_config, s) + reduction_s(one_config, 3 - s)) << s;
  // The schedule's rules, named.
  try {
    run("dp=2,tp=8,pp=4,vpp=4,mbs=1,zero=1,schedule=zb-v");
    ADD_FAILURE() << "zb-v with vpp=4 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vpp must be 2"), std::string::npos) << e.what();
  }
  try {
    run("dp=4,tp=8,pp=2,mbs=16,zero=1,schedule=dualpipe");  // 2 micro-batches < 2·pp
    ADD_FAILURE() << "dualpipe with 2 micro-batches accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dualpipe needs"), std::string::npos) << e.what();
  }
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
