// Reading a file the user named, whole, with limits.
//
// Every input paratune reads whole (model and cluster files, calibration files, search spaces,
// published-runs CSVs, trial-parameter lists) comes through here, so none of them can make
// paratune read forever (/dev/zero, a FIFO nobody writes to) or swallow a file far larger than
// any real input. Errors name the file, what it was meant to be and the rule.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace paratune {

// The largest input file paratune reads: 64 MiB. The biggest real inputs (a published-runs CSV,
// a Hugging Face config.json, a search space listing thousands of points) are well under 1 MiB.
inline constexpr std::uintmax_t kMaxInputFileBytes = 64ull << 20;

// The whole content of `path`, a regular file of at most `max_bytes`. `what` names the input in
// errors ("model file", "search space file"). Throws paratune::Error for a missing or unreadable
// file, a directory, a FIFO, a device or a socket, a file over the limit (also one that grows
// past it while being read), and content that is not UTF-8 (naming the line and column).
std::string read_input_file(const std::string& path, std::string_view what,
                            std::uintmax_t max_bytes = kMaxInputFileBytes);

// Throws Error "<source>: line L, column C: byte 0xFF is not UTF-8 ..." unless `text` is UTF-8
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF): what read_input_file checks,
// for text that comes from elsewhere (the parse-from-text entry points). Every string read from an
// input may be written out again as JSON, which holds only UTF-8.
void check_utf8(std::string_view text, std::string_view source);
// The offset of the first byte that is not part of valid UTF-8, or npos.
std::size_t first_non_utf8(std::string_view text);

// `bytes` made safe to store, print and write as JSON: valid UTF-8 is kept, each byte that is not
// part of it becomes the four characters \xNN, and control characters other than tab and newline
// (NUL, ESC, CR, DEL, U+0080-U+009F) become \xNN or \uNNNN, so a terminal shows them instead of
// obeying them. For text paratune did not write and cannot refuse: a trial's stderr line, a
// scheduler's message.
std::string printable_text(std::string_view bytes);

}  // namespace paratune
