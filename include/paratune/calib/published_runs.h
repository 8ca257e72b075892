// Published training runs: reading them, estimating each under stated assumptions, comparing, and
// fitting the Calibration to them (`paratune validate`, `paratune calibrate`).
//
// This module sits above `cost`: it turns a row of ../shared/calibration/published_runs.csv into
// specs, searches the axes the source leaves unstated, and scores predictions in the FLOP-counting
// basis the source used (tflops_basis).
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "paratune/cost/calibration.h"
#include "paratune/cost/estimate.h"

namespace paratune {

// A CSV file as rows of column -> text. RFC 4180: quoted fields, "" escapes, newlines in quotes.
std::vector<std::map<std::string, std::string>> read_csv(const std::string& path);

// One row, as text fields by column name (the published CSV's header), plus its line for errors.
struct PublishedRun {
  std::map<std::string, std::string> fields;
  int line = 0;
  [[nodiscard]] std::string get(const std::string& column) const;
  [[nodiscard]] std::string id() const { return get("row_id"); }
};

// Reads and checks the header (every column `validate` needs must be present).
std::vector<PublishedRun> read_published_runs(const std::string& path);

// A row turned into something the cost model can estimate.
struct RunSetup {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  ParallelConfig config;            // the stated axes (and framework defaults)
  std::vector<std::string> assumptions;  // every value not stated by the source
  // Axes the source leaves open, searched for the fastest configuration that fits.
  std::vector<int> tp_choices, pp_choices, mbs_choices, vpp_choices;
  std::vector<RecomputeMode> recompute_choices;
  std::vector<bool> sp_choices;
  std::string metric;  // iteration_time_s | tokens_per_s_per_gpu | tflops_per_gpu | mfu
  double published = 0;
  std::string flops_basis;  // megatron-sc21 | megatron | torchtitan | none
};

// Throws Error (with the row id) when the row cannot be estimated.
RunSetup setup_for_run(const PublishedRun& run);

struct RowResult {
  std::string row_id;
  std::string model;
  std::string metric;
  double published = 0;
  double predicted = 0;
  double abs_pct_error = 0;
  std::string config;  // the configuration estimated (stated + searched axes)
  bool fits = true;
  std::vector<std::string> assumptions;
};

struct ValidationReport {
  std::vector<RowResult> rows;
  std::vector<std::pair<std::string, std::string>> skipped;  // row_id, reason
  double mean_abs_pct_error = 0;
  double max_abs_pct_error = 0;
};

// Estimates one prepared row: searches its open axes, converts to the row's metric.
RowResult evaluate_run(const RunSetup& setup, const std::string& row_id, const Calibration& calibration);
ValidationReport validate_runs(const std::vector<PublishedRun>& runs, const Calibration& calibration);

struct CalibrationFit {
  Calibration calibration;
  ValidationReport before, after;
  int parameters_fitted = 0;
  int rows_used = 0;
  int evaluations = 0;
};

// Fits the compute and network coefficients (GEMM efficiency per GPU generation, the GEMM size
// roll-off, attention efficiency, link efficiencies, per-layer overhead) by minimising
// mean + max/2 of the absolute percentage error with NLopt's derivative-free BOBYQA.
CalibrationFit fit_calibration(const std::vector<PublishedRun>& runs, const Calibration& start);

nlohmann::json to_json(const ValidationReport& report);
std::string format_validation(const ValidationReport& report);

// Published FLOP-counting conventions, per iteration (all GPUs), for `tokens` = batch x seq.
// Megatron-LM SC'21 Eq. 3 (with recompute, 4 passes): 96·B·s·L·h²·(1 + s/6h + V/16Lh).
double megatron_sc21_flops(const ModelSpec& model, double batch, double seq);
// Megatron-LM training.py num_floating_point_operations (r0.8, 3 passes).
double megatron_flops(const ModelSpec& model, double batch, double seq);
// torchtitan get_num_flop_per_token: 6·(N - N_embedding) + 12·L·H·D·s per token.
double torchtitan_flops(const ModelSpec& model, double batch, double seq);

}  // namespace paratune
