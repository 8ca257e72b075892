// One status line on stderr that rewrites itself ("\r"), shown only when stderr is a terminal: a
// piped or redirected run prints nothing extra. At most ten updates a second, so a caller may
// report as often as it likes; cut to the terminal's width (a wrapped line would not be erased);
// cleared when it goes out of scope.
#pragma once

#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace paratune::cli {

class ProgressLine {
 public:
  ProgressLine() : terminal_(::isatty(STDERR_FILENO) != 0) {}
  ~ProgressLine() { clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  [[nodiscard]] bool enabled() const { return terminal_; }

  // Erases the line (before the results are printed).
  void clear() {
    if (shown_) std::fputs("\r\033[K", stderr), std::fflush(stderr);
    shown_ = false;
  }

  void show(const std::string& text) {
    if (!terminal_) return;
    const auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    shown_ = true;
    winsize size{};
    const std::size_t width = ::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1 ? size.ws_col - 1 : 200;
    std::fprintf(stderr, "\r\033[K%s", text.substr(0, width).c_str());
    std::fflush(stderr);
  }

 private:
  bool terminal_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace paratune::cli
