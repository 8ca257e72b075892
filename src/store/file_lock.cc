#include "file_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "paratune/spec/error.h"

namespace paratune::store {

// The lock is taken on the study file itself (flock), so every path to it -- a symlink, a hard
// link, a relative path -- meets the same lock. (A lock on "PATH.lock" was per path: a second
// controller reached through a symlink re-ran every trial and killed the first one's.)
//
// The descriptor holding the flock is never closed while the process lives. SQLite keeps POSIX
// (fcntl) locks on the same file -- in WAL mode a shared lock for as long as a connection is open --
// and closing *any* descriptor of a file drops all of the process's POSIX locks on it (SQLite, "How
// To Corrupt An SQLite Database File", section 2.2), after which another process could checkpoint
// and delete the WAL under our connection. So one descriptor is opened per file (device, inode) and
// kept in a process-wide table; unlocking is LOCK_UN, never close(). The table also keeps count of
// this process's holders, which flock cannot tell apart (one open file description): a controller's
// lock excludes every other, workers' shares (ask/tell studies in several threads) add up.
namespace {

struct LockedFile {
  int fd = -1;
  bool exclusive = false;  // a controller in this process holds it
  int shared = 0;          // workers in this process that hold a share
};

std::mutex lock_table_mutex;
std::map<std::pair<dev_t, ino_t>, LockedFile> lock_table;  // guarded by lock_table_mutex

}  // namespace

FileLock::FileLock(const std::filesystem::path& store_path, bool shared) {
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(store_path, ec);
  const std::string shown =
      ec || real == std::filesystem::absolute(store_path) ? store_path.string()
                                                          : fmt::format("{} (the file {})", store_path.string(), real.string());
  const std::lock_guard<std::mutex> guard(lock_table_mutex);
  struct stat info {};
  if (::stat(store_path.c_str(), &info) != 0)
    throw Error(fmt::format("study file {}: cannot lock it: {}", shown, std::strerror(errno)));
  auto found = lock_table.find({info.st_dev, info.st_ino});
  if (found == lock_table.end()) {
    const int fd = ::open(store_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw Error(fmt::format("study file {}: cannot open it to lock it: {}", shown, std::strerror(errno)));
    // Keyed by what was opened (the path may have been replaced since the stat); never closed.
    if (::fstat(fd, &info) != 0) info.st_ino = 0, info.st_dev = 0;
    found = lock_table.try_emplace({info.st_dev, info.st_ino}, LockedFile{fd, false}).first;
  }
  LockedFile& file = found->second;
  const bool here = file.exclusive || (!shared && file.shared > 0);  // refused by this process's holders
  const bool joins = shared && file.shared > 0;                       // the file's share is held already
  if (here || (!joins && ::flock(file.fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0)) {
    if (shared)
      throw Error(fmt::format("study file {}: a paratune controller (not a worker) is running this study file ({}); "
                              "workers join a study file that only workers run",
                              shown, here ? "in this process" : "it holds the file's lock"));
    throw Error(
        fmt::format("study file {}: another paratune controller is running this study file ({}); one "
                    "controller per study file at a time, through whatever path or link",
                    shown, here ? "in this process" : "it, or workers, hold the file's lock"));
  }
  if (shared) ++file.shared;
  else file.exclusive = true;
  shared_ = shared;
  key_ = found->first;
}

FileLock::~FileLock() {
  const std::lock_guard<std::mutex> guard(lock_table_mutex);
  LockedFile& file = lock_table.at(key_);
  if (shared_) --file.shared;
  else file.exclusive = false;
  if (!file.exclusive && file.shared == 0) ::flock(file.fd, LOCK_UN);
}

}  // namespace paratune::store
