#include "paratune/spec/error.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace paratune {

Error Error::with_context(std::string_view context) const {
  return Error(std::string(context) + ": " + what());
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closest_match(std::string_view name, std::span<const std::string> candidates) {
  // A suggestion is only useful when it is plausibly a typo: at most a third of the name differs.
  const std::size_t limit = std::max<std::size_t>(2, name.size() / 3);
  std::string best;
  std::size_t best_distance = std::string::npos;
  for (const auto& candidate : candidates) {
    // The distance is at least the difference in length: skip what cannot be close enough (keeps a
    // long unknown name from costing a full edit-distance table per candidate).
    const std::size_t length_gap = name.size() > candidate.size() ? name.size() - candidate.size()
                                                                  : candidate.size() - name.size();
    if (length_gap > limit) continue;
    const std::size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best_distance <= limit ? best : std::string();
}

std::string join(std::span<const std::string> names, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out += separator;
    out += names[i];
  }
  return out;
}

std::string unknown_name_message(std::string_view what, std::string_view name,
                                 std::span<const std::string> valid) {
  std::string message = "unknown " + std::string(what) + " '" + std::string(name) + "'";
  // A name that starts a valid one is a short form of it ("h100" for "h100-sxm", "h100-pcie"): those
  // are the suggestions, before any name a typo away ("h800").
  std::vector<std::string> extended;
  if (!name.empty())
    for (const std::string& v : valid)
      if (v.size() > name.size() && v.starts_with(name)) extended.push_back("'" + v + "'");
  const std::string suggestion = closest_match(name, valid);
  if (!extended.empty() && extended.size() <= 4) message += " (did you mean " + join(extended, " or ") + "?)";
  else if (!suggestion.empty()) message += " (did you mean '" + suggestion + "'?)";
  message += "; valid: " + join(valid);
  return message;
}

}  // namespace paratune
