#include "paratune/calib/memory_runs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "paratune/cost/calibration.h"

namespace paratune {
namespace {

// The measured memory the model is validated on, as it ships (data/published-runs/memory_runs.csv,
// with MEMORY_SOURCES.md).
const std::string kMemoryRuns = std::string(PARATUNE_SOURCE_DIR) + "/data/published-runs/memory_runs.csv";

const std::vector<std::string> kMemoryHeader{
    "row_id", "source", "source_url", "table_or_figure", "model", "num_layers", "hidden_size", "num_attention_heads",
    "num_kv_heads", "ffn_hidden_size", "vocab_size", "moe_num_experts", "moe_top_k", "moe_expert_ffn_size",
    "seq_length", "gpu_type", "gpu_memory_gib", "total_gpus", "gpus_per_node", "tp", "pp", "dp", "cp", "ep", "vpp",
    "micro_batch_size", "global_batch_size", "activation_recompute", "sequence_parallel", "zero_or_fsdp",
    "precision", "framework", "memory_metric", "peak_memory_gib", "kind", "notes"};

using Row = std::map<std::string, std::string>;

// A tiny Megatron CI row (rows 40-46 of the shipped file have this shape); `changes` overrides cells.
Row tiny_row(const Row& changes = {}) {
  Row row{{"row_id", "1"},
          {"source", "S5 Megatron-LM CI golden values"},
          {"model", "GPT tiny CI model (12L, h512)"},
          {"num_layers", "12"},
          {"hidden_size", "512"},
          {"num_attention_heads", "8"},
          {"num_kv_heads", "8"},
          {"ffn_hidden_size", "2048"},
          {"vocab_size", "50257"},
          {"seq_length", "1024"},
          {"gpu_type", "H100 80GB (DGX H100)"},
          {"gpu_memory_gib", "79.11"},
          {"total_gpus", "8"},
          {"gpus_per_node", "8"},
          {"tp", "1"},
          {"pp", "2"},
          {"dp", "4"},
          {"cp", "1"},
          {"micro_batch_size", "4"},
          {"global_batch_size", "32"},
          {"activation_recompute", "none"},
          {"sequence_parallel", "no"},
          {"zero_or_fsdp", "none (Megatron DDP)"},
          {"precision", "BF16"},
          {"framework", "Megatron-Core (MCore models)"},
          {"memory_metric", "allocated_bytes.all.peak, logged on the last rank (world_size-1) only"},
          {"peak_memory_gib", "3.38"},
          {"kind", "measured"}};
  for (const auto& [k, v] : changes) row[k] = v;
  return row;
}

std::string memory_csv(const std::vector<Row>& rows, const std::vector<std::string>& header = kMemoryHeader) {
  std::string out;
  for (std::size_t i = 0; i < header.size(); ++i) out += (i ? "," : "") + header[i];
  out += "\n";
  for (const Row& row : rows) {
    for (std::size_t i = 0; i < header.size(); ++i) {
      const auto it = row.find(header[i]);
      out += (i ? "," : "") + (it == row.end() ? std::string() : "\"" + it->second + "\"");
    }
    out += "\n";
  }
  return out;
}

// The error message of parse_memory_runs on `text`, "" when it parses.
std::string parse_error(const std::string& text) {
  try {
    (void)parse_memory_runs(text, "mem.csv");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(MemoryRuns, ParsesMetricRankAndKind) {
  const auto runs = parse_memory_runs(
      memory_csv({tiny_row(),
                  tiny_row({{"row_id", "2"},
                            {"memory_metric", "torch max_memory_reserved (reserved_bytes.all.peak), max over all GPUs"}}),
                  tiny_row({{"row_id", "3"}, {"memory_metric", "torch.cuda.max_memory_allocated on rank 0"}}),
                  tiny_row({{"row_id", "4"}, {"kind", "fits-bound"}, {"peak_memory_gib", ""}})}),
      "mem.csv");
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].metric, MemoryMetric::kAllocated);
  EXPECT_EQ(runs[0].rank, MemoryRank::kLastStage);
  EXPECT_DOUBLE_EQ(runs[0].measured_gib, 3.38);
  EXPECT_EQ(runs[0].run.source(), "S5");  // the source cell's first word
  EXPECT_EQ(runs[0].run.get("zero_or_distributed_optimizer"), "none (Megatron DDP)");
  EXPECT_EQ(runs[1].metric, MemoryMetric::kReserved);
  EXPECT_EQ(runs[1].rank, MemoryRank::kMaxOverRanks);
  EXPECT_EQ(runs[2].rank, MemoryRank::kRankZero);
  EXPECT_EQ(runs[3].metric, MemoryMetric::kFitsBound);
  EXPECT_DOUBLE_EQ(runs[3].bound_gib, 79.11);  // no peak_memory_gib: the GPU's capacity
}

TEST(MemoryRuns, BadInputNamesFileLineColumnValueAndRule) {
  EXPECT_EQ(parse_error(memory_csv({tiny_row({{"tp", "two"}})})),
            "mem.csv: line 2: column tp: 'two' must be empty or a non-negative integer");
  EXPECT_EQ(parse_error(memory_csv({tiny_row(), tiny_row({{"row_id", "2"}, {"peak_memory_gib", "-1"}})})),
            "mem.csv: line 3: column peak_memory_gib: '-1' must be empty or a number of GiB > 0");
  EXPECT_EQ(parse_error(memory_csv({tiny_row({{"kind", "guess"}})})),
            "mem.csv: line 2: column kind: 'guess' must be 'measured' or 'fits-bound'");
  EXPECT_EQ(parse_error(memory_csv({tiny_row({{"peak_memory_gib", ""}})})),
            "mem.csv: line 2: column peak_memory_gib: empty; a measured row needs the measured GiB");
  EXPECT_NE(parse_error(memory_csv({tiny_row({{"memory_metric", "nvidia-smi"}})}))
                .find("column memory_metric: 'nvidia-smi' must say whether torch's allocated or reserved"),
            std::string::npos);
  EXPECT_NE(parse_error(memory_csv({tiny_row({{"memory_metric", "max_memory_allocated"}})})).find("which rank"),
            std::string::npos);
  std::vector<std::string> no_kind = kMemoryHeader;
  no_kind.erase(std::find(no_kind.begin(), no_kind.end(), "kind"));
  EXPECT_EQ(parse_error(memory_csv({tiny_row()}, no_kind)),
            "mem.csv: missing column 'kind' (needs the columns of memory_runs.csv)");
}

TEST(MemoryRuns, RowsWithoutGpuCountOrDpAreSkippedWithTheReason) {
  const auto runs = parse_memory_runs(memory_csv({tiny_row({{"total_gpus", ""}, {"dp", ""}})}), "mem.csv");
  const auto report = validate_memory_runs(runs, default_calibration());
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_NE(report.skipped[0].reason.find("GPU count and dp not published"), std::string::npos);
}

TEST(MemoryRuns, AllocatedExcludesContextNcclAndFragmentationReservedAddsFragmentation) {
  const auto runs = parse_memory_runs(
      memory_csv({tiny_row(), tiny_row({{"row_id", "2"}, {"memory_metric", "max_memory_reserved, last rank"}}),
                  tiny_row({{"row_id", "3"}, {"kind", "fits-bound"}})}),
      "mem.csv");
  const auto report = validate_memory_runs(runs, default_calibration());
  ASSERT_EQ(report.rows.size(), 3u);
  const auto& allocated = report.rows[0];
  const auto& reserved = report.rows[1];
  const auto& whole = report.rows[2];
  EXPECT_EQ(allocated.stage, 1);  // the last of pp = 2 stages
  const Calibration cal = default_calibration();
  constexpr double gib = 1024.0 * 1024 * 1024;
  // Reserved = allocated + fragmentation x activations.
  EXPECT_NEAR(reserved.predicted_gib - allocated.predicted_gib,
              cal.fragmentation * allocated.breakdown.activations_bytes / gib, 1e-9);
  // The whole process (the fits-bound check, max over stages) adds the CUDA context and NCCL's buffers.
  EXPECT_GT(whole.predicted_gib, reserved.predicted_gib + cal.cuda_context_bytes / gib);
}

// The reading shared with the time rows (setup_configuration): the fixes the memory rows needed.
TEST(MemoryRuns, SharedReadingOfSequenceParallelismZero3AndUnfusedAttention) {
  const auto setup_of = [](const Row& changes) {
    return setup_configuration(parse_memory_runs(memory_csv({tiny_row(changes)}), "mem.csv")[0].run);
  };
  // "yes (...)": the words outside the parentheses say yes.
  const RunSetup sp = setup_of({{"tp", "2"}, {"dp", "2"}, {"sequence_parallel", "yes (torchtitan TP)"}});
  ASSERT_FALSE(sp.candidates.empty());
  EXPECT_TRUE(sp.candidates[0].sequence_parallel);
  try {
    (void)setup_of({{"sequence_parallel", "maybe"}});
    ADD_FAILURE() << "'maybe' was accepted";
  } catch (const RowSkipped& e) {
    EXPECT_NE(std::string(e.what()).find("sequence_parallel: 'maybe' must be empty, yes/true/1 or no/false/0"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(setup_of({{"pp", "1"}, {"dp", "8"}, {"zero_or_fsdp", "DeepSpeed ZeRO-3 (no offload)"}}).config.zero, 3);
  EXPECT_TRUE(setup_of({}).training.flash_attention);
  EXPECT_FALSE(setup_of({{"notes", "TE, unfused attention backend"}}).training.flash_attention);
  // torchtitan: per-op SAC for a bare "selective", its unfused fp32 loss, FSDP kept unsharded with PP.
  const RunSetup titan = setup_of({{"framework", "torchtitan"}, {"activation_recompute", "selective"},
                                   {"zero_or_fsdp", "FSDP2"}, {"pp", "1"}, {"dp", "8"}});
  EXPECT_TRUE(titan.training.per_op_selective_recompute);
  EXPECT_TRUE(titan.training.fp32_unfused_cross_entropy);
  EXPECT_TRUE(titan.training.fsdp_unsharded_across_microbatches);
  EXPECT_FALSE(setup_of({}).training.per_op_selective_recompute);  // Megatron: its own selective recompute
  // Megatron's --recompute-modules where the row states them (notes or the column); else the default.
  const RunSetup modules = setup_of({{"activation_recompute", "selective"},
                                     {"notes", "selective recompute of modules [mlp, layernorm]; TE"}});
  EXPECT_EQ(modules.config.recompute_modules,
            recompute_module_bit(RecomputeModule::kMlp) | recompute_module_bit(RecomputeModule::kLayernorm));
  EXPECT_EQ(setup_of({{"activation_recompute", "selective (recompute_modules [core_attn, mlp])"}}).config.recompute_modules,
            recompute_module_bit(RecomputeModule::kCoreAttn) | recompute_module_bit(RecomputeModule::kMlp));
  EXPECT_EQ(setup_of({{"activation_recompute", "selective"}}).config.recompute_modules, kDefaultRecomputeModules);
  EXPECT_ANY_THROW((void)setup_of({{"activation_recompute", "selective"}, {"notes", "recompute of modules [attn]"}}));
}

// The optional architecture and layout columns: read where given, their mistakes named.
TEST(MemoryRuns, StatedArchitectureAndLayoutColumns) {
  std::vector<std::string> header = kMemoryHeader;
  for (const char* column : {"moe_shared_experts", "mla_dims", "moe_first_dense_layers", "moe_shared_expert_ffn_size",
                             "mtp_layers", "pipeline_layout"})
    header.emplace_back(column);
  const auto setup_of = [&](const Row& changes) {
    return setup_configuration(parse_memory_runs(memory_csv({tiny_row(changes)}, header), "mem.csv")[0].run);
  };
  const Row moe{{"model", "MoE proxy (DeepSeek-style)"}, {"moe_num_experts", "8"},  {"moe_top_k", "2"},
                {"moe_expert_ffn_size", "512"},          {"moe_shared_experts", "1"}, {"moe_shared_expert_ffn_size", "256"},
                {"moe_first_dense_layers", "2"},         {"mla_dims", "128/64/32/16/32"}, {"mtp_layers", "1"},
                {"ep", "4"}};
  const RunSetup s = setup_of(moe);
  ASSERT_TRUE(s.model.mla);
  EXPECT_EQ(s.model.mla->q_lora_rank, 128);
  EXPECT_EQ(s.model.mla->kv_lora_rank, 64);
  EXPECT_EQ(s.model.mla->qk_nope_head_dim, 32);
  EXPECT_EQ(s.model.mla->qk_rope_head_dim, 16);
  EXPECT_EQ(s.model.mla->v_head_dim, 32);
  EXPECT_EQ(s.model.moe->first_dense_layers, 2);
  EXPECT_EQ(s.model.moe->shared_ffn(), 256);
  EXPECT_EQ(s.model.mtp_layers, 1);
  // A layout fixes vpp (its stages / pp) and is the only split tried.
  Row layout = moe;
  layout["pipeline_layout"] = "Et*3|t*3|t*3|t*3mL";
  const RunSetup l = setup_of(layout);
  ASSERT_FALSE(l.candidates.empty());
  for (const ParallelConfig& c : l.candidates) {
    EXPECT_EQ(c.vpp, 2);
    EXPECT_EQ(to_string(c.layout), "Et*3|(t*3|)*2t*3mL");
  }
  auto skip_reason = [&](const Row& changes) {
    try {
      (void)setup_of(changes);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Row bad = moe;
  bad["mla_dims"] = "128/64/32/16";
  EXPECT_NE(skip_reason(bad).find("mla_dims: '128/64/32/16' must be five positive integers"), std::string::npos)
      << skip_reason(bad);
  bad = layout;
  bad["pipeline_layout"] = "Et*2|t*3|t*3mL";  // 3 stages on pp 2
  EXPECT_NE(skip_reason(bad).find("has 3 stages, not a multiple of the stated pp"), std::string::npos) << skip_reason(bad);
  bad = layout;
  bad["vpp"] = "4";
  EXPECT_NE(skip_reason(bad).find("gives vpp 2, the row states vpp 4"), std::string::npos) << skip_reason(bad);
  bad = layout;
  bad["pipeline_layout"] = "Et*2|x";
  EXPECT_NE(skip_reason(bad).find("pipeline_layout"), std::string::npos) << skip_reason(bad);
}

// The shipped file: what the model reaches today (docs/calibration.md, "Memory against measured
// runs", lists the rows outside +-10% and why). The figures are the ones measured, not looser ones:
// a change that makes any of them worse fails here.
TEST(MemoryRuns, ShippedMeasuredRowsAndBounds) {
  const auto report = validate_memory_runs(read_memory_runs(kMemoryRuns), default_calibration());
  EXPECT_EQ(report.measured, 35);
  EXPECT_EQ(report.skipped.size(), 5u);  // S5 release tests: GPU count and dp not public
  EXPECT_EQ(report.bound_violations, 0);
  EXPECT_EQ(report.rows.size() - static_cast<std::size_t>(report.measured), 20u);  // fits-bound rows
  // 8.48% measured. Row 14's micro-batch is not stated and is read as the fastest that fits: since
  // torchtitan's FlashAttention-2 is priced (2026-11-28) that is 2, not 4, and the row is -13% again.
  EXPECT_LT(report.mean_abs_pct_error, 8.5);
  EXPECT_LT(report.max_abs_pct_error, 36.2);  // 36.1%: row 45, a 0.8 GiB tiny CI model
  int within_10 = 0;
  for (const auto& row : report.rows)
    if (row.metric != MemoryMetric::kFitsBound && std::abs(row.pct_error) <= 10) ++within_10;
  EXPECT_GE(within_10, 26);  // of 35; docs/calibration.md lists the others and why
  // Rows 47 and 48 (Megatron CI's DeepSeek-style proxy) state their MLA, MTP layer, dense layers and
  // pipeline layout in columns (from the test's model_config.yaml): all modelled.
  for (const auto& row : report.rows)
    if (row.row_id == "47" || row.row_id == "48") {
      EXPECT_TRUE(row.not_modelled.empty()) << row.row_id;
      EXPECT_LT(std::abs(row.pct_error), 10) << row.row_id;
    }
  for (const auto& row : report.rows)
    if (row.row_id == "48") {
      // "selective recompute of modules [layernorm, mla_up_proj, mlp, moe_act]" in its notes.
      EXPECT_NE(row.config.find("recompute_modules=moe_act+layernorm+mla_up_proj+mlp"), std::string::npos) << row.config;
      EXPECT_NE(row.config.find("layout=Et*3|(t*2|)*6tmL"), std::string::npos) << row.config;
    }
  for (const auto& source : report.sources) {
    if (source.source_id == "S1") EXPECT_LT(source.mean_abs_pct_error, 5.9);   // 5.85%
    if (source.source_id == "S5") EXPECT_LT(source.mean_abs_pct_error, 11.5);  // 11.4% (15.03% before rows 47/48's architecture)
    if (source.source_id == "S8") EXPECT_LT(source.mean_abs_pct_error, 10.6);  // 10.53%
  }
}

}  // namespace
}  // namespace paratune
