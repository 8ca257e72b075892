#include "paratune/calib/published_runs.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <fstream>

#include "../cli/cli_util.h"
#include "../test_util.h"
#include "paratune/spec/presets.h"

namespace paratune {
namespace {

// The published runs the cost model is validated on, as they ship (data/published-runs/, with
// SOURCES.md): the file users run `paratune validate` on is the file these tests read.
const std::string kRuns = std::string(PARATUNE_SOURCE_DIR) + "/data/published-runs/published_runs.csv";

// The published-runs header; rows are written by column name, every other column empty.
const std::vector<std::string> kColumns{
    "row_id", "source_id", "source", "table_or_figure", "source_url", "model", "num_layers", "hidden_size",
    "num_attention_heads", "num_kv_heads", "ffn_hidden_size", "vocab_size", "seq_length", "moe_num_experts",
    "moe_top_k", "moe_expert_ffn_size", "moe_shared_experts", "total_params", "gpu_type", "total_gpus",
    "gpus_per_node", "interconnect", "model_parallel_total", "tp", "pp", "dp", "ep", "cp", "vpp",
    "micro_batch_size", "global_batch_size", "global_batch_tokens", "activation_recompute", "sequence_parallel",
    "zero_or_distributed_optimizer", "precision", "framework", "iteration_time_s", "tflops_per_gpu", "tflops_basis",
    "mfu_pct", "hfu_pct", "tokens_per_s_per_gpu", "tokens_per_s_total", "aggregate_pflops", "other_result", "notes"};

using Row = std::map<std::string, std::string>;

std::string csv_text(const std::vector<Row>& rows) {
  std::string out;
  for (std::size_t i = 0; i < kColumns.size(); ++i) out += (i ? "," : "") + kColumns[i];
  out += "\n";
  for (const Row& row : rows) {
    for (const auto& [column, value] : row)
      if (std::find(kColumns.begin(), kColumns.end(), column) == kColumns.end()) ADD_FAILURE() << column;
    for (std::size_t i = 0; i < kColumns.size(); ++i) {
      const auto it = row.find(kColumns[i]);
      out += (i ? "," : "") + (it == row.end() ? std::string() : "\"" + it->second + "\"");
    }
    out += "\n";
  }
  return out;
}

std::vector<PublishedRun> runs_of(const std::string& name, const std::vector<Row>& rows) {
  return read_published_runs(testing::write_temp(name, csv_text(rows)));
}

// A small Megatron-Core row on DGX H100 with every parallel axis stated; `changes` overrides columns.
Row small_row(const Row& changes = {}) {
  Row row{{"row_id", "1"},
          {"source_id", "SX"},
          {"model", "GPT small"},
          {"num_layers", "4"},
          {"hidden_size", "512"},
          {"num_attention_heads", "8"},
          {"vocab_size", "1000"},
          {"seq_length", "2048"},
          {"gpu_type", "H100 (DGX-H100)"},
          {"total_gpus", "8"},
          {"gpus_per_node", "8"},
          {"tp", "1"},
          {"pp", "1"},
          {"dp", "8"},
          {"cp", "1"},
          {"vpp", "1"},
          {"micro_batch_size", "1"},
          {"global_batch_size", "16"},
          {"activation_recompute", "none"},
          {"sequence_parallel", "false"},
          {"precision", "BF16"},
          {"framework", "NeMo 25.04 container (Megatron-Core)"},
          {"iteration_time_s", "0.1"}};
  for (const auto& [k, v] : changes) row[k] = v;
  return row;
}

TEST(Csv, QuotedFieldsEscapesAndNewlines) {
  const auto path = testing::write_temp("q.csv", "a,b,c\n1,\"x, \"\"y\"\"\",\"two\nlines\"\r\n2,,z\n");
  const auto rows = read_csv(path);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("b"), "x, \"y\"");
  EXPECT_EQ(rows[0].at("c"), "two\nlines");
  EXPECT_EQ(rows[1].at("b"), "");
}

TEST(Csv, RaggedRowAndUnterminatedQuoteAreErrors) {
  EXPECT_THROW(read_csv(testing::write_temp("r.csv", "a,b\n1,2,3\n")), Error);
  EXPECT_THROW(read_csv(testing::write_temp("u.csv", "a,b\n1,\"2\n")), Error);
  EXPECT_THROW(read_published_runs(testing::write_temp("m.csv", "row_id,model\n1,x\n")), Error);
}

TEST(PublishedFlops, MegatronSc21ReproducesThePublishedS1Figure) {
  // Row 1: 1.2B GPT, batch 8, seq 1024, 1.121 s on one V100, 71.9 TFLOP/s.
  ModelSpec m;
  m.num_layers = 24;
  m.hidden_size = 1920;
  m.num_attention_heads = 15;
  m.vocab_size = 51200;
  EXPECT_NEAR(megatron_sc21_flops(m, 8, 1024) / 1.121 / 1e12, 71.9, 0.1);
}

// The per-sample model FLOPs the DGX Cloud benchmark READMEs state (SOURCES.md S24, S25), from
// megatron_flops: GQA, non-gated MLPs, MoE with a shared expert on every 2nd layer, MLA with MTP.
TEST(PublishedFlops, MegatronFlopsReproducesNvidiaPerSampleFigures) {
  auto llama_like = [](int layers, int hidden, int heads, int kv, int ffn, int vocab) {
    ModelSpec m;
    m.num_layers = layers;
    m.hidden_size = hidden;
    m.num_attention_heads = heads;
    m.num_kv_heads = kv;
    m.head_dim = hidden / heads;
    m.ffn_hidden_size = ffn;
    m.vocab_size = vocab;
    m.gated_mlp = true;
    return m;
  };
  // Llama 3.1 8B, seq 8192: 4.74e14.
  EXPECT_NEAR(megatron_flops(find_model_preset("llama3.1-8b").spec, 1, 8192) / 4.74e14, 1, 0.005);
  // GPT-3 175B, seq 2048, vocab 51200: 2.20e15.
  ModelSpec gpt3 = find_model_preset("gpt3-175b").spec;
  gpt3.vocab_size = 51200;
  EXPECT_NEAR(megatron_flops(gpt3, 1, 2048) / 2.20e15, 1, 0.005);
  // Nemotron-4 15B (squared ReLU, not gated), seq 4096: 3.85e14.
  ModelSpec nemotron = llama_like(32, 6144, 48, 8, 24576, 256000);
  nemotron.gated_mlp = false;
  EXPECT_NEAR(megatron_flops(nemotron, 1, 4096) / 3.85e14, 1, 0.005);
  // NeMo 25.04's MoE figures count causal (halved) attention.
  const MegatronFlopsOptions causal{true, 0};
  // Llama 4 Maverick: dense FFN 16384 on layers 0,2,..; 128 experts top-1 + 1 shared (8192) on 1,3,..: 8.92e14.
  ModelSpec maverick = llama_like(48, 5120, 40, 8, 16384, 202048);
  maverick.moe = MoeSpec{128, 1, 8192, 1, 0, 1, 2};
  EXPECT_NEAR(megatron_flops(maverick, 1, 8192, causal) / 8.92e14, 1, 0.005);
  // Grok-1: 8 experts top-2, FFN 32768, vocab 128256: 4.27e15.
  ModelSpec grok = llama_like(64, 6144, 48, 8, 32768, 128256);
  grok.moe = MoeSpec{8, 2, 32768};
  EXPECT_NEAR(megatron_flops(grok, 1, 8192, causal) / 4.27e15, 1, 0.005);
  // DeepSeek-V3 with one MTP layer: 174.02 TFLOP/s x 48.948 s x 512 GPUs / 4096 sequences of 4096.
  const double deepseek_per_sample = 174.02e12 * 48.948 * 512 / 4096;
  EXPECT_NEAR(megatron_flops(find_model_preset("deepseek-v3").spec, 1, 4096, MegatronFlopsOptions{true, 1}) /
                  deepseek_per_sample,
              1, 0.005);
}

// Item 12: cp, ep, expert TP and FP8 as stated, not searched or replaced.
TEST(Setup, StatedCpEpAndFp8AreHonoured) {
  const auto runs = runs_of("stated.csv", {small_row({{"model", "Mixtral tiny"},
                                                      {"ffn_hidden_size", "1024"},
                                                      {"moe_num_experts", "8"},
                                                      {"moe_top_k", "2"},
                                                      {"moe_expert_ffn_size", "1024"},
                                                      {"seq_length", "4096"},
                                                      {"total_gpus", "16"},
                                                      {"tp", "2"},
                                                      {"dp", "4"},
                                                      {"cp", "2"},
                                                      {"ep", "8"},
                                                      {"global_batch_size", "32"},
                                                      {"precision", "FP8 per-tensor delayed scaling"},
                                                      {"other_result", "GA = 8; ETP = 1"}})});
  const RunSetup s = setup_for_run(runs.at(0));
  ASSERT_TRUE(s.model.moe);
  EXPECT_EQ(s.model.moe->num_experts, 8);
  EXPECT_EQ(s.model.moe->top_k, 2);
  EXPECT_EQ(s.training.precision, Precision::kFP8);
  EXPECT_EQ(s.training.fp8_recipe, Fp8Recipe::kDelayed);
  EXPECT_EQ(s.etp_choices, std::vector<int>{1});
  ASSERT_FALSE(s.candidates.empty());
  for (const ParallelConfig& c : s.candidates) {
    EXPECT_EQ(c.tp, 2);
    EXPECT_EQ(c.pp, 1);
    EXPECT_EQ(c.dp, 4);
    EXPECT_EQ(c.cp, 2);
    EXPECT_EQ(c.ep, 8);
    EXPECT_EQ(c.etp, 1);
    EXPECT_EQ(c.mbs, 1);
  }
  EXPECT_TRUE(s.searched_axes.empty()) << join(s.searched_axes);
  const RowResult r = evaluate_run(s, default_calibration());
  const ParallelConfig estimated = parse_parallel_config(r.config);
  EXPECT_EQ(estimated.cp, 2);
  EXPECT_EQ(estimated.ep, 8);
  EXPECT_EQ(estimated.dp, 4);
  EXPECT_GT(r.predicted, 0);
}

// Transformer Engine runs cuDNN's fused attention on Hopper; torchtitan's SDPA and llm-foundry's
// benchmarks run a FlashAttention-2-generation kernel, and the row's assumptions say so.
TEST(Setup, TheFrameworksAttentionKernelIsRead) {
  const auto kernel_of = [](const std::string& framework) {
    const RunSetup s = setup_for_run(runs_of("fw.csv", {small_row({{"framework", framework}})}).at(0));
    bool said = false;
    for (const auto& a : s.assumptions) said = said || a.find("attention:") != std::string::npos;
    EXPECT_EQ(said, s.training.flash_attention_2) << framework;
    return s.training.flash_attention_2;
  };
  EXPECT_FALSE(kernel_of("NeMo 25.04 container (Megatron-Core)"));
  EXPECT_FALSE(kernel_of("Megatron-Core r0.8.0"));
  EXPECT_TRUE(kernel_of("torchtitan 820504e + torch.compile"));
  EXPECT_TRUE(kernel_of("Composer / llm-foundry (PyTorch FSDP)"));
}

// The recompute mode is the word outside parentheses: a citation inside them that names another
// mode does not change it. torchtitan's qualifier may sit inside ("selective (per layer)").
TEST(Setup, TheRecomputeModeIsReadOutsideParentheses) {
  const auto choices_of = [](const std::string& stated, const std::string& framework) {
    return setup_for_run(
               runs_of("rc.csv", {small_row({{"activation_recompute", stated}, {"framework", framework}})}).at(0))
        .recompute_choices;
  };
  const std::string megatron = "NeMo 25.04 container (Megatron-Core)";
  using V = std::vector<RecomputeMode>;
  EXPECT_EQ(choices_of("none (the recipe's full recompute was turned off)", megatron), V{RecomputeMode::kNone});
  EXPECT_EQ(choices_of("none (recompute_granularity = None, not selective)", megatron), V{RecomputeMode::kNone});
  EXPECT_EQ(choices_of("full (recompute_method uniform)", megatron), V{RecomputeMode::kFull});
  EXPECT_EQ(choices_of("(full)", megatron), V{RecomputeMode::kFull});  // all in parentheses: its words
  EXPECT_EQ(choices_of("selective", megatron), V{RecomputeMode::kSelective});
  const RunSetup per_layer = setup_for_run(
      runs_of("rc.csv", {small_row({{"activation_recompute", "selective (per layer)"}, {"framework", "torchtitan 820504e"}})})
          .at(0));
  EXPECT_EQ(per_layer.recompute_choices, V{RecomputeMode::kFull});
  EXPECT_DOUBLE_EQ(per_layer.recompute_share, 0.5);
  // A qualifier inside parentheses of another mode is not read as that mode.
  EXPECT_EQ(choices_of("none (not per layer)", "torchtitan 820504e"), V{RecomputeMode::kNone});
}
// Megatron overlaps TP communication by default; a row whose recipe turned it off says so, and
// every candidate then runs without it.
TEST(Setup, StatedTpCommOverlapOffIsHonoured) {
  const auto overlap_of = [](const std::string& notes) {
    const RunSetup s = setup_for_run(runs_of(
        "tpo.csv", {small_row({{"framework", "NeMo 25.04 container (Megatron-Core)"}, {"tp", "2"}, {"dp", "4"}, {"notes", notes}})})
                                         .at(0));
    EXPECT_FALSE(s.candidates.empty());
    bool overlapped = false;
    for (const ParallelConfig& c : s.candidates) overlapped = overlapped || c.tp_comm_overlap;
    return overlapped;
  };
  EXPECT_TRUE(overlap_of(""));
  EXPECT_FALSE(overlap_of("perf script: MegatronCommOverlapCallback(tp_comm_overlap = False)"));
}

// FP8 core attention only where the row's recipe states it, and only with FP8 training.
TEST(Setup, StatedFp8AttentionIsHonoured) {
  const auto setup_of = [](const std::string& precision, const std::string& notes) {
    return setup_for_run(runs_of("fp8dpa.csv", {small_row({{"framework", "Megatron-Bridge / NeMo 26.08 container"},
                                                           {"gpu_type", "GB200 (NVL72)"},
                                                           {"gpus_per_node", "4"},
                                                           {"precision", precision},
                                                           {"notes", notes}})})
                             .at(0));
  };
  const std::string stated = "recipe: fp8_dot_product_attention = True (FP8 core attention)";
  EXPECT_TRUE(setup_of("MXFP8", stated).training.fp8_attention);
  EXPECT_FALSE(setup_of("MXFP8", "").training.fp8_attention);
  try {
    setup_of("BF16", stated);
    ADD_FAILURE() << "FP8 attention stated on a BF16 row was accepted";
  } catch (const RowSkipped& e) {
    EXPECT_EQ(e.kind, SkipKind::kInconsistent);
    EXPECT_NE(std::string(e.what()).find("fp8_dot_product_attention"), std::string::npos) << e.what();
  }
}

// A row whose stated settings leave no configuration says which rule they break (an empty reason
// was printed before: "row 322: ").
TEST(Setup, StatedEpOverlapWithFullRecomputeSaysWhy) {
  const auto runs = runs_of("r181.csv", {small_row({{"model", "Mixtral tiny"},
                                                    {"moe_num_experts", "8"},
                                                    {"moe_top_k", "2"},
                                                    {"moe_expert_ffn_size", "1024"},
                                                    {"ep", "8"},
                                                    {"framework", "Megatron-Bridge / NeMo 26.08 container"},
                                                    {"activation_recompute", "full"},
                                                    {"notes", "overlap_moe_expert_parallel_comm = True"}})});
  try {
    (void)setup_for_run(runs.at(0));
    ADD_FAILURE() << "EP overlap with full recompute was accepted";
  } catch (const RowSkipped& e) {
    EXPECT_EQ(e.kind, SkipKind::kInconsistent);
    EXPECT_NE(std::string(e.what()).find("R18.1"), std::string::npos) << e.what();
  }
}

// A GB300 or B300 row reads as its own GPU, in the NVL72 rack or the DGX node the presets describe.
TEST(Setup, BlackwellUltraRowsReadTheirPresets) {
  const auto cluster_of = [](const std::string& gpu_type, const std::string& per_node) {
    return setup_for_run(runs_of("ultra.csv", {small_row({{"gpu_type", gpu_type},
                                                         {"gpus_per_node", per_node},
                                                         {"precision", "MXFP8"}})})
                             .at(0))
        .cluster;
  };
  const ClusterSpec gb300 = cluster_of("GB300 (DGX-GB300 / NVL72)", "4");
  EXPECT_EQ(gb300.gpu.name, "gb300");
  EXPECT_EQ(gb300.nvlink_domain_gpus, 72);
  EXPECT_EQ(cluster_of("B300 (DGX B300)", "8").gpu.name, "b300");
}

TEST(Setup, Fp8RecipesMapFromThePrecisionColumn) {
  const std::vector<std::pair<std::string, std::optional<Fp8Recipe>>> cases{
      {"FP8 per-tensor delayed scaling (NeMo perf-script default --fp8_recipe ds)", Fp8Recipe::kDelayed},
      {"FP8 (recipe bf16_with_fp8_mixed = per-tensor delayed scaling)", Fp8Recipe::kDelayed},
      {"float8 tensorwise with float8 all-gather (torchao)", Fp8Recipe::kTensorwise},
      {"BF16 + float8 linears, rowwise scaling (torchao)", Fp8Recipe::kBlockwise},
      {"MXFP8", Fp8Recipe::kMxfp8},
      {"FP8 (scaling recipe not stated)", Fp8Recipe::kDelayed},
      {"BF16 (no float8)", std::nullopt},
      {"BF16 (README: FP8 recipe not yet supported)", std::nullopt},
  };
  for (const auto& [text, recipe] : cases) {
    const RunSetup s = setup_for_run(runs_of("fp8.csv", {small_row({{"precision", text}})}).at(0));
    if (!recipe) {
      EXPECT_EQ(s.training.precision, Precision::kBF16) << text;
      continue;
    }
    EXPECT_EQ(s.training.precision, Precision::kFP8) << text;
    EXPECT_EQ(s.training.fp8_recipe, *recipe) << text;
  }
  // An unstated recipe is an assumption the row prints.
  const RunSetup s = setup_for_run(runs_of("fp8u.csv", {small_row({{"precision", "FP8 (scaling recipe not stated)"}})}).at(0));
  EXPECT_TRUE(std::any_of(s.assumptions.begin(), s.assumptions.end(),
                          [](const std::string& a) { return a.find("FP8 recipe not stated: delayed") != std::string::npos; }));
}

TEST(Setup, MoeRowsBuildMoeModelsWithTheKnownArchitecture) {
  // DeepSeek-V3 (row 262's columns on H100): MLA and 3 dense layers from the preset.
  const RunSetup ds = setup_for_run(runs_of("ds.csv", {small_row({{"model", "DeepSeek-V3 671B"},
                                                                  {"num_layers", "61"},
                                                                  {"hidden_size", "7168"},
                                                                  {"num_attention_heads", "128"},
                                                                  {"ffn_hidden_size", "18432"},
                                                                  {"vocab_size", "129280"},
                                                                  {"seq_length", "4096"},
                                                                  {"moe_num_experts", "256"},
                                                                  {"moe_top_k", "8"},
                                                                  {"moe_expert_ffn_size", "2048"},
                                                                  {"moe_shared_experts", "1"},
                                                                  {"total_gpus", "512"},
                                                                  {"tp", "2"},
                                                                  {"pp", "4"},
                                                                  {"dp", "64"},
                                                                  {"ep", "64"},
                                                                  {"global_batch_size", "4096"}})})
                                        .at(0));
  ASSERT_TRUE(ds.model.moe);
  EXPECT_EQ(ds.model.moe->num_experts, 256);
  EXPECT_EQ(ds.model.moe->num_shared_experts, 1);
  EXPECT_EQ(ds.model.moe->first_dense_layers, 3);
  EXPECT_TRUE(ds.model.mla);
  EXPECT_EQ(ds.training.moe_balancing, MoeBalancing::kAuxLoss);
  // Llama 4 Maverick: MoE on every 2nd layer starting at layer 1; force-balanced per the notes.
  const RunSetup l4 = setup_for_run(runs_of("l4.csv", {small_row({{"model", "Llama 4 Maverick 400B"},
                                                                  {"num_layers", "48"},
                                                                  {"hidden_size", "5120"},
                                                                  {"num_attention_heads", "40"},
                                                                  {"num_kv_heads", "8"},
                                                                  {"ffn_hidden_size", "16384"},
                                                                  {"vocab_size", "202048"},
                                                                  {"moe_num_experts", "128"},
                                                                  {"moe_top_k", "1"},
                                                                  {"moe_expert_ffn_size", "8192"},
                                                                  {"moe_shared_experts", "1"},
                                                                  {"total_gpus", "128"},
                                                                  {"dp", "128"},
                                                                  {"ep", "64"},
                                                                  {"global_batch_size", "128"},
                                                                  {"notes", "MoE footnote: token distribution force-balanced"}})})
                                        .at(0));
  ASSERT_TRUE(l4.model.moe);
  EXPECT_EQ(l4.model.num_moe_layers(), 24);
  EXPECT_FALSE(l4.model.is_moe_layer(0));
  EXPECT_TRUE(l4.model.is_moe_layer(1));
  EXPECT_EQ(l4.training.moe_balancing, MoeBalancing::kForceBalanced);
  // Qwen3 MoE: head_dim 128 although hidden / heads = 64.
  const RunSetup qw = setup_for_run(runs_of("qw.csv", {small_row({{"model", "Qwen3_30B_a3B"},
                                                                  {"num_layers", "48"},
                                                                  {"hidden_size", "2048"},
                                                                  {"num_attention_heads", "32"},
                                                                  {"num_kv_heads", "4"},
                                                                  {"moe_num_experts", "128"},
                                                                  {"moe_top_k", "8"},
                                                                  {"moe_expert_ffn_size", "768"},
                                                                  {"ep", "8"}})})
                                        .at(0));
  EXPECT_EQ(qw.model.head_size(), 128);
  ASSERT_TRUE(qw.model.moe);
  EXPECT_EQ(qw.model.ffn_hidden_size, 768);  // unused: every layer is MoE
}

// A MoE row's notes may state the dispatcher and token drop (Megatron-Bridge's GB200 DeepSeek-V3
// recipe: capacity factor 1.0, which turns the flex dispatcher off); unstated, both dispatchers are
// searched and routing is dropless.
TEST(Setup, StatedDispatcherAndCapacityFactorAreHonoured) {
  auto moe_row = [](const std::string& notes) {
    return small_row({{"model", "Mixtral tiny"},
                      {"moe_num_experts", "8"},
                      {"moe_top_k", "2"},
                      {"moe_expert_ffn_size", "1024"},
                      {"ep", "2"},
                      {"framework", "Megatron-Bridge (Megatron-Core)"},
                      {"notes", notes}});
  };
  const RunSetup stated =
      setup_for_run(runs_of("drop.csv", {moe_row("token drop: capacity factor 1.25; alltoall dispatcher")}).at(0));
  EXPECT_EQ(stated.dispatcher_choices, std::vector<MoeDispatcher>{MoeDispatcher::kAllToAll});
  EXPECT_DOUBLE_EQ(stated.training.moe_capacity_factor, 1.25);
  const RunSetup unstated = setup_for_run(runs_of("plain.csv", {moe_row("")}).at(0));
  EXPECT_EQ(unstated.dispatcher_choices,
            (std::vector<MoeDispatcher>{MoeDispatcher::kAllToAll, MoeDispatcher::kDeepEP}));
  EXPECT_EQ(unstated.training.moe_capacity_factor, 0);
  // The expert all-to-all overlap only where the row states it (Megatron-Bridge's recipes set it per
  // model and GPU); every candidate then runs with it.
  EXPECT_EQ(unstated.ep_overlap_choices, std::vector<bool>{false});
  const RunSetup overlapped =
      setup_for_run(runs_of("a2a.csv", {moe_row("recipe: overlap_moe_expert_parallel_comm = True")}).at(0));
  EXPECT_EQ(overlapped.ep_overlap_choices, std::vector<bool>{true});
  ASSERT_FALSE(overlapped.candidates.empty());
  for (const ParallelConfig& c : overlapped.candidates) EXPECT_TRUE(c.ep_overlap);
  try {
    (void)setup_for_run(runs_of("low.csv", {moe_row("capacity factor 0.5")}).at(0));
    FAIL() << "a capacity factor below 1 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("notes: capacity factor 0.5 must be at least 1"), std::string::npos) << e.what();
  }
}

// A stated configuration predicted not to fit keeps its prediction and is counted as a
// memory-model error (the published run did fit).
TEST(Validation, StatedConfigurationThatDoesNotFitIsAMemoryModelError) {
  const auto runs = runs_of("oom.csv", {small_row({{"model", "Llama 70B-like"},
                                                   {"num_layers", "80"},
                                                   {"hidden_size", "8192"},
                                                   {"num_attention_heads", "64"},
                                                   {"num_kv_heads", "8"},
                                                   {"ffn_hidden_size", "28672"},
                                                   {"vocab_size", "32000"},
                                                   {"tp", "8"},
                                                   {"dp", "1"},
                                                   {"global_batch_size", "8"},
                                                   {"activation_recompute", "full"},
                                                   {"sequence_parallel", "true"},
                                                   {"zero_or_distributed_optimizer", "distributed optimizer"},
                                                   {"iteration_time_s", "10"}})});
  const ValidationReport report = validate_runs(runs, default_calibration());
  ASSERT_EQ(report.rows.size(), 1u) << (report.skipped.empty() ? "" : report.skipped[0].reason);
  const RowResult& r = report.rows[0];
  EXPECT_TRUE(r.memory_model_error);
  EXPECT_FALSE(r.fits);
  EXPECT_GT(r.peak_memory_bytes, r.memory_limit_bytes);
  EXPECT_EQ(report.memory_model_errors, 1);
  EXPECT_EQ(report.sources.at(0).memory_model_errors, 1);
  const ParallelConfig c = parse_parallel_config(r.config);
  EXPECT_EQ(c.tp, 8);
  EXPECT_EQ(c.pp, 1);
  EXPECT_EQ(c.dp, 1);
  EXPECT_GT(r.predicted, 0);
  const auto j = to_json(report);
  EXPECT_EQ(j["memory_model_errors"], 1);
  EXPECT_TRUE(j["rows"][0]["memory_model_error"].get<bool>());
  EXPECT_NE(format_validation(report).find("1 memory-model errors"), std::string::npos);
}

TEST(Validation, StatedDpThatContradictsTheGpuCountIsInconsistent) {
  const ValidationReport report = validate_runs(runs_of("dp.csv", {small_row({{"dp", "2"}})}), default_calibration());
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_EQ(report.skipped[0].kind, SkipKind::kInconsistent);
  EXPECT_NE(report.skipped[0].reason.find("tp·pp·dp·cp = 1·1·2·1 = 2 but total_gpus = 8"), std::string::npos)
      << report.skipped[0].reason;
}

// Megatron accepts 126 layers over pp·vpp = 64 chunks (uneven first/last stages). While paratune's
// resolve refuses it, the row is skipped naming the rule; once resolve accepts it, it is estimated
// with exactly the stated interleaving.
// The same for Megatron's expert layout: DeepSeek-V3 on H100 (row 259) runs ep=64 with tp=2, etp=1,
// dp=32 (expert ranks from tp·cp·dp = 64).
TEST(Validation, StatedConfigurationRefusedByAParatuneRuleIsReportedWithTheRule) {
  const auto runs = runs_of("rule.csv", {small_row({{"row_id", "1"},
                                                    {"model", "Llama 405B-like"},
                                                    {"num_layers", "126"},
                                                    {"hidden_size", "1024"},
                                                    {"num_attention_heads", "8"},
                                                    {"total_gpus", "64"},
                                                    {"tp", "1"},
                                                    {"pp", "8"},
                                                    {"dp", "8"},
                                                    {"vpp", "8"},
                                                    {"global_batch_size", "64"}}),
                                         small_row({{"row_id", "2"},
                                                    {"model", "Mixtral-like"},
                                                    {"num_layers", "8"},
                                                    {"hidden_size", "1024"},
                                                    {"num_attention_heads", "8"},
                                                    {"moe_num_experts", "64"},
                                                    {"moe_top_k", "2"},
                                                    {"moe_expert_ffn_size", "512"},
                                                    {"total_gpus", "64"},
                                                    {"tp", "2"},
                                                    {"dp", "32"},
                                                    {"ep", "64"},
                                                    {"other_result", "ETP = 1"},
                                                    {"global_batch_size", "64"}})});
  const ValidationReport report = validate_runs(runs, default_calibration());
  EXPECT_EQ(report.rows.size() + report.skipped.size(), 2u);
  for (const auto& skip : report.skipped) {
    EXPECT_EQ(skip.kind, SkipKind::kRefusedByRule) << skip.reason;
    EXPECT_NE(skip.reason.find(skip.row_id == "1" ? "num_layers=126" : "ep=64"), std::string::npos) << skip.reason;
    EXPECT_NE(format_validation(report).find("refused-by-rule"), std::string::npos);
  }
  for (const auto& row : report.rows) {
    const ParallelConfig c = parse_parallel_config(row.config);
    if (row.row_id == "1") {
      EXPECT_EQ(c.vpp, 8);  // with Megatron's embedding/loss-aware split
      EXPECT_TRUE(c.account_embedding || c.account_loss);
    } else {
      EXPECT_EQ(c.ep, 64);
      EXPECT_EQ(c.dp, 32);
    }
  }
}

TEST(Validation, MetricPreferenceAndKnownSourceErrors) {
  // Only a total tokens/s: compared as tokens/s over all GPUs.
  Row total = small_row({{"iteration_time_s", ""}, {"tokens_per_s_total", "100000"}});
  EXPECT_EQ(setup_for_run(runs_of("tot.csv", {total}).at(0)).metric, "tokens_per_s_total");
  // S27's vanilla-TP rowwise baseline: the source itself flags the number.
  Row flagged = small_row({{"source_id", "S27"},
                           {"iteration_time_s", ""},
                           {"tokens_per_s_per_gpu", "3708"},
                           {"precision", "BF16 + float8 linears, rowwise scaling (torchao)"},
                           {"framework", "torchtitan 820504e + torch.compile, vanilla TP"}});
  const ValidationReport report = validate_runs(runs_of("flag.csv", {flagged}), default_calibration());
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_EQ(report.skipped[0].kind, SkipKind::kKnownSourceError);
  // A GPU held at a power limit the source does not state has no datasheet peak to predict with.
  Row limited = small_row({{"gpu_type", "B200 (power limited; limit not stated)"}});
  const ValidationReport hw = validate_runs(runs_of("hw.csv", {limited}), default_calibration());
  ASSERT_EQ(hw.skipped.size(), 1u);
  EXPECT_EQ(hw.skipped[0].kind, SkipKind::kUnstatedHardware);
  EXPECT_NE(hw.skipped[0].reason.find("power limit"), std::string::npos) << hw.skipped[0].reason;
}

// Leave-one-source-out on two small synthetic sources: each source is predicted by a fit on the other.
TEST(Loso, TwoSourcesGetPerSourceErrors) {
  std::vector<Row> rows;
  int id = 1;
  for (const char* source : {"SA", "SB"})
    for (const auto& [gpus, layers] : {std::pair{"1", "2"}, std::pair{"2", "4"}, std::pair{"4", "4"}}) {
      const double time = std::string(source) == "SA" ? 0.05 : 0.08;
      rows.push_back(small_row({{"row_id", std::to_string(id++)},
                                {"source_id", source},
                                {"num_layers", layers},
                                {"hidden_size", "256"},
                                {"total_gpus", gpus},
                                {"dp", gpus},
                                {"global_batch_size", "8"},
                                {"seq_length", "1024"},
                                {"iteration_time_s", fmt::format("{}", time * std::stoi(layers) / 2)}}));
    }
  FitOptions options;
  options.max_evaluations = 40;
  options.threads = 1;
  const LosoReport report = leave_one_source_out(runs_of("loso.csv", rows), default_calibration(), options);
  ASSERT_EQ(report.sources.size(), 2u);
  EXPECT_EQ(report.rows, 6);
  EXPECT_EQ(report.held_out.size(), 6u);
  double sum = 0;
  for (const auto& s : report.sources) {
    EXPECT_EQ(s.rows, 3);
    EXPECT_GT(s.evaluations, 0);
    EXPECT_TRUE(std::isfinite(s.loso_mean_abs_pct_error));
    EXPECT_GE(s.loso_max_abs_pct_error, s.loso_mean_abs_pct_error);
    sum += s.loso_mean_abs_pct_error * s.rows;
  }
  EXPECT_NEAR(report.loso_mean_abs_pct_error, sum / 6, 1e-9);
  EXPECT_GT(report.seconds, 0);
  EXPECT_EQ(report.sources[0].source_id, "SA");
  const auto j = to_json(report);
  EXPECT_EQ(j["sources"].size(), 2u);
  EXPECT_NE(format_loso(report).find("SB"), std::string::npos);
}

// Issue 21: calibrate ran about a minute without a word. On a terminal it shows a status line; piped,
// nothing extra. (The terminal is util-linux's `script`, a real pseudo-terminal.)
TEST(CalibrateCli, ShowsProgressOnATerminalOnly) {
  std::vector<Row> rows;
  for (int i = 1; i <= 3; ++i)
    rows.push_back(small_row({{"row_id", std::to_string(i)},
                              {"num_layers", std::to_string(2 * i)},
                              {"iteration_time_s", fmt::format("{}", 0.03 * i)}}));
  const std::string csv = testing::write_temp("progress.csv", csv_text(rows));
  const std::string out = std::filesystem::path(csv).replace_extension(".json").string();
  const std::string args = "calibrate --runs " + csv + " -o " + out + " --max-evaluations 40 --threads 1";
  const testing::Result piped = testing::run(args);
  ASSERT_EQ(piped.exit_code, 0) << piped.output;
  EXPECT_EQ(piped.output.find("calibrate: fit:"), std::string::npos) << piped.output;
  const testing::Result terminal =
      testing::run_command("script -qec '" + std::string(PARATUNE_BINARY) + " " + args + "' /dev/null");
  ASSERT_EQ(terminal.exit_code, 0) << terminal.output;
  EXPECT_NE(terminal.output.find("calibrate: fit: evaluation 1 of at most 40, best objective"), std::string::npos)
      << terminal.output;
  EXPECT_NE(terminal.output.find("fitted "), std::string::npos) << terminal.output;
}

// The acceptance figures of the cost model: on the shipped published runs, with the shipped
// calibration, every row is estimated, mean |error| <= 8% and max <= 20%. (Thresholds: the cost
// model's; a failure lists each source's errors and every skipped row.)
// Token counts written with a suffix: the reading (x 10^n or x 2^n) that is a whole batch is taken
// and said; one that both or neither make whole is an error naming the column.
TEST(Setup, TokenCountsWithSuffixes) {
  auto batch_of = [](const std::string& tokens, const std::string& seq) {
    const RunSetup s = setup_for_run(
        runs_of("tokens.csv", {small_row({{"global_batch_size", ""}, {"global_batch_tokens", tokens}, {"seq_length", seq}})})
            .at(0));
    bool said = false;
    for (const auto& a : s.assumptions) said = said || a.find("global_batch_tokens '" + tokens + "' read as") == 0;
    EXPECT_TRUE(said) << tokens;
    return s.training.global_batch;
  };
  EXPECT_EQ(batch_of("128K", "2048"), 64);   // 131072 / 2048 (128000 / 2048 = 62.5)
  EXPECT_EQ(batch_of("32k", "1000"), 32);    // 32000 / 1000 (32768 / 1000 is not whole)
  try {
    (void)setup_for_run(
        runs_of("tokens2.csv", {small_row({{"global_batch_size", ""}, {"global_batch_tokens", "16K"}, {"seq_length", "128"}})})
            .at(0));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("global_batch_tokens: '16K' is 125 sequences of 128 tokens read as x 10^3 and "
                                         "128 read as x 2^10: both are whole batches"),
              std::string::npos)
        << e.what();
  }
}

// A GPU family without its SKU is read as the training SKU, and said; a board no preset describes is
// not estimated.
TEST(Setup, GpuFamilyWithoutSkuIsAssumedAndSaid) {
  const RunSetup s = setup_for_run(runs_of("sku.csv", {small_row({{"gpu_type", "H100"}})}).at(0));
  EXPECT_EQ(s.cluster.gpu.name, "h100-sxm");
  bool said = false;
  for (const auto& a : s.assumptions) said = said || a.find("H100 SKU not stated: H100 SXM5 80GB assumed") != std::string::npos;
  EXPECT_TRUE(said);
  try {
    (void)setup_for_run(runs_of("pcie.csv", {small_row({{"gpu_type", "H100 PCIe"}})}).at(0));
    FAIL();
  } catch (const RowSkipped& e) {
    EXPECT_EQ(e.kind, SkipKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("PCIe/NVL"), std::string::npos) << e.what();
  }
}

// Rows that differ only in configuration form a group with Kendall's tau between the published and
// the predicted order: +1 when they agree, -1 when reversed. A row of another GPU count is not in
// the group, and a group of one row is not listed.
TEST(Validation, RankAgreementWithinGroupsOfRows) {
  auto rows = [](const std::vector<std::string>& times) {
    return std::vector<Row>{small_row({{"row_id", "1"}, {"tp", "1"}, {"dp", "8"}, {"iteration_time_s", times[0]}}),
                            small_row({{"row_id", "2"}, {"tp", "2"}, {"dp", "4"}, {"iteration_time_s", times[1]}}),
                            small_row({{"row_id", "3"}, {"tp", "8"}, {"dp", "1"}, {"iteration_time_s", times[2]}}),
                            small_row({{"row_id", "4"}, {"total_gpus", "16"}, {"dp", "16"}, {"global_batch_size", "16"},
                                       {"iteration_time_s", "0.1"}})};
  };
  // The predicted times, then published times in that order and in the reverse order.
  const ValidationReport first = validate_runs(runs_of("rank.csv", rows({"0.1", "0.1", "0.1"})), default_calibration());
  ASSERT_EQ(first.rows.size(), 4u);
  std::vector<std::pair<double, std::size_t>> predicted;
  for (std::size_t i = 0; i < 3; ++i) predicted.emplace_back(first.rows[i].predicted, i);
  std::sort(predicted.begin(), predicted.end());
  ASSERT_LT(predicted[0].first, predicted[1].first);
  ASSERT_LT(predicted[1].first, predicted[2].first);
  std::vector<std::string> in_order(3), reversed(3);
  for (std::size_t rank = 0; rank < 3; ++rank) {
    in_order[predicted[rank].second] = std::to_string(1.0 + rank);
    reversed[predicted[rank].second] = std::to_string(3.0 - rank);
  }
  const ValidationReport agree = validate_runs(runs_of("rank1.csv", rows(in_order)), default_calibration());
  ASSERT_EQ(agree.rank_groups.size(), 1u);
  EXPECT_EQ(agree.rank_groups[0].row_ids, (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_EQ(agree.rank_groups[0].pairs, 3);
  EXPECT_EQ(agree.rank_groups[0].concordant, 3);
  EXPECT_DOUBLE_EQ(agree.rank_groups[0].kendall_tau, 1.0);
  const ValidationReport disagree = validate_runs(runs_of("rank2.csv", rows(reversed)), default_calibration());
  ASSERT_EQ(disagree.rank_groups.size(), 1u);
  EXPECT_DOUBLE_EQ(disagree.rank_groups[0].kendall_tau, -1.0);
  EXPECT_NE(format_validation(disagree).find("tau -1.00  0 of 3 pairs in order  rows 1,2,3"), std::string::npos)
      << format_validation(disagree);
}

// Benchmarks that train on synthetic data from a random initialisation (SOURCES.md S21, S24, S25)
// route evenly; a row of another source whose balancing is not stated keeps Megatron's aux loss.
TEST(Setup, SyntheticDataBenchmarksRouteEvenly) {
  const auto runs = read_published_runs(kRuns);
  int synthetic = 0;
  for (const PublishedRun& run : runs) {
    if (run.source() != "S25" || run.get("moe_num_experts").empty()) continue;
    RunSetup s;
    try {
      s = setup_for_run(run);
    } catch (const RowSkipped&) {
      continue;
    }
    ++synthetic;
    EXPECT_EQ(s.training.moe_balancing, MoeBalancing::kForceBalanced) << s.row_id;
    bool said = false;
    for (const auto& a : s.assumptions) said = said || a.find("synthetic data") != std::string::npos;
    EXPECT_TRUE(said) << s.row_id << ": the assumption is not printed";
  }
  EXPECT_GE(synthetic, 10);
}

TEST(Validation, PublishedRunsWithinTargets) {
  ASSERT_TRUE(std::filesystem::exists(kRuns)) << kRuns << " is missing";
  const auto runs = read_published_runs(kRuns);
  const ValidationReport report = validate_runs(runs, default_calibration());
  std::string skipped;
  for (const auto& s : report.skipped) skipped += s.row_id + " " + to_string(s.kind) + ": " + s.reason + "\n";
  // Every row is estimated or skipped for a stated, classified reason; none for lack of a preset
  // or convention.
  EXPECT_EQ(report.rows.size() + report.skipped.size(), runs.size());
  for (const auto& s : report.skipped) EXPECT_NE(s.kind, SkipKind::kUnsupported) << s.row_id << ": " << s.reason;
  // A published configuration ran, so it fits: no memory-model error anywhere.
  EXPECT_EQ(report.memory_model_errors, 0);
  // The sources the model was validated on before FP8/MoE/CP/Blackwell rows arrived (S1, S2, S4,
  // S10, S11: dense BF16 runs on V100/A100/H100) stay within mean 8% and max 20% each. The newer
  // sources (S20-S28) are not yet within a target (issue 16 is open): docs/calibration.md.
  for (const SourceSummary& source : report.sources) {
    if (source.source_id != "S1" && source.source_id != "S2" && source.source_id != "S4" &&
        source.source_id != "S10" && source.source_id != "S11")
      continue;
    EXPECT_EQ(source.skipped, 0) << source.source_id;
    EXPECT_LE(source.mean_abs_pct_error, 8.0) << source.source_id;
    EXPECT_LE(source.max_abs_pct_error, 20.0) << source.source_id;
  }
  if (HasFailure()) ADD_FAILURE() << "errors per source:\n" << format_source_summary(report) << skipped;
}

TEST(Validation, UnestimableRowIsSkippedWithReason) {
  const auto header =
      "row_id,source_id,model,num_layers,hidden_size,num_attention_heads,num_kv_heads,ffn_hidden_size,vocab_size,"
      "seq_length,gpu_type,total_gpus,gpus_per_node,interconnect,model_parallel_total,tp,pp,dp,vpp,micro_batch_size,"
      "global_batch_size,activation_recompute,sequence_parallel,zero_or_distributed_optimizer,precision,framework,"
      "iteration_time_s,tflops_per_gpu,tflops_basis,mfu_pct,tokens_per_s_per_gpu\n";
  const auto path = testing::write_temp(
      "one.csv", std::string(header) + "7,S9,GPT 1B,24,2048,16,,,51200,2048,TPU v4,8,,,,1,1,8,,1,64,,,,bf16,jax,1.0,,,,\n");
  const ValidationReport report = validate_runs(read_published_runs(path), default_calibration());
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_EQ(report.skipped[0].kind, SkipKind::kUnsupported);
  EXPECT_EQ(report.skipped[0].source_id, "S9");
  EXPECT_NE(report.skipped[0].reason.find("gpu_type: 'TPU v4' matches no GPU preset"), std::string::npos)
      << report.skipped[0].reason;
  ASSERT_EQ(report.sources.size(), 1u);
  EXPECT_EQ(report.sources[0].skipped, 1);
}

// Found by fuzz/published_runs: a count beyond 32 bits was converted to int (UBSan: float-cast-
// overflow), and other_result's "KEY = n" went through std::atoi (undefined when it overflows).
TEST(Setup, MalformedNumbersAreInputErrors) {
  const auto error_of = [](const Row& changes) -> std::string {
    try {
      setup_for_run(parse_published_runs(csv_text({small_row(changes)}), "runs.csv").at(0));
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of({{"num_layers", "1e61"}}).find("num_layers: '1e61' is not a non-negative integer of at most 2147483647"),
            std::string::npos)
      << error_of({{"num_layers", "1e61"}});
  EXPECT_NE(error_of({{"total_gpus", "4294967304"}}).find("total_gpus"), std::string::npos);
  EXPECT_NE(error_of({{"other_result", "ETP = 99999999999"}}).find("other_result: 'ETP = 99999999999' does not fit"),
            std::string::npos)
      << error_of({{"other_result", "ETP = 99999999999"}});
  EXPECT_EQ(error_of({}), "");
  // std::stod threw std::out_of_range (not an Error) for a bandwidth of 400 digits, and std::regex
  // recursed once per character of the field (RE2 now).
  EXPECT_NE(error_of({{"interconnect", "1" + std::string(400, '0') + " Gbps"}}).find("interconnect: '1000"),
            std::string::npos);
  EXPECT_EQ(error_of({{"interconnect", std::string(200000, 'x') + " 400 Gbps node-node"}}), "");
  // Heads not stated and hidden_size below 128: the derived head count was 0, then divided by.
  EXPECT_NE(error_of({{"num_attention_heads", ""}, {"hidden_size", "64"}}).find("hidden_size 64 is below one 128-wide head"),
            std::string::npos);
}

TEST(Csv, TextThatIsNotUtf8IsAnInputError) {
  try {
    parse_csv("a,b\n1,caf\xE9\n", "runs.csv");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "runs.csv: line 2, column 6: byte 0xE9 is not UTF-8 (paratune reads UTF-8 text)");
  }
}

}  // namespace
}  // namespace paratune
