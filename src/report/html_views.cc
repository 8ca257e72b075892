// The data each HTML view draws (report/html_page.h): the --json document of its command, plus
// what only the picture needs (the simulated events of a timeline).
#include <fmt/format.h>

#include "paratune/report/html_page.h"
#include "paratune/report/sim_report.h"
#include "paratune/report/study_data.h"

namespace paratune {

std::string plan_html(nlohmann::ordered_json plan_json, const sim::SimulationResult* winner,
                      const sim::PipelineProblem* problem, const std::string& title) {
  plan_json["view"] = "plan";
  plan_json["title"] = title;
  if (winner && problem) {
    plan_json["simulation"] = nlohmann::ordered_json(to_json(*winner, *problem));
    // A winner too long to draw (require_drawable) leaves its timeline out of the page, not the page.
    if (winner->event_count <= kMaxDrawnEvents) {
      plan_json["timeline"] = nlohmann::ordered_json(chrome_trace(*winner, *problem));
      plan_json["timeline_colors"] = nlohmann::ordered_json(timeline_colours());
    }
  }
  return html_page(title, plan_json);
}

std::string simulate_html(nlohmann::ordered_json sim_json, const sim::SimulationResult& result,
                          const sim::PipelineProblem& problem, const std::string& title) {
  sim_json["view"] = "simulate";
  sim_json["title"] = title;
  sim_json["timeline"] = nlohmann::ordered_json(chrome_trace(result, problem));
  sim_json["timeline_colors"] = nlohmann::ordered_json(timeline_colours());
  return html_page(title, sim_json);
}

std::string study_html(const store::StudyStore& store, const store::StudyInfo& study) {
  nlohmann::ordered_json data = study_data(store, study);
  data["view"] = "study";
  data["locator"] = store.locator();
  return html_page(fmt::format("paratune study '{}'", study.name), data);
}

}  // namespace paratune
