// How frameworks hold memory (TrainingSpec's framework flags, cost/memory.cc): each mechanism's
// number worked by hand for a tiny model.
#include <gtest/gtest.h>

#include "../test_util.h"
#include "paratune/cost/estimate.h"

namespace paratune {
namespace {

// A Llama-style layer small enough to count by hand: h 8, 2 heads of 4, 1 KV head, gated FFN 16.
ModelSpec tiny_llama() {
  ModelSpec m = testing::ModelBuilder().layers(2).hidden(8).heads(2).vocab(100).build();
  m.num_kv_heads = 1;
  m.ffn_hidden_size = 16;
  m.gated_mlp = true;
  m.norm = NormKind::kRMSNorm;
  m.position_embedding = PositionEmbedding::kRotary;
  m.tie_embeddings = false;
  return m;
}

TEST(FrameworkMemory, TorchtitanPerOpSelectiveCheckpointingKeepsOddMatmulsAndAttention) {
  const ModelSpec m = tiny_llama();
  TrainingSpec t = testing::training(4, 1);  // one sequence of 4 tokens: T = 4
  t.per_op_selective_recompute = true;
  ParallelConfig p;
  p.recompute = RecomputeMode::kSelective;
  // mm outputs per token, in order: wq 8, wk 4, wv 4, wo 8, w1 16, w3 16, w2 8; saved the 1st, 3rd,
  // 5th, 7th: 8 + 4 + 16 + 8 = 36 -> 2 B x 4 tokens x 36 = 288.
  // Layer input 2 x 4 x 8 = 64; SDPA output 2 x 4 x (2 heads x 4) = 64; log-sum-exp 4 B x 4 x 2 = 32.
  // 288 + 64 + 64 + 32 = 448 bytes.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, t, p, false), 448);
  // Megatron's selective recompute (the flag off) keeps every activation but the attention core's.
  t.per_op_selective_recompute = false;
  EXPECT_GT(layer_activation_bytes(m, t, p, false), 448);
}

TEST(FrameworkMemory, UnfusedFp32CrossEntropyHoldsThreeFp32LogitCopies) {
  const ModelSpec m = tiny_llama();
  const ClusterSpec cluster = testing::dgx_h100(1);
  ParallelConfig p;
  p.dp = 8;
  TrainingSpec t = testing::training(4, 8);
  Calibration cal = default_calibration();
  const Estimate fused = estimate(m, cluster, t, p, cal);
  t.fp32_unfused_cross_entropy = true;
  const Estimate unfused = estimate(m, cluster, t, p, cal);
  // 4 tokens x 100 logits x (12 - 6) bytes = 2400 more on the last (only) stage.
  EXPECT_DOUBLE_EQ(unfused.stages[0].memory.other_bytes - fused.stages[0].memory.other_bytes, 2400);
}

TEST(FrameworkMemory, TorchaoFloat8KeepsBf16InputsAndNoFp8WeightCopies) {
  const ModelSpec m = tiny_llama();
  const ClusterSpec cluster = testing::dgx_h100(1);
  ParallelConfig p;
  p.dp = 8;
  TrainingSpec bf16 = testing::training(4, 8);
  TrainingSpec te = bf16;
  te.precision = Precision::kFP8;
  te.fp8_recipe = Fp8Recipe::kTensorwise;
  TrainingSpec torchao = te;
  torchao.fp8_saves_bf16_inputs = true;
  const Calibration cal = default_calibration();
  const auto stage = [&](const TrainingSpec& t) { return estimate(m, cluster, t, p, cal).stages[0].memory; };
  // torchao: the same activations and weights as BF16 (2 bytes per saved input and per weight).
  EXPECT_DOUBLE_EQ(stage(torchao).activations_bytes, stage(bf16).activations_bytes);
  EXPECT_DOUBLE_EQ(stage(torchao).weights_bytes, stage(bf16).weights_bytes);
  // Transformer Engine: FP8 inputs (1 byte) and two cached FP8 weight copies on Hopper (+2 bytes).
  EXPECT_LT(stage(te).activations_bytes, stage(bf16).activations_bytes);
  EXPECT_DOUBLE_EQ(stage(te).weights_bytes, 2 * stage(bf16).weights_bytes);
}

TEST(FrameworkMemory, FsdpWithPipelineKeepsStageUnshardedWithFp32Gradients) {
  const ModelSpec m = tiny_llama();
  const ClusterSpec cluster = testing::dgx_h100(1);
  ParallelConfig p;
  p.dp = 4;
  p.pp = 2;
  p.zero = 3;
  TrainingSpec t = testing::training(4, 8);
  const Calibration cal = default_calibration();
  const Estimate resharded = estimate(m, cluster, t, p, cal);
  t.fsdp_unsharded_across_microbatches = true;
  const Estimate kept = estimate(m, cluster, t, p, cal);
  for (std::size_t s = 0; s < 2; ++s) {
    const double params = kept.stages[s].params;
    // fp32 gradients of every parameter of the stage: 4 B x params more.
    EXPECT_DOUBLE_EQ(kept.stages[s].memory.grads_bytes - resharded.stages[s].memory.grads_bytes, 4 * params);
    // BF16 parameters, all gathered: 2 B x params of the stage.
    EXPECT_GT(kept.stages[s].memory.weights_bytes, resharded.stages[s].memory.weights_bytes);
  }
}

TEST(FrameworkMemory, FullRecomputeHoldsOneLayerAndTwoInputGradientsInItsBackward) {
  const ModelSpec m = tiny_llama();
  const ClusterSpec cluster = testing::dgx_h100(1);
  ParallelConfig p;
  p.dp = 8;
  p.recompute = RecomputeMode::kFull;
  const TrainingSpec t = testing::training(4, 8);
  Calibration cal = default_calibration();
  cal.fragmentation = 0;
  const Estimate e = estimate(m, cluster, t, p, cal);
  // Kept: 2 layer inputs + the embedding output, 2 B x 4 tokens x 8 = 64 each; in the backward one
  // layer's activations plus the gradients at its output and input (64 each).
  ParallelConfig none = p;
  none.recompute = RecomputeMode::kNone;
  const double layer = layer_activation_bytes(m, t, none, false);
  EXPECT_DOUBLE_EQ(e.stages[0].memory.activations_bytes, 3 * 64 + layer + 2 * 64);
}

TEST(FrameworkMemory, DtensorTensorParallelSavesTheGatheredLinearInputs) {
  const ModelSpec m = tiny_llama();
  TrainingSpec t = testing::training(4, 1);
  ParallelConfig p;
  p.tp = 2;
  p.sequence_parallel = true;
  const double megatron = layer_activation_bytes(m, t, p, false);
  t.tp_saves_gathered_inputs = true;
  // QKV and MLP inputs whole instead of their sequence half: 2 x (2 B x 4 tokens x 8 / 2) = 64.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, t, p, false) - megatron, 64);
}

TEST(FrameworkMemory, TorchAmpWeightsAreTheMasterAndDdpBucketsCopyTheGradients) {
  const ModelSpec m = tiny_llama();
  const ClusterSpec cluster = testing::dgx_h100(1);
  ParallelConfig p;
  p.dp = 8;
  TrainingSpec t = testing::training(4, 8);
  const Calibration cal = default_calibration();
  const auto stage = [&](const TrainingSpec& spec) { return estimate(m, cluster, spec, p, cal).stages[0]; };
  const StageEstimate bf16 = stage(t);
  TrainingSpec amp = t;
  amp.amp_fp32_weights = true;
  // Per parameter: weights 4 B (not 2), Adam 8 B (not 12: the weights are the master).
  EXPECT_DOUBLE_EQ(stage(amp).memory.weights_bytes, 4 * bf16.params);
  EXPECT_DOUBLE_EQ(stage(amp).memory.optimizer_bytes, 8 * bf16.params);
  TrainingSpec ddp = t;
  ddp.ddp_gradient_buckets = true;
  // The buckets: one more fp32 copy of every gradient, 4 B per parameter.
  EXPECT_DOUBLE_EQ(stage(ddp).memory.grads_bytes - bf16.memory.grads_bytes, 4 * bf16.params);
}

// Megatron's interleaved 1F1B (schedules.py, forward_backward_pipelining_with_interleaving): rank r
// runs 2(p - r - 1) + (v - 1)p warm-up forwards before its first backward, so it holds that many
// chunk-micro-batches plus one; with m = p ("all_warmup_microbatches") every rank runs all m·v
// forwards first and holds every micro-batch of every chunk.
TEST(FrameworkMemory, InterleavedScheduleHoldsMegatronsWarmupMicroBatches) {
  ModelSpec m = tiny_llama();
  m.num_layers = 12;  // pp 4 x vpp 3: one layer per chunk, every chunk alike on the last rank
  const ClusterSpec cluster = testing::dgx_h100(1);
  ParallelConfig p;
  p.dp = 2;
  p.pp = 4;
  p.vpp = 3;
  p.schedule = Schedule::kInterleaved1F1B;
  const Calibration cal = default_calibration();
  // m = p = 4: all 4 x 3 chunk-micro-batches, i.e. 4 micro-batches of the rank's 3 chunks.
  EXPECT_DOUBLE_EQ(estimate(m, cluster, testing::training(4, 8), p, cal).stages[3].in_flight_microbatches, 4);
  // m = 8: the last rank (r = 3) holds 2(4 - 3 - 1) + (3 - 1) 4 + 1 = 9 chunk-micro-batches = 3 of its 3 chunks.
  EXPECT_DOUBLE_EQ(estimate(m, cluster, testing::training(4, 16), p, cal).stages[3].in_flight_microbatches, 3);
}

}  // namespace
}  // namespace paratune
