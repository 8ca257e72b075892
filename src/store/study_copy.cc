#include "paratune/store/study_copy.h"

#include <fmt/format.h>

#include "paratune/spec/error.h"

namespace paratune::store {

CopySummary copy_studies(const StudyStore& from, StudyStore& to, const std::string& name) {
  const std::vector<StudyInfo> studies = from.studies();
  if (studies.empty()) throw Error(fmt::format("{}: holds no study to copy", from.locator()));
  std::vector<StudyContent> content;
  std::vector<std::string> names;
  CopySummary summary;
  for (const StudyInfo& s : studies) {
    names.push_back(s.name);
    if (!name.empty() && s.name != name) continue;
    content.push_back({s, from.trials(s.id, /*with_steps=*/true)});
    summary.studies.push_back(s.name);
    for (const StoredTrial& t : content.back().trials) {
      ++summary.trials;
      summary.steps += static_cast<std::int64_t>(t.step_times_s.size());
      summary.metrics += static_cast<std::int64_t>(t.metrics.size());
    }
  }
  if (content.empty()) throw Error(fmt::format("{}: {}", from.locator(), unknown_name_message("study", name, names)));
  to.import_studies(content);
  return summary;
}

}  // namespace paratune::store
