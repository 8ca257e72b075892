// Self-contained HTML views: `plan --html`, `simulate --html`, `paratune report`, and the pages of
// `paratune dashboard`. One file each, opening offline: Apache ECharts (the chart library, from the
// npm registry, embedded at build time: cmake/embed_web.cmake), paratune's own script and styles
// (web/src/report.js, report.css) and the view's data as JSON are all inlined. The script draws the
// view `data["view"]` names:
//   "plan"      data = plan --json, plus "timeline" (the winner's simulated events, chrome_trace)
//               and "launch" (the emitted launch text, if any);
//   "simulate"  data = simulate --json, plus "timeline";
//   "study"     data = study_data (report/study_data.h); with "live": {"url", "poll_ms"} the page
//               polls that URL for the same document and redraws (the dashboard).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "paratune/sim/pipeline.h"
#include "paratune/store/study_store.h"

namespace paratune {

// The page: `title` (escaped) and `data` inlined. Strings that are not valid UTF-8 (a trial's
// output in a reason) are written with U+FFFD in their place.
std::string html_page(const std::string& title, const nlohmann::ordered_json& data);
// The same with the data given as embeddable_json text (the dashboard keeps its document as text).
std::string html_page_with_json(const std::string& title, const std::string& json);

// `text` with & < > " as character references: safe as HTML or SVG text and attribute values.
std::string escape_markup(std::string_view text);

// `data` as JSON text safe inside an HTML <script> element and as an HTTP response: '<', '>' and
// '&' escaped as \u003c, \u003e, \u0026; invalid UTF-8 replaced.
std::string embeddable_json(const nlohmann::ordered_json& data);

// The views (each adds "view", "title" and what it draws besides the --json document):
// `plan --html`: `plan_json` as `plan --json` prints it; the winner's simulated iteration when there
// is a winner (`winner` and its `problem`, else null).
std::string plan_html(nlohmann::ordered_json plan_json, const sim::SimulationResult* winner,
                      const sim::PipelineProblem* problem, const std::string& title);
// `simulate --html`: `sim_json` as `simulate --json` prints it, with the result it came from.
std::string simulate_html(nlohmann::ordered_json sim_json, const sim::SimulationResult& result,
                          const sim::PipelineProblem& problem, const std::string& title);
// `paratune report`: the study's data (report/study_data.h).
std::string study_html(const store::StudyStore& store, const store::StudyInfo& study);

}  // namespace paratune
