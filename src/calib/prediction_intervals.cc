#include "paratune/calib/prediction_intervals.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "../spec/json_reader.h"
#include "paratune/calib/published_mfu.h"

namespace paratune {

std::string prediction_class(const ModelSpec& model, const GpuSpec& gpu, Precision precision) {
  const char* kind = model.moe ? "moe" : "dense";
  const char* numbers = precision == Precision::kFP8 ? "fp8" : "bf16";  // FP16 runs as BF16 does
  return fmt::format("{} {} {}", kind, gpu_generation(gpu), numbers);
}

namespace {

// The q-quantile of sorted values, linear between order statistics (Hyndman-Fan type 7, numpy's default).
double quantile(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (position - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

// True iteration time / predicted - 1, in percent. pct_error = (predicted - published) /
// published in the row's metric: for a time the true time is published = predicted / (1 + e);
// for a rate (tokens/s, TFLOP/s, MFU) the true time is predicted time x (1 + e).
double true_time_error_pct(const RowResult& row) {
  const double e = row.pct_error / 100;
  const double ratio = row.metric == "iteration_time_s" ? 1 / (1 + e) : 1 + e;
  return 100 * (ratio - 1);
}

}  // namespace

IntervalTable interval_table(const std::vector<RowResult>& held_out) {
  std::map<std::string, std::vector<double>> errors;
  for (const RowResult& row : held_out) {
    const double e = true_time_error_pct(row);
    errors[row.prediction_class].push_back(e);
    errors[row.prediction_class.substr(0, row.prediction_class.find(' '))].push_back(e);  // "dense" / "moe"
    errors["all"].push_back(e);
  }
  IntervalTable table;
  for (auto& [cls, values] : errors) {
    std::sort(values.begin(), values.end());
    table[cls] = IntervalClass{static_cast<int>(values.size()), quantile(values, 0.05), quantile(values, 0.95)};
  }
  return table;
}

PredictionInterval interval_for(const IntervalTable& table, const std::string& cls) {
  for (const std::string& candidate : {cls, cls.substr(0, cls.find(' ')), std::string("all")}) {
    const auto it = table.find(candidate);
    if (it != table.end() && it->second.rows >= kMinIntervalRows) return {candidate, it->second};
  }
  return {"", {}};
}

std::string describe(const PredictionInterval& interval) {
  if (interval.taken_from.empty()) return "no interval: fewer than 5 held-out rows";
  return fmt::format("{:+.0f}%/{:+.0f}%: 90% of the held-out errors of {} {} rows, leave-one-source-out",
                     interval.interval.low_pct, interval.interval.high_pct, interval.interval.rows, interval.taken_from);
}

nlohmann::json to_json(const IntervalTable& table) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [cls, c] : table) out[cls] = {{"rows", c.rows}, {"low_pct", c.low_pct}, {"high_pct", c.high_pct}};
  return out;
}

IntervalTable interval_table_from_json(const nlohmann::json& doc, const std::string& source) {
  if (!doc.is_object()) throw Error(fmt::format("{}: must be an object of class -> interval", source));
  IntervalTable table;
  for (const auto& [cls, entry] : doc.items()) {
    detail::JsonReader r(entry, fmt::format("{}: {}", source, cls), {"rows", "low_pct", "high_pct"});
    IntervalClass c;
    c.rows = r.get_int("rows", 0);
    c.low_pct = r.get_double("low_pct", 0);
    c.high_pct = r.get_double("high_pct", 0);
    r.finish();
    if (c.rows < 1 || !(c.low_pct <= c.high_pct) || !(c.low_pct > -100))
      throw Error(fmt::format("{}: {}: needs rows >= 1 and -100 < low_pct <= high_pct (got {}, {}, {})", source, cls,
                              c.rows, c.low_pct, c.high_pct));
    table[cls] = c;
  }
  return table;
}

}  // namespace paratune
