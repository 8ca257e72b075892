// Estimating prepared rows and scoring them in the row's metric (evaluate_run, validate_runs).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "paratune/calib/prediction_intervals.h"
#include "paratune/calib/published_runs.h"
#include "paratune/spec/units.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// The per-iteration FLOPs of the row's TFLOP/s or MFU convention.
double basis_flops(const RunSetup& s, const Estimate& e) {
  const double batch = s.training.global_batch, seq = s.training.seq_len;
  if (s.flops_basis == "megatron-sc21") return megatron_sc21_flops(s.model, batch, seq);
  if (s.flops_basis == "megatron")
    return megatron_flops(s.model, batch, seq, MegatronFlopsOptions{s.flops_causal_half, s.flops_mtp_layers});
  if (s.flops_basis == "torchtitan") return torchtitan_flops(s.model, batch, seq);
  return e.model_flops;
}

void summarize(ValidationReport& report, const std::vector<std::string>& source_order) {
  double sum = 0;
  report.max_abs_pct_error = 0;
  report.memory_model_errors = 0;
  for (const auto& row : report.rows) {
    sum += row.abs_pct_error;
    report.max_abs_pct_error = std::max(report.max_abs_pct_error, row.abs_pct_error);
    report.memory_model_errors += row.memory_model_error;
  }
  report.mean_abs_pct_error = report.rows.empty() ? 0 : sum / report.rows.size();
  report.sources.clear();
  for (const auto& id : source_order) {
    SourceSummary s;
    s.source_id = id;
    double source_sum = 0;
    for (const auto& row : report.rows)
      if (row.source_id == id) {
        ++s.rows;
        source_sum += row.abs_pct_error;
        s.max_abs_pct_error = std::max(s.max_abs_pct_error, row.abs_pct_error);
        s.memory_model_errors += row.memory_model_error;
      }
    for (const auto& skip : report.skipped) s.skipped += skip.source_id == id;
    s.mean_abs_pct_error = s.rows > 0 ? source_sum / s.rows : 0;
    report.sources.push_back(s);
  }
}

}  // namespace

RowResult evaluate_run(const RunSetup& s, const Calibration& calibration) {
  RowResult r;
  r.row_id = s.row_id;
  r.source_id = s.source_id;
  r.model = s.model.name;
  r.metric = s.metric;
  r.prediction_class = prediction_class(s.model, s.cluster.gpu, s.training.precision);
  r.published = s.published;
  r.assumptions = s.assumptions;
  r.candidates = static_cast<int>(s.candidates.size());
  const EstimateOptions options{kValidationMemoryMargin};
  // The fastest candidate that fits; while none fits, the one with the lowest peak memory.
  std::optional<Estimate> best_fit, lowest_peak;
  for (const ParallelConfig& c : s.candidates) {
    std::optional<Estimate> e;
    try {
      if (best_fit)
        e = estimate_if_faster(s.model, s.cluster, s.training, c, best_fit->iteration_time_s, calibration, options);
      else
        e = estimate(s.model, s.cluster, s.training, c, calibration, options);
    } catch (const Error&) {
      continue;  // setup_for_run resolved every candidate; nothing else should refuse it
    }
    if (!e) continue;  // cannot beat the best fitting candidate
    if (e->fits) {
      if (!best_fit || e->iteration_time_s < best_fit->iteration_time_s) best_fit = std::move(e);
    } else if (!best_fit && (!lowest_peak || e->peak_memory_bytes < lowest_peak->peak_memory_bytes)) {
      lowest_peak = std::move(e);
    }
  }
  const Estimate* chosen = best_fit ? &*best_fit : lowest_peak ? &*lowest_peak : nullptr;
  if (!chosen) throw Error(fmt::format("row {}: the cost model estimated none of the {} candidates", s.row_id,
                                       s.candidates.size()));
  r.fits = chosen->fits;
  r.memory_model_error = !chosen->fits;
  r.peak_memory_bytes = chosen->peak_memory_bytes;
  r.memory_limit_bytes = chosen->memory_limit_bytes;
  if (r.memory_model_error)
    r.assumptions.push_back(fmt::format(
        "memory-model error: predicted peak {:.1f} GiB > {:.1f} GiB GPU memory{} (the published run fit); {}",
        chosen->peak_memory_bytes / kGiB, chosen->memory_limit_bytes / kGiB,
        s.candidates.size() > 1 ? " for every reading of the unstated axes; the lowest-peak one is shown" : "",
        chosen->reason));
  r.config = to_string(chosen->config);
  const double tokens = static_cast<double>(s.training.global_batch) * s.training.seq_len;
  const double time = chosen->iteration_time_s;
  const double gpus = s.cluster.num_gpus();
  if (s.metric == "iteration_time_s") r.predicted = time;
  else if (s.metric == "tokens_per_s_per_gpu") r.predicted = tokens / time / gpus;
  else if (s.metric == "tokens_per_s_total") r.predicted = tokens / time;
  else if (s.metric == "tflops_per_gpu") r.predicted = basis_flops(s, *chosen) / time / gpus / 1e12;
  else r.predicted = basis_flops(s, *chosen) / time / gpus / s.cluster.gpu.peak_flops_per_s(s.training.precision);
  r.pct_error = 100 * (r.predicted - r.published) / r.published;
  r.abs_pct_error = std::abs(r.pct_error);
  return r;
}

PreparedRuns prepare_runs(const std::vector<PublishedRun>& runs) {
  PreparedRuns out;
  for (const auto& run : runs) {
    const std::string source = run.source();
    if (std::find(out.source_order.begin(), out.source_order.end(), source) == out.source_order.end())
      out.source_order.push_back(source);
    try {
      out.setups.push_back(setup_for_run(run));
    } catch (const RowSkipped& e) {
      out.skipped.push_back(SkippedRow{run.id(), source, e.kind, e.what()});
    }
  }
  return out;
}

namespace {

// Rows sharing model, GPU, GPU count, batch and sequence length, with Kendall's tau between the
// published and predicted values (RankGroup). Both are in the row's metric, so a throughput and
// a time order the same way.
std::vector<RankGroup> rank_groups(const std::vector<const RunSetup*>& setups, const std::vector<RowResult>& rows) {
  std::vector<RankGroup> groups;
  std::vector<std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const RunSetup& s = *setups[i];
    const std::string label =
        fmt::format("{} on {} x {}, batch {} x {}, {}", rows[i].model, s.cluster.num_gpus(), s.cluster.gpu.name,
                    s.training.global_batch, s.training.seq_len, rows[i].metric);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const RankGroup& g) { return g.label == label; });
    if (it == groups.end()) {
      groups.push_back(RankGroup{label, {}, 0, 0, 0});
      members.emplace_back();
      it = groups.end() - 1;
    }
    it->row_ids.push_back(rows[i].row_id);
    members[static_cast<std::size_t>(it - groups.begin())].push_back(i);
  }
  std::vector<RankGroup> out;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& m = members[g];
    if (m.size() < 2) continue;
    int reversed = 0;
    for (std::size_t a = 0; a < m.size(); ++a)
      for (std::size_t b = a + 1; b < m.size(); ++b) {
        const double published = rows[m[a]].published - rows[m[b]].published;
        const double predicted = rows[m[a]].predicted - rows[m[b]].predicted;
        if (published == 0) continue;
        ++groups[g].pairs;
        if (published * predicted > 0) ++groups[g].concordant;
        else ++reversed;  // a predicted tie counts against
      }
    if (groups[g].pairs == 0) continue;
    groups[g].kendall_tau = static_cast<double>(groups[g].concordant - reversed) / groups[g].pairs;
    out.push_back(groups[g]);
  }
  return out;
}

}  // namespace

ValidationReport validate_prepared(const PreparedRuns& prepared, const Calibration& calibration) {
  ValidationReport report;
  report.skipped = prepared.skipped;
  std::vector<const RunSetup*> estimated;
  for (const auto& setup : prepared.setups) {
    try {
      report.rows.push_back(evaluate_run(setup, calibration));
      estimated.push_back(&setup);
    } catch (const Error& e) {
      report.skipped.push_back(SkippedRow{setup.row_id, setup.source_id, SkipKind::kUnsupported, e.what()});
    }
  }
  summarize(report, prepared.source_order);
  report.rank_groups = rank_groups(estimated, report.rows);
  return report;
}

ValidationReport validate_runs(const std::vector<PublishedRun>& runs, const Calibration& calibration) {
  return validate_prepared(prepare_runs(runs), calibration);
}

}  // namespace paratune
