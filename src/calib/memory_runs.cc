// Reading memory_runs.csv strictly and predicting each row's measured quantity (calib/memory_runs.h).
#include "paratune/calib/memory_runs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <optional>

#include "paratune/spec/input_file.h"
#include "row_fields.h"

namespace paratune {

using calib_detail::contains;

std::string to_string(MemoryMetric metric) {
  switch (metric) {
    case MemoryMetric::kAllocated: return "allocated";
    case MemoryMetric::kReserved: return "reserved";
    case MemoryMetric::kFitsBound: return "fits-bound";
  }
  return "?";
}

std::string to_string(MemoryRank rank) {
  switch (rank) {
    case MemoryRank::kLastStage: return "last stage";
    case MemoryRank::kMaxOverRanks: return "max over ranks";
    case MemoryRank::kRankZero: return "rank 0";
  }
  return "?";
}

namespace {

constexpr double kMemGiB = 1024.0 * 1024 * 1024;

// Columns of memory_runs.csv that the reading needs. The others (source_url, table_or_figure,
// notes) are documentation.
const std::vector<std::string> kMemoryColumns{
    "row_id", "source", "model", "num_layers", "hidden_size", "num_attention_heads", "num_kv_heads",
    "ffn_hidden_size", "vocab_size", "moe_num_experts", "moe_top_k", "moe_expert_ffn_size", "seq_length", "gpu_type",
    "gpu_memory_gib", "total_gpus", "gpus_per_node", "tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch_size",
    "global_batch_size", "activation_recompute", "sequence_parallel", "zero_or_fsdp", "precision", "framework",
    "memory_metric", "peak_memory_gib", "kind"};
// Columns that count something: empty or a non-negative integer.
const std::vector<std::string> kCountColumns{
    "num_layers", "hidden_size", "num_attention_heads", "num_kv_heads", "ffn_hidden_size", "vocab_size",
    "moe_num_experts", "moe_top_k", "moe_expert_ffn_size", "seq_length", "total_gpus", "gpus_per_node", "tp", "pp",
    "dp", "cp", "ep", "vpp", "micro_batch_size", "global_batch_size"};
// Columns in GiB: empty or a number > 0.
const std::vector<std::string> kGibColumns{"gpu_memory_gib", "peak_memory_gib"};

std::string trim_cell(std::string v) {
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
  std::size_t i = 0;
  while (i < v.size() && std::isspace(static_cast<unsigned char>(v[i]))) ++i;
  return v.substr(i);
}

// The column's value as a number, nullopt when empty; Error (file, line, column, value, rule) otherwise.
std::optional<double> checked_number(const std::string& file, int line, const std::string& column,
                                     const std::string& text, bool count) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const bool is_number = end != text.c_str() && *end == '\0' && std::isfinite(v);
  if (count && !(is_number && v >= 0 && v == std::floor(v) && v <= std::numeric_limits<int>::max()))
    throw Error(fmt::format("{}: line {}: column {}: '{}' must be empty or a non-negative integer", file, line, column,
                            text));
  if (!count && !(is_number && v > 0))
    throw Error(fmt::format("{}: line {}: column {}: '{}' must be empty or a number of GiB > 0", file, line, column,
                            text));
  return v;
}

// What a row's notes say it ran with that the model does not represent: said with the row, so an
// error it explains is not mistaken for a wrong formula (and nothing is fudged to hide it).
struct Unmodelled {
  const char* needle;  // in the notes, lower case
  const char* why;
  bool (*stated)(const RunSetup&);  // whether the row's columns state it after all (then it is modelled)
};
constexpr Unmodelled kUnmodelled[] = {
    {"mtp", "multi-token prediction: the row does not state its layers (column mtp_layers): none modelled",
     [](const RunSetup& s) { return s.model.mtp_layers > 0; }},
    {"pipeline layout", "the row does not state its pipeline layout (column pipeline_layout): read as even stages",
     [](const RunSetup& s) { return !s.stated_layout.empty(); }},
    {"virtual stages per rank and microbatch count not stated",
     "interleaved schedule with its virtual stages not stated: read as vpp 1", [](const RunSetup&) { return false; }},
};

bool has_word(const std::string& text, const std::string& word) {
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool starts = at == 0 || !std::isalnum(static_cast<unsigned char>(text[at - 1]));
    const std::size_t end = at + word.size();
    if (starts && (end >= text.size() || !std::isalnum(static_cast<unsigned char>(text[end])))) return true;
  }
  return false;
}

}  // namespace

std::vector<MemoryRun> read_memory_runs(const std::string& path) {
  return parse_memory_runs(read_input_file(path, "CSV file"), path);
}

std::vector<MemoryRun> parse_memory_runs(std::string_view text, const std::string& file) {
  const auto rows = parse_csv(text, file);
  std::vector<MemoryRun> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int line = static_cast<int>(i) + 2;  // the header is line 1
    const auto& row = rows[i];
    if (i == 0)
      for (const auto& column : kMemoryColumns)
        if (!row.contains(column))
          throw Error(fmt::format("{}: missing column '{}' (needs the columns of memory_runs.csv)", file, column));
    auto cell = [&](const std::string& column) { return trim_cell(row.at(column)); };
    for (const auto& column : kCountColumns) (void)checked_number(file, line, column, cell(column), true);
    for (const auto& column : kGibColumns) (void)checked_number(file, line, column, cell(column), false);

    MemoryRun m;
    // Into published_runs.csv's column names, so that setup_configuration reads the row the same way
    // as a time row: the optimizer column is named zero_or_fsdp here, and the source id is the
    // `source` cell's first word ("S5 Megatron-LM CI golden values" -> "S5").
    m.run.fields = row;
    m.run.line = line;
    m.run.fields["zero_or_distributed_optimizer"] = row.at("zero_or_fsdp");
    // The memory sources give the whole command line (Megatron CI: model_config.yaml; torchtitan:
    // the train config), so an empty vpp is a schedule without interleaving, not an unknown to search.
    if (cell("vpp").empty() && (!row.contains("pipeline_layout") || cell("pipeline_layout").empty())) {
      m.run.fields["vpp"] = "1";
      m.vpp_unstated = true;
    }
    // Megatron CI names the expert-TP degree in the test's name ("..._ep4_etp1_memory_speed"); the
    // time rows carry it in other_result as "ETP = n", which setup_configuration reads.
    if (const std::string test = calib_detail::lower(row.contains("table_or_figure") ? row.at("table_or_figure") : "");
        test.find("_etp") != std::string::npos) {
      const std::size_t at = test.find("_etp") + 4;
      const std::size_t end = test.find_first_not_of("0123456789", at);
      if (end > at) m.run.fields["other_result"] = "ETP = " + test.substr(at, end - at);
    }
    m.source = cell("source");
    m.run.fields["source_id"] = m.source.substr(0, m.source.find(' '));
    if (cell("row_id").empty())
      throw Error(fmt::format("{}: line {}: column row_id: empty (every row needs an id)", file, line));
    m.gpu_memory_gib = checked_number(file, line, "gpu_memory_gib", cell("gpu_memory_gib"), false).value_or(0);
    const auto peak = checked_number(file, line, "peak_memory_gib", cell("peak_memory_gib"), false);
    const std::string kind = cell("kind");
    const std::string metric = calib_detail::lower(cell("memory_metric"));
    if (kind == "fits-bound") {
      m.metric = MemoryMetric::kFitsBound;
      m.rank = MemoryRank::kMaxOverRanks;  // every rank fit
      m.bound_gib = peak ? *peak : m.gpu_memory_gib;
      if (!(m.bound_gib > 0))
        throw Error(fmt::format("{}: line {}: columns peak_memory_gib and gpu_memory_gib: both empty; a fits-bound row "
                                "needs a bound",
                                file, line));
    } else if (kind == "measured") {
      if (!peak)
        throw Error(fmt::format("{}: line {}: column peak_memory_gib: empty; a measured row needs the measured GiB",
                                file, line));
      m.measured_gib = *peak;
      // allocated vs reserved: "max_memory_reserved" is the allocator's whole pool; check it first,
      // since reserved text may also mention allocation.
      if (contains(metric, "reserved")) m.metric = MemoryMetric::kReserved;
      else if (contains(metric, "allocated")) m.metric = MemoryMetric::kAllocated;
      else
        throw Error(fmt::format("{}: line {}: column memory_metric: '{}' must say whether torch's allocated or "
                                "reserved peak was logged",
                                file, line, cell("memory_metric")));
      if (contains(metric, "last rank")) m.rank = MemoryRank::kLastStage;
      else if (contains(metric, "max over all gpus")) m.rank = MemoryRank::kMaxOverRanks;
      else if (contains(metric, "rank 0")) m.rank = MemoryRank::kRankZero;
      else
        throw Error(fmt::format("{}: line {}: column memory_metric: '{}' must say which rank was logged ('last rank', "
                                "'max over all GPUs' or 'rank 0')",
                                file, line, cell("memory_metric")));
    } else {
      throw Error(fmt::format("{}: line {}: column kind: '{}' must be 'measured' or 'fits-bound'", file, line, kind));
    }
    out.push_back(std::move(m));
  }
  return out;
}

MemoryRowResult evaluate_memory_run(const MemoryRun& memory_run, const Calibration& calibration) {
  const PublishedRun& run = memory_run.run;
  // S5's release tests do not publish their GPU count or DP size: the distributed optimizer's shard
  // (12 bytes per parameter / dp) is unknown, so the row can be neither predicted nor bounded.
  if (memory_run.metric != MemoryMetric::kFitsBound && (run.get("total_gpus").empty() || run.get("dp").empty()))
    throw RowSkipped(SkipKind::kUnsupported,
                     fmt::format("row {}: GPU count and dp not published (MEMORY_SOURCES.md: the release tests' DP "
                                 "size is not public), so the sharded optimizer state cannot be predicted",
                                 run.id()));
  const RunSetup s = setup_configuration(run);
  MemoryRowResult r;
  r.row_id = s.row_id;
  r.source_id = s.source_id;
  r.model = s.model.name;
  r.metric = memory_run.metric;
  r.rank = memory_run.rank;
  r.measured_gib = memory_run.measured_gib;
  r.bound_gib = memory_run.bound_gib;
  r.assumptions = s.assumptions;
  if (memory_run.vpp_unstated) r.assumptions.emplace_back("vpp empty: 1 (the source's command line has no interleaving flag)");
  const std::string notes = calib_detail::lower(run.get("notes"));
  for (const Unmodelled& u : kUnmodelled)
    if (has_word(notes, u.needle) && !u.stated(s)) r.not_modelled.emplace_back(u.why);

  // What the source counts. No source includes the CUDA context or NCCL's buffers (MEMORY_SOURCES.md):
  // both are allocated outside torch's caching allocator. Allocated excludes what the allocator
  // keeps cached or fragmented; reserved includes it: Calibration::fragmentation (0.10) of the
  // activations, the blocks freed between layers and micro-batches that the caching allocator keeps
  // split or cached. Reserved runs 3-15% above allocated (MEMORY_SOURCES.md); not fitted here, since
  // no source logs both.
  Calibration cal = calibration;
  if (memory_run.metric != MemoryMetric::kFitsBound) {
    cal.cuda_context_bytes = 0;
    cal.nccl_bytes_per_communicator = 0;
    if (memory_run.metric == MemoryMetric::kAllocated) cal.fragmentation = 0;
  }
  const EstimateOptions options{kValidationMemoryMargin};
  // The configuration: the stated one; where axes are unstated, the reading the time validation
  // takes (the fastest that fits; while none fits, the lowest peak).
  std::optional<Estimate> best_fit, lowest_peak;
  for (const ParallelConfig& c : s.candidates) {
    Estimate e = estimate(s.model, s.cluster, s.training, c, cal, options);
    if (e.fits) {
      if (!best_fit || e.iteration_time_s < best_fit->iteration_time_s) best_fit = std::move(e);
    } else if (!lowest_peak || e.peak_memory_bytes < lowest_peak->peak_memory_bytes) {
      lowest_peak = std::move(e);
    }
  }
  const Estimate& chosen = best_fit ? *best_fit : *lowest_peak;  // candidates is never empty
  if (s.candidates.size() > 1)
    r.assumptions.push_back(fmt::format("{} readings of the unstated axes ({}): the fastest that fits is shown",
                                        s.candidates.size(), join(s.searched_axes, ", ")));
  r.config = to_string(chosen.config);
  const auto total = [](const StageEstimate& st) { return st.memory.total_bytes(); };
  std::size_t stage = 0;
  if (memory_run.rank == MemoryRank::kLastStage) stage = chosen.stages.size() - 1;
  else if (memory_run.rank == MemoryRank::kMaxOverRanks)
    stage = static_cast<std::size_t>(std::max_element(chosen.stages.begin(), chosen.stages.end(),
                                                      [&](const auto& a, const auto& b) { return total(a) < total(b); }) -
                                     chosen.stages.begin());
  r.stage = static_cast<int>(stage);
  r.breakdown = chosen.stages[stage].memory;
  r.predicted_gib = total(chosen.stages[stage]) / kMemGiB;
  if (memory_run.metric == MemoryMetric::kFitsBound) {
    r.within_bound = r.predicted_gib <= memory_run.bound_gib;
  } else {
    r.pct_error = 100 * (r.predicted_gib - memory_run.measured_gib) / memory_run.measured_gib;
  }
  return r;
}

MemoryValidationReport validate_memory_runs(const std::vector<MemoryRun>& runs, const Calibration& calibration) {
  MemoryValidationReport report;
  std::vector<std::string> order;
  for (const auto& m : runs) {
    const std::string id = m.run.source();
    if (std::find(order.begin(), order.end(), id) == order.end()) order.push_back(id);
    try {
      report.rows.push_back(evaluate_memory_run(m, calibration));
    } catch (const RowSkipped& e) {
      report.skipped.push_back(SkippedRow{m.run.id(), id, e.kind, e.what()});
    } catch (const Error& e) {  // the cost model refused a configuration setup_configuration resolved
      report.skipped.push_back(SkippedRow{m.run.id(), id, SkipKind::kUnsupported, "row " + m.run.id() + ": " + e.what()});
    }
  }
  double sum = 0;
  for (const auto& r : report.rows) {
    if (r.metric == MemoryMetric::kFitsBound) {
      report.bound_violations += !r.within_bound;
      continue;
    }
    ++report.measured;
    sum += std::abs(r.pct_error);
    report.max_abs_pct_error = std::max(report.max_abs_pct_error, std::abs(r.pct_error));
  }
  report.mean_abs_pct_error = report.measured > 0 ? sum / report.measured : 0;
  for (const auto& id : order) {
    MemorySourceSummary s;
    s.source_id = id;
    double source_sum = 0;
    for (const auto& r : report.rows) {
      if (r.source_id != id) continue;
      if (r.metric == MemoryMetric::kFitsBound) {
        ++s.bounds;
        s.violations += !r.within_bound;
      } else {
        ++s.measured;
        source_sum += std::abs(r.pct_error);
        s.max_abs_pct_error = std::max(s.max_abs_pct_error, std::abs(r.pct_error));
      }
    }
    for (const auto& k : report.skipped) s.skipped += k.source_id == id;
    s.mean_abs_pct_error = s.measured > 0 ? source_sum / s.measured : 0;
    report.sources.push_back(s);
  }
  return report;
}

}  // namespace paratune
