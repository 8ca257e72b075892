#include "paratune/spec/parallel.h"
#include "paratune/cost/estimate.h"
#include "paratune/spec/io.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "../test_util.h"

namespace paratune {
namespace {

// The error parse_parallel_config gives for `text`, "" when it parses.
std::string parse_error(const char* text) {
  try {
    parse_parallel_config(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string resolve_error(const char* config, const ModelSpec& model, int nodes, int seq, int batch) {
  try {
    resolve(parse_parallel_config(config), model, testing::dgx_h100(nodes), testing::training(seq, batch));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ParallelConfig, ParsesAndRoundTrips) {
  const ParallelConfig c = parse_parallel_config("dp=8,tp=8,pp=4,mbs=1,zero=1,recompute=selective,vpp=2");
  EXPECT_EQ(c.dp, 8);
  EXPECT_EQ(c.vpp, 2);
  EXPECT_EQ(c.recompute, RecomputeMode::kSelective);
  const ParallelConfig again = parse_parallel_config(to_string(c));
  EXPECT_EQ(to_string(again), to_string(c));
  const ParallelConfig deepep = parse_parallel_config("dp=8,ep=8,dispatcher=deepep");
  EXPECT_EQ(deepep.dispatcher, MoeDispatcher::kDeepEP);
  EXPECT_NE(to_string(deepep).find(",dispatcher=deepep"), std::string::npos);
  EXPECT_EQ(to_string(parse_parallel_config(to_string(deepep))), to_string(deepep));
}

TEST(ParallelConfig, UnknownKeySuggestsClosest) {
  try {
    parse_parallel_config("dp=8,tpp=2");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'tp'"), std::string::npos) << e.what();
  }
}

TEST(ParallelConfig, PreciseErrorsForInvalidCombinations) {
  const ModelSpec llama = find_model_preset("llama3-70b").spec;  // 64 heads, 8 kv heads, 80 layers
  EXPECT_NE(resolve_error("dp=2,tp=3,pp=1", llama, 1, 4096, 64).find("must equal the cluster's GPU count 8"),
            std::string::npos);
  EXPECT_NE(resolve_error("dp=1,tp=8,pp=1,cp=1", find_model_preset("gpt2-xl").spec, 1, 1024, 8)
                .find("tp=8 does not divide num_attention_heads=25"),
            std::string::npos);
  EXPECT_NE(resolve_error("dp=8,mbs=3", llama, 1, 4096, 64).find("does not split into whole micro-batches"),
            std::string::npos);
  EXPECT_NE(resolve_error("dp=7,tp=1", llama, 1, 4096, 63).find("GPU count"), std::string::npos);
  EXPECT_NE(resolve_error("dp=8,ep=2", llama, 1, 4096, 64).find("requires an MoE model"), std::string::npos);
  EXPECT_NE(resolve_error("dp=4,cp=2", llama, 1, 4095, 64).find("cp=2 requires seq_len=4095"), std::string::npos);
  EXPECT_NE(resolve_error("dp=8,zero=1,op=3", llama, 1, 4096, 64).find("op=3 does not divide dp=8"), std::string::npos);
  EXPECT_NE(resolve_error("dp=1,tp=8,pp=1,stage_layers=40/40", llama, 1, 4096, 64).find("stage_layers has 2 entries"),
            std::string::npos);
  EXPECT_NE(resolve_error("dp=4,pp=2,stage_layers=30/40", llama, 1, 4096, 64).find("add up to 70"), std::string::npos);
  const ModelSpec mixtral = find_model_preset("mixtral-8x7b").spec;
  EXPECT_NE(resolve_error("dp=8,ep=3", mixtral, 1, 4096, 64).find("ep=3 does not divide moe.num_experts=8"),
            std::string::npos);
  EXPECT_NE(resolve_error("dp=8,dispatcher=deepep", mixtral, 1, 4096, 64)
                .find("dispatcher=deepep routes tokens between expert-parallel ranks: it needs a MoE model and ep > 1, "
                      "got ep=1"),
            std::string::npos);
  EXPECT_EQ(resolve_error("dp=8,ep=8,dispatcher=deepep", mixtral, 1, 4096, 64), "");
  EXPECT_NE(std::string(resolve_error("dp=8,ep=8,dispatcher=nccl", mixtral, 1, 4096, 64)).find("dispatcher"),
            std::string::npos);
  // One recompute count caps each stage (uneven stages); above every stage's layers it caps nothing.
  EXPECT_EQ(resolve_error("dp=4,pp=2,recompute=full,recompute_layers=40,stage_layers=30/50", llama, 1, 4096, 64), "");
  EXPECT_EQ(resolve_error("dp=4,pp=2,recompute=full,recompute_layers=51,stage_layers=30/50", llama, 1, 4096, 64),
            "recompute_layers=51 is more than any stage's layers (at most 50): leave it out to recompute every layer");
}

// A learned position table has no row past its last: GPT-2 at 8,192 tokens is an error, not a
// 1,024-position model charged for 8,192.
TEST(ParallelConfig, ASequenceLongerThanLearnedPositionsIsAnError) {
  const ModelSpec gpt2 = find_model_preset("gpt2").spec;
  EXPECT_EQ(resolve_error("dp=8", gpt2, 1, 1024, 64), "");
  EXPECT_EQ(resolve_error("dp=8", gpt2, 1, 8192, 64),
            "seq_len: 8192 exceeds gpt2's 1024 learned positions (max_position_embeddings); give a model spec with "
            "max_position_embeddings >= 8192 to train it at that length");
  EXPECT_EQ(resolve_error("dp=8", find_model_preset("llama3-8b").spec, 1, 131072, 64), "");  // rotary: no table
}

TEST(ParallelConfig, AKeyGivenTwiceIsAnError) {
  try {
    parse_parallel_config("dp=8,dp=4,tp=2");
    FAIL() << "dp given twice was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "dp is given twice (dp=8, then dp=4)");
  }
  EXPECT_THROW(parse_parallel_config("sp=true,sequence_parallel=false"), Error);  // one key, two names
}

TEST(ParallelConfig, ResolveFillsDerivedFields) {
  const ModelSpec llama = find_model_preset("llama3-70b").spec;
  const ParallelConfig c = resolve(parse_parallel_config("dp=2,tp=2,pp=2,vpp=2,zero=1"), llama,
                                   testing::dgx_h100(1), testing::training(4096, 64));
  EXPECT_EQ(c.schedule, Schedule::kInterleaved1F1B);
  EXPECT_EQ(c.op, 2);
  EXPECT_EQ(c.stage_layers, (std::vector<int>{40, 40}));
  EXPECT_EQ(even_stage_layers(10, 4), (std::vector<int>{3, 3, 2, 2}));
}

// Llama-3.1-405B's 126 layers on pp = 8 with vpp = 8, as Meta's and NVIDIA's recipes run them:
// Megatron's account-for-embedding/loss split gives 128 slots, 2 per chunk, and the first chunk of
// rank 0 and the last chunk of rank 7 one layer each (R11).
TEST(ParallelConfig, UnevenSplitOf126LayersWithInterleaving) {
  const ModelSpec llama = find_model_preset("llama3.1-405b").spec;
  const auto cluster = testing::dgx_h100(128);
  const auto training = testing::training(8192, 512);
  const ParallelConfig c =
      resolve(parse_parallel_config("dp=16,tp=8,pp=8,vpp=8,account_embedding=true,account_loss=true"), llama, cluster,
              training);
  EXPECT_EQ(c.stage_layers, (std::vector<int>{15, 16, 16, 16, 16, 16, 16, 15}));
  const std::vector<int> chunks = chunk_layers(c);
  ASSERT_EQ(chunks.size(), 64u);
  EXPECT_EQ(chunks.front(), 1);  // virtual stage 0: the embedding's slot
  EXPECT_EQ(chunks.back(), 1);   // virtual stage 63: the loss's slot
  for (std::size_t k = 1; k + 1 < chunks.size(); ++k) EXPECT_EQ(chunks[k], 2) << k;
  // Round trip: the resolved configuration resolves to itself.
  EXPECT_EQ(to_string(resolve(parse_parallel_config(to_string(c)), llama, cluster, training)), to_string(c));
  // Without the flags 126 layers do not split over pp·vpp = 64 chunks, and with them they must
  // split evenly: 127 slots on pp = 8 do not.
  EXPECT_NE(resolve_error("dp=16,tp=8,pp=8,vpp=8", llama, 128, 8192, 512).find("not divisible by pp*vpp=64"),
            std::string::npos);
  EXPECT_NE(resolve_error("dp=16,tp=8,pp=8,vpp=8,account_embedding=true", llama, 128, 8192, 512)
                .find("127 layer slots do not split evenly over pp=8"),
            std::string::npos);
  // And the estimate runs every one of the 126 layers.
  const Estimate e = estimate(llama, cluster, training, c);
  int layers = 0;
  for (const StageEstimate& s : e.stages) layers += s.layers;
  EXPECT_EQ(layers, 126);
}

// Megatron-LM's --recompute-modules: a '+'-separated set in the config text, printed only where it
// differs from the default core_attn, and in the JSON as a list of names.
TEST(ParallelConfig, RecomputeModulesParseAndRoundTrip) {
  const ParallelConfig c = parse_parallel_config("dp=8,recompute=selective,recompute_modules=moe_act+core_attn");
  EXPECT_EQ(c.recompute_modules,
            recompute_module_bit(RecomputeModule::kCoreAttn) | recompute_module_bit(RecomputeModule::kMoeAct));
  EXPECT_TRUE(c.recomputes(RecomputeModule::kMoeAct));
  EXPECT_FALSE(c.recomputes(RecomputeModule::kMoe));
  // Printed in Megatron-Core's order, whatever order they were given in.
  EXPECT_NE(to_string(c).find(",recompute_modules=core_attn+moe_act"), std::string::npos) << to_string(c);
  EXPECT_EQ(to_string(parse_parallel_config(to_string(c))), to_string(c));
  EXPECT_EQ(to_json(c)["recompute_modules"], nlohmann::json::array({"core_attn", "moe_act"}));
  // The default is core attention only, and is not printed.
  const ParallelConfig plain = parse_parallel_config("dp=8,recompute=selective");
  EXPECT_EQ(plain.recompute_modules, kDefaultRecomputeModules);
  EXPECT_EQ(to_string(plain).find("recompute_modules"), std::string::npos);
  EXPECT_EQ(to_json(plain)["recompute_modules"], nlohmann::json::array({"core_attn"}));
  // The empty set (Megatron accepts it: selective recompute of nothing) is "none".
  const ParallelConfig nothing = parse_parallel_config("dp=8,recompute=selective,recompute_modules=none");
  EXPECT_EQ(nothing.recompute_modules, 0u);
  EXPECT_FALSE(nothing.recomputes(RecomputeModule::kCoreAttn));
  EXPECT_NE(to_string(nothing).find(",recompute_modules=none"), std::string::npos);
  EXPECT_EQ(parse_parallel_config(to_string(nothing)).recompute_modules, 0u);
  // Without selective recompute no module is recomputed.
  EXPECT_FALSE(parse_parallel_config("dp=8,recompute=full").recomputes(RecomputeModule::kCoreAttn));
}

TEST(ParallelConfig, RecomputeModulesErrorsNameTheFieldValueAndRule) {
  const std::string unknown = parse_error("recompute=selective,recompute_modules=core_attn+moe_actt");
  EXPECT_NE(unknown.find("recompute_modules"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("moe_actt"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("moe_act'"), std::string::npos) << unknown;  // the suggestion
  EXPECT_NE(parse_error("recompute=selective,recompute_modules=mlp+mlp").find("'mlp' is named twice"), std::string::npos);

  const ModelSpec llama = find_model_preset("llama3-70b").spec;         // dense, no MLA
  const ModelSpec mixtral = find_model_preset("mixtral-8x7b").spec;     // MoE, no shared experts, no MLA
  EXPECT_EQ(resolve_error("dp=8,recompute=full,recompute_modules=mlp", llama, 1, 4096, 64),
            "recompute_modules=mlp requires recompute=selective, got recompute=full (Megatron-LM: --recompute-modules "
            "needs --recompute-granularity selective)");
  EXPECT_EQ(resolve_error("dp=8,recompute=selective,recompute_modules=moe_act", llama, 1, 4096, 64),
            "recompute_modules=moe_act: moe_act recomputes part of the MoE layers; 'llama3-70b' is dense");
  EXPECT_NE(resolve_error("dp=8,recompute=selective,recompute_modules=moe", llama, 1, 4096, 64).find("is dense"),
            std::string::npos);
  EXPECT_NE(resolve_error("dp=8,recompute=selective,recompute_modules=mla_up_proj", mixtral, 1, 4096, 64)
                .find("mla_up_proj recomputes the multi-latent attention's up-projections; 'mixtral-8x7b' has no MLA"),
            std::string::npos);
  EXPECT_NE(resolve_error("dp=8,recompute=selective,recompute_modules=shared_experts", mixtral, 1, 4096, 64)
                .find("shared experts; 'mixtral-8x7b' has none"),
            std::string::npos);
  EXPECT_NE(resolve_error("dp=8,ep=2,recompute=selective,recompute_modules=moe,ep_overlap=true", mixtral, 1, 4096, 64)
                .find("cannot be combined with ep_overlap=true"),
            std::string::npos);
  // mlp is the dense MLP layers' recompute: allowed on any model (a no-op on MoE layers).
  EXPECT_EQ(resolve_error("dp=8,recompute=selective,recompute_modules=mlp", mixtral, 1, 4096, 64), "");
  EXPECT_EQ(resolve_error("dp=8,recompute=selective,recompute_modules=core_attn+moe_act+layernorm", mixtral, 1, 4096, 64),
            "");
}

// Megatron-LM's fine-grained activation offload: a '+'-separated set, printed when not empty.
TEST(ParallelConfig, OffloadModulesParseAndRoundTrip) {
  const ParallelConfig c = parse_parallel_config("dp=8,offload_modules=attn_proj+core_attn");
  EXPECT_EQ(c.offload_modules, offload_module_bit(OffloadModule::kCoreAttn) | offload_module_bit(OffloadModule::kAttnProj));
  EXPECT_TRUE(c.offloads(OffloadModule::kAttnProj));
  EXPECT_FALSE(c.offloads(OffloadModule::kExpertFc1));
  EXPECT_NE(to_string(c).find(",offload_modules=core_attn+attn_proj"), std::string::npos) << to_string(c);
  EXPECT_EQ(to_string(parse_parallel_config(to_string(c))), to_string(c));
  EXPECT_EQ(to_json(c)["offload_modules"], nlohmann::json::array({"core_attn", "attn_proj"}));
  EXPECT_EQ(to_string(parse_parallel_config("dp=8")).find("offload"), std::string::npos);
  EXPECT_EQ(parse_parallel_config("dp=8,offload_modules=none").offload_modules, 0u);
}

TEST(ParallelConfig, OffloadModulesErrorsNameTheFieldValueAndRule) {
  const std::string unknown = parse_error("offload_modules=core_atn");
  EXPECT_NE(unknown.find("offload_modules"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("core_attn"), std::string::npos) << unknown;  // the suggestion
  EXPECT_NE(parse_error("offload_modules=moe_act+moe_act").find("'moe_act' is named twice"), std::string::npos);

  const ModelSpec llama = find_model_preset("llama3-70b").spec;
  const ModelSpec mixtral = find_model_preset("mixtral-8x7b").spec;
  const ModelSpec deepseek = find_model_preset("deepseek-v3").spec;
  auto fails_with = [](const std::string& error, const char* rule) {
    return error.find(rule) != std::string::npos ? ::testing::AssertionSuccess()
                                                   : ::testing::AssertionFailure() << error;
  };
  EXPECT_TRUE(fails_with(resolve_error("dp=8,recompute=full,offload_modules=core_attn", llama, 1, 4096, 64),
                         "offload_modules=core_attn: recompute=full keeps only each layer's input"));
  EXPECT_TRUE(fails_with(resolve_error("dp=8,offload_modules=attn_proj", llama, 1, 4096, 64),
                         "attn_proj needs core_attn too"));
  EXPECT_TRUE(fails_with(resolve_error("dp=8,recompute=selective,offload_modules=core_attn", llama, 1, 4096, 64),
                         "it would offload nothing"));
  EXPECT_TRUE(fails_with(resolve_error("dp=8,offload_modules=attn_norm", llama, 1, 4096, 64),
                         "attn_norm: 'llama3-70b' uses standard attention"));
  EXPECT_TRUE(fails_with(resolve_error("dp=8,offload_modules=expert_fc1", llama, 1, 4096, 64),
                         "expert_fc1 offloads part of the MoE layers; 'llama3-70b' is dense"));
  EXPECT_TRUE(fails_with(
      resolve_error("dp=8,recompute=selective,recompute_modules=moe,offload_modules=moe_act", mixtral, 1, 4096, 64),
      "the moe module is recomputed whole"));
  // Megatron-Core's own combinations pass: with recompute of the rest, or core_attn listed for attn_proj.
  EXPECT_EQ(resolve_error("dp=8,offload_modules=core_attn+attn_proj+qkv_linear", llama, 1, 4096, 64), "");
  EXPECT_EQ(resolve_error("dp=8,recompute=selective,offload_modules=core_attn+attn_proj", llama, 1, 4096, 64), "");
  EXPECT_EQ(resolve_error("dp=8,ep=8,offload_modules=expert_fc1+moe_act+mlp_norm", mixtral, 1, 4096, 64), "");
  EXPECT_EQ(resolve_error("dp=1,tp=8,pp=8,ep=8,etp=1,offload_modules=attn_norm+qkv_linear", deepseek, 8, 4096, 64), "");
  // A GPU whose link to host memory is unknown cannot be offloaded to.
  ClusterSpec unknown_link = testing::dgx_h100(1);
  unknown_link.gpu.host_link_bandwidth_bytes_per_s = 0;
  try {
    resolve(parse_parallel_config("dp=8,offload_modules=core_attn"), llama, unknown_link, testing::training(4096, 64));
    ADD_FAILURE() << "resolved";
  } catch (const Error& e) {
    EXPECT_TRUE(fails_with(e.what(), "has no host_link_bandwidth"));
  }
}

// Found by fuzz/parallel_config: to_string() left out the overlap switches, so a plan's printed
// --config with tp_comm_overlap=true (or an overlap turned off) estimated another configuration.
TEST(ParallelConfig, ToStringKeepsTheOverlapSwitches) {
  const ParallelConfig c =
      parse_parallel_config("dp=4,tp=2,tp_comm_overlap=true,overlap_p2p=false,overlap_grad_reduce=false,"
                            "overlap_param_gather=false");
  const std::string text = to_string(c);
  EXPECT_NE(text.find("tp_comm_overlap=true"), std::string::npos) << text;
  const ParallelConfig back = parse_parallel_config(text);
  EXPECT_TRUE(back.tp_comm_overlap);
  EXPECT_FALSE(back.overlap_p2p);
  EXPECT_FALSE(back.overlap_grad_reduce);
  EXPECT_FALSE(back.overlap_param_gather);
  // The defaults are not spelled out.
  EXPECT_EQ(to_string(parse_parallel_config("dp=8")).find("overlap_"), std::string::npos);
  EXPECT_EQ(to_string(parse_parallel_config("dp=8")).find("_overlap"), std::string::npos);
}

TEST(ParallelConfig, DegreesOutOfRangeAreErrorsNotWrapped) {
  const ModelSpec llama = find_model_preset("llama3-8b").spec;  // 32 layers, 32 heads, 8 KV heads
  // dp x tp = 536870913 x 8 = 2^32 + 8 was 8 GPUs in 32 bits (MFU 92,423%).
  EXPECT_EQ(resolve_error("dp=536870913,tp=8", llama, 1, 4096, 64), "dp=536870913 exceeds the cluster's 8 GPUs (1 node x 8)");
  EXPECT_EQ(resolve_error("dp=1,tp=1,pp=2147483647", llama, 1, 4096, 64),
            "pp=2147483647 exceeds the cluster's 8 GPUs (1 node x 8)");
  EXPECT_EQ(resolve_error("dp=1,ep=2147483647", llama, 1, 4096, 64), "ep=2147483647 exceeds the cluster's 8 GPUs (1 node x 8)");
  // Each degree within the GPU count, the product beyond it: reported exactly, in 64 bits.
  EXPECT_EQ(resolve_error("dp=8,tp=8,pp=8,cp=8", llama, 1, 4096, 64),
            "dp*tp*pp*cp = 8*8*8*8 = 4096 must equal the cluster's GPU count 8 (1 node x 8)");
  // The micro-batch is part of the batch; dp*mbs does not wrap.
  EXPECT_EQ(resolve_error("dp=8,mbs=2147483647", llama, 1, 4096, 64),
            "mbs=2147483647 exceeds global_batch=64 (a micro-batch is part of the batch)");
  EXPECT_EQ(resolve_error("dp=8,mbs=64", llama, 1, 4096, 64),
            "global_batch=64 does not split into whole micro-batches: dp*mbs = 8*64 = 512 must divide it");
  EXPECT_EQ(resolve_error("dp=4,pp=2,vpp=1073741824", llama, 1, 4096, 64),
            "vpp=1073741824 exceeds num_layers=32 (each virtual stage holds layers)");
  // A negative layer count (fuzzing found it: to_string leaves it out, so it resolved differently
  // when read back).
  EXPECT_THROW(parse_parallel_config("dp=2,pp=16,recompute=full,recompute_layers=-4"), Error);
  try {
    (void)parse_parallel_config("recompute=full,recompute_layers=-1");
    FAIL() << "recompute_layers=-1 was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "recompute_layers: -1 must be >= 0 (leave it out to recompute every layer)");
  }
  ParallelConfig negative = parse_parallel_config("dp=8,recompute=full");
  negative.recompute_layers = -4;  // built in code, not parsed: resolve() checks it too
  try {
    (void)resolve(negative, llama, testing::dgx_h100(1), testing::training(4096, 64));
    FAIL() << "recompute_layers=-4 was resolved";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "recompute_layers=-4 must be >= 0, or -1 for every layer");
  }
  // Stage layers that overflow 32 bits when added up.
  EXPECT_EQ(resolve_error("dp=4,pp=2,stage_layers=2147483647/2147483647", llama, 1, 4096, 64),
            "stage_layers add up to 4294967294 but the model has num_layers=32");
}

TEST(ParallelConfig, PipelineSlotsAreBounded) {
  // 2^31 - 1 micro-batches ended in std::bad_alloc in the replay (exit 1); a bounded count is bad input.
  const ModelSpec llama = find_model_preset("llama3-8b").spec;
  TrainingSpec t = testing::training(4096, 2147483647);
  ClusterSpec one = testing::dgx_h100(1);
  one.gpus_per_node = 1;
  try {
    resolve(parse_parallel_config("dp=1"), llama, one, t);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "pp*vpp*micro-batches = 1*1*2147483647 = 2147483647 pipeline slots; at most 16777216 (the replay "
              "tracks each: fewer micro-batches, from a larger mbs or dp)");
  }
  EXPECT_NE(resolve_error("dp=1,pp=8,vpp=4", llama, 1, 4096, 1 << 20).find("8*4*1048576 = 33554432 pipeline slots"),
            std::string::npos);
  EXPECT_EQ(resolve_error("dp=1,pp=8,vpp=4", llama, 1, 4096, 1 << 19), "");  // 2^24 exactly
}

TEST(ParallelConfig, GpuCountSaturatesInsteadOfWrapping) {
  ParallelConfig c;
  c.dp = 536870913;
  c.tp = 8;
  EXPECT_EQ(c.num_gpus(), 4294967304);
  c.pp = c.cp = 2147483647;
  EXPECT_EQ(c.num_gpus(), std::numeric_limits<std::int64_t>::max());
  c.pp = 0;
  EXPECT_EQ(c.num_gpus(), std::numeric_limits<std::int64_t>::max());
}

TEST(ParallelConfig, ThirtyTwoThousandGpusAndMore) {
  // dp = 32,768 and 131,072 do not fit 16 bits (the planner stored them so: "dp=-32768").
  const ModelSpec llama = find_model_preset("llama3-8b").spec;
  for (int nodes : {4096, 16384}) {
    const int gpus = nodes * 8;
    const ParallelConfig c = resolve(parse_parallel_config(fmt::format("dp={}", gpus)), llama, testing::dgx_h100(nodes),
                                     testing::training(4096, gpus));
    EXPECT_EQ(c.dp, gpus);
    EXPECT_EQ(c.num_microbatches(testing::training(4096, gpus)), 1);
  }
}

}  // namespace
}  // namespace paratune
