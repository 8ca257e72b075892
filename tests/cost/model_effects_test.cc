// The cost model's answers to the questions an ML-systems engineer would check first: context
// parallelism is never free, ZeRO-2 pays its per-micro-batch reduction, FP8 leaves attention at
// BF16 speed, Megatron-Core's expert groups, routing imbalance, the all-to-all overlap, and where
// recomputed communication is reported. Each test fails on a model without the effect.
#include <gtest/gtest.h>

#include "../../src/cost/host_issue.h"
#include "../../src/cost/moe.h"
#include "../test_util.h"
#include "paratune/cost/estimate.h"
#include "paratune/spec/parallel.h"

namespace paratune {
namespace {

using testing::ModelBuilder;

Estimate run(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training, const char* config) {
  return estimate(model, cluster, training, parse_parallel_config(config));
}

// The same tokens per GPU with and without CP, memory not binding: CP only adds (smaller
// attention kernels, correction passes, ring transfers and their interference).
TEST(ContextParallel, StrictlySlowerThanTheSameTokensWithoutIt) {
  const ModelSpec llama = find_model_preset("llama3-8b").spec;
  const ClusterSpec node = testing::dgx_h100(1);
  for (int seq : {2048, 4096, 8192}) {
    const TrainingSpec t = testing::training(seq, 64);
    const Estimate without = run(llama, node, t, "dp=8,tp=1,pp=1,cp=1,mbs=1,zero=1,recompute=full");
    const Estimate with2 = run(llama, node, t, "dp=4,tp=1,pp=1,cp=2,mbs=2,zero=1,recompute=full");
    const Estimate with4 = run(llama, node, t, "dp=2,tp=1,pp=1,cp=4,mbs=4,zero=1,recompute=full");
    ASSERT_TRUE(without.fits && with2.fits && with4.fits) << seq;
    EXPECT_GT(with2.iteration_time_s, without.iteration_time_s * 1.001) << "seq " << seq;
    EXPECT_GT(with4.iteration_time_s, with2.iteration_time_s) << "seq " << seq;
  }
}

// ZeRO-2 shards the gradients, so with gradient accumulation it reduce-scatters every micro-batch;
// ZeRO-1 reduces once. With the overlap off the difference is m - 1 reduce-scatters.
TEST(Zero2, PaysItsReduceScatterEveryMicrobatch) {
  const ModelSpec llama = find_model_preset("llama3-8b").spec;
  const ClusterSpec cluster = testing::dgx_h100(2);
  const TrainingSpec t = testing::training(4096, 256);  // 16 micro-batches of 1 on dp = 16
  const Estimate z1 = run(llama, cluster, t, "dp=16,tp=1,pp=1,mbs=1,zero=1,overlap_grad_reduce=false");
  const Estimate z2 = run(llama, cluster, t, "dp=16,tp=1,pp=1,mbs=1,zero=2,overlap_grad_reduce=false");
  ASSERT_EQ(z2.num_microbatches, 16);
  EXPECT_GT(z2.breakdown.zero3_comm_s, 0);
  // 16 reduce-scatters against one reduce-scatter (+ parameter gather) for ZeRO-1.
  EXPECT_GT(z2.breakdown.zero3_comm_s, 8 * z1.breakdown.dp_comm_s);
  EXPECT_GT(z2.iteration_time_s, z1.iteration_time_s);
  // And it saves the gradient memory ZeRO-1 keeps.
  EXPECT_LT(z2.stages[0].memory.grads_bytes, z1.stages[0].memory.grads_bytes / 8);
}

// Core attention stays BF16 under FP8: an attention-bound model gains almost nothing from FP8.
TEST(Fp8, AttentionRunsAtBf16Speed) {
  ModelSpec m = ModelBuilder().layers(2).hidden(512).heads(4).vocab(256).build();
  m.gated_mlp = false;
  const ClusterSpec node = testing::dgx_h100(1);
  TrainingSpec bf16 = testing::training(65536, 8);
  TrainingSpec fp8 = bf16;
  fp8.precision = Precision::kFP8;
  const char* config = "dp=8,tp=1,pp=1,mbs=1,zero=1";
  const double t_bf16 = run(m, node, bf16, config).iteration_time_s;
  const double t_fp8 = run(m, node, fp8, config).iteration_time_s;
  EXPECT_GT(t_fp8, 0.93 * t_bf16);  // at the FP8 peak, attention would take half the time
  // A GEMM-bound model does gain.
  const ModelSpec llama = find_model_preset("llama3-8b").spec;
  TrainingSpec short_bf16 = testing::training(2048, 64), short_fp8 = short_bf16;
  short_fp8.precision = Precision::kFP8;
  EXPECT_LT(run(llama, node, short_fp8, config).iteration_time_s,
            0.85 * run(llama, node, short_bf16, config).iteration_time_s);
}

// FlashAttention-2 on Hopper runs at flash_attention_2_speed of the fused kernel's rate; elsewhere
// (no entry for the GPU) at the same rate. Hand-worked: 2 layers, seq 4096, 8 heads of 64, causal,
// micro-batch 1, at 0.5 of 989 TFLOP/s and no short-block roll-off: each layer's forward attention
// is 2·4096·4096·(64 + 64)·8·0.5 = 17.18 GFLOP, 34.7 us; at half the rate it takes 34.7 us more,
// so 2 layers add 69.5 us to the forward and 2.5 times that to the backward. (No host-issue bound
// and no step jitter, which would hide or scale the difference.)
TEST(FlashAttention2, RunsAtItsSpeedOnHopperOnly) {
  ModelSpec m = ModelBuilder().layers(2).hidden(512).heads(8).vocab(256).build();
  Calibration cal = default_calibration();
  cal.attention_half_kv_tokens = 0;
  cal.attention_efficiency_by_gpu["h100-sxm"] = 0.5;
  cal.flash_attention_2_speed_by_gpu = {{"h100-sxm", 0.5}};
  cal.op_issue_s = 0;
  cal.step_jitter_cv = 0;
  TrainingSpec fused = testing::training(4096, 8), fa2 = fused;
  fa2.flash_attention_2 = true;
  const ParallelConfig config = parse_parallel_config("dp=8,tp=1,pp=1,mbs=1,zero=1");
  const ClusterSpec h100 = testing::dgx_h100(1);
  const StageEstimate a = estimate(m, h100, fused, config, cal).stages.at(0);
  const StageEstimate b = estimate(m, h100, fa2, config, cal).stages.at(0);
  const double layer_attention_s = 2.0 * 4096 * 4096 * 128 * 8 * 0.5 / (989e12 * 0.5);
  // Within 0.1% (the backward's overlapped gradient reduction interferes a little longer).
  EXPECT_NEAR(b.forward_s - a.forward_s, 2 * layer_attention_s, 1e-3 * 2 * layer_attention_s);
  EXPECT_NEAR(b.backward_s - a.backward_s, 2.5 * 2 * layer_attention_s, 1e-3 * 2.5 * 2 * layer_attention_s);
  // An A100 has no entry: FlashAttention-2 is its fastest kernel.
  const ClusterSpec a100 = find_cluster_preset("dgx-a100").node;
  EXPECT_DOUBLE_EQ(estimate(m, a100, fa2, config, cal).iteration_time_s,
                   estimate(m, a100, fused, config, cal).iteration_time_s);
}

// FP8 core attention (Megatron-Bridge's fp8_dot_product_attention) runs at fp8_attention_speed of
// the BF16 fused kernel's rate, forward and backward; the linear layers are untouched. Hand-worked,
// as above: each layer's forward attention is 17.18 GFLOP; at 0.5 of a GB200's BF16 peak (2450
// TFLOP/s) it takes 14.0 us, at 1.4x that rate 10.0 us: 4.0 us less per layer, so 2 layers save
// 8.0 us forward and 2.5 times that backward.
TEST(Fp8Attention, RunsAtItsSpeedOverBf16Attention) {
  ModelSpec m = ModelBuilder().layers(2).hidden(512).heads(8).vocab(256).build();
  Calibration cal = default_calibration();
  cal.attention_half_kv_tokens = 0;
  cal.attention_efficiency_by_gpu["gb200"] = 0.5;
  cal.fp8_attention_speed = 1.4;
  cal.op_issue_s = 0;
  cal.step_jitter_cv = 0;
  TrainingSpec bf16_attention = testing::training(4096, 8);
  bf16_attention.precision = Precision::kFP8;
  bf16_attention.fp8_recipe = Fp8Recipe::kMxfp8;
  TrainingSpec fp8_attention = bf16_attention;
  fp8_attention.fp8_attention = true;
  const ParallelConfig config = parse_parallel_config("dp=8,tp=1,pp=1,mbs=1,zero=1");
  ClusterSpec gb200 = find_cluster_preset("gb200-nvl72").node;
  gb200.nodes = 2;
  const StageEstimate a = estimate(m, gb200, bf16_attention, config, cal).stages.at(0);
  const StageEstimate b = estimate(m, gb200, fp8_attention, config, cal).stages.at(0);
  const double layer_attention_s = 2.0 * 4096 * 4096 * 128 * 8 * 0.5 / (2450e12 * 0.5);
  const double saved_per_layer_s = layer_attention_s * (1 - 1 / 1.4);
  EXPECT_NEAR(a.forward_s - b.forward_s, 2 * saved_per_layer_s, 1e-3 * 2 * saved_per_layer_s);
  EXPECT_NEAR(a.backward_s - b.backward_s, 2.5 * 2 * saved_per_layer_s, 2e-3 * 2.5 * 2 * saved_per_layer_s);
  // FP8 attention needs FP8 training.
  TrainingSpec bf16 = fp8_attention;
  bf16.precision = Precision::kBF16;
  EXPECT_THROW(validate(bf16), Error);
}

// Transformer Engine writes a dense layer's norm-fed and activation-fed FP8 inputs from the norm
// and activation kernels; torchao casts each in a pass of its own (4 bytes per element: read BF16,
// write the row-wise and column-wise FP8 copies). Hand-worked, per layer (hidden 1024, FFN 4096, not
// gated, 4096 tokens): forward QKV's and FC1's inputs (4096 x 1024 each) and FC2's (4096 x 4096) are
// 25.2 M elements, 100.7 MB; backward FC1's output gradient, 16.8 M elements, 67.1 MB; at the HBM
// rate x 0.8. Attention's output and the gradients from the residual stream are cast in both.
TEST(Fp8, TransformerEngineFusesNormAndActivationCasts) {
  ModelSpec m = ModelBuilder().layers(2).hidden(1024).heads(8).vocab(256).build();
  m.gated_mlp = false;
  Calibration cal = default_calibration();
  cal.hbm_efficiency = 0.8;
  cal.op_issue_s = 0;
  cal.step_jitter_cv = 0;
  TrainingSpec te = testing::training(4096, 8);
  te.precision = Precision::kFP8;
  te.fp8_recipe = Fp8Recipe::kDelayed;
  TrainingSpec torchao = te;
  torchao.fp8_saves_bf16_inputs = true;
  const ParallelConfig config = parse_parallel_config("dp=8,tp=1,pp=1,mbs=1,zero=1");
  const ClusterSpec h100 = testing::dgx_h100(1);
  const StageEstimate fused = estimate(m, h100, te, config, cal).stages.at(0);
  const StageEstimate separate = estimate(m, h100, torchao, config, cal).stages.at(0);
  const double rate = h100.gpu.hbm_bandwidth_bytes_per_s * 0.8;
  const double forward_s = 2 * 4.0 * 4096 * (1024 + 1024 + 4096) / rate;
  const double backward_s = 2 * 4.0 * 4096 * 4096 / rate;
  EXPECT_NEAR(separate.forward_s - fused.forward_s, forward_s, 1e-3 * forward_s);
  EXPECT_NEAR(separate.backward_s - fused.backward_s, backward_s, 1e-3 * backward_s);
}

// FP8 recipes keep the linear layers' inputs as FP8 for the backward.
TEST(Fp8, KeepsQuantizedLinearInputs) {
  const ModelSpec m = ModelBuilder().hidden(1024).heads(16).build();
  TrainingSpec t = testing::training(2048, 8);
  ParallelConfig p;
  const double bf16 = layer_activation_bytes(m, t, p, false, 2);
  const double fp8 = layer_activation_bytes(m, t, p, false, 1);
  // QKV input, MLP input, projection input (h each) and fc2 input (4h) at one byte instead of two.
  EXPECT_DOUBLE_EQ(bf16 - fp8, 2048.0 * (1024 * 3 + 4096));
}

// --fp8-param-gather: the FP8 copies replace the BF16 weights (Hopper keeps the row-wise copy and
// its transpose: 2 bytes instead of 2 + 2), and the distributed optimizer gathers 1 byte per
// parameter instead of 2. Without a sharded optimizer it is refused (Megatron-LM R20.3).
TEST(Fp8, ParamGatherHoldsAndGathersFp8Weights) {
  const ModelSpec llama = find_model_preset("llama3-8b").spec;
  const ClusterSpec cluster = testing::dgx_h100(2);
  TrainingSpec cached = testing::training(4096, 64);
  cached.precision = Precision::kFP8;
  TrainingSpec gathered = cached;
  gathered.fp8_param_gather = true;
  const char* config = "dp=16,tp=1,pp=1,mbs=1,zero=1,recompute=full,overlap_param_gather=false";
  const Estimate a = run(llama, cluster, cached, config);
  const Estimate b = run(llama, cluster, gathered, config);
  const double params = a.stages[0].params;
  EXPECT_NEAR(a.stages[0].memory.weights_bytes, 4 * params, 1e-6 * params);
  EXPECT_NEAR(b.stages[0].memory.weights_bytes, 2 * params, 1e-6 * params);
  EXPECT_LT(b.breakdown.dp_comm_s, a.breakdown.dp_comm_s);
  EXPECT_THROW(run(llama, cluster, gathered, "dp=16,tp=1,pp=1,mbs=1,zero=0"), Error);
  TrainingSpec bf16 = testing::training(4096, 64);
  bf16.fp8_param_gather = true;
  EXPECT_THROW(validate(bf16), Error);
}

// Megatron-Core's expert data-parallel size is world / (etp · ep · pp) (MoE parallel folding).
TEST(Moe, ExpertDataParallelSizeFollowsMegatronCore) {
  ParallelConfig p;
  p.dp = 4;
  p.tp = 4;
  p.cp = 2;
  p.pp = 2;
  p.ep = 8;
  p.etp = 1;
  EXPECT_EQ(p.expert_data_parallel_size(), 4 * 4 * 2 * 2 / (1 * 8 * 2));
  p.etp = 0;  // etp = tp
  EXPECT_EQ(p.expert_data_parallel_size(), 1);
}

// The busiest expert-parallel rank sets the pace; forced balancing removes the excess, a
// capacity factor caps it, and more local experts average it out.
TEST(Moe, LoadImbalanceOfTheBusiestRank) {
  const MoeSpec moe{64, 8, 1024, 0, 0, 0, 1};
  ParallelConfig p;
  p.ep = 64;
  TrainingSpec t = testing::training(4096, 64);
  Calibration cal;
  cal.moe_load_imbalance = 1.4;
  EXPECT_DOUBLE_EQ(cost_detail::moe_rank_load_factor(moe, p, t, cal), 1.4);
  t.moe_balancing = MoeBalancing::kAuxLossFree;
  EXPECT_DOUBLE_EQ(cost_detail::moe_rank_load_factor(moe, p, t, cal), 1.2);
  t.moe_balancing = MoeBalancing::kForceBalanced;
  EXPECT_DOUBLE_EQ(cost_detail::moe_rank_load_factor(moe, p, t, cal), 1.0);
  t.moe_balancing = MoeBalancing::kAuxLoss;
  t.moe_capacity_factor = 1.25;
  EXPECT_DOUBLE_EQ(cost_detail::moe_rank_load_factor(moe, p, t, cal), 1.25);
  t.moe_capacity_factor = 0;
  p.ep = 16;  // 4 local experts: half the excess
  EXPECT_DOUBLE_EQ(cost_detail::moe_rank_load_factor(moe, p, t, cal), 1.2);
  p.ep = 1;
  EXPECT_DOUBLE_EQ(cost_detail::moe_rank_load_factor(moe, p, t, cal), 1.0);
}

TEST(Moe, ImbalanceAndOverlapChangeTheAllToAll) {
  const ModelSpec mixtral = find_model_preset("mixtral-8x7b").spec;
  const ClusterSpec cluster = testing::dgx_h100(4);
  TrainingSpec t = testing::training(4096, 256);
  const char* config = "dp=8,tp=4,pp=1,ep=8,etp=1,mbs=1,zero=1,sp=true";
  const Estimate balanced = [&] {
    TrainingSpec f = t;
    f.moe_balancing = MoeBalancing::kForceBalanced;
    return run(mixtral, cluster, f, config);
  }();
  const Estimate aux = run(mixtral, cluster, t, config);
  EXPECT_GT(aux.breakdown.ep_comm_s, balanced.breakdown.ep_comm_s);
  EXPECT_GT(aux.iteration_time_s, balanced.iteration_time_s);
  EXPECT_GT(aux.stages[0].memory.activations_bytes, balanced.stages[0].memory.activations_bytes);
  const Estimate overlapped = run(mixtral, cluster, t, "dp=8,tp=4,pp=1,ep=8,etp=1,mbs=1,zero=1,sp=true,ep_overlap=true");
  EXPECT_LT(overlapped.breakdown.ep_comm_s, aux.breakdown.ep_comm_s);
}

// Expected distinct holders of a token's experts, by hand: 8 experts on 4 ranks (2 each), top-2.
// P(a rank holds neither) = C(6,2)/C(8,2) = 15/28, so 4 · 13/28 = 1.857 ranks; top-1: exactly 1.
TEST(Moe, DistinctExpertHoldersPerToken) {
  EXPECT_NEAR(cost_detail::expected_distinct_holders(8, 4, 2), 4.0 * 13 / 28, 1e-12);
  EXPECT_NEAR(cost_detail::expected_distinct_holders(8, 4, 1), 1.0, 1e-12);
  EXPECT_NEAR(cost_detail::expected_distinct_holders(8, 8, 2), 2.0, 1e-12);  // one expert per rank
  EXPECT_NEAR(cost_detail::expected_distinct_holders(8, 2, 8), 2.0, 1e-12);  // every expert chosen
  EXPECT_DOUBLE_EQ(cost_detail::expected_distinct_holders(8, 1, 2), 1.0);
}

// One dispatch of 1000 tokens of 1 MB each, 64 experts top-4, EP 16 on 2 nodes of 8, NVLink 100 GB/s,
// RDMA 10 GB/s, no latency.
//   alltoall: 4 copies a token, 8/16 of them leave the node: NIC 0.5·4 GB / 10 GB/s = 0.2 s.
//   deepep:   p_node = 1 - C(32,4)/C(64,4) = 1 - 35960/635376 = 0.94340; RDMA 1 node · 0.94340 · 1 GB
//             / 10 GB/s = 0.094340 s. p_rank = 1 - C(60,4)/C(64,4) = 1 - 487635/635376 = 0.23252;
//             NVLink 2·7·0.23252 = 3.2553 copies · 1 GB / 100 GB/s = 0.032553 s. The slower: 0.094340 s.
TEST(Moe, NodeDeduplicatedDispatchSendsEachTokenOncePerNode) {
  MoeSpec moe;
  moe.num_experts = 64;
  moe.top_k = 4;
  const GroupPlacement ep16 = place_group(16, 1, 8);
  const Fabric f{Link{100e9, 0}, Link{10e9, 0}};
  EXPECT_NEAR(cost_detail::expert_dispatch_s(1000, 1e6, moe, MoeDispatcher::kAllToAll, ep16, f),
              all_to_all_s(4e9, ep16, f), 1e-12);
  EXPECT_NEAR(all_to_all_s(4e9, ep16, f), 0.2, 0.2 * 0.3);  // the NIC term dominates (PXN adds NVLink)
  const double p_node = 1 - 35960.0 / 635376, p_rank = 1 - 487635.0 / 635376;
  EXPECT_NEAR(cost_detail::expert_dispatch_s(1000, 1e6, moe, MoeDispatcher::kDeepEP, ep16, f),
              p_node * 1e9 / 10e9, 1e-9);
  // One node: NVLink only, 7 · p_rank(8 ranks) copies. p_rank = 1 - C(56,4)/C(64,4) = 1 - 367290/635376.
  const GroupPlacement ep8 = place_group(8, 1, 8);
  EXPECT_NEAR(cost_detail::expert_dispatch_s(1000, 1e6, moe, MoeDispatcher::kDeepEP, ep8, f),
              7 * (1 - 367290.0 / 635376) * 1e9 / 100e9, 1e-9);
  // With RDMA made fast the NVLink side decides: own-node and forwarded copies, 2 · 7 · p_rank.
  const Fabric fast_rdma{Link{100e9, 0}, Link{1000e9, 0}};
  EXPECT_NEAR(cost_detail::expert_dispatch_s(1000, 1e6, moe, MoeDispatcher::kDeepEP, ep16, fast_rdma),
              2 * 7 * p_rank * 1e9 / 100e9, 1e-9);
}

// A power limit slows the compute by (limit / board)^power_clock_exponent and nothing else: with
// exponent 1 and memory-bound kernels made free (HBM x 1000), the compute of a GEMM-bound layer
// takes 700/500 = 1.4x as long at 500 W; with exponent 0 nothing changes.
TEST(PowerLimit, ScalesTheComputeClock) {
  const ModelSpec llama = find_model_preset("llama3-8b").spec;
  ClusterSpec node = testing::dgx_h100(1);
  node.gpu.hbm_bandwidth_bytes_per_s *= 1000;
  const TrainingSpec t = testing::training(4096, 64);
  const ParallelConfig p = resolve(parse_parallel_config("dp=8,mbs=1,zero=1"), llama, node, t);
  Calibration cal = default_calibration();
  cal.power_clock_exponent = 1;
  cal.op_issue_s = 0;  // no host-bound layers
  const Estimate full = estimate(llama, node, t, p, cal);
  ClusterSpec capped = node;
  capped.gpu.power_limit_w = 500;
  const Estimate slow = estimate(llama, capped, t, p, cal);
  EXPECT_NEAR(slow.stages[0].forward_s / full.stages[0].forward_s, 1.4, 0.01);
  cal.power_clock_exponent = 0;
  EXPECT_DOUBLE_EQ(estimate(llama, capped, t, p, cal).iteration_time_s, estimate(llama, node, t, p, cal).iteration_time_s);
}

// Group-limited routing, DeepSeek-V3 (256 experts, top 8, 8 groups, top 4): on 8 nodes a group is a
// node, so 4 nodes are eligible and the 8 experts fall on 4 · (1 - C(96,8)/C(128,8)) of them;
// C(96,8)/C(128,8) = prod_{i<8} (96 - i)/(128 - i) = 0.0927473. Unlimited: 8 · (1 - C(224,8)/C(256,8)).
TEST(Moe, GroupLimitedRoutingReachesFewerNodes) {
  MoeSpec v3;
  v3.num_experts = 256;
  v3.top_k = 8;
  v3.route_groups = 8;
  v3.route_group_topk = 4;
  double none = 1;
  for (int i = 0; i < 8; ++i) none *= (96.0 - i) / (128 - i);
  EXPECT_NEAR(none, 0.0927473, 1e-6);
  EXPECT_NEAR(cost_detail::holders_reached(v3, 8), 4 * (1 - none), 1e-12);
  MoeSpec unlimited = v3;
  unlimited.route_groups = unlimited.route_group_topk = 0;
  EXPECT_NEAR(cost_detail::holders_reached(unlimited, 8), cost_detail::expected_distinct_holders(256, 8, 8), 1e-12);
  EXPECT_GT(cost_detail::holders_reached(unlimited, 8), 5.0);
  // 64 ranks: each group spans 8 ranks, 32 are eligible.
  EXPECT_NEAR(cost_detail::holders_reached(v3, 64), cost_detail::expected_distinct_holders(128, 32, 8), 1e-12);
}

// Host issue time (cost/host_issue.h), worked by hand with op_issue_s = 10 us.
TEST(HostIssue, ALayerCostsTheSlowerOfGpuAndCpuAndTheMoeSyncDrainsTheQueue) {
  Calibration cal;
  cal.op_issue_s = 10e-6;
  const ModelSpec dense = testing::ModelBuilder().build();
  ParallelConfig p;
  TrainingSpec t = testing::training(4096, 64);
  // Dense, tp = 1: 16 operators = 160 us of CPU. A 1 ms GPU forward hides them; a 100 us one
  // exposes 60 us. The backward issues the forward's 160 us (kBackwardIssueRatio 1).
  cost_detail::LayerGpuTime gpu{1e-3, 0, 2e-3};
  auto e = cost_detail::host_issue_exposure(dense, p, t, false, gpu, cal);
  EXPECT_DOUBLE_EQ(e.forward_s, 0);
  EXPECT_DOUBLE_EQ(e.backward_s, 0);
  gpu = {100e-6, 0, 100e-6};
  e = cost_detail::host_issue_exposure(dense, p, t, false, gpu, cal);
  EXPECT_NEAR(e.forward_s, 60e-6, 1e-12);
  EXPECT_NEAR(e.backward_s, 60e-6, 1e-12);
  // tp = 2 with sequence parallelism adds 4 collectives: 200 us of CPU.
  p.tp = 2;
  p.sequence_parallel = true;
  e = cost_detail::host_issue_exposure(dense, p, t, false, gpu, cal);
  EXPECT_NEAR(e.forward_s, 100e-6, 1e-12);
  // A dropless MoE layer (Mixtral: 8 experts) with ep = 8: 16 + 4 + 14 = 34 operators (340 us)
  // before the sync against 300 us of GPU; the 20 us sync; 11 + 2 x 1 local expert = 13 operators
  // (130 us) after it against 500 us of GPU: 40 + 20 + 0 us exposed. Backward: 470 us of CPU
  // against 2 ms of GPU: none.
  const ModelSpec moe = find_model_preset("mixtral-8x7b").spec;
  p.ep = 8;
  gpu = {300e-6, 500e-6, 2e-3};
  e = cost_detail::host_issue_exposure(moe, p, t, true, gpu, cal);
  EXPECT_NEAR(e.forward_s, 40e-6 + cost_detail::kHostSyncS, 1e-12);
  EXPECT_DOUBLE_EQ(e.backward_s, 0);
  // With a capacity factor nothing syncs: 470 us of CPU against 800 us of GPU hides.
  t.moe_capacity_factor = 1.25;
  EXPECT_FALSE(cost_detail::moe_host_sync(p, t));
  e = cost_detail::host_issue_exposure(moe, p, t, true, gpu, cal);
  EXPECT_DOUBLE_EQ(e.forward_s, 0);
}

// A small MoE model (hidden 2048, 128 experts of FFN 768) waits for the CPU; a large dense one
// hides its launches: the host issue time weighs on the first and not the second.
TEST(HostIssue, SmallExpertsWaitForTheHost) {
  const ClusterSpec cluster = testing::dgx_h100(2);
  TrainingSpec t = testing::training(1024, 256);
  ModelSpec small = find_model_preset("mixtral-8x7b").spec;
  small.hidden_size = 2048;
  small.num_attention_heads = 32;
  small.num_kv_heads = 4;
  small.moe->num_experts = 128;
  small.moe->top_k = 8;
  small.moe->expert_ffn_hidden_size = 768;
  auto time_with = [&](const ModelSpec& m, double op_issue_s, const char* config) {
    Calibration cal = default_calibration();
    cal.op_issue_s = op_issue_s;
    return estimate(m, cluster, t, parse_parallel_config(config), cal).iteration_time_s;
  };
  const char* moe_config = "dp=16,tp=1,pp=1,ep=8,mbs=1,zero=1";
  EXPECT_GT(time_with(small, 30e-6, moe_config), 1.2 * time_with(small, 2e-6, moe_config));
  const ModelSpec big = find_model_preset("llama3-70b").spec;
  const char* dense_config = "dp=2,tp=8,pp=1,mbs=1,zero=1,sp=true,recompute=full";
  EXPECT_LT(time_with(big, 30e-6, dense_config), 1.01 * time_with(big, 2e-6, dense_config));
}

// Full recompute re-runs the forward's communication; each kind is reported as itself.
TEST(Breakdown, RecomputedCommunicationKeepsItsKind) {
  const ModelSpec mixtral = find_model_preset("mixtral-8x7b").spec;
  const Estimate e = run(mixtral, testing::dgx_h100(4), testing::training(4096, 256),
                         "dp=32,tp=1,pp=1,ep=8,mbs=1,zero=1,recompute=full");
  EXPECT_EQ(e.breakdown.tp_comm_s, 0);  // tp = 1: no TP traffic, recomputed or not
  EXPECT_GT(e.breakdown.ep_comm_s, 0);
}

// NCCL buffers are per communicator: more parallel dimensions, more buffers.
TEST(Memory, NcclBuffersPerCommunicator) {
  const ModelSpec llama = find_model_preset("llama3-8b").spec;
  Calibration with = default_calibration(), without = default_calibration();
  with.nccl_bytes_per_communicator = 100e6;
  without.nccl_bytes_per_communicator = 0;
  const TrainingSpec t = testing::training(4096, 64);
  const ClusterSpec node = testing::dgx_h100(1);
  auto buffers = [&](const char* config) {
    const ParallelConfig p = parse_parallel_config(config);
    return estimate(llama, node, t, p, with).stages[0].memory.other_bytes -
           estimate(llama, node, t, p, without).stages[0].memory.other_bytes;
  };
  EXPECT_NEAR(buffers("dp=8,mbs=1,zero=1"), 100e6, 1);                  // dp
  EXPECT_NEAR(buffers("dp=2,tp=2,pp=2,mbs=1,zero=1"), 4 * 100e6, 1);    // tp, dp, pipeline send and receive
  EXPECT_NEAR(buffers("dp=2,tp=2,cp=2,mbs=1,zero=1"), 3 * 100e6, 1);    // tp, cp, dp x cp
}

}  // namespace
}  // namespace paratune
