// The study file of a `paratune tune` run, and when it is removed again.
#pragma once

#include <string>

namespace paratune::cli {

// A study file this run creates is removed again when the run fails before any trial is stored in
// it (a bad placeholder, an unsatisfiable option found after the store opened): an input error
// leaves nothing behind. Not for workers (`shared`): another worker may be starting on the same new
// file. Declared before the store, so that the store is closed first.
class NewStudyFile {
 public:
  NewStudyFile(const std::string& locator, bool shared);
  NewStudyFile(const NewStudyFile&) = delete;
  NewStudyFile& operator=(const NewStudyFile&) = delete;
  ~NewStudyFile();

 private:
  std::string path_;
};

}  // namespace paratune::cli
