// Simulation outputs: JSON fields, the Chrome trace format, the SVG (rendered by a real renderer).
#include "paratune/report/sim_report.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "../test_util.h"
#include "paratune/cost/estimate.h"
#include "paratune/report/html_page.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/presets.h"

namespace paratune {
namespace {

struct Replayed {
  sim::PipelineProblem problem;
  sim::SimulationResult result;
};

Replayed llama_replay(const char* config) {
  const ModelSpec m = find_model_preset("llama3-8b").spec;
  Replayed r;
  r.problem = pipeline_problem(m, testing::dgx_h100(1), testing::training(4096, 16), parse_parallel_config(config));
  r.result = sim::simulate(r.problem);
  return r;
}

TEST(SimReport, JsonHasTheDocumentedFields) {
  const Replayed r = llama_replay("dp=2,tp=1,pp=4,mbs=1");
  const nlohmann::json j = to_json(r.result, r.problem);
  for (const char* key : {"iteration_time_s", "bubble_fraction", "pipeline_time_s", "stages", "critical_path"})
    EXPECT_TRUE(j.contains(key)) << key;
  ASSERT_EQ(j["stages"].size(), 4u);
  for (const auto& stage : j["stages"]) {
    for (const char* key : {"busy_s", "idle_s", "peak_activation_bytes", "idle_intervals"})
      EXPECT_TRUE(stage.contains(key)) << key;
    EXPECT_NEAR(stage["busy_s"].get<double>() + stage["idle_s"].get<double>(), j["iteration_time_s"].get<double>(), 1e-9);
  }
  const auto& first_gap = j["stages"][3]["idle_intervals"][0];  // the last stage waits for the first forward
  EXPECT_EQ(first_gap["start_s"].get<double>(), 0.0);
  EXPECT_GT(first_gap["free_memory_bytes"].get<double>(), 0.0);
}

TEST(SimReport, ChromeTraceIsValidTraceEventJson) {
  const Replayed r = llama_replay("dp=1,tp=2,pp=4,vpp=2,mbs=1");
  const std::string text = chrome_trace(r.result, r.problem).dump();
  const nlohmann::json j = nlohmann::json::parse(text);  // valid JSON after a round trip
  ASSERT_TRUE(j["traceEvents"].is_array());
  std::set<std::string> process_names, thread_names;
  int complete = 0, counters = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e.at("ph");
    ASSERT_TRUE(e.at("pid").is_number_integer());
    if (ph == "M") {
      if (e["name"] == "process_name") process_names.insert(e["args"]["name"].get<std::string>());
      if (e["name"] == "thread_name") thread_names.insert(e["args"]["name"].get<std::string>());
    } else if (ph == "X") {
      ++complete;
      EXPECT_TRUE(e.at("tid").is_number_integer());
      EXPECT_GE(e.at("ts").get<double>(), 0.0);
      EXPECT_GE(e.at("dur").get<double>(), 0.0);
      const std::string name = e.at("name");
      if (e.at("cat") == "F" || e.at("cat") == "B")  // micro-batch and chunk ids in the name
        EXPECT_NE(name.find(" mb"), std::string::npos) << name;
    } else if (ph == "C") {
      ++counters;
    } else {
      ADD_FAILURE() << "unexpected phase " << ph;
    }
  }
  EXPECT_EQ(process_names, (std::set<std::string>{"stage 0", "stage 1", "stage 2", "stage 3"}));
  EXPECT_EQ(thread_names, (std::set<std::string>{"compute", "p2p", "grad sync"}));
  EXPECT_EQ(complete, static_cast<int>(r.result.events.size()));
  EXPECT_GT(counters, 0);
}

TEST(SimReport, SvgRendersWithARealRenderer) {
  const Replayed r = llama_replay("dp=2,tp=1,pp=4,mbs=1,schedule=zb-h1");
  const std::string svg = svg_timeline(r.result, r.problem, "llama3-8b <zb-h1> & co", "subtitle");
  EXPECT_NE(svg.find("&lt;zb-h1&gt; &amp; co"), std::string::npos);  // escaped
  for (const char* label : {"forward", "backward (B)", "weight grad (W)", "idle", "stage 3"})
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "paratune_svg_test";
  std::filesystem::create_directories(dir);
  const auto svg_path = dir / "timeline.svg", png_path = dir / "timeline.png";
  std::ofstream(svg_path) << svg;
  std::filesystem::remove(png_path);
  if (std::system("command -v rsvg-convert > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "rsvg-convert not installed (scripts/setup.sh installs librsvg2-bin)";
  const std::string command = "rsvg-convert " + svg_path.string() + " -o " + png_path.string() + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << "rsvg-convert rejected the SVG";
  std::ifstream png(png_path, std::ios::binary);
  char magic[8] = {};
  png.read(magic, 8);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  EXPECT_GT(std::filesystem::file_size(png_path), 10000u);  // a picture, not an empty canvas
}

// One palette: every kind of event the trace holds has its colour in timeline_colours(), the SVG
// draws that kind in that colour, and the HTML page (whose timeline report.js colours from the page's
// timeline_colors) carries the same table.
TEST(SimReport, TheSvgAndTheHtmlViewShareOnePalette) {
  const Replayed r = llama_replay("dp=2,tp=1,pp=4,mbs=1,schedule=zb-h1");
  const nlohmann::json colours = timeline_colours();
  const std::string svg = svg_timeline(r.result, r.problem, "title");
  std::set<std::string> kinds;
  const nlohmann::json trace = chrome_trace(r.result, r.problem);
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X") kinds.insert(e["cat"].get<std::string>());
  EXPECT_GE(kinds.size(), 4U);  // passes, sends, the gradient sync, the optimizer
  for (const std::string& kind : kinds) {
    ASSERT_TRUE(colours.contains(kind)) << kind;
    EXPECT_NE(svg.find("fill=\"" + colours[kind].get<std::string>() + "\""), std::string::npos) << kind;
  }
  EXPECT_NE(svg.find("fill=\"" + colours["idle"].get<std::string>() + "\""), std::string::npos);
  const std::string page = simulate_html(nlohmann::ordered_json::object(), r.result, r.problem, "title");
  EXPECT_NE(page.find("\"timeline_colors\":" + nlohmann::ordered_json(colours).dump()), std::string::npos);
}

TEST(SimReport, TextNamesTheBubblesAndCriticalPath) {
  const Replayed r = llama_replay("dp=2,tp=1,pp=4,mbs=1");
  const std::string text = format_simulation(r.result, r.problem);
  for (const char* part : {"bubble fraction", "critical path", "largest idle intervals", "peak act"})
    EXPECT_NE(text.find(part), std::string::npos) << part;
}

}  // namespace
}  // namespace paratune
