#include "paratune/spec/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
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

// "<source>: line L, column C: byte 0xFF is not UTF-8 (<rule>)" for the byte at `at`.
Error not_utf8(std::string_view text, std::size_t at, std::string_view source, std::string_view rule) {
  const std::size_t newline = text.rfind('\n', at);
  const std::size_t line_start = newline == std::string_view::npos ? 0 : newline + 1;
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  return Error(fmt::format("{}: line {}, column {}: byte 0x{:02X} is not UTF-8 ({})", source, line, at - line_start + 1,
                           static_cast<unsigned char>(text[at]), rule));
}

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
  // Every input is text; a stray Latin-1 byte would otherwise surface much later (a name that
  // cannot be written as JSON).
  if (const std::size_t bad = first_non_utf8(content); bad != std::string_view::npos)
    throw not_utf8(content, bad, path, fmt::format("a {} must be UTF-8 text", what));
  return content;
}

std::size_t first_non_utf8(std::string_view text) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char b = byte(i);
    if (b < 0x80) {
      ++i;
      continue;
    }
    // The sequence's length and the range of its second byte (RFC 3629, section 4: the ranges
    // exclude overlong forms, UTF-16 surrogates and code points above U+10FFFF).
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) length = 2;
    else if (b == 0xE0) length = 3, low = 0xA0;
    else if (b == 0xED) length = 3, high = 0x9F;
    else if (b >= 0xE1 && b <= 0xEF) length = 3;
    else if (b == 0xF0) length = 4, low = 0x90;
    else if (b >= 0xF1 && b <= 0xF3) length = 4;
    else if (b == 0xF4) length = 4, high = 0x8F;
    bool valid = length > 0 && i + length <= text.size() && byte(i + 1) >= low && byte(i + 1) <= high;
    for (std::size_t k = 2; valid && k < length; ++k) valid = byte(i + k) >= 0x80 && byte(i + k) <= 0xBF;
    if (!valid) return i;
    i += length;
  }
  return std::string_view::npos;
}

std::string printable_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t bad = first_non_utf8(bytes.substr(i));
    const std::string_view valid = bytes.substr(i, bad == std::string_view::npos ? bytes.size() - i : bad);
    for (std::size_t k = 0; k < valid.size(); ++k) {
      const auto c = static_cast<unsigned char>(valid[k]);
      if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7F) {
        out += fmt::format("\\x{:02X}", c);
      } else if (c == 0xC2 && k + 1 < valid.size() && static_cast<unsigned char>(valid[k + 1]) <= 0x9F) {
        out += fmt::format("\\u{:04X}", static_cast<unsigned char>(valid[k + 1]));  // a C1 control, U+0080-U+009F
        ++k;
      } else {
        out += valid[k];
      }
    }
    i += valid.size();
    if (i < bytes.size()) out += fmt::format("\\x{:02X}", static_cast<unsigned char>(bytes[i++]));
  }
  return out;
}

void check_utf8(std::string_view text, std::string_view source) {
  if (const std::size_t bad = first_non_utf8(text); bad != std::string_view::npos)
    throw not_utf8(text, bad, source, "paratune reads UTF-8 text");
}

}  // namespace paratune
