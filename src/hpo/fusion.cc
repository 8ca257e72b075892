#include "paratune/hpo/fusion.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "paratune/hpo/surrogate.h"
#include "paratune/hpo/trainer_program.h"
#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/trial/command.h"

namespace paratune::hpo {
namespace {

bool is_fusable(const TrainerProgram& trainer, const std::string& name) {
  const std::vector<std::string> fusable = trainer.fusable_parameters();
  return std::find(fusable.begin(), fusable.end(), name) != fusable.end();
}

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024)); }

// The median step time after the first two (warm-up: allocation, first touches).
double steady_step_time(const std::vector<trial::StepReport>& steps) {
  if (steps.size() < 3) return 0;
  std::vector<double> times;
  for (std::size_t i = 2; i < steps.size(); ++i) times.push_back(steps[i].step_time_s);
  std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
  return times[times.size() / 2];
}

// The fusion setting in force, as a message names it: fuse_auto, or fuse and its size.
std::string fusion_setting(const HpoOptions& options) {
  return options.fuse_auto ? option_ref("fuse_auto") : fmt::format("{} {}", option_ref("fuse"), options.fuse);
}

// An error of the fusion setting in force.
OptionError fusion_error(const HpoOptions& options, const std::string& rule) {
  return options.fuse_auto ? OptionError("fuse_auto", "", rule)
                           : OptionError("fuse", std::to_string(options.fuse), rule);
}

// The study's trainer (hpo/trainer_program.h), which must fuse.
const TrainerProgram& fusing_trainer(const HpoOptions& options) {
  const TrainerProgram* trainer = trainer_of(options);
  if (!trainer || trainer->fusable_parameters().empty())
    throw fusion_error(
        options, fmt::format("fuses the trials of {} (PARATUNE_PARAMS as a JSON array), and the command runs '{}'",
                             paratune_train().name(), command_program(options.command)));
  return *trainer;
}

}  // namespace

void validate_fusion(const HpoOptions& options) {
  if (options.fuse < 1 || options.fuse > kMaxFusedTrials)
    throw OptionError("fuse", std::to_string(options.fuse),
                      fmt::format("must be a size from 1 to {} (or {})", kMaxFusedTrials, option_ref("fuse_auto")));
  if (options.fuse == 1 && !options.fuse_auto) return;
  (void)fusing_trainer(options);
  if (options.objective == kThroughputObjective)
    throw fusion_error(
        options,
        fmt::format("a fused trial has no throughput of its own (its group shares one process); give {} METRIC "
                    "and {}",
                    option_ref("objective"), option_ref("direction")));
  if (options.trial_ranks != 1)
    throw fusion_error(options, fmt::format("fused groups train on one slot; {} is {}", option_ref("trial_ranks"),
                                            options.trial_ranks));
  if (!options.strategy.empty() && options.strategy != "none")
    throw fusion_error(options, fmt::format("fused groups train in one process; {} {} needs several",
                                            option_ref("strategy"), options.strategy));
}

void check_fusion_space(const Space& space, const HpoOptions& options) {
  if (options.fuse == 1 && !options.fuse_auto) return;
  const TrainerProgram& trainer = fusing_trainer(options);
  if (space.index_of("ranks"))
    throw fusion_error(options, "fused groups train on one slot; the space's parameter 'ranks' gives trials several");
  std::set<std::string> all;
  for (const ParamSpec& p : space.parameters()) all.insert(p.name);
  for (const std::string& b : hpo_placeholders()) all.insert(b);
  const trial::CommandTemplate parsed(options.command, all);
  if (parsed.placeholders().contains("config"))
    throw fusion_error(options, fmt::format("the command uses {{config}}, which differs between fused trials; {} reads "
                                            "each trial's values from PARATUNE_PARAMS",
                                            trainer.name()));
  for (const ParamSpec& p : space.parameters())
    if (is_fusable(trainer, p.name) && parsed.placeholders().contains(p.name))
      throw OptionError("command", "",
                        fmt::format("{{{}}} differs between fused trials ({}), so it cannot be on their shared "
                                    "command line; {} reads it from PARATUNE_PARAMS (drop it from the command)",
                                    p.name, fusion_setting(options), trainer.name()));
}

std::string shared_key(const Config& config, const TrainerProgram& trainer) {
  nlohmann::ordered_json shared = nlohmann::ordered_json::object();
  for (const auto& [name, value] : config.items())
    if (!is_fusable(trainer, name)) shared[name] = value;
  return shared.dump();
}

trial::TrialOutput member_output(const trial::TrialOutput& group, int member) {
  trial::TrialOutput out;
  out.steps = group.steps;
  out.peak_memory_bytes = group.peak_memory_bytes;
  out.oom = group.oom;
  out.oom_line = group.oom_line;
  out.lines = group.lines;
  out.malformed_lines = group.malformed_lines;
  out.first_malformed = group.first_malformed;
  for (const trial::MetricReport& m : group.metrics)
    if (m.member == member) {
      out.metrics.push_back(m);
      out.metrics.back().member.reset();
    }
  for (const trial::MemberDivergence& d : group.diverged)
    if (d.member == member) out.diverged.push_back(d);
  return out;
}

std::optional<std::string> member_divergence(const trial::TrialOutput& group, int member) {
  for (const trial::MemberDivergence& d : group.diverged)
    if (d.member == member) return d.reason;
  return std::nullopt;
}

std::optional<double> extrapolated_memory(const std::vector<FusionProbeRun>& runs, int size) {
  std::optional<double> one, two;
  for (const FusionProbeRun& r : runs) {
    if (r.size == 1) one = r.peak_memory_bytes;
    if (r.size == 2) two = r.peak_memory_bytes;
  }
  if (!one || !two) return std::nullopt;
  // The process's own memory (libraries, data) once, plus each member's model, gradients and
  // optimizer state: m(B) = m(1) + (m(2) - m(1)) (B - 1).
  return *one + std::max(0.0, *two - *one) * (size - 1);
}

double full_trial_rate(int size, double step_time_s, double fixed_s, int steps) {
  const double seconds = std::max(0.0, fixed_s) + steps * step_time_s;
  return seconds > 0 ? size * static_cast<double>(steps) / seconds : 0;
}

FusionDecision decide_fusion(const std::vector<FusionProbeRun>& runs, double memory_budget_bytes, int cap) {
  FusionDecision d;
  if (runs.empty()) {
    d.next = 1;
    return d;
  }
  const FusionProbeRun* chosen = nullptr;
  int without_gain = 0;  // sizes in a row that did not beat the chosen one
  for (const FusionProbeRun& run : runs) {
    if (run.status != "completed" || run.step_time_s <= 0) {
      d.reason = run.status == "completed" ? fmt::format("B = {} reported too few steps to time", run.size)
                                           : fmt::format("B = {} ended {}", run.size, run.status);
      break;
    }
    if (memory_budget_bytes > 0 && run.peak_memory_bytes && *run.peak_memory_bytes > memory_budget_bytes) {
      d.reason = fmt::format("B = {} peaked at {}, over the budget of {}", run.size, gib(*run.peak_memory_bytes),
                             gib(memory_budget_bytes));
      break;
    }
    if (!chosen || run.trial_steps_per_s >= (1 + kFusionMinGain) * chosen->trial_steps_per_s) {
      chosen = &run;
      without_gain = 0;
    } else if (++without_gain == 2) {
      d.reason = fmt::format("B = {} and {} gain less than {:.0f}% over B = {} ({:.3g} trial-steps/s)", run.size / 2,
                             run.size, 100 * kFusionMinGain, chosen->size, chosen->trial_steps_per_s);
      break;
    }
  }
  d.chosen = chosen ? chosen->size : 1;
  if (!d.reason.empty()) return d;
  const int next = runs.back().size * 2;
  const std::optional<double> memory = extrapolated_memory(runs, next);
  if (next > cap)
    d.reason = fmt::format("B = {} is the largest allowed; B = {} has the best rate ({:.3g} trial-steps/s)",
                           runs.back().size, d.chosen, chosen ? chosen->trial_steps_per_s : 0.0);
  else if (memory_budget_bytes > 0 && memory && *memory > memory_budget_bytes)
    d.reason = fmt::format("B = {} would need about {} (extrapolated from B = 1 and 2), over the budget of {}", next,
                           gib(*memory), gib(memory_budget_bytes));
  else
    d.next = next;
  return d;
}

double available_memory_per_slot(int slots) {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line))
    if (line.starts_with("MemAvailable:")) {
      std::istringstream fields(line.substr(13));
      double kib = 0;
      if (fields >> kib) return kib * 1024 / std::max(1, slots);
    }
  return 0;
}

FusionProbe probe_fusion(const Space& space, const HpoOptions& options, const trial::Backend& backend,
                         const Config& config, const std::filesystem::path& dir,
                         const std::function<bool()>& should_stop) {
  FusionProbe probe;
  probe.memory_budget_bytes = options.limits.memory_limit_bytes > 0 ? options.limits.memory_limit_bytes
                                                                    : available_memory_per_slot(backend.slots());
  int cap = options.fuse_auto ? kMaxFusedTrials : options.fuse;
  if (options.max_trials > 0) cap = std::min(cap, options.max_trials);
  trial::TrialRunner runner(backend, trial::ParserOptions{options.step_time_regex});
  for (;;) {
    const FusionDecision decision = decide_fusion(probe.runs, probe.memory_budget_bytes, cap);
    if (!decision.next) {
      probe.chosen = decision.chosen;
      probe.reason = decision.reason;
      return probe;
    }
    const int size = *decision.next;
    FusionProbeRun run;
    run.size = size;
    run.predicted_memory_bytes = extrapolated_memory(probe.runs, size);
    trial::TrialLaunch launch = render_run(space, options, config, fmt::format("{}-fusion-probe-{}", options.name, size),
                                           dir / fmt::format("size-{}", size), kFusionProbeSteps, options.steps,
                                           options.strategy);
    nlohmann::ordered_json members = nlohmann::ordered_json::array();
    for (int b = 0; b < size; ++b) members.push_back(trial_params(options, config));
    if (size > 1) launch.params_json = members.dump();
    if (launch.limits.hang_s <= 0) launch.limits.hang_s = kFusionProbeHangS;
    runner.start(launch);
    std::vector<trial::TrialResult> ended;
    bool stopping = false;
    while (ended.empty()) {
      if (!stopping && should_stop()) {
        runner.interrupt_all("the study is stopping");
        stopping = true;
      }
      ended = runner.wait(0.25);
    }
    const trial::TrialResult& result = ended.front();
    if (result.status == trial::TrialStatus::kInterrupted) {
      probe.chosen = decide_fusion(probe.runs, probe.memory_budget_bytes, cap).chosen;
      probe.reason = "interrupted";
      return probe;
    }
    run.status = trial::to_string(result.status);
    run.step_time_s = steady_step_time(result.output.steps);
    run.fixed_s = std::max(0.0, result.ended_unix_s - result.started_unix_s -
                                    static_cast<double>(result.output.steps.size()) * run.step_time_s);
    if (run.step_time_s > 0) run.trial_steps_per_s = full_trial_rate(size, run.step_time_s, run.fixed_s, options.steps);
    run.peak_memory_bytes = result.output.peak_memory_bytes;
    probe.runs.push_back(run);
  }
}

nlohmann::ordered_json to_json(const FusionProbe& probe) {
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const FusionProbeRun& r : probe.runs) {
    nlohmann::ordered_json j{{"size", r.size}, {"status", r.status}, {"step_time_s", r.step_time_s},
                             {"fixed_s", r.fixed_s}, {"trial_steps_per_s", r.trial_steps_per_s}};
    j["peak_memory_bytes"] = r.peak_memory_bytes ? nlohmann::ordered_json(*r.peak_memory_bytes) : nullptr;
    if (r.predicted_memory_bytes) j["predicted_memory_bytes"] = *r.predicted_memory_bytes;
    runs.push_back(std::move(j));
  }
  return {{"runs", runs}, {"memory_budget_bytes", probe.memory_budget_bytes}, {"chosen", probe.chosen},
          {"reason", probe.reason}};
}

}  // namespace paratune::hpo
