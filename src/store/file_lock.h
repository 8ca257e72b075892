// One controller per SQLite study file: an advisory lock (flock) on the file itself, so a symlink or
// hard link to it meets the same lock; released by the kernel however the controller ends (a second
// controller would run the same trials again and kill the first one's). SqliteStudyStore's
// lock_controller, and in its shared form lock_worker (tune --worker).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <utility>

#include "paratune/store/study_store.h"

namespace paratune::store {

class FileLock final : public ControllerLock {
 public:
  // Throws Error naming the file when another controller -- in another process or this one -- holds it.
  // `shared`: a worker's lock (flock LOCK_SH): workers share it, a controller's excludes them all.
  explicit FileLock(const std::filesystem::path& store_path, bool shared = false);
  ~FileLock() override;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  std::pair<dev_t, ino_t> key_;  // the file's device and inode
  bool shared_ = false;
};

}  // namespace paratune::store
