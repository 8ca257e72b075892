// Published training runs: reading them, estimating each under its stated configuration, comparing,
// fitting the Calibration to them, and cross-validating the fit by source (`paratune validate`,
// `paratune calibrate [--loso]`).
//
// This module sits above `cost`: it turns a row of data/published-runs/published_runs.csv (columns
// and per-source caveats: data/published-runs/SOURCES.md) into specs and scores predictions in the
// metric and FLOP-counting basis the source used.
//
// The rules a row is read by:
//   * Every stated column is honoured: tp, pp, dp, cp, ep (and expert-TP from other_result "ETP = n"),
//     vpp, micro-batch, global batch, recompute, sequence parallelism, ZeRO / distributed optimizer /
//     FSDP, precision and FP8 recipe, MoE columns, gpus_per_node, seq length, vocab. A stated
//     dp must satisfy tp·pp·dp·cp = total_gpus, else the row is skipped as inconsistent.
//   * An unstated axis is searched (the fastest configuration that fits wins), or set to the
//     framework's default; either way the assumption is printed with the row.
//   * A stated configuration that paratune's `resolve` refuses (it ran: the source published it) is
//     skipped with the exact rule that refused it (SkipKind::kRefusedByRule).
//   * A row whose configuration is predicted not to fit in GPU memory keeps that prediction (it is
//     not replaced by another configuration) and is marked a memory-model error: a published run did
//     fit. With unstated axes, the reading with the lowest predicted peak memory is kept.
//   * Metric: the first present of iteration_time_s, tokens_per_s_per_gpu, tokens_per_s_total,
//     tflops_per_gpu (in the row's tflops_basis), mfu_pct (against the peak of the run's precision),
//     skipping columns SOURCES.md lists as known errors of the source.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "paratune/calib/coefficients.h"
#include "paratune/cost/calibration.h"
#include "paratune/cost/estimate.h"

namespace paratune {

// A CSV file as rows of column -> text. RFC 4180: quoted fields, "" escapes, newlines in quotes.
std::vector<std::map<std::string, std::string>> read_csv(const std::string& path);
// The same from text; `source` names it in errors.
std::vector<std::map<std::string, std::string>> parse_csv(std::string_view text, const std::string& source);

// One row, as text fields by column name (the published CSV's header), plus its line for errors.
struct PublishedRun {
  std::map<std::string, std::string> fields;
  int line = 0;
  [[nodiscard]] std::string get(const std::string& column) const;  // trimmed; "" when absent
  [[nodiscard]] std::string id() const { return get("row_id"); }
  [[nodiscard]] std::string source() const { return get("source_id"); }
};

// Reads and checks the header (every column `validate` needs must be present; the MoE, ep, cp and
// tokens_per_s_total columns are optional and read as empty when absent).
std::vector<PublishedRun> read_published_runs(const std::string& path);
std::vector<PublishedRun> parse_published_runs(std::string_view text, const std::string& source);

// Why a row was not estimated.
enum class SkipKind {
  kUnsupported,       // paratune lacks what the row needs (a GPU preset, a FLOP convention, a metric)
  kInconsistent,      // the row's stated columns contradict each other (tp·pp·dp·cp != total_gpus)
  kRefusedByRule,     // the stated configuration ran (it is published) but paratune's resolve refuses it
  kKnownSourceError,  // every usable metric column is one SOURCES.md lists as an error of the source
  kUnstatedHardware,  // the GPU ran below its datasheet at a setting the source does not state (a power limit)
};
// "unsupported", "inconsistent", "refused-by-rule", "known-source-error", "unstated-hardware"
std::string to_string(SkipKind kind);

// Thrown by setup_for_run when a row cannot be estimated; `kind` says which of the reasons above.
class RowSkipped : public Error {
 public:
  RowSkipped(SkipKind kind, const std::string& message) : Error(message), kind(kind) {}
  SkipKind kind;
};

// A row turned into something the cost model can estimate. Built once per row (setup_for_run) and
// reused for every evaluation (validation, each step of a fit, each fold of leave-one-source-out).
struct RunSetup {
  std::string row_id;
  std::string source_id;
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  ParallelConfig config;  // stated axes and framework defaults; searched axes are set per candidate
  std::vector<std::string> assumptions;  // every value the source does not state, and every caveat applied
  // Axes: one value when stated (or derived from stated ones), the searched values otherwise.
  // vpp_choices {0} = every divisor of the layers per stage up to 8, per candidate pp.
  std::vector<int> tp_choices, pp_choices, cp_choices, ep_choices, mbs_choices, vpp_choices;
  std::vector<RecomputeMode> recompute_choices;
  // With full recompute: the share of each stage's layers recomputed (torchtitan's per-layer AC,
  // every 2nd layer: 0.5); 0 = as `config` or recompute_counts says. A share, not a count, since
  // pp may be searched and recompute_layers counts per stage.
  double recompute_share = 0;
  std::vector<bool> sp_choices;
  std::vector<int> etp_choices{0};  // expert TP; 0 = tp. Unstated on an MoE row: {0, 1}, searched
  std::vector<bool> ep_overlap_choices{false};  // Megatron-Core's 1F1B A2A overlap, on where a row states it
  std::vector<MoeDispatcher> dispatcher_choices{MoeDispatcher::kAllToAll};  // searched where the framework has both
  int stated_dp = 0;                       // 0 = not stated (dp = GPUs / (tp·pp·cp))
  // Megatron's --pipeline-model-parallel-layout as the row states it (column pipeline_layout); empty
  // = not stated (build_candidates then tries the splits Megatron offers).
  std::vector<LayoutStage> stated_layout;
  std::vector<std::string> searched_axes;  // names of the axes searched ("tp", "mbs", "recompute", ...)
  // Every combination of the axes that paratune's resolve accepts; never empty after setup_for_run.
  std::vector<ParallelConfig> candidates;

  std::string metric;  // iteration_time_s | tokens_per_s_per_gpu | tokens_per_s_total | tflops_per_gpu | mfu
  double published = 0;     // in the metric's unit (mfu as a fraction)
  std::string flops_basis;  // megatron-sc21 | megatron | torchtitan | paratune (tflops/mfu metrics only)
  bool flops_causal_half = false;  // megatron basis: count half the s² attention (see megatron_flops)
  int flops_mtp_layers = 0;        // megatron basis: multi-token-prediction layers counted
};

// Throws RowSkipped (with the row id) when the row cannot be estimated, saying why.
RunSetup setup_for_run(const PublishedRun& run);
// The same reading of the model, cluster, training and parallel axes without choosing a time metric
// (metric, published and flops_basis stay empty): the memory rows (calib/memory_runs.h) use it.
RunSetup setup_configuration(const PublishedRun& run);

// Memory limit used to judge whether a published configuration fits: the whole GPU memory (the run
// did fit), not the planner's safety margin.
inline constexpr double kValidationMemoryMargin = 0.0;

struct RowResult {
  std::string row_id;
  std::string source_id;
  std::string model;
  std::string metric;
  double published = 0;
  double predicted = 0;
  double pct_error = 0;      // 100 (predicted - published) / published, signed
  double abs_pct_error = 0;  // |pct_error|
  std::string config;        // the configuration estimated (stated + searched axes)
  int candidates = 0;        // configurations searched
  bool fits = true;
  // No stated (or searched) configuration fits in memory, though the published run did: the
  // memory model over-predicts. The prediction is the configuration with the lowest peak.
  bool memory_model_error = false;
  double peak_memory_bytes = 0;
  double memory_limit_bytes = 0;
  std::string prediction_class;  // "dense hopper bf16", ... (paratune/calib/prediction_intervals.h)
  std::vector<std::string> assumptions;
};

struct SkippedRow {
  std::string row_id;
  std::string source_id;
  SkipKind kind = SkipKind::kUnsupported;
  std::string reason;
};
// {"row_id", "source_id", "kind", "reason"}: one shape for the time and the memory validation.
nlohmann::json to_json(const SkippedRow& row);

// Errors of one source's estimated rows.
struct SourceSummary {
  std::string source_id;
  int rows = 0;                 // estimated
  int skipped = 0;
  int memory_model_errors = 0;
  double mean_abs_pct_error = 0;
  double max_abs_pct_error = 0;
};

// How well the predictions order rows that differ only in their parallel configuration: rows that
// share model, GPU, GPU count, global batch and sequence length. Kendall's tau over the pairs whose
// published values differ: (pairs in the published order - pairs reversed) / those pairs; 1 =
// the same order, -1 = reversed. A planner needs the order more than the values.
struct RankGroup {
  std::string label;                 // "Llama 3.1 405B on 512 x h100-sxm, batch 2048 x 8192"
  std::vector<std::string> row_ids;  // in CSV order
  int pairs = 0;                     // pairs with different published values
  int concordant = 0;                // of which predicted in the same order
  double kendall_tau = 0;
};

struct ValidationReport {
  std::vector<RankGroup> rank_groups;  // groups of at least two rows, in the order they first appear
  std::vector<RowResult> rows;
  std::vector<SkippedRow> skipped;
  std::vector<SourceSummary> sources;  // in the order sources first appear in the CSV
  int memory_model_errors = 0;
  double mean_abs_pct_error = 0;  // over `rows`, memory-model errors included
  double max_abs_pct_error = 0;
};

// Estimates one prepared row: every candidate, the fastest that fits (or the lowest-peak one, as a
// memory-model error), converted to the row's metric.
RowResult evaluate_run(const RunSetup& setup, const Calibration& calibration);

// Setups of the rows that can be estimated, and the skipped rows with their reasons.
struct PreparedRuns {
  std::vector<RunSetup> setups;
  std::vector<SkippedRow> skipped;
  std::vector<std::string> source_order;  // every source_id in CSV order (skipped rows' included)
};
PreparedRuns prepare_runs(const std::vector<PublishedRun>& runs);

ValidationReport validate_runs(const std::vector<PublishedRun>& runs, const Calibration& calibration);
ValidationReport validate_prepared(const PreparedRuns& prepared, const Calibration& calibration);

// --- Fitting -------------------------------------------------------------------------------------

// Where a fit is, for a progress display (the library prints nothing itself).
struct FitProgress {
  std::string stage;         // "fit", or "fold 3 of 12 (without SOURCE)" for leave-one-source-out
  int evaluation = 0;        // objective evaluations so far in this stage
  int max_evaluations = 0;   // FitOptions::max_evaluations
  double best_objective = 0;  // the lowest objective so far: mean + max/5 of |error| in percent
};

struct FitOptions {
  int max_evaluations = 600;  // NLopt BOBYQA objective evaluations per fit, >= 1
  double xtol_rel = 1e-4;     // relative tolerance on the coefficients, > 0
  int threads = 0;  // rows evaluated in parallel per objective evaluation; 0 = hardware threads. The
                    // result does not depend on it.
  // Called after every objective evaluation (from the fitting thread); empty: none.
  std::function<void(const FitProgress&)> on_progress;
};
// Throws Error naming the field, the value and the rule.
void validate(const FitOptions& options);

struct CalibrationFit {
  Calibration calibration;
  ValidationReport before, after;
  std::vector<std::string> parameters;  // names of the fitted coefficients
  int parameters_fitted = 0;
  std::vector<CoefficientAtBound> at_bounds;  // fitted coefficients at a bound of their physical range
  int rows_used = 0;
  int evaluations = 0;
  double seconds = 0;
};

// Fits the coefficients listed by fit_parameter_names() (paratune/calib/coefficients.h) by
// minimising mean + max/5 of the absolute percentage error plus the priors' price, within each
// coefficient's physical range, with NLopt's derivative-free BOBYQA.
CalibrationFit fit_calibration(const std::vector<PublishedRun>& runs, const Calibration& start,
                               const FitOptions& options = {});
// The same on prepared rows, using only those whose index is in `use` (all when empty).
CalibrationFit fit_prepared(const PreparedRuns& prepared, const Calibration& start, const FitOptions& options = {},
                            const std::vector<std::size_t>& use = {});
std::vector<std::string> fit_parameter_names();

// Leave-one-source-out: for each source, fit on every other source's rows and predict the held-out
// ones. In-sample errors are those of the fit on all rows.
struct LosoSource {
  std::string source_id;
  int rows = 0;
  double in_sample_mean_abs_pct_error = 0;
  double loso_mean_abs_pct_error = 0;
  double loso_max_abs_pct_error = 0;
  int evaluations = 0;
  double seconds = 0;
};
struct LosoReport {
  std::vector<LosoSource> sources;
  int rows = 0;
  double in_sample_mean_abs_pct_error = 0;  // over rows
  double loso_mean_abs_pct_error = 0;       // over rows (each predicted by the fit without its source)
  double loso_max_abs_pct_error = 0;
  double seconds = 0;  // the whole procedure: setups, the full fit and one fit per source
  CalibrationFit full;  // the fit on all rows
  std::vector<RowResult> held_out;  // each row as predicted by the fit without its source
};
LosoReport leave_one_source_out(const std::vector<PublishedRun>& runs, const Calibration& start,
                                const FitOptions& options = {});

// --- Reports -------------------------------------------------------------------------------------

nlohmann::json to_json(const ValidationReport& report);
nlohmann::json to_json(const LosoReport& report);
// Rows grouped by source with each source's mean |error|, skipped rows with their reasons, counts.
std::string format_validation(const ValidationReport& report);
std::string format_source_summary(const ValidationReport& report);  // one line per source
std::string format_loso(const LosoReport& report);
// Coefficients at a bound of their physical range: one line each, or a line saying there is none.
std::string format_bounds(const std::vector<CoefficientAtBound>& hits);
nlohmann::json to_json(const std::vector<CoefficientAtBound>& hits);

// --- FLOP conventions ----------------------------------------------------------------------------
// Published FLOP-counting conventions, per iteration (all GPUs), for `batch` sequences of `seq` tokens.

// Megatron-LM SC'21 Eq. 3 (with recompute, 4 passes): 96·B·s·L·h²·(1 + s/6h + V/16Lh).
double megatron_sc21_flops(const ModelSpec& model, double batch, double seq);

struct MegatronFlopsOptions {
  // Megatron-LM r0.8 and NeMo's per-model formulas for GPT/Llama/Nemotron count the full s² of
  // attention; Megatron-LM main (and NeMo 25.04's figures for Grok-1, Llama 4, DeepSeek-V3) count
  // half of it (causal mask).
  bool causal_attention_half = false;
  int mtp_layers = 0;  // multi-token-prediction layers (Megatron --mtp-num-layers)
};
// Megatron-LM training.py num_floating_point_operations (3 passes, no recompute): GQA, gated MLPs,
// MoE (dense vs MoE layers, routed top-k and shared experts), MLA, MTP, logits.
double megatron_flops(const ModelSpec& model, double batch, double seq, const MegatronFlopsOptions& options = {});
// torchtitan get_num_flop_per_token: 6·(N - N_embedding) + 12·L·H·D·s per token.
double torchtitan_flops(const ModelSpec& model, double batch, double seq);

}  // namespace paratune
