#include "paratune/hpo/trial_record.h"

#include <fmt/format.h>

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

}  // namespace paratune::hpo
