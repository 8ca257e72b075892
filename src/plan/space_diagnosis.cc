// Why a constrained search space is empty (plan/space.h why_no_candidate): the planner's answer to
// `--fix tp=3` on 16 GPUs is an error naming that constraint and the values tp can take, not "no
// configuration fits" with advice about memory that no change of memory would satisfy.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <climits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "paratune/plan/space.h"
#include "paratune/spec/enums.h"

namespace paratune::plan {
namespace {

// The value a candidate has on an axis (grad_sync is level 2's choice: no candidate has one).
std::optional<int> value_of(const Candidate& c, Axis axis) {
  switch (axis) {
    case Axis::kDp: return c.dp;
    case Axis::kTp: return c.tp;
    case Axis::kPp: return c.pp;
    case Axis::kCp: return c.cp;
    case Axis::kEp: return c.ep;
    case Axis::kEtp: return c.etp;
    case Axis::kMbs: return c.mbs;
    case Axis::kVpp: return c.vpp;
    case Axis::kZero: return c.zero;
    case Axis::kOp: return c.op;
    case Axis::kSequenceParallel: return c.sequence_parallel;
    case Axis::kSchedule: return static_cast<int>(c.schedule);
    case Axis::kRecompute: return static_cast<int>(c.recompute);
    case Axis::kEpOverlap: return c.ep_overlap;
    case Axis::kDispatcher: return static_cast<int>(c.dispatcher);
    case Axis::kOffload: return c.offload_modules != 0 ? 1 : 0;
    case Axis::kGradSync: return std::nullopt;
  }
  return std::nullopt;
}

// A value as the constraints write it: a degree, true/false, a schedule or recompute mode's name.
std::string value_text(Axis axis, int value) {
  switch (axis) {
    case Axis::kSequenceParallel:
    case Axis::kEpOverlap:
    case Axis::kOffload: return value != 0 ? "true" : "false";
    case Axis::kSchedule: return to_string(static_cast<Schedule>(value));
    case Axis::kRecompute: return to_string(static_cast<RecomputeMode>(value));
    case Axis::kDispatcher: return to_string(static_cast<MoeDispatcher>(value));
    default: return std::to_string(value);
  }
}

bool constrained(const AxisRule& rule) { return !rule.allowed.empty() || rule.max != INT_MAX; }

// "tp=3", "zero=0,1", "pp<=4", "mbs=1,2 and mbs<=1".
std::string rule_text(Axis axis, const AxisRule& rule) {
  const std::string_view key = axis_name(axis);
  std::vector<std::string> parts;
  if (!rule.allowed.empty()) {
    std::vector<std::string> values;
    values.reserve(rule.allowed.size());
    for (const int v : rule.allowed) values.push_back(value_text(axis, v));
    parts.push_back(fmt::format("{}={}", key, fmt::join(values, ",")));
  }
  if (rule.max != INT_MAX) parts.push_back(fmt::format("{}<={}", key, rule.max));
  return fmt::format("{}", fmt::join(parts, " and "));
}

}  // namespace

std::string why_no_candidate(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                             const SearchSpace& space) {
  // The values each axis takes in the space without constraints: the default micro-batch cap kept,
  // unless the constraints on mbs lift it (as they do in the search: `--fix mbs=32` is not capped).
  SearchSpace open;
  open.max_mbs = space.max_mbs;
  const AxisRule& mbs = space.rule(Axis::kMbs);
  if (mbs.max != INT_MAX) open.max_mbs = std::max(open.max_mbs, mbs.max);
  for (const int v : mbs.allowed) open.max_mbs = std::max(open.max_mbs, v);
  std::array<std::set<int>, kAxisCount> takes;
  long long candidates = 0;
  const auto count = [&](const Candidate& c) {
    ++candidates;
    for (int a = 0; a < kAxisCount; ++a)
      if (const std::optional<int> v = value_of(c, static_cast<Axis>(a))) takes[static_cast<std::size_t>(a)].insert(*v);
  };
  for (const MeshShape& mesh : mesh_shapes(model, cluster, training, open))
    enumerate_mesh(model, training, open, mesh, [](const Candidate&) {}, count);
  if (candidates == 0) return "";

  std::vector<std::string> alone, all;
  for (int a = 0; a < kAxisCount; ++a) {
    const Axis axis = static_cast<Axis>(a);
    const AxisRule& rule = space.rule(axis);
    if (axis == Axis::kGradSync || !constrained(rule)) continue;
    all.push_back(rule_text(axis, rule));
    const std::set<int>& values = takes[static_cast<std::size_t>(a)];
    bool any = false;
    for (const int v : values) any = any || space.permits(axis, v);
    if (any) continue;
    std::vector<std::string> names;
    names.reserve(values.size());
    for (const int v : values) names.push_back(value_text(axis, v));
    std::string hint;
    if (axis == Axis::kEp || axis == Axis::kEtp || axis == Axis::kEpOverlap || axis == Axis::kDispatcher)
      hint = model.moe ? "" : " (the model has no experts)";
    else if (axis == Axis::kTp)
      hint = fmt::format(" (a degree must divide the GPUs and split the model's {} attention heads, {} KV heads "
                         "and FFN width {} evenly)",
                         model.num_attention_heads, model.kv_heads(), model.ffn_hidden_size);
    alone.push_back(
        fmt::format("{}: {} takes {} here{}", rule_text(axis, rule), axis_name(axis), fmt::join(names, ", "), hint));
  }
  if (!alone.empty())
    return fmt::format("search space: no configuration of {} on {} GPUs satisfies {}", model.name, cluster.num_gpus(),
                       fmt::join(alone, "; "));
  if (all.empty()) return "";
  return fmt::format("search space: each constraint alone leaves configurations of {} on {} GPUs, but together "
                     "none: {}",
                     model.name, cluster.num_gpus(), fmt::join(all, ", "));
}

}  // namespace paratune::plan
