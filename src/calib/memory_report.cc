// Rendering the memory validation (text and JSON; calib/memory_runs.h).
#include <fmt/format.h>

#include "paratune/calib/memory_runs.h"
#include "row_fields.h"

namespace paratune {

nlohmann::json to_json(const MemoryValidationReport& r) {
  constexpr double gib = 1024.0 * 1024 * 1024;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json j{{"row_id", row.row_id},
                     {"source_id", row.source_id},
                     {"model", row.model},
                     {"configuration", row.config},
                     {"metric", to_string(row.metric)},
                     {"rank", to_string(row.rank)},
                     {"stage", row.stage},
                     {"predicted_gib", row.predicted_gib},
                     {"breakdown_gib",
                      {{"weights", row.breakdown.weights_bytes / gib},
                       {"grads", row.breakdown.grads_bytes / gib},
                       {"optimizer", row.breakdown.optimizer_bytes / gib},
                       {"activations", row.breakdown.activations_bytes / gib},
                       {"other", row.breakdown.other_bytes / gib}}},
                     {"assumptions", row.assumptions},
                     {"not_modelled", row.not_modelled}};
    if (row.metric == MemoryMetric::kFitsBound) {
      j["bound_gib"] = row.bound_gib;
      j["within_bound"] = row.within_bound;
    } else {
      j["measured_gib"] = row.measured_gib;
      j["pct_error"] = row.pct_error;
    }
    rows.push_back(std::move(j));
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& s : r.skipped)
    skipped.push_back(to_json(s));
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& s : r.sources)
    sources.push_back({{"source_id", s.source_id},
                       {"measured", s.measured},
                       {"bounds", s.bounds},
                       {"skipped", s.skipped},
                       {"bound_violations", s.violations},
                       {"mean_abs_pct_error", s.mean_abs_pct_error},
                       {"max_abs_pct_error", s.max_abs_pct_error}});
  return {{"rows", rows},
          {"skipped", skipped},
          {"sources", sources},
          {"measured", r.measured},
          {"bound_violations", r.bound_violations},
          {"mean_abs_pct_error", r.mean_abs_pct_error},
          {"max_abs_pct_error", r.max_abs_pct_error}};
}

std::string format_memory_validation(const MemoryValidationReport& r) {
  std::string out = fmt::format("  {:>4}  {:<4} {:<26} {:<10} {:<14} {:>8} {:>9} {:>7}  {}\n", "row", "src", "model",
                                "metric", "rank", "measured", "predicted", "err%", "configuration");
  for (const auto& row : r.rows) {
    const bool bound = row.metric == MemoryMetric::kFitsBound;
    out += fmt::format("  {:>4}  {:<4} {:<26} {:<10} {:<14} {:>8} {:>9.2f} {:>7}  {}{}\n", row.row_id,
                       row.source_id, row.model.substr(0, 26), to_string(row.metric), to_string(row.rank),
                       bound ? fmt::format("<={:.2f}", row.bound_gib) : fmt::format("{:.2f}", row.measured_gib),
                       row.predicted_gib, bound ? (row.within_bound ? "ok" : "OVER") : fmt::format("{:+.1f}", row.pct_error),
                       calib_detail::compact(row.config),
                       bound && !row.within_bound ? "  FITS-BOUND VIOLATED: the run completed" : "");
    for (const auto& why : row.not_modelled) out += fmt::format("        not modelled: {}\n", why);
  }
  if (!r.skipped.empty()) {
    out += "\nskipped:\n";
    for (const auto& s : r.skipped) out += fmt::format("  {:>4}  {}\n", s.row_id, s.reason);
  }
  out += fmt::format("\n{:<7} {:>8} {:>10} {:>7} {:>10} {:>10} {:>9}\n", "source", "measured", "mean|err|%", "max%",
                     "bounds", "violations", "skipped");
  for (const auto& s : r.sources)
    out += fmt::format("{:<7} {:>8} {:>10.1f} {:>7.1f} {:>10} {:>10} {:>9}\n", s.source_id, s.measured,
                       s.mean_abs_pct_error, s.max_abs_pct_error, s.bounds, s.violations, s.skipped);
  out += fmt::format("\n{} measured rows: mean |error| {:.2f}%, max {:.2f}%; {} fits-bound rows, {} violations; {} skipped\n",
                     r.measured, r.mean_abs_pct_error, r.max_abs_pct_error,
                     r.rows.size() - static_cast<std::size_t>(r.measured), r.bound_violations, r.skipped.size());
  out += "breakdown and assumptions per row: --json lists them\n";
  return out;
}

}  // namespace paratune
