// No page runs a stranger's markup. A study store may be shared (PostgreSQL, a file passed around),
// and model and cluster files come from anywhere: every string they hold is planted here with markup
// that would run if a page took it as HTML. Each page kind -- plan --html, simulate --html, report
// --html of a hyperparameter study and of a search of configurations, and the live dashboard -- is
// loaded in headless Chromium, every chart's tooltip is shown for each data point, and the page must
// hold none of the planted elements and keep its title (tests/web/check_page.mjs --hostile).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "../support/require_servers.h"
#include "browser_page.h"
#include "paratune/store/sqlite_store.h"

namespace {

using paratune::testing::check_page;
using paratune::testing::Result;
using paratune::testing::run;
using paratune::testing::write_file;

// Markup that would set the page's title if it ever became elements; each element has class "pwn",
// which check_page.mjs looks for. Several kinds: an image's error, an SVG's load, a frame's script, a
// handler on hover, and a string that closes an attribute first.
const std::vector<std::string> kPayloads = {
    R"(<img class=pwn src=x onerror="document.title='pwned'">)",
    R"(<svg class=pwn onload="document.title='pwned'"></svg>)",
    R"("'><iframe class=pwn srcdoc="<script>parent.document.title='pwned'</script>"></iframe>)",
    R"(<b class=pwn onmouseover="document.title='pwned'">document.title='pwned'</b>&amp;)",
};

// A distinct hostile string for each use: `label` (so the strings differ, as parameter names must)
// and one of the payloads.
std::string hostile(const std::string& label) {
  static std::size_t next = 0;
  return label + kPayloads[next++ % kPayloads.size()];
}

// The string as a YAML double-quoted scalar.
std::string yaml_quoted(const std::string& text) {
  return "\"" + std::regex_replace(std::regex_replace(text, std::regex(R"(\\)"), R"(\\)"), std::regex("\""), "\\\"") +
         "\"";
}

std::filesystem::path hostile_page_dir(const std::string& name) {
  return paratune::testing::fresh_test_dir("paratune_hostile", name);
}

// How many tooltips showed a planted string as text, from check_page's JSON line (-1: none said).
int payload_tips(const std::string& output) {
  std::smatch m;
  return std::regex_search(output, m, std::regex("\"payload_tips\":([0-9]+)")) ? std::stoi(m[1].str()) : -1;
}

// A hyperparameter study in `file` whose every string is hostile: its name, objective (the metric the
// trials report), parameter names and categorical values, trial reasons, worker, host (location) and
// slots. Completed, pruned and failed trials, with learning curves.
void write_hostile_hpo_study(const std::filesystem::path& file) {
  paratune::store::SqliteStudyStore store(file);
  const std::string objective = hostile("loss");
  const nlohmann::json identity{{"kind", "hpo"}, {"objective", objective}, {"direction", "minimize"}};
  const std::string study_name = hostile("study");
  const std::int64_t study = store.open_study(study_name, identity.dump());
  store.set_worker_name(hostile("worker") + ":42");
  const std::string name_a = hostile("a"), name_b = hostile("b");
  const std::vector<std::string> choices{hostile("choice1"), hostile("choice2")};
  for (int i = 0; i < 6; ++i) {
    const nlohmann::json params{{name_a, choices[i % 2]}, {name_b, 0.5 * i}};
    const std::string host = "ssh " + hostile("host");
    const auto [id, number] = store.begin_trial(study, params.dump(), [&](int) {
      return paratune::store::StudyStore::LaunchRecord{"{}", "true", "/tmp/t", host};
    });
    paratune::trial::TrialResult result;
    result.status = i == 5 ? paratune::trial::TrialStatus::kFailed : paratune::trial::TrialStatus::kCompleted;
    result.reason = hostile("reason");
    result.location = host;
    result.started_unix_s = 1000 + 10 * i;
    result.ended_unix_s = 1000 + 10 * i + 8;
    for (int step = 1; step <= 4; ++step) {
      result.output.steps.push_back({step, 0.1});
      result.output.metrics.push_back({objective, 3.0 - 0.2 * step - 0.1 * i, step, std::nullopt});
      result.output.metrics.push_back({hostile("metric"), 1.0 * step, step, std::nullopt});
    }
    paratune::store::TrialOutcome outcome;
    outcome.status = i == 5 ? "failed" : (i % 3 == 2 ? "pruned" : "completed");
    outcome.reason = hostile("outcome");
    if (i != 5) outcome.objective = 2.2 - 0.1 * i;
    outcome.hpo_json = nlohmann::json{{"slots", {hostile("slot")}}}.dump();
    store.finish_trial(id, result, &outcome);
  }
  // Its two best retrained (--retrain-top, hpo/retrain.h): studies of their own beside it, named after
  // it, one completed and one failed for a hostile reason.
  for (int number : {4, 3}) {
    const nlohmann::json params{{name_a, choices[number % 2]}, {name_b, 0.5 * (number - 1)}};
    const std::string name = fmt::format("{}.retrain.{}.4steps", study_name, number);
    const nlohmann::json retrain{{"kind", "retrain"}, {"of", study_name}, {"trial", number}, {"params", params.dump()},
                                 {"command", hostile("command")}, {"steps", 4}};
    const std::int64_t id_of_study = store.open_study(name, retrain.dump());
    const auto [id, n] = store.begin_trial(id_of_study, params.dump(), [&](int) {
      return paratune::store::StudyStore::LaunchRecord{"{}", hostile("shown"), "/tmp/r", "local"};
    });
    paratune::trial::TrialResult result;
    result.status = number == 4 ? paratune::trial::TrialStatus::kCompleted : paratune::trial::TrialStatus::kFailed;
    result.reason = number == 4 ? "" : hostile("retrain-reason");
    result.started_unix_s = 2000;
    result.ended_unix_s = 2010;
    for (int step = 1; step <= 4; ++step) result.output.metrics.push_back({objective, 2.0 - 0.1 * step, step, std::nullopt});
    store.finish_trial(id, result);
  }
}

// A study of several objectives in `file` (hpo::HpoOptions::objectives), hostile the same way: its
// objectives' names, parameter names and values; four completed trials, three of them on the front.
void write_hostile_pareto_study(const std::filesystem::path& file) {
  paratune::store::SqliteStudyStore store(file);
  const std::vector<std::string> objectives{hostile("loss"), hostile("cost")};
  const nlohmann::json identity{{"kind", "hpo"},          {"objective", objectives[0]},
                                {"direction", "minimize"}, {"objectives", objectives},
                                {"directions", {"minimize", "minimize"}}};
  const std::int64_t study = store.open_study(hostile("pareto"), identity.dump());
  const std::string name = hostile("p");
  const double values[][2] = {{0, 3}, {1, 1}, {2, 2}, {3, 0}};
  for (int i = 0; i < 4; ++i) {
    const nlohmann::json params{{name, hostile("v")}};
    const auto [id, number] = store.begin_trial(study, params.dump(), "{}", "true", "/tmp/t");
    paratune::trial::TrialResult result;
    result.status = paratune::trial::TrialStatus::kCompleted;
    result.started_unix_s = 1000 + 10 * i;
    result.ended_unix_s = 1000 + 10 * i + 8;
    result.output.steps.push_back({0, 0.1});
    for (int k = 0; k < 2; ++k) result.output.metrics.push_back({objectives[k], values[i][k], 0, std::nullopt});
    paratune::store::TrialOutcome outcome;
    outcome.status = "completed";
    outcome.objective = values[i][0];
    store.finish_trial(id, result, &outcome);
  }
}

// A search of parallel configurations in `file`, hostile the same way, whose trials carry the search's
// predictions (the predicted-against-measured chart) and enough completed trials for importance.
void write_hostile_configuration_study(const std::filesystem::path& file) {
  paratune::store::SqliteStudyStore store(file);
  const std::int64_t study = store.open_study(hostile("search"), "{}");
  store.set_worker_name(hostile("worker") + ":7");
  const std::string name_a = hostile("a"), name_b = hostile("b");
  const std::vector<std::string> choices{hostile("choice1"), hostile("choice2"), hostile("choice3")};
  for (int i = 0; i < 8; ++i) {
    const nlohmann::json params{{name_a, choices[i % 3]}, {name_b, i % 2}};
    const auto [id, number] = store.begin_trial(study, params.dump(), "{}", "true", "/tmp/t");
    store.set_prediction(id, nlohmann::json{{"predicted_throughput", 5.0 + i}, {"why", hostile("why")}}.dump());
    paratune::trial::TrialResult result;
    result.status = paratune::trial::TrialStatus::kCompleted;
    result.location = "ssh " + hostile("host");
    result.started_unix_s = 1000 + 5 * i;
    result.ended_unix_s = 1000 + 5 * i + 4;
    for (int step = 1; step <= 5; ++step) result.output.steps.push_back({step, 0.1 + 0.01 * i});
    std::vector<double> times;
    for (const auto& s : result.output.steps) times.push_back(s.step_time_s);
    result.throughput = paratune::trial::estimate_throughput(times);
    store.finish_trial(id, result);
  }
  store.set_model(study, nlohmann::json{{"kind", hostile("model")}}.dump());
}

// The page at `page` (a file or URL) checked with every tooltip shown; returns check_page's output.
std::string check_hostile(const std::string& page, const std::string& checks = "") {
  const Result checked = check_page(page, "--hostile " + checks);
  EXPECT_EQ(checked.exit_code, 0) << page << "\n" << checked.output;
  return checked.output;
}

TEST(HtmlHostile, StudyReportsShowHostileStringsAsText) {
  PARATUNE_NEED_SERVER(paratune::testing::browser_problem());
  const auto dir = hostile_page_dir("report");
  write_hostile_hpo_study(dir / "hpo.db");
  write_hostile_configuration_study(dir / "search.db");
  write_hostile_pareto_study(dir / "pareto.db");
  for (const std::string& study : std::vector<std::string>{"hpo", "search", "pareto"}) {
    const Result written =
        run(fmt::format("report {} --html {}", (dir / (study + ".db")).string(), (dir / (study + ".html")).string()));
    ASSERT_EQ(written.exit_code, 0) << written.output;
    // The tooltips did show the planted strings (as text): the check hovered over them.
    const std::string out = check_hostile((dir / (study + ".html")).string(), "--min-charts 4");
    EXPECT_GT(payload_tips(out), 0) << out;
  }
}

TEST(HtmlHostile, TheLiveDashboardShowsHostileStringsAsText) {
  PARATUNE_NEED_SERVER(paratune::testing::browser_problem());
  const auto dir = hostile_page_dir("dashboard");
  write_hostile_hpo_study(dir / "s.db");
  const paratune::testing::BackgroundProcess dashboard(fmt::format("{} dashboard {} --port 0 --poll 0.3s > {} 2>&1",
                                                                   PARATUNE_BINARY, (dir / "s.db").string(),
                                                                   (dir / "out").string()));
  const std::string url = paratune::testing::dashboard_url(dir / "out");
  ASSERT_FALSE(url.empty()) << paratune::testing::read_file(dir / "out");
  const std::string out = check_hostile(url, "--min-charts 4");
  EXPECT_GT(payload_tips(out), 0) << out;
}

TEST(HtmlHostile, PlanAndSimulatePagesShowHostileNamesAsText) {
  PARATUNE_NEED_SERVER(paratune::testing::browser_problem());
  const auto dir = hostile_page_dir("plan");
  // examples/vit-base.yaml under a hostile name; a cluster and its GPU the same.
  const std::string model = paratune::testing::read_file(std::string(PARATUNE_SOURCE_DIR) + "/examples/vit-base.yaml");
  write_file(dir / "model.yaml", std::regex_replace(model, std::regex("\nname: vit-base\n"),
                                                    "\nname: " + yaml_quoted(hostile("model")) + "\n"));
  write_file(dir / "cluster.yaml",
             fmt::format("name: {}\n"
                         "gpu: {{name: {}, memory: 80GB, peak_bf16_tflops: 989, hbm_bandwidth: 3.35TB/s}}\n"
                         "nodes: 2\ngpus_per_node: 8\nintra_node_bandwidth: 450GB/s\n"
                         "inter_node_bandwidth: 400Gbps\nintra_node_latency: 2us\ninter_node_latency: 6us\n",
                         yaml_quoted(hostile("cluster")), yaml_quoted(hostile("gpu"))));
  const std::string setup = fmt::format("--model {} --cluster {} --seq-len 197 --global-batch 64",
                                        (dir / "model.yaml").string(), (dir / "cluster.yaml").string());
  const Result plan =
      run(fmt::format("plan {} --top 3 --emit megatron --html {}", setup, (dir / "plan.html").string()));
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  // The names are on the page (the title and heading), as text.
  check_hostile((dir / "plan.html").string(), "--min-charts 4 --expect-text \"document.title='pwned'\"");
  const Result sim =
      run(fmt::format("simulate {} --config dp=4,tp=2,pp=2,mbs=1 --html {}", setup, (dir / "sim.html").string()));
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  check_hostile((dir / "sim.html").string(), "--min-charts 2 --expect-text \"document.title='pwned'\"");
}

}  // namespace
