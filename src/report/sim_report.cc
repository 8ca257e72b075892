#include "paratune/report/sim_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "paratune/report/html_page.h"
#include "paratune/spec/io.h"
#include "paratune/spec/units.h"

namespace paratune {
namespace {

using sim::Event;
using sim::EventKind;
using sim::Lane;

const char* lane_name(Lane lane) {
  switch (lane) {
    case Lane::kCompute: return "compute";
    case Lane::kP2P: return "p2p";
    case Lane::kGradSync: return "grad sync";
  }
  return "?";
}

// "F mb3", "B mb3 c1", "send gradient mb3 -> stage 1", "grad sync c0".
std::string event_name(const Event& e, int chunks) {
  std::string name = to_string(e.kind);
  if (e.microbatch >= 0) name += fmt::format(" mb{}", e.microbatch);
  if (e.chunk >= 0 && (chunks > 1 || e.kind == EventKind::kGradSync)) name += fmt::format(" c{}", e.chunk);
  if (e.peer >= 0) name += fmt::format(" -> stage {}", e.peer);
  return name;
}

// Seconds on the critical path by event kind ("F", "B", "send gradient", ...).
std::map<std::string, double> critical_seconds_by_kind(const sim::SimulationResult& r) {
  std::map<std::string, double> by_kind;
  for (int i : r.critical_path) {
    const Event& e = r.events[static_cast<std::size_t>(i)];
    by_kind[to_string(e.kind)] += e.end_s - e.start_s;
  }
  return by_kind;
}

std::vector<bool> critical_mask(const sim::SimulationResult& r) {
  std::vector<bool> mask(r.events.size(), false);
  for (int i : r.critical_path) mask[static_cast<std::size_t>(i)] = true;
  return mask;
}

// Colours (Tableau 10) by event kind: the one table for the SVG, its legend and, through
// timeline_colours(), the HTML views' timelines.
const char* colour(EventKind kind) {
  switch (kind) {
    case EventKind::kForward: return "#4C78A8";
    case EventKind::kBackward:
    case EventKind::kBackwardInput: return "#F58518";  // ZB-H1's input-gradient pass: a backward's colour
    case EventKind::kBackwardWeight: return "#EECA3B";
    case EventKind::kSendForward: return "#72B7B2";
    case EventKind::kSendBackward: return "#54A24B";
    case EventKind::kGradSync: return "#E45756";
    case EventKind::kOptimizer: return "#B279A2";
    case EventKind::kParamGather: return "#FF9DA6";
    case EventKind::kOverhead: return "#9D9D9D";
  }
  return "#000000";
}
constexpr const char* kIdleColour = "#EDEDED";

// A tick step of 1, 2 or 5 x 10^k giving about `target` ticks over `span`.
double nice_step(double span, int target) {
  const double raw = span / target;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (f * power >= raw) return f * power;
  return 10 * power;
}

// The memory verdict estimate gives, from the replay: the stage fullest against its usable memory
// (the GPU's less the margin), and whether every stage fits. None when the problem states no limit.
struct MemoryVerdict {
  bool fits = true;
  std::size_t fullest = 0;
  double peak_bytes = 0, usable_bytes = 0;
};
std::optional<MemoryVerdict> memory_verdict(const sim::SimulationResult& r, const sim::PipelineProblem& problem) {
  std::optional<MemoryVerdict> v;
  for (std::size_t i = 0; i < r.stages.size() && i < problem.stages.size(); ++i) {
    const double usable = problem.stages[i].usable_memory_bytes;
    if (usable <= 0) return std::nullopt;
    const double peak = r.stages[i].peak_memory_bytes;
    if (!v || peak / usable > v->peak_bytes / v->usable_bytes) {
      const bool fits = v ? v->fits : true;
      v = MemoryVerdict{fits, i, peak, usable};
    }
    v->fits = v->fits && peak <= usable;
  }
  return v;
}

}  // namespace

nlohmann::json to_json(const sim::SimulationResult& r, const sim::PipelineProblem& problem) {
  nlohmann::json stages = nlohmann::json::array();
  for (std::size_t i = 0; i < r.stages.size(); ++i) {
    const sim::StageResult& s = r.stages[i];
    nlohmann::json idle = nlohmann::json::array();
    for (const auto& iv : s.idle_intervals)
      idle.push_back({{"start_s", iv.start_s},
                      {"end_s", iv.end_s},
                      {"duration_s", iv.end_s - iv.start_s},
                      {"free_memory_bytes", iv.free_memory_bytes}});
    stages.push_back({{"stage", i},
                      {"busy_s", s.busy_s},
                      {"idle_s", s.idle_s},
                      {"bubble_s", s.bubble_s},
                      {"compute_s", s.compute_s},
                      {"blocking_comm_s", s.blocking_comm_s},
                      {"compute_end_s", s.compute_end_s},
                      {"update_start_s", s.update_start_s},
                      {"end_s", s.end_s},
                      {"peak_activation_bytes", s.peak_activation_bytes},
                      {"static_memory_bytes", problem.stages[i].static_memory_bytes},
                      {"peak_memory_bytes", s.peak_memory_bytes},
                      {"usable_memory_bytes", problem.stages[i].usable_memory_bytes},
                      {"idle_intervals", idle}});
  }
  std::vector<int> path_stages;  // stages the path visits, in order
  for (int i : r.critical_path) {
    const int stage = r.events[static_cast<std::size_t>(i)].stage;
    if (path_stages.empty() || path_stages.back() != stage) path_stages.push_back(stage);
  }
  nlohmann::json j = {{"iteration_time_s", r.iteration_time_s},
          {"pipeline_time_s", r.pipeline_time_s},
          {"bubble_fraction", r.bubble_fraction},
          {"event_count", r.event_count},
          {"schedule", to_string(problem.schedule)},
          {"grad_sync", to_string(problem.grad_sync)},
          {"microbatches", problem.microbatches},
          {"stages", stages},
          {"critical_path",
           {{"events", r.critical_path.size()},
            {"seconds_by_kind", critical_seconds_by_kind(r)},
            {"stages", path_stages}}}};
  // As estimate's `fits`: every stage's peak within its usable memory (absent when not judged).
  if (const std::optional<bool> fits = fits_in_memory(r, problem)) j["fits"] = *fits;
  return j;
}

std::optional<bool> fits_in_memory(const sim::SimulationResult& result, const sim::PipelineProblem& problem) {
  const std::optional<MemoryVerdict> v = memory_verdict(result, problem);
  return v ? std::optional<bool>(v->fits) : std::nullopt;
}

void require_drawable(const sim::SimulationResult& result, const sim::PipelineProblem& problem) {
  if (result.event_count <= kMaxDrawnEvents) return;
  throw Error(fmt::format("the replay has {} events ({} micro-batches x {} stages), more than the {} a timeline can "
                          "usefully show; replay fewer micro-batches (a smaller global batch gives the same "
                          "per-micro-batch timeline), or ask for the totals only",
                          result.event_count, problem.microbatches, problem.ranks(), kMaxDrawnEvents));
}

nlohmann::json simulation_json(const sim::SimulationResult& result, const sim::PipelineProblem& problem,
                               const ParallelConfig& config, const TrainingSpec& training) {
  nlohmann::json j = to_json(result, problem);
  j["config"] = to_json(config);
  j["config"]["text"] = to_string(config);
  const double tokens = static_cast<double>(training.global_batch) * training.seq_len;
  j["tokens_per_s"] = tokens / result.iteration_time_s;
  return j;
}

nlohmann::json timeline_colours() {
  nlohmann::json out = nlohmann::json::object();
  for (EventKind kind : {EventKind::kForward, EventKind::kBackward, EventKind::kBackwardInput, EventKind::kBackwardWeight,
                         EventKind::kSendForward, EventKind::kSendBackward, EventKind::kGradSync, EventKind::kOptimizer,
                         EventKind::kParamGather, EventKind::kOverhead})
    out[to_string(kind)] = colour(kind);
  out["idle"] = kIdleColour;
  return out;
}

nlohmann::json chrome_trace(const sim::SimulationResult& r, const sim::PipelineProblem& problem) {
  require_drawable(r, problem);
  nlohmann::json events = nlohmann::json::array();
  const int chunks = problem.chunks();
  for (int s = 0; s < problem.ranks(); ++s) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", s}, {"args", {{"name", fmt::format("stage {}", s)}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", s}, {"args", {{"sort_index", s}}}});
    for (Lane lane : {Lane::kCompute, Lane::kP2P, Lane::kGradSync})
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", s},
                        {"tid", static_cast<int>(lane)},
                        {"args", {{"name", lane_name(lane)}}}});
  }
  const std::vector<bool> critical = critical_mask(r);
  constexpr double kUs = 1e6;
  for (std::size_t i = 0; i < r.events.size(); ++i) {
    const Event& e = r.events[i];
    nlohmann::json args{{"microbatch", e.microbatch}, {"chunk", e.chunk}, {"critical", critical[i]}};
    if (e.peer >= 0) args["to_stage"] = e.peer;
    events.push_back({{"ph", "X"},
                      {"name", event_name(e, chunks)},
                      {"cat", to_string(e.kind)},
                      {"pid", e.stage},
                      {"tid", static_cast<int>(e.lane)},
                      {"ts", e.start_s * kUs},
                      {"dur", (e.end_s - e.start_s) * kUs},
                      {"args", args}});
  }
  for (std::size_t s = 0; s < r.stages.size(); ++s)
    for (const sim::MemoryPoint& point : r.stages[s].activation_timeline)
      events.push_back({{"ph", "C"},
                        {"name", "activations"},
                        {"pid", s},
                        {"ts", point.time_s * kUs},
                        {"args", {{"GiB", point.activation_bytes / units::kGiB}}}});
  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"generator", "paratune simulate"},
            {"schedule", to_string(problem.schedule)},
            {"grad_sync", to_string(problem.grad_sync)},
            {"iteration_time_s", r.iteration_time_s}}}};
}

std::string svg_timeline(const sim::SimulationResult& r, const sim::PipelineProblem& problem, const std::string& title,
                         const std::string& subtitle) {
  require_drawable(r, problem);
  const int p = problem.ranks();
  const double width = 1200, left = 80, right = 20, top = 62;
  const double lane_h = p <= 16 ? 26 : std::max(4.0, 416.0 / p);
  const double strip_h = std::max(2.0, lane_h * 0.3), gap = std::max(2.0, lane_h * 0.3);
  const double row_h = lane_h + strip_h + gap;
  const double plot_w = width - left - right;
  const double total = r.iteration_time_s > 0 ? r.iteration_time_s : 1;
  const double scale = plot_w / total;
  const double axis_y = top + p * row_h + 4;
  const double legend_y = axis_y + 40;
  const double height = legend_y + 30;
  auto x = [&](double t) { return left + t * scale; };

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\" "
      "font-family=\"Helvetica, Arial, sans-serif\">\n",
      width, height, width, height);
  out += fmt::format("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  out += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}</text>\n", left,
                     escape_markup(title));
  out += fmt::format("<text x=\"{}\" y=\"37\" font-size=\"10\" fill=\"#444\">{}</text>\n", left, escape_markup(subtitle));
  out += fmt::format(
      "<text x=\"{}\" y=\"52\" font-size=\"11\" fill=\"#444\">iteration {}, bubble {:.1f}% of compute, schedule {}, "
      "grad sync {}, {} micro-batches</text>\n",
      left, units::format_duration(r.iteration_time_s), 100 * r.bubble_fraction, to_string(problem.schedule),
      to_string(problem.grad_sync), problem.microbatches);

  // Rows: stage label, idle background (the compute lane is idle wherever no event covers it).
  for (int s = 0; s < p; ++s) {
    const double y = top + s * row_h;
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"{:.0f}\" text-anchor=\"end\">stage {}</text>\n",
                       left - 8, y + lane_h * 0.5 + 4, std::min(12.0, lane_h), s);
    out += fmt::format("<rect x=\"{}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", left, y, plot_w,
                       lane_h, kIdleColour);
  }
  const std::vector<bool> critical = critical_mask(r);
  const int chunks = problem.chunks();
  for (std::size_t i = 0; i < r.events.size(); ++i) {
    const Event& e = r.events[i];
    const double y0 = top + e.stage * row_h;
    const bool on_compute = e.lane == Lane::kCompute;
    const double y = on_compute ? y0 : y0 + lane_h + 1;
    const double h = on_compute ? lane_h : strip_h;
    const double w = std::max(0.5, (e.end_s - e.start_s) * scale);
    const std::string stroke = critical[i] && on_compute ? " stroke=\"#000\" stroke-width=\"1\"" : "";
    out += fmt::format("<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\"{}><title>{} "
                       "[{} - {}]</title></rect>\n",
                       x(e.start_s), y, w, h, colour(e.kind), stroke, escape_markup(event_name(e, chunks)),
                       units::format_duration(e.start_s), units::format_duration(e.end_s));
    if (on_compute && e.microbatch >= 0 && w >= 16 && lane_h >= 14)
      out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"9\" fill=\"white\" text-anchor=\"middle\">{}</text>\n",
                         x(e.start_s) + w / 2, y + lane_h / 2 + 3, e.microbatch);
  }

  // Time axis.
  out += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", left, axis_y,
                     left + plot_w, axis_y);
  const double step = nice_step(total, 10);
  for (double t = 0; t <= total * 1.0000001; t += step) {
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", x(t), axis_y,
                       x(t), axis_y + 5);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"middle\">{}</text>\n", x(t),
                       axis_y + 17, units::format_duration(t));
  }
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"#444\" text-anchor=\"middle\">time "
                     "(compute stream tall, P2P and gradient reduction in the strip under it)</text>\n",
                     left + plot_w / 2, axis_y + 31);

  // Legend.
  struct Entry {
    const char* label;
    const char* fill;
  };
  const std::vector<Entry> legend{{"forward", colour(EventKind::kForward)},
                                  {"backward (B)", colour(EventKind::kBackward)},
                                  {"weight grad (W)", colour(EventKind::kBackwardWeight)},
                                  {"send activation", colour(EventKind::kSendForward)},
                                  {"send gradient", colour(EventKind::kSendBackward)},
                                  {"grad sync", colour(EventKind::kGradSync)},
                                  {"optimizer", colour(EventKind::kOptimizer)},
                                  {"param gather", colour(EventKind::kParamGather)},
                                  {"overhead", colour(EventKind::kOverhead)},
                                  {"idle", kIdleColour}};
  double lx = left;
  for (const Entry& entry : legend) {
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\" stroke=\"#999\" "
                       "stroke-width=\"0.5\"/>\n",
                       lx, legend_y, entry.fill);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">{}</text>\n", lx + 16, legend_y + 10,
                       entry.label);
    lx += 22 + 6.2 * std::string(entry.label).size();
  }
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">black outline: critical path</text>\n", lx,
                     legend_y + 10);
  out += "</svg>\n";
  return out;
}

std::string format_simulation(const sim::SimulationResult& r, const sim::PipelineProblem& problem) {
  using units::format_bytes;
  using units::format_duration;
  std::string out;
  out += fmt::format("schedule {}, grad sync {}, {} stages x {} chunks, {} micro-batches, {} events replayed\n",
                     to_string(problem.schedule), to_string(problem.grad_sync), problem.ranks(), problem.chunks(),
                     problem.microbatches, r.event_count);
  out += fmt::format("iteration time   {}\n", format_duration(r.iteration_time_s));
  out += fmt::format("pipeline flush   {}\n", format_duration(r.pipeline_time_s));
  out += fmt::format("bubble fraction  {:.2f}% (idle / compute before the flush, all stages)\n\n",
                     100 * r.bubble_fraction);
  out += fmt::format("  {:>5} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>6}\n", "stage", "busy", "compute",
                     "blocking", "bubble", "idle", "peak act", "peak mem", "gaps");
  for (std::size_t i = 0; i < r.stages.size(); ++i) {
    const sim::StageResult& s = r.stages[i];
    out += fmt::format("  {:>5} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>6}\n", i, format_duration(s.busy_s),
                       format_duration(s.compute_s), format_duration(s.blocking_comm_s), format_duration(s.bubble_s),
                       format_duration(s.idle_s), format_bytes(s.peak_activation_bytes),
                       format_bytes(s.peak_memory_bytes), s.idle_intervals.size());
  }
  if (const std::optional<MemoryVerdict> v = memory_verdict(r, problem))
    out += fmt::format("\npeak {} (stage {}) of {} usable: {}\n", format_bytes(v->peak_bytes), v->fullest,
                       format_bytes(v->usable_bytes),
                       v->fits ? "fits" : "DOES NOT FIT (the times above assume it ran)");
  if (!r.critical_path.empty()) {
    out += fmt::format("\ncritical path: {} events;", r.critical_path.size());
    for (const auto& [kind, seconds] : critical_seconds_by_kind(r)) out += fmt::format(" {} {},", kind, format_duration(seconds));
    out.back() = '\n';
  }
  // The largest bubbles: where trials or other work could be packed.
  struct Gap {
    std::size_t stage;
    sim::IdleInterval interval;
  };
  std::vector<Gap> gaps;
  for (std::size_t s = 0; s < r.stages.size(); ++s)
    for (const auto& iv : r.stages[s].idle_intervals) gaps.push_back({s, iv});
  std::stable_sort(gaps.begin(), gaps.end(), [](const Gap& a, const Gap& b) {
    return a.interval.end_s - a.interval.start_s > b.interval.end_s - b.interval.start_s;
  });
  if (!gaps.empty()) {
    out += "\nlargest idle intervals (stage, start, length, free memory):\n";
    for (std::size_t i = 0; i < std::min<std::size_t>(5, gaps.size()); ++i)
      out += fmt::format("  stage {:<3} at {:>11} for {:>11}  {} free\n", gaps[i].stage,
                         format_duration(gaps[i].interval.start_s),
                         format_duration(gaps[i].interval.end_s - gaps[i].interval.start_s),
                         format_bytes(gaps[i].interval.free_memory_bytes));
  }
  return out;
}

}  // namespace paratune
