// One controller per SQLite study file: an advisory lock (flock) on the file itself, so a symlink or
// hard link to it meets the same lock; released by the kernel however the controller ends (a second
// controller would run the same trials again and kill the first one's). SqliteStudyStore's
// lock_controller.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <utility>

#include "paratune/store/study_store.h"

namespace paratune::store {

class FileLock final : public ControllerLock {
 public:
  // Throws Error naming the file when another controller -- in another process or this one -- holds it.
  explicit FileLock(const std::filesystem::path& store_path);
  ~FileLock() override;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  std::pair<dev_t, ino_t> key_;  // the file's device and inode
};

}  // namespace paratune::store
