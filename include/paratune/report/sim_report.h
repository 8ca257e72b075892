// Rendering a pipeline replay (sim::SimulationResult) for machines (JSON, Chrome trace) and people
// (text summary, SVG timeline).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "paratune/sim/pipeline.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/training.h"

namespace paratune {

// {"iteration_time_s", "pipeline_time_s", "bubble_fraction", "event_count", "schedule", "grad_sync",
//  "microbatches", "stages": [{"stage", "busy_s", "idle_s", "bubble_s", "compute_s",
//  "blocking_comm_s", "compute_end_s", "end_s", "peak_activation_bytes", "peak_memory_bytes",
//  "idle_intervals": [{"start_s", "end_s", "duration_s", "free_memory_bytes"}]}],
//  "critical_path": {"events", "seconds_by_kind": {...}, "stages": [...]}}
nlohmann::json to_json(const sim::SimulationResult& result, const sim::PipelineProblem& problem);

// Chrome trace-event format (the JSON object form: {"traceEvents": [...]}) for Perfetto and
// chrome://tracing: one process per pipeline stage ("stage r"), threads "compute", "p2p" and
// "grad sync"; complete events ("ph": "X", microseconds) named like "F mb3" or "B mb3 c1"; a counter
// track "activations" per stage in GiB; and the critical path as flow arrows.
// `simulate --json`'s document: to_json(result, problem) with the configuration replayed (its fields
// and, as "text", its string) and the tokens per second of `training`'s batch.
// Whether every stage's peak memory is within its usable memory (the GPU's less the margin), as
// estimate's `fits`; none when the problem states no usable memory (not judged).
std::optional<bool> fits_in_memory(const sim::SimulationResult& result, const sim::PipelineProblem& problem);

// A timeline of every event (chrome_trace, svg_timeline, simulate_html) past a million events (a
// trace of ~250 MB, several GB while built) is more than any viewer shows usefully: throws Error
// saying so, before the memory is spent.
inline constexpr std::int64_t kMaxDrawnEvents = 1'000'000;
void require_drawable(const sim::SimulationResult& result, const sim::PipelineProblem& problem);

nlohmann::json simulation_json(const sim::SimulationResult& result, const sim::PipelineProblem& problem,
                               const ParallelConfig& config, const TrainingSpec& training);
nlohmann::json chrome_trace(const sim::SimulationResult& result, const sim::PipelineProblem& problem);

// The colour of each kind of event ({"F": "#4C78A8", ...}, keyed as chrome_trace's "cat") and of
// idle time ("idle"): the one palette of svg_timeline and of the HTML views' timelines (plan_html and
// simulate_html put it in the page for web/src/report.js).
nlohmann::json timeline_colours();

// A self-contained SVG timeline: one row per stage (compute stream, with a thin communication strip
// under it), passes coloured by kind, idle time shaded, a legend and a time axis.
std::string svg_timeline(const sim::SimulationResult& result, const sim::PipelineProblem& problem,
                         const std::string& title, const std::string& subtitle = "");

// Text summary: per-stage table, bubbles, critical path.
std::string format_simulation(const sim::SimulationResult& result, const sim::PipelineProblem& problem);

}  // namespace paratune
