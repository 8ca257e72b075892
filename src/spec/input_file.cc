#include "paratune/spec/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "paratune/spec/error.h"
#include "paratune/spec/units.h"

namespace paratune {
namespace {

std::string_view kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Closes the descriptor on every way out.
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_input_file(const std::string& path, std::string_view what, std::uintmax_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer for ever. The type
  // is checked on the open descriptor (fstat), so a file swapped after a stat cannot slip past.
  const Descriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (file.fd < 0)
    throw Error(fmt::format("{}: cannot open the {}: {}", path, what, std::strerror(errno)));
  struct stat info {};
  if (::fstat(file.fd, &info) != 0)
    throw Error(fmt::format("{}: cannot read the {}: {}", path, what, std::strerror(errno)));
  if (!S_ISREG(info.st_mode))
    throw Error(fmt::format("{}: is {}; a {} must be a regular file", path, kind_of(info.st_mode), what));
  const auto too_large = [&] {
    return Error(fmt::format("{}: the {} is larger than {} (the limit for any input paratune reads)", path, what,
                             units::format_bytes(static_cast<double>(max_bytes))));
  };
  if (static_cast<std::uintmax_t>(info.st_size) > max_bytes) throw too_large();

  std::string content;
  content.reserve(static_cast<std::size_t>(info.st_size));
  char chunk[1 << 16];
  for (;;) {
    const ssize_t got = ::read(file.fd, chunk, sizeof chunk);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Error(fmt::format("{}: cannot read the {}: {}", path, what, std::strerror(errno)));
    }
    if (got == 0) break;
    if (content.size() + static_cast<std::size_t>(got) > max_bytes) throw too_large();  // grew while read
    content.append(chunk, static_cast<std::size_t>(got));
  }
  return content;
}

}  // namespace paratune
