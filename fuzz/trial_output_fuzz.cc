// What a running trial prints, line by line (trial/protocol.h, OutputParser::feed): `@paratune`
// protocol lines, Megatron-LM's iteration and memory log lines, out-of-memory messages and lines a
// --step-time-regex matches. An input whose first line starts with "regex:" sets that regex (RE2
// syntax) for the rest; then one that starts with "token:" sets the backend token, so that a
// wrapping backend's queued/started/ended lines are read too.
// Properties: every line is counted; steps and memory reported are finite and positive; a protocol
// step once seen keeps other step sources out.
#include <cmath>

#include "fuzz_target.h"
#include "paratune/trial/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace paratune;
  std::string_view text = fuzz::as_text(data, size);
  trial::ParserOptions options;
  if (text.starts_with("regex:")) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    options.step_time_regex = std::string(text.substr(6, end - 6));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  if (text.starts_with("token:")) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    options.backend_token = std::string(text.substr(6, end - 6));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return fuzz::expect_result_or_error([&] {
    trial::OutputParser parser(options);  // Error: the regex does not compile or has no group
    std::int64_t lines = 0;
    while (!text.empty()) {
      const std::size_t end = std::min(text.find('\n'), text.size());
      const trial::LineReport report = parser.feed(text.substr(0, end));
      ++lines;
      text.remove_prefix(std::min(end + 1, text.size()));
      if (report.kind == trial::LineReport::Kind::kStep)
        fuzz::require(std::isfinite(report.step.step_time_s) && report.step.step_time_s > 0 && report.step.step >= 0,
                      "a step has a finite positive time and a step number >= 0");
      if (report.kind == trial::LineReport::Kind::kPeakMemory)
        fuzz::require(std::isfinite(report.peak_memory_bytes) && report.peak_memory_bytes >= 0,
                      "a memory report is finite and >= 0");
    }
    fuzz::require(parser.output().lines == lines, "every line is counted");
    // Backend lines count only with the token.
    if (options.backend_token.empty())
      fuzz::require(!parser.output().queued && !parser.output().ended && parser.output().location.empty(),
                    "without a backend token no queued, started or ended line counts");
    if (parser.output().ended)
      fuzz::require(parser.output().ended->status == "oom" || parser.output().ended->status == "timeout" ||
                        parser.output().ended->status == "failed" || parser.output().ended->status == "interrupted",
                    "an ended line's status is one the runner knows");
  });
}
