#include "paratune/store/study_copy.h"

#include <fmt/format.h>

#include "paratune/spec/error.h"

namespace paratune::store {

CopySummary copy_studies(const StudyStore& from, StudyStore& to, const std::string& name, const std::string& new_name) {
  if (!new_name.empty() && name.empty())
    throw Error(fmt::format("copy as '{}': name the one study to copy (several cannot take one name)", new_name));
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
  if (!new_name.empty()) summary.studies.front() = content.front().info.name = new_name;
  to.import_studies(content);
  return summary;
}

std::int64_t delete_study(StudyStore& store, const std::string& name) {
  std::vector<std::string> names;
  for (const StudyInfo& s : store.studies()) {
    if (s.name != name) {
      names.push_back(s.name);
      continue;
    }
    // Held while deleting: a controller or worker starting now waits for, or is refused by, it.
    const std::unique_ptr<ControllerLock> lock = store.lock_controller(name);
    return store.delete_study(s.id);
  }
  if (names.empty()) throw Error(fmt::format("{}: unknown study '{}': it holds no study", store.locator(), name));
  throw Error(fmt::format("{}: {}", store.locator(), unknown_name_message("study", name, names)));
}

}  // namespace paratune::store
