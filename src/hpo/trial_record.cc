#include "paratune/hpo/trial_record.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "paratune/spec/error.h"

namespace paratune::hpo {
namespace {
constexpr std::array<const char*, 2> kDirectionNames{"minimize", "maximize"};
constexpr std::array<const char*, 4> kStateNames{"running", "completed", "pruned", "failed"};
}  // namespace

const char* to_string(Direction direction) { return kDirectionNames[static_cast<std::size_t>(direction)]; }

Direction parse_direction(std::string_view name) {
  for (std::size_t i = 0; i < kDirectionNames.size(); ++i)
    if (name == kDirectionNames[i]) return static_cast<Direction>(i);
  const std::vector<std::string> valid(kDirectionNames.begin(), kDirectionNames.end());
  throw Error(unknown_name_message("direction", name, valid));
}

const char* to_string(TrialRecord::State state) { return kStateNames[static_cast<std::size_t>(state)]; }

std::optional<double> value_at(const TrialRecord& trial, std::int64_t resource) {
  std::optional<double> value;
  for (const IntermediateValue& v : trial.curve) {
    if (v.step >= resource) break;
    value = v.value;
  }
  return value;
}

std::vector<IntermediateValue> throughput_curve(std::span<const double> step_times_s) {
  // Each point costs an estimate over the steps before it: past kMaxPoints steps the curve keeps
  // every stride-th step and the last (pruners read it as "the value at or before step s").
  constexpr std::size_t kMaxPoints = 256;
  const std::size_t stride = std::max<std::size_t>(1, step_times_s.size() / kMaxPoints);
  std::vector<IntermediateValue> curve;
  for (std::size_t n = 1; n <= step_times_s.size(); ++n) {
    if (n % stride != 0 && n != step_times_s.size()) continue;
    const trial::ThroughputEstimate e = trial::estimate_throughput(step_times_s.first(n));
    if (e.steps_used == 0) continue;
    curve.push_back({static_cast<std::int64_t>(n) - 1, e.steps_per_s});
  }
  return curve;
}

}  // namespace paratune::hpo
