// Published GPU peak memory of real training runs against the memory model
// (`paratune validate --memory-runs FILE`).
//
// data/published-runs/memory_runs.csv (sources and conventions: MEMORY_SOURCES.md) holds rows of two
// kinds: `measured` (a framework logged the peak) and `fits-bound` (the run completed, so its true
// peak was at most the GPU's capacity). A row is read into specs and candidates by the same reading
// as the time rows (setup_configuration, calib/run_setup.cc), and the model then predicts the
// quantity the source measured:
//   * allocated (torch max_memory_allocated: the tensors alive at the peak) or reserved
//     (max_memory_reserved: allocated plus what the caching allocator holds cached or fragmented,
//     Calibration::fragmentation of the activations);
//   * on the rank the source logged: the last pipeline stage (Megatron CI: only rank world_size-1
//     writes), the largest stage (torchtitan: the maximum over all GPUs), rank 0 (ColossalAI);
//   * without the CUDA context and NCCL's buffers, which no source counts (they are allocated
//     outside torch's caching allocator).
// A fits-bound row is checked the other way: the whole process as the planner sees it (context,
// NCCL buffers and fragmentation included) must not exceed the bound.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "paratune/calib/published_runs.h"

namespace paratune {

// What a source's logged peak counts.
enum class MemoryMetric { kAllocated, kReserved, kFitsBound };
// Which rank's peak the source logged.
enum class MemoryRank { kLastStage, kMaxOverRanks, kRankZero };
std::string to_string(MemoryMetric metric);  // "allocated", "reserved", "fits-bound"
std::string to_string(MemoryRank rank);      // "last stage", "max over ranks", "rank 0"

// One row of memory_runs.csv, checked: the text fields (in published_runs.csv's column names, so
// setup_configuration reads them) and what the memory columns say.
struct MemoryRun {
  PublishedRun run;
  std::string source;      // the `source` cell ("S5 Megatron-LM CI golden values")
  MemoryMetric metric = MemoryMetric::kAllocated;
  MemoryRank rank = MemoryRank::kMaxOverRanks;
  double measured_gib = 0;  // measured rows: the logged peak
  double bound_gib = 0;     // fits-bound rows: peak_memory_gib, or gpu_memory_gib when that is empty
  double gpu_memory_gib = 0;
  bool vpp_unstated = false;  // vpp was empty: read as 1 (no interleaving flag on the command line)
};

// Reads memory_runs.csv strictly: every column below must be in the header; each numeric column is
// empty or a number (integers where the column counts something); `kind` is measured or fits-bound;
// a measured row states peak_memory_gib > 0 and a memory_metric that says allocated or reserved and
// which rank. Throws Error naming the file, line, column, value and rule.
std::vector<MemoryRun> read_memory_runs(const std::string& path);
std::vector<MemoryRun> parse_memory_runs(std::string_view text, const std::string& file);

struct MemoryRowResult {
  std::string row_id;
  std::string source_id;  // "S1"
  std::string model;
  std::string config;
  MemoryMetric metric = MemoryMetric::kAllocated;
  MemoryRank rank = MemoryRank::kMaxOverRanks;
  double measured_gib = 0;   // measured rows
  double bound_gib = 0;      // fits-bound rows
  double predicted_gib = 0;  // the quantity the source measured (fits-bound: the whole process)
  double pct_error = 0;      // measured rows: 100 (predicted - measured) / measured
  bool within_bound = true;  // fits-bound rows: predicted <= bound
  int stage = 0;             // the pipeline stage the prediction is of
  MemoryBreakdown breakdown;  // that stage's memory as predicted (bytes)
  std::vector<std::string> assumptions;
  std::vector<std::string> not_modelled;  // what the row's notes say it ran with that the model lacks
};

struct MemorySourceSummary {
  std::string source_id;
  int measured = 0, bounds = 0, skipped = 0, violations = 0;
  double mean_abs_pct_error = 0, max_abs_pct_error = 0;  // over measured rows
};

struct MemoryValidationReport {
  std::vector<MemoryRowResult> rows;
  std::vector<SkippedRow> skipped;
  std::vector<MemorySourceSummary> sources;  // in CSV order
  int measured = 0;
  int bound_violations = 0;
  double mean_abs_pct_error = 0;  // over measured rows
  double max_abs_pct_error = 0;
};

// Predicts one row (throws RowSkipped when its configuration cannot be read, see setup_configuration).
MemoryRowResult evaluate_memory_run(const MemoryRun& memory_run, const Calibration& calibration);
MemoryValidationReport validate_memory_runs(const std::vector<MemoryRun>& runs, const Calibration& calibration);

nlohmann::json to_json(const MemoryValidationReport& report);
std::string format_memory_validation(const MemoryValidationReport& report);

}  // namespace paratune
