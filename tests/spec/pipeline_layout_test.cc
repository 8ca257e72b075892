// Megatron-LM pipeline layouts in ParallelConfig (layout=..., R13) and multi-token prediction
// (ModelSpec::mtp_layers): parsing, the rules, what the cost model charges where, the launch.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "../test_util.h"
#include "paratune/calib/published_runs.h"
#include "paratune/cost/estimate.h"
#include "paratune/cost/model_stats.h"
#include "paratune/launch/launch.h"
#include "paratune/spec/io.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/presets.h"

namespace paratune {
namespace {

// 8 dense layers, h = 1024, 8 heads (head size 128), ffn 4096 (not gated), V = 32000, RMSNorm,
// untied: small enough to count by hand. One layer: attention 4h^2 = 4,194,304, MLP 2·h·ffn =
// 8,388,608, two RMSNorms 2h = 2,048: 12,584,960 parameters.
ModelSpec mtp_small_model(int mtp_layers = 0) {
  ModelSpec m;
  m.name = "small";
  m.num_layers = 8;
  m.hidden_size = 1024;
  m.num_attention_heads = 8;
  m.num_kv_heads = 8;
  m.head_dim = 128;
  m.ffn_hidden_size = 4096;
  m.vocab_size = 32000;
  m.norm = NormKind::kRMSNorm;
  m.mtp_layers = mtp_layers;
  return m;
}

std::string layout_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PipelineLayout, ParsesMegatronSyntax) {
  // Megatron-Bridge's DeepSeek-V3 layout for pp 4 x vp 4 (deepseek_v3.py @067f987).
  const std::vector<LayoutStage> v3 = parse_pipeline_layout("Et*4|(t*4|)*14tmL");
  ASSERT_EQ(v3.size(), 16u);
  EXPECT_EQ(v3.front(), (LayoutStage{.layers = 4, .mtp = 0, .embedding = true, .loss = false}));
  for (std::size_t k = 1; k < 15; ++k) EXPECT_EQ(v3[k], (LayoutStage{.layers = 4})) << k;
  EXPECT_EQ(v3.back(), (LayoutStage{.layers = 1, .mtp = 1, .embedding = false, .loss = true}));
  // Commas and spaces are ignored; t*n and tt...t are the same; an empty stage is allowed (R13.1).
  EXPECT_EQ(parse_pipeline_layout("E, t*2 | tt, L"), parse_pipeline_layout("Ett|ttL"));
  EXPECT_EQ(parse_pipeline_layout("Et||tL").size(), 3u);
  // Nested groups.
  EXPECT_EQ(parse_pipeline_layout("E((t|)*2)*2tL").size(), 5u);
  // An empty group repeated any number of times is nothing (it looped 66 M times: fuzz/parallel_config).
  EXPECT_EQ(parse_pipeline_layout("Et()*2000000000|tL"), parse_pipeline_layout("Et|tL"));
  // The compact form round-trips and is Megatron-Bridge's own spelling.
  EXPECT_EQ(to_string(v3), "Et*4|(t*4|)*14tmL");
  EXPECT_EQ(parse_pipeline_layout(to_string(v3)), v3);
  EXPECT_EQ(to_string(parse_pipeline_layout("Ettt|t|tt|ttL")), "Et*3|t|t*2|t*2L");
}

TEST(PipelineLayout, SyntaxErrorsNameTheFieldTheValueAndTheRule) {
  auto parse_error = [](const char* text) { return layout_error_of([&] { (void)parse_pipeline_layout(text); }); };
  const std::string bad_symbol = parse_error("Et*4|x|tL");
  EXPECT_NE(bad_symbol.find("layout: 'Et*4|x|tL'"), std::string::npos) << bad_symbol;
  EXPECT_NE(bad_symbol.find("'x' at position 5 is not one of E t m L"), std::string::npos) << bad_symbol;
  EXPECT_NE(parse_error("tEt|tL").find("the embedding E must be the first symbol"), std::string::npos);
  EXPECT_NE(parse_error("Et|tLt").find("the loss L must be the last symbol"), std::string::npos);
  EXPECT_NE(parse_error("Et|t").find("the last symbol must be the loss L"), std::string::npos);
  EXPECT_NE(parse_error("Et|mtL").find("a decoder layer t comes after an MTP layer m"), std::string::npos);
  EXPECT_NE(parse_error("Et*|tL").find("'*' at position 2 must be followed by a count"), std::string::npos);
  EXPECT_NE(parse_error("Et*0|tL").find("must be >= 1"), std::string::npos);
  EXPECT_NE(parse_error("E(t|tL").find("never closed"), std::string::npos);
  EXPECT_NE(parse_error("E(t|)tL").find("must be followed by *n"), std::string::npos);
  EXPECT_NE(parse_error("Et*2000000000L").find("expands to more than"), std::string::npos);
  // Through the config text, the key is named.
  EXPECT_NE(layout_error_of([] { (void)parse_parallel_config("pp=2,layout=Et|q"); }).find("layout: 'Et|q'"),
            std::string::npos);
}

TEST(PipelineLayout, ResolveChecksTheLayoutAgainstModelAndDegrees) {
  const ModelSpec m = mtp_small_model();
  const ClusterSpec cluster = testing::dgx_h100(1);
  const TrainingSpec training = testing::training(2048, 64);
  auto resolve_error = [&](const std::string& config, const ModelSpec& model) {
    return layout_error_of([&] { (void)resolve(parse_parallel_config(config), model, cluster, training); });
  };
  // Uneven chunks: rank 0 holds chunks 0 and 2 (3 + 2 layers), rank 1 chunks 1 and 3 (1 + 2).
  const ParallelConfig c = resolve(parse_parallel_config("dp=4,pp=2,vpp=2,layout=Et*3|t|t*2|t*2L"), m, cluster, training);
  EXPECT_EQ(c.stage_layers, (std::vector<int>{5, 3}));
  EXPECT_EQ(chunk_layers(c), (std::vector<int>{3, 1, 2, 2}));
  EXPECT_EQ(c.schedule, Schedule::kInterleaved1F1B);
  // Round trip through the config text.
  EXPECT_NE(to_string(c).find("layout=Et*3|t|t*2|t*2L"), std::string::npos) << to_string(c);
  EXPECT_EQ(to_string(resolve(parse_parallel_config(to_string(c)), m, cluster, training)), to_string(c));
  // Without a layout the same split is refused: 5 layers do not divide over vpp = 2.
  EXPECT_NE(resolve_error("dp=4,pp=2,vpp=2,stage_layers=5/3", m).find("stage_layers[0]=5 is not divisible by vpp=2"),
            std::string::npos);

  const std::string count = resolve_error("dp=4,pp=2,vpp=2,layout=Et*4|t*4L", m);
  EXPECT_NE(count.find("layout: 'Et*4|t*4L' has 2 stages but pp*vpp = 2*2 = 4"), std::string::npos) << count;
  const std::string layers = resolve_error("dp=4,pp=2,layout=Et*4|t*3L", m);
  EXPECT_NE(layers.find("holds 7 decoder layers t but the model has num_layers=8"), std::string::npos) << layers;
  const std::string mtp = resolve_error("dp=4,pp=2,layout=Et*4|t*4mL", m);
  EXPECT_NE(mtp.find("holds 1 MTP layers m but the model has mtp_layers=0"), std::string::npos) << mtp;
  const std::string empty_rank = resolve_error("dp=4,pp=2,vpp=2,layout=Et*4||t*4|L", m);
  EXPECT_NE(empty_rank.find("leaves pipeline rank 1 without decoder layers"), std::string::npos) << empty_rank;
  const std::string with_flags = resolve_error("dp=4,pp=2,account_loss=true,layout=Et*4|t*4L", m);
  EXPECT_NE(with_flags.find("cannot be combined with account_embedding/account_loss (R13.4)"), std::string::npos)
      << with_flags;
  const std::string with_stages = resolve_error("dp=4,pp=2,stage_layers=3/5,layout=Et*4|t*4L", m);
  EXPECT_NE(with_stages.find("cannot be combined with stage_layers=3/5"), std::string::npos) << with_stages;
  // MTP layers sit in the last chunk of their rank: chunk 0 of rank 1 is not.
  const std::string mtp_chunk = resolve_error("dp=4,pp=2,vpp=2,layout=Et*3|t*5m||L", mtp_small_model(1));
  EXPECT_NE(mtp_chunk.find("not in the last chunk of their rank"), std::string::npos) << mtp_chunk;
}

// Parameters per rank under the uneven layout Et*3|t|t*2|t*2L (pp = 2, vpp = 2, tp = 1), by hand:
//   rank 0: 5 layers x 12,584,960 + embedding 32000 x 1024 = 62,924,800 + 32,768,000 = 95,692,800
//   rank 1: 3 layers x 12,584,960 + output layer 32,768,000 + final norm 1,024        = 70,523,904
// Time: against the even layout Et*2|t*2|t*2|t*2L (4/4 layers), rank 0 gains exactly one layer's
// compute and rank 1 loses exactly one: both differences are one layer's forward + backward.
TEST(PipelineLayout, UnevenLayoutChargesEachRanksOwnLayers) {
  const ModelSpec m = mtp_small_model();
  const ClusterSpec cluster = testing::dgx_h100(1);
  const TrainingSpec training = testing::training(2048, 64);
  const Estimate uneven = estimate(m, cluster, training, parse_parallel_config("dp=4,pp=2,vpp=2,layout=Et*3|t|t*2|t*2L"));
  const Estimate even = estimate(m, cluster, training, parse_parallel_config("dp=4,pp=2,vpp=2,layout=Et*2|t*2|t*2|t*2L"));
  ASSERT_EQ(uneven.stages.size(), 2u);
  EXPECT_EQ(uneven.stages[0].layers, 5);
  EXPECT_EQ(uneven.stages[1].layers, 3);
  EXPECT_DOUBLE_EQ(uneven.stages[0].params, 95'692'800.0);
  EXPECT_DOUBLE_EQ(uneven.stages[1].params, 70'523'904.0);
  // BF16 weights: 2 bytes a parameter.
  EXPECT_DOUBLE_EQ(uneven.stages[0].memory.weights_bytes, 2 * 95'692'800.0);
  const double gained = uneven.stages[0].compute_s - even.stages[0].compute_s;
  const double lost = even.stages[1].compute_s - uneven.stages[1].compute_s;
  EXPECT_GT(gained, 0);
  EXPECT_NEAR(gained, lost, 1e-9 * even.stages[0].compute_s);
  // The even layout is the same configuration as the default split.
  const Estimate plain = estimate(m, cluster, training, parse_parallel_config("dp=4,pp=2,vpp=2"));
  EXPECT_DOUBLE_EQ(plain.iteration_time_s, even.iteration_time_s);
  // Here rank 1's LM head (32,768,000 parameters, more than two layers' 25,169,920) outweighs rank
  // 0's embedding lookup: the layer moved to rank 0 balances the ranks, and the iteration is faster.
  EXPECT_LT(uneven.iteration_time_s, even.iteration_time_s);
}

// One MTP layer of the small model, by hand (Megatron-Core multi_token_prediction.py):
//   parameters: enorm + hnorm 2 x 1,024, eh_proj 2h x h = 2,097,152, one dense layer 12,584,960
//               = 14,684,160 (the embedding and output head are shared)
//   forward FLOPs per token, seq 2048: 2 x (14,684,160 + head 32000 x 1024 = 32,768,000)
//               = 94,904,320 GEMM, + attention 2 x 2048 x (128 + 128) x 8 heads x 1/2 = 4,194,304
//               = 99,098,624
// On the last of pp = 2 ranks it adds its parameters and a copy of the embedding (32,768,000):
//               14,684,160 + 32,768,000 = 47,452,160.
TEST(MultiTokenPrediction, FlopsAndParametersByHand) {
  const ModelSpec plain = mtp_small_model(0), mtp = mtp_small_model(1);
  EXPECT_DOUBLE_EQ(count_parameters(mtp).mtp_layer_params, 14'684'160.0);
  EXPECT_DOUBLE_EQ(count_parameters(mtp).total, count_parameters(plain).total);  // published counts leave MTP out
  EXPECT_DOUBLE_EQ(forward_flops_per_token(mtp, 2048) - forward_flops_per_token(plain, 2048), 99'098'624.0);

  const ClusterSpec cluster = testing::dgx_h100(1);
  const TrainingSpec training = testing::training(2048, 64);
  const Estimate without = estimate(plain, cluster, training, parse_parallel_config("dp=4,pp=2"));
  const Estimate with = estimate(mtp, cluster, training, parse_parallel_config("dp=4,pp=2"));
  EXPECT_DOUBLE_EQ(with.stages[0].params, without.stages[0].params);
  EXPECT_DOUBLE_EQ(with.stages[1].params - without.stages[1].params, 47'452'160.0);
  EXPECT_GT(with.stages[1].forward_s, without.stages[1].forward_s);
  EXPECT_DOUBLE_EQ(with.stages[0].forward_s, without.stages[0].forward_s);
  EXPECT_GT(with.stages[1].memory.other_bytes, without.stages[1].memory.other_bytes);  // its own logits
  // Where the layout puts "m": the same place, the same figures.
  const Estimate placed = estimate(mtp, cluster, training, parse_parallel_config("dp=4,pp=2,layout=Et*4|t*4mL"));
  EXPECT_DOUBLE_EQ(placed.stages[1].params, with.stages[1].params);
  EXPECT_DOUBLE_EQ(placed.iteration_time_s, with.iteration_time_s);
}

TEST(MultiTokenPrediction, ReadFromModelFilesAndThePreset) {
  EXPECT_EQ(find_model_preset("deepseek-v3").spec.mtp_layers, 1);
  EXPECT_EQ(find_model_preset("llama3-8b").spec.mtp_layers, 0);
  const std::string path = testing::write_temp("mtp.yaml", "num_layers: 8\nhidden_size: 1024\nnum_attention_heads: 8\n"
                                                           "vocab_size: 32000\nmtp_layers: 2\n");
  EXPECT_EQ(load_model(path).mtp_layers, 2);
  const std::string negative = testing::write_temp("mtp_bad.yaml", "num_layers: 8\nhidden_size: 1024\n"
                                                                   "num_attention_heads: 8\nvocab_size: 32000\n"
                                                                   "mtp_layers: -1\n");
  EXPECT_NE(layout_error_of([&] { (void)load_model(negative); }).find("mtp_layers: -1 must be >= 0"), std::string::npos);
}

TEST(MultiTokenPrediction, MegatronLaunchCarriesTheLayoutAndMtp) {
  const ModelSpec m = mtp_small_model(1);
  const ClusterSpec cluster = testing::dgx_h100(1);
  const TrainingSpec training = testing::training(2048, 64);
  const ParallelConfig p = resolve(parse_parallel_config("dp=4,pp=2,vpp=2,layout=Et*3|t|t*2|t*2mL"), m, cluster, training);
  const launch::LaunchTarget target{.nodes = 1, .gpus_per_node = 8, .gpu = cluster.gpu.name};
  const launch::LaunchSettings l = launch::launch_settings(launch::Framework::kMegatron, p, m, training, target);
  EXPECT_NE(l.text.find("--pipeline-model-parallel-layout \"Et*3|t|t*2|t*2mL\""), std::string::npos) << l.text;
  EXPECT_NE(l.text.find("--mtp-num-layers 1"), std::string::npos) << l.text;
  // The layout sets vpp itself (R13.4): no vpp flag beside it.
  EXPECT_EQ(l.text.find("--num-virtual-stages-per-pipeline-rank"), std::string::npos) << l.text;
  EXPECT_TRUE(l.cannot_express.empty()) << l.cannot_express.front();
  // Without a layout, Megatron puts MTP on the last stage by itself: only the flag.
  const ParallelConfig even = resolve(parse_parallel_config("dp=4,pp=2"), m, cluster, training);
  const launch::LaunchSettings e = launch::launch_settings(launch::Framework::kMegatron, even, m, training, target);
  EXPECT_NE(e.text.find("--mtp-num-layers 1"), std::string::npos);
  EXPECT_EQ(e.text.find("--pipeline-model-parallel-layout"), std::string::npos);
  // torchtitan has no MTP: stated, not silently dropped.
  const launch::LaunchSettings tt = launch::launch_settings(launch::Framework::kTorchtitan, even, m, training, target);
  std::string lines;
  for (const std::string& line : tt.cannot_express) lines += line + "\n";
  EXPECT_NE(lines.find("mtp_layers=1: torchtitan"), std::string::npos) << lines;
}

// Row 235 (DeepSeek-V3, 61 layers, pp 4 x vpp 4, Megatron-Bridge): 61 layers do not split over 16
// chunks, and neither account-for split makes them (62 or 63 slots); Megatron-Bridge's recipe
// layout Et*4|(t*4|)*14tmL does, with its one MTP layer.
TEST(PipelineLayout, Row235IsEstimatedWithTheBridgeLayout) {
  const auto runs = read_published_runs(std::string(PARATUNE_SOURCE_DIR) + "/data/published-runs/published_runs.csv");
  const auto row = std::find_if(runs.begin(), runs.end(), [](const PublishedRun& r) { return r.id() == "235"; });
  ASSERT_NE(row, runs.end());
  const RunSetup s = setup_for_run(*row);
  EXPECT_EQ(s.model.mtp_layers, 1);
  ASSERT_FALSE(s.candidates.empty());
  for (const ParallelConfig& c : s.candidates) EXPECT_EQ(to_string(c.layout), "Et*4|(t*4|)*14tmL");
  bool said = false;
  for (const std::string& a : s.assumptions) said = said || a.find("Megatron-Bridge's layout") != std::string::npos;
  EXPECT_TRUE(said);
  const RowResult r = evaluate_run(s, default_calibration());
  EXPECT_GT(r.predicted, 0);
  EXPECT_NE(r.config.find("layout=Et*4|(t*4|)*14tmL"), std::string::npos) << r.config;
  // Row 238 (Qwen3-235B, 94 layers on pp 8 x vpp 3, no MTP): its recipe uses the account-for split,
  // which divides the layers (96 slots), so Megatron-Bridge's layout is not searched there.
  const auto qwen = std::find_if(runs.begin(), runs.end(), [](const PublishedRun& run) { return run.id() == "238"; });
  ASSERT_NE(qwen, runs.end());
  for (const ParallelConfig& c : setup_for_run(*qwen).candidates) EXPECT_TRUE(c.layout.empty()) << to_string(c);
}

}  // namespace
}  // namespace paratune
