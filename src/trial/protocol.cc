#include "paratune/trial/protocol.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"

namespace paratune::trial {
namespace {

constexpr std::string_view kPrefix = "@paratune ";
constexpr double kMiB = 1024.0 * 1024.0;

// Out-of-memory messages of PyTorch, JAX/XLA and C++ allocators.
// The last two are Slurm's (slurmstepd with jobacct_gather's OverMemoryKill, and with cgroups).
constexpr std::array<std::string_view, 7> kOomMessages{"CUDA out of memory", "OutOfMemoryError", "std::bad_alloc",
                                                       "RESOURCE_EXHAUSTED", "HIP out of memory",
                                                       "Exceeded job memory limit", "oom_kill event"};
// A "started" line's location is stored with the trial: a line, not a log.
constexpr std::size_t kMaxLocationBytes = 200;

// The number that follows `key` in `line` (spaces allowed between), if any.
std::optional<double> number_after(std::string_view line, std::string_view key) {
  const std::size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t pos = at + key.size();
  while (pos < line.size() && line[pos] == ' ') ++pos;
  double value = 0;
  const auto [end, ec] = std::from_chars(line.data() + pos, line.data() + line.size(), value);
  if (ec != std::errc() || end == line.data() + pos) return std::nullopt;
  return value;
}

bool is_integer(const nlohmann::json& v) { return v.is_number_integer() || v.is_number_unsigned(); }

// A JSON integer from 0 to INT64_MAX (an unsigned above it is not a step number).
bool is_step_number(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX);
  return v.is_number_integer() && v.get<std::int64_t>() >= 0;
}

const std::string kStepTimeRule =
    fmt::format("a finite number of seconds from {:g} to {:g}", kMinStepTimeS, kMaxStepTimeS);
const std::string kPeakMemoryRule = fmt::format("a finite number of bytes from 0 to {:g}", kMaxPeakMemoryBytes);

}  // namespace

bool plausible_step_time(double seconds) {
  return std::isfinite(seconds) && seconds >= kMinStepTimeS && seconds <= kMaxStepTimeS;
}

bool plausible_peak_memory(double bytes) { return std::isfinite(bytes) && bytes >= 0 && bytes <= kMaxPeakMemoryBytes; }

OutputParser::OutputParser(const ParserOptions& options) : backend_token_(options.backend_token) {
  if (options.step_time_regex.empty()) return;
  RE2::Options re2_options;
  re2_options.set_log_errors(false);
  auto compiled = std::make_shared<const re2::RE2>(options.step_time_regex, re2_options);
  if (!compiled->ok())
    throw OptionError("step_time_regex", fmt::format("'{}'", options.step_time_regex),
                      fmt::format("not a valid regular expression in RE2 syntax ({})", compiled->error()));
  step_regex_ = std::move(compiled);
  if (step_regex_->NumberOfCapturingGroups() < 1)
    throw OptionError("step_time_regex", fmt::format("'{}'", options.step_time_regex),
                      "needs a group ( ... ) around the step time in seconds");
}

LineReport OutputParser::parse_protocol(std::string_view text) {
  LineReport r;
  auto malformed = [&](std::string problem) {
    r.kind = LineReport::Kind::kMalformed;
    r.problem = std::move(problem);
    return r;
  };
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return malformed("not valid JSON");
  if (!j.is_object()) return malformed("not a JSON object");
  auto keys_are = [&](std::initializer_list<std::string_view> allowed) -> std::optional<std::string> {
    for (const auto& [key, value] : j.items())
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) return key;
    return std::nullopt;
  };
  if (j.contains("step_time_s")) {
    if (auto extra = keys_are({"step", "step_time_s"})) return malformed(fmt::format("unknown key '{}'", *extra));
    const auto& step = j.contains("step") ? j["step"] : nlohmann::json();
    const auto& time = j["step_time_s"];
    if (!is_step_number(step)) return malformed("'step' must be an integer >= 0");
    if (!time.is_number() || !plausible_step_time(time.get<double>()))
      return malformed(fmt::format("'step_time_s' {} must be {}", time.dump(), kStepTimeRule));
    r.kind = LineReport::Kind::kStep;
    r.step = {step.get<std::int64_t>(), time.get<double>()};
    return r;
  }
  if (j.contains("peak_memory_bytes")) {
    if (auto extra = keys_are({"peak_memory_bytes"})) return malformed(fmt::format("unknown key '{}'", *extra));
    const auto& bytes = j["peak_memory_bytes"];
    if (!bytes.is_number() || !plausible_peak_memory(bytes.get<double>()))
      return malformed(fmt::format("'peak_memory_bytes' {} must be {}", bytes.dump(), kPeakMemoryRule));
    r.kind = LineReport::Kind::kPeakMemory;
    r.peak_memory_bytes = bytes.get<double>();
    return r;
  }
  // A fused group's member: an integer >= 0.
  const bool member_ok = !j.contains("member") || (is_integer(j["member"]) && j["member"].get<std::int64_t>() >= 0 &&
                                                   j["member"].get<std::int64_t>() < (1 << 20));
  if (j.contains("diverged")) {
    if (auto extra = keys_are({"member", "diverged"})) return malformed(fmt::format("unknown key '{}'", *extra));
    if (!j.contains("member") || !member_ok) return malformed("'member' must be an integer >= 0");
    if (!j["diverged"].is_string()) return malformed("'diverged' must be a string (why)");
    r.kind = LineReport::Kind::kDiverged;
    r.diverged = {j["member"].get<int>(), j["diverged"].get<std::string>()};
    return r;
  }
  if (j.contains("metric")) {
    if (auto extra = keys_are({"metric", "value", "step", "member"})) return malformed(fmt::format("unknown key '{}'", *extra));
    if (!member_ok) return malformed("'member' must be an integer >= 0");
    // No NUL: a name is stored as text (PostgreSQL's text cannot hold one).
    if (!j["metric"].is_string() || j["metric"].get<std::string>().empty() ||
        j["metric"].get<std::string>().find('\0') != std::string::npos)
      return malformed("'metric' must be a non-empty string without NUL characters");
    if (!j.contains("value") || !j["value"].is_number() || !std::isfinite(j["value"].get<double>()))
      return malformed("'value' must be a finite number");
    if (j.contains("step") && !is_step_number(j["step"])) return malformed("'step' must be an integer >= 0");
    r.kind = LineReport::Kind::kMetric;
    r.metric.name = j["metric"].get<std::string>();
    r.metric.value = j["value"].get<double>();
    if (j.contains("step")) r.metric.step = j["step"].get<std::int64_t>();
    if (j.contains("member")) r.metric.member = j["member"].get<int>();
    return r;
  }
  if (j.contains("oom")) {
    if (auto extra = keys_are({"oom"})) return malformed(fmt::format("unknown key '{}'", *extra));
    if (j["oom"] != true) return malformed("'oom' must be true");
    r.kind = LineReport::Kind::kOom;
    return r;
  }
  if (j.contains("checkpoint_step")) {
    if (auto extra = keys_are({"checkpoint_step", "in_memory"})) return malformed(fmt::format("unknown key '{}'", *extra));
    if (!is_step_number(j["checkpoint_step"])) return malformed("'checkpoint_step' must be an integer >= 0");
    if (j.contains("in_memory") && !j["in_memory"].is_boolean()) return malformed("'in_memory' must be true or false");
    r.kind = LineReport::Kind::kCheckpoint;
    r.checkpoint_step = j["checkpoint_step"].get<std::int64_t>();
    r.checkpoint_in_memory = j.value("in_memory", false);
    return r;
  }
  // A serving program's lines (docs/trial-protocol.md, "Serving").
  if (j.contains("serve")) {
    if (auto extra = keys_are({"serve"})) return malformed(fmt::format("unknown key '{}'", *extra));
    if (j["serve"] != kServeVersion) return malformed(fmt::format("'serve' must be {} (the protocol version)", kServeVersion));
    r.kind = LineReport::Kind::kServe;
    r.serve_version = kServeVersion;
    return r;
  }
  if (j.contains("done")) {
    if (auto extra = keys_are({"done", "failed"})) return malformed(fmt::format("unknown key '{}'", *extra));
    if (!j["done"].is_string() || j["done"].get<std::string>().empty())
      return malformed("'done' must be the trial id of the assignment (a non-empty string)");
    if (j.contains("failed") && (!j["failed"].is_string() || j["failed"].get<std::string>().empty()))
      return malformed("'failed' must be a non-empty string (why)");
    r.kind = LineReport::Kind::kDone;
    r.done_trial = j["done"].get<std::string>();
    r.done_failure = j.value("failed", std::string());
    return r;
  }
  // A wrapping backend's lines: only with this trial's backend token.
  if (j.contains("queued") || j.contains("started") || j.contains("ended")) {
    if (backend_token_.empty() || !j.contains("token") || j["token"] != backend_token_)
      return malformed("queued, started and ended lines are the backend's (they need its token)");
  }
  for (const char* key : {"queued", "started"})
    if (j.contains(key)) {
      if (auto extra = keys_are({key, "token"})) return malformed(fmt::format("unknown key '{}'", *extra));
      if (!j[key].is_string() || j[key].get<std::string>().empty() || j[key].get<std::string>().size() > kMaxLocationBytes)
        return malformed(fmt::format("'{}' must be a non-empty string of at most {} bytes (where)", key, kMaxLocationBytes));
      r.kind = std::string_view(key) == "queued" ? LineReport::Kind::kQueued : LineReport::Kind::kStarted;
      r.location = j[key].get<std::string>();
      return r;
    }
  if (j.contains("ended")) {
    if (auto extra = keys_are({"ended", "reason", "token"})) return malformed(fmt::format("unknown key '{}'", *extra));
    const auto& status = j["ended"];
    if (!status.is_string() || (status != "oom" && status != "timeout" && status != "failed" && status != "interrupted"))
      return malformed("'ended' must be one of oom, timeout, failed, interrupted");
    if (j.contains("reason") && !j["reason"].is_string()) return malformed("'reason' must be a string");
    r.kind = LineReport::Kind::kEnded;
    r.ended = {status.get<std::string>(), j.value("reason", std::string())};
    return r;
  }
  return malformed(
      "none of step_time_s, peak_memory_bytes, metric, oom, checkpoint_step, diverged, queued, started, ended, serve, "
      "done");
}

// A step from a log line: a plausible time, and a step number that is a whole number from 0 to
// 2^53 (a double's exact integers) if the line has one, else the one after the last.
LineReport OutputParser::step_line(double seconds, std::optional<double> step) const {
  LineReport r;
  if (!plausible_step_time(seconds)) {
    r.kind = LineReport::Kind::kMalformed;
    r.problem = fmt::format("step time {} s must be {}", seconds, kStepTimeRule);
    return r;
  }
  if (step && !(*step >= 0 && *step <= 0x1p53 && *step == std::floor(*step))) {
    r.kind = LineReport::Kind::kMalformed;
    r.problem = fmt::format("step number {} must be a whole number from 0 to 2^53", *step);
    return r;
  }
  r.kind = LineReport::Kind::kStep;
  r.step = {step ? static_cast<std::int64_t>(*step) : implicit_step_ + 1, seconds};
  return r;
}

LineReport OutputParser::memory_line(double bytes) {
  LineReport r;
  if (!plausible_peak_memory(bytes)) {
    r.kind = LineReport::Kind::kMalformed;
    r.problem = fmt::format("peak memory {} bytes must be {}", bytes, kPeakMemoryRule);
    return r;
  }
  r.kind = LineReport::Kind::kPeakMemory;
  r.peak_memory_bytes = bytes;
  return r;
}

LineReport OutputParser::feed(std::string_view line) {
  ++output_.lines;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  LineReport r;
  if (line.starts_with(kPrefix)) {
    r = parse_protocol(line.substr(kPrefix.size()));
    if (r.kind == LineReport::Kind::kStep && !protocol_steps_) {
      protocol_steps_ = true;
      output_.steps.clear();  // steps from log lines before it would be counted twice
    }
  } else if (std::any_of(kOomMessages.begin(), kOomMessages.end(),
                         [&](std::string_view m) { return line.find(m) != std::string_view::npos; })) {
    r.kind = LineReport::Kind::kOom;
  } else if (auto ms = number_after(line, "elapsed time per iteration (ms):"); ms && !protocol_steps_) {
    // Megatron-LM training log: " iteration       10/     100 | ... | elapsed time per iteration (ms): 1234.5 | ..."
    r = step_line(*ms / 1000, number_after(line, "iteration"));
  } else if (auto reserved = number_after(line, "max reserved:");
             reserved && line.find("memory (MB)") != std::string_view::npos) {
    // Megatron-LM: "[Rank 0] (after 10 iterations) memory (MB) | allocated: ... | max allocated: X |
    // reserved: ... | max reserved: Y" — what the caching allocator holds is what runs out.
    r = memory_line(*reserved * kMiB);
  } else if (auto allocated = number_after(line, "max allocated:");
             allocated && line.find("memory (MB)") != std::string_view::npos) {
    r = memory_line(*allocated * kMiB);
  } else if (step_regex_ && !protocol_steps_) {
    // Group 1 the step time, group 2 (if the regex has one) the step number.
    const std::string_view matched = line.substr(0, std::min(line.size(), kMaxMatchedLineBytes));
    std::array<re2::StringPiece, 3> groups;
    const int wanted = std::min(3, 1 + step_regex_->NumberOfCapturingGroups());
    if (step_regex_->Match(re2::StringPiece(matched.data(), matched.size()), 0, matched.size(), RE2::UNANCHORED,
                           groups.data(), wanted) &&
        groups[1].data() != nullptr) {
      // The line matched: a time that is not a plausible number makes it malformed (counted).
      double seconds = std::numeric_limits<double>::quiet_NaN();
      const std::string text(groups[1].data(), groups[1].size());
      if (const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
          ec != std::errc() || end != text.data() + text.size())
        seconds = std::numeric_limits<double>::quiet_NaN();
      // A step-number group that matched must hold a whole number (NaN: malformed).
      std::optional<double> step;
      if (wanted > 2 && groups[2].data() != nullptr) {
        double number = 0;
        const auto [end, ec] = std::from_chars(groups[2].data(), groups[2].data() + groups[2].size(), number);
        step = ec == std::errc() && end == groups[2].data() + groups[2].size() ? number
                                                                                : std::numeric_limits<double>::quiet_NaN();
      }
      r = step_line(seconds, step);
    }
  }

  switch (r.kind) {
    case LineReport::Kind::kStep:
      output_.steps.push_back(r.step);
      implicit_step_ = r.step.step;
      break;
    case LineReport::Kind::kPeakMemory:
      output_.peak_memory_bytes = std::max(output_.peak_memory_bytes.value_or(0), r.peak_memory_bytes);
      break;
    case LineReport::Kind::kMetric: output_.metrics.push_back(r.metric); break;
    case LineReport::Kind::kDiverged: output_.diverged.push_back(r.diverged); break;
    case LineReport::Kind::kOom:
      if (!output_.oom) output_.oom_line = std::string(line.substr(0, 500));
      output_.oom = true;
      break;
    case LineReport::Kind::kMalformed:
      if (output_.malformed_lines++ == 0) output_.first_malformed = r.problem;
      break;
    case LineReport::Kind::kCheckpoint:
      output_.checkpoint_step = r.checkpoint_step;
      output_.checkpoint_in_memory = r.checkpoint_in_memory;
      break;
    case LineReport::Kind::kServe:
    case LineReport::Kind::kDone: break;  // the runner's (runner.h, serving)
    case LineReport::Kind::kQueued: output_.queued = true; break;
    case LineReport::Kind::kStarted:
      output_.location = r.location;
      output_.queued = false;
      break;
    case LineReport::Kind::kEnded:
      if (!output_.ended) output_.ended = r.ended;
      break;
    case LineReport::Kind::kNothing: break;
  }
  return r;
}

}  // namespace paratune::trial
