// Rendering validation and leave-one-source-out results (text and JSON).
#include <fmt/format.h>

#include <map>

#include "paratune/calib/published_runs.h"
#include "row_fields.h"

namespace paratune {

namespace calib_detail {

// "dp=8 tp=1 pp=1 cp=2 mbs=1 rc=full sp zero=1": the axes a reader compares with the source.
std::string compact(const std::string& config_text) {
  const ParallelConfig c = parse_parallel_config(config_text);
  std::string out = fmt::format("dp={} tp={} pp={}", c.dp, c.tp, c.pp);
  if (c.vpp > 1) out += fmt::format(" vpp={}", c.vpp);
  if (c.cp > 1) out += fmt::format(" cp={}", c.cp);
  if (c.ep > 1) out += fmt::format(" ep={}", c.ep);
  if (c.etp > 0 && c.etp != c.tp) out += fmt::format(" etp={}", c.etp);
  if (c.ep_overlap) out += " ep-overlap";
  if (c.dispatcher != MoeDispatcher::kAllToAll) out += " " + to_string(c.dispatcher);
  if (c.account_embedding || c.account_loss)
    out += fmt::format(" split={}{}", c.account_embedding ? "E" : "", c.account_loss ? "L" : "");
  if (!c.layout.empty()) out += " layout=" + to_string(c.layout);
  out += fmt::format(" mbs={} rc={}", c.mbs, to_string(c.recompute));
  if (c.recompute == RecomputeMode::kFull && c.recompute_layers >= 0) out += fmt::format("({})", c.recompute_layers);
  if (c.recompute == RecomputeMode::kSelective && c.recompute_modules != kDefaultRecomputeModules)
    out += fmt::format("({})", fmt::join(recompute_module_names(c.recompute_modules), "+"));
  if (c.offload_modules != 0) out += " offload=" + offload_modules_text(c.offload_modules);
  if (c.sequence_parallel) out += " sp";
  out += fmt::format(" zero={}", c.zero);
  return out;
}

}  // namespace calib_detail

namespace {

using calib_detail::compact;

constexpr SkipKind kSkipKinds[] = {SkipKind::kUnsupported, SkipKind::kInconsistent, SkipKind::kRefusedByRule,
                                   SkipKind::kKnownSourceError, SkipKind::kUnstatedHardware};

std::map<SkipKind, int> skip_counts(const ValidationReport& r) {
  std::map<SkipKind, int> counts;
  for (const auto& s : r.skipped) ++counts[s.kind];
  return counts;
}

}  // namespace

nlohmann::json to_json(const SkippedRow& row) {
  return {{"row_id", row.row_id}, {"source_id", row.source_id}, {"kind", to_string(row.kind)}, {"reason", row.reason}};
}

nlohmann::json to_json(const ValidationReport& r) {
  nlohmann::json rows = nlohmann::json::array(), skipped = nlohmann::json::array(), sources = nlohmann::json::array();
  for (const auto& row : r.rows)
    rows.push_back({{"row_id", row.row_id},
                    {"source_id", row.source_id},
                    {"model", row.model},
                    {"metric", row.metric},
                    {"published", row.published},
                    {"predicted", row.predicted},
                    {"pct_error", row.pct_error},
                    {"abs_pct_error", row.abs_pct_error},
                    {"config", row.config},
                    {"candidates", row.candidates},
                    {"fits", row.fits},
                    {"memory_model_error", row.memory_model_error},
                    {"peak_memory_bytes", row.peak_memory_bytes},
                    {"memory_limit_bytes", row.memory_limit_bytes},
                    {"assumptions", row.assumptions}});
  for (const auto& s : r.skipped)
    skipped.push_back(to_json(s));
  for (const auto& s : r.sources)
    sources.push_back({{"source_id", s.source_id},
                       {"rows", s.rows},
                       {"skipped", s.skipped},
                       {"memory_model_errors", s.memory_model_errors},
                       {"mean_abs_pct_error", s.mean_abs_pct_error},
                       {"max_abs_pct_error", s.max_abs_pct_error}});
  nlohmann::json by_kind = nlohmann::json::object();
  const auto counts = skip_counts(r);
  for (SkipKind k : kSkipKinds) by_kind[to_string(k)] = counts.contains(k) ? counts.at(k) : 0;
  nlohmann::json ranking = nlohmann::json::array();
  for (const auto& g : r.rank_groups)
    ranking.push_back({{"group", g.label},
                       {"row_ids", g.row_ids},
                       {"pairs", g.pairs},
                       {"concordant", g.concordant},
                       {"kendall_tau", g.kendall_tau}});
  return {{"rows", rows},
          {"skipped", skipped},
          {"sources", sources},
          {"rank_groups", ranking},
          {"estimated", r.rows.size()},
          {"skipped_count", r.skipped.size()},
          {"skipped_by_kind", by_kind},
          {"memory_model_errors", r.memory_model_errors},
          {"mean_abs_pct_error", r.mean_abs_pct_error},
          {"max_abs_pct_error", r.max_abs_pct_error}};
}

std::string format_source_summary(const ValidationReport& r) {
  std::string out = fmt::format("{:<7} {:>5} {:>8} {:>9} {:>10} {:>9}\n", "source", "rows", "skipped", "mem-err",
                                "mean|err|%", "max|err|%");
  for (const auto& s : r.sources)
    out += fmt::format("{:<7} {:>5} {:>8} {:>9} {:>10.1f} {:>9.1f}\n", s.source_id, s.rows, s.skipped,
                       s.memory_model_errors, s.mean_abs_pct_error, s.max_abs_pct_error);
  return out;
}

std::string format_validation(const ValidationReport& r) {
  std::string out;
  for (const auto& source : r.sources) {
    if (source.rows == 0) continue;
    out += fmt::format("{}: {} rows, mean |error| {:.1f}%, max {:.1f}%{}\n", source.source_id, source.rows,
                       source.mean_abs_pct_error, source.max_abs_pct_error,
                       source.memory_model_errors ? fmt::format(", {} memory-model errors", source.memory_model_errors)
                                                  : "");
    out += fmt::format("  {:>5}  {:<26} {:<20} {:>10} {:>10} {:>7}  {}\n", "row", "model", "metric", "published",
                       "predicted", "err%", "configuration estimated");
    for (const auto& row : r.rows) {
      if (row.source_id != source.source_id) continue;
      out += fmt::format("  {:>5}  {:<26} {:<20} {:>10.4g} {:>10.4g} {:>+7.1f}  {}{}\n", row.row_id,
                         row.model.substr(0, 26), row.metric, row.published, row.predicted, row.pct_error,
                         compact(row.config),
                         row.memory_model_error
                             ? fmt::format("  MEMORY-MODEL ERROR: peak {:.1f} > {:.1f} GiB",
                                           row.peak_memory_bytes / (1024.0 * 1024 * 1024),
                                           row.memory_limit_bytes / (1024.0 * 1024 * 1024))
                             : "");
    }
  }
  const auto counts = skip_counts(r);
  if (!r.skipped.empty()) {
    out += "\nskipped:\n";
    for (SkipKind k : kSkipKinds)
      for (const auto& s : r.skipped)
        if (s.kind == k) out += fmt::format("  {:>5}  {:<18} {}\n", s.row_id, to_string(s.kind), s.reason);
  }
  out += "\n" + format_source_summary(r);
  if (!r.rank_groups.empty()) {
    out += "\nranking within groups of rows that differ only in configuration (Kendall tau: 1 = the published "
           "order):\n";
    for (const auto& g : r.rank_groups)
      out += fmt::format("  tau {:+.2f}  {} of {} pairs in order  rows {}  {}\n", g.kendall_tau, g.concordant, g.pairs,
                         join(g.row_ids, ","), g.label);
  }
  std::vector<std::string> kinds;
  for (SkipKind k : kSkipKinds)
    if (counts.contains(k)) kinds.push_back(fmt::format("{} {}", counts.at(k), to_string(k)));
  out += fmt::format("\n{} rows estimated, {} skipped{}, {} memory-model errors; mean |error| {:.2f}%, max {:.2f}%\n",
                     r.rows.size(), r.skipped.size(), kinds.empty() ? "" : " (" + join(kinds, ", ") + ")",
                     r.memory_model_errors, r.mean_abs_pct_error, r.max_abs_pct_error);
  out += "assumptions per row: --json lists them\n";
  return out;
}

nlohmann::json to_json(const LosoReport& r) {
  nlohmann::json sources = nlohmann::json::array(), held_out = nlohmann::json::array();
  for (const auto& s : r.sources)
    sources.push_back({{"source_id", s.source_id},
                       {"rows", s.rows},
                       {"in_sample_mean_abs_pct_error", s.in_sample_mean_abs_pct_error},
                       {"loso_mean_abs_pct_error", s.loso_mean_abs_pct_error},
                       {"loso_max_abs_pct_error", s.loso_max_abs_pct_error},
                       {"evaluations", s.evaluations},
                       {"seconds", s.seconds}});
  for (const auto& row : r.held_out)
    held_out.push_back({{"row_id", row.row_id},
                        {"source_id", row.source_id},
                        {"metric", row.metric},
                        {"published", row.published},
                        {"predicted", row.predicted},
                        {"pct_error", row.pct_error},
                        {"memory_model_error", row.memory_model_error}});
  return {{"sources", sources},
          {"rows", r.rows},
          {"in_sample_mean_abs_pct_error", r.in_sample_mean_abs_pct_error},
          {"loso_mean_abs_pct_error", r.loso_mean_abs_pct_error},
          {"loso_max_abs_pct_error", r.loso_max_abs_pct_error},
          {"seconds", r.seconds},
          {"parameters", r.full.parameters},
          {"calibration", to_json(r.full.calibration)},
          {"at_bounds", to_json(r.full.at_bounds)},
          {"held_out", held_out}};
}

nlohmann::json to_json(const std::vector<CoefficientAtBound>& hits) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& h : hits)
    out.push_back({{"name", h.name}, {"value", h.value}, {"bound", h.bound}, {"upper", h.upper}, {"why", h.why}});
  return out;
}

std::string format_bounds(const std::vector<CoefficientAtBound>& hits) {
  if (hits.empty()) return "no fitted coefficient sits at a bound of its physical range\n";
  std::string out = fmt::format("{} fitted coefficient(s) at a bound of the physical range (the model lacks what "
                                "they stand in for):\n",
                                hits.size());
  for (const auto& h : hits) out += "  " + describe(h) + "\n";
  return out;
}

std::string format_loso(const LosoReport& r) {
  std::string out = fmt::format("{:<7} {:>5} {:>16} {:>13} {:>12} {:>6} {:>8}\n", "source", "rows", "in-sample|err|%",
                                "LOSO mean|err|%", "LOSO max%", "evals", "seconds");
  for (const auto& s : r.sources)
    out += fmt::format("{:<7} {:>5} {:>16.1f} {:>15.1f} {:>12.1f} {:>6} {:>8.1f}\n", s.source_id, s.rows,
                       s.in_sample_mean_abs_pct_error, s.loso_mean_abs_pct_error, s.loso_max_abs_pct_error,
                       s.evaluations, s.seconds);
  out += fmt::format("{:<7} {:>5} {:>16.1f} {:>15.1f} {:>12.1f}\n", "all", r.rows, r.in_sample_mean_abs_pct_error,
                     r.loso_mean_abs_pct_error, r.loso_max_abs_pct_error);
  out += fmt::format("leave-one-source-out: {} fits of {} coefficients in {:.1f} s\n", r.sources.size() + 1,
                     r.full.parameters_fitted, r.seconds);
  return out;
}

}  // namespace paratune
