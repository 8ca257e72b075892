#include "new_study_file.h"

#include <exception>
#include <filesystem>
#include <memory>
#include <system_error>

#include "paratune/store/study_store.h"

namespace paratune::cli {

NewStudyFile::NewStudyFile(const std::string& locator, bool shared) {
  std::error_code ec;
  if (!shared && !store::is_postgres_locator(locator) && !std::filesystem::exists(locator, ec) && !ec)
    path_ = locator;
}

NewStudyFile::~NewStudyFile() {
  if (path_.empty() || std::uncaught_exceptions() == 0) return;
  try {
    const std::unique_ptr<store::StudyStore> store = store::open_store(path_, store::Access::kReadOnly);
    for (const store::StudyInfo& s : store->studies())
      if (!store->trials(s.id).empty()) return;
  } catch (...) {
    return;  // not a study file we can read: leave it
  }
  std::error_code ignored;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + suffix, ignored);
}

}  // namespace paratune::cli
