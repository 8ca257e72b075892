// Studies written by paratune at commit e0b0512, before configuration and hyperparameter studies ran
// in one loop (issue 43): today's program opens, resumes and reports them unchanged.
// tests/data/studies-e0b0512/README.md says how they were made (make.sh: the commands) and what the
// old program did when it resumed them. Each test works on a copy in a folder of its own.
//
// What is compared, and why:
// - `study show` and `study show --json`: byte for byte what the old program printed for the same
//   file. Both run in the folder that holds the copy and name it as the old program was given it
//   (config.db), so the header's "study 'main' in config.db" is the same; everything else comes
//   from the file (the trial directories, timestamps and workers are the old run's, stored), so
//   nothing needs normalising. Showing leaves the file byte for byte as it was.
// - `report --html`: the page's data (its <script id="paratune-data"> element) is the old report's,
//   less two fields changed on purpose after e0b0512 (41541e1, issue 39): "importance" (epsilon
//   squared now, and nothing below hpo::kMinImportanceTrials completed trials, where the old report
//   gave eta squared of 4) and "parameters" (new: each parameter's type from the study's space). The
//   page around the data (chart library, script, styles) is not compared.
// - resuming with the flags the study was written with: with its own --max-trials nothing runs;
//   with more, the finished trials are reused (their records in `study show --json` byte for byte
//   the old ones, the study's identity too), only the points not run yet start -- the ones the old
//   program started when it resumed the same file -- and paratune exits 0. Measured values of the
//   new trials (timings, the fake trial's last loss) are not compared.
// The studies' command is 'paratune_fake_trial ...' (the template is part of a study's identity):
// today's fake trial is put first on PATH. --trials-dir is a new folder: the trial directories the
// records name need not exist.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "../support/test_files.h"
#include "cli_util.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using paratune::testing::read_file;
using paratune::testing::Result;

const fs::path& data_dir() {
  static const fs::path dir = fs::path(PARATUNE_SOURCE_DIR) / "tests" / "data" / "studies-e0b0512";
  return dir;
}

// A study file of data_dir() and the flags it was written with.
struct OldStudy {
  std::string name;   // NAME.db, NAME.show.txt, NAME.show.json, NAME.report.json
  std::string space;  // its space file, in data_dir()
  std::string flags;  // `paratune tune` flags it was written with, less --space, --study, --max-trials
  int max_trials;     // its --max-trials: the trials it holds, all finished
};

const OldStudy kGrid{"config", "config_space.yaml",
                     "--command 'paratune_fake_trial --step-time {st} --k {k}' --steps 4 --algo grid", 4};
const OldStudy kOppa{"oppa", "config_space.yaml",
                     "--command 'paratune_fake_trial --step-time {st} --k {k}' --steps 6 --algo oppa", 4};
const OldStudy kHpo{"hpo", "hpo_space.yaml",
                    "--command 'paratune_fake_trial --step-time {st}' --objective loss --direction minimize "
                    "--algo random --seed 1 --steps 4",
                    3};

// A fresh folder holding a writable copy of the study's file and its space file.
fs::path copy_of(const OldStudy& study, const std::string& test) {
  const fs::path dir = paratune::testing::fresh_test_dir("paratune_old_studies", test);
  for (const std::string& file : {study.name + ".db", study.space}) {
    fs::copy_file(data_dir() / file, dir / file);
    fs::permissions(dir / file, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add);
  }
  return dir;
}

// `paratune ARGS` (shell text) run in `dir` with today's fake trial first on PATH; the output is its
// stdout, its stderr goes to dir/stderr.log.
Result paratune_in(const fs::path& dir, const std::string& args) {
  const std::string trials = fs::path(PARATUNE_FAKE_TRIAL).parent_path().string();
  return paratune::testing::run_command("cd '" + dir.string() + "' && { PATH='" + trials + "':\"$PATH\" '" +
                                        PARATUNE_BINARY + "' " + args + " 2>stderr.log; }");
}

std::string stderr_of(const fs::path& dir) { return read_file(dir / "stderr.log"); }

json expected_show(const OldStudy& study) { return json::parse(read_file(data_dir() / (study.name + ".show.json"))); }

// The data of a report page: its <script id="paratune-data"> element's text, parsed (null if none).
json report_data(const std::string& page) {
  const std::string open = R"(<script id="paratune-data" type="application/json">)";
  const auto begin = page.find(open);
  if (begin == std::string::npos) return nullptr;
  const auto end = page.find("</script>", begin);
  if (end == std::string::npos) return nullptr;
  return json::parse(page.substr(begin + open.size(), end - begin - open.size()), nullptr, false);
}

// `paratune tune` on the copy in `dir` with the study's flags, --max-trials N, a new --trials-dir and
// --json: exit 0, the result parsed.
json resume(const fs::path& dir, const OldStudy& study, int max_trials) {
  const Result r = paratune_in(dir, "tune --space " + study.space + " --study " + study.name + ".db " + study.flags +
                                        " --max-trials " + std::to_string(max_trials) + " --trials-dir '" +
                                        (dir / "new-trials").string() + "' --json");
  EXPECT_EQ(r.exit_code, 0) << r.output << stderr_of(dir);
  json j = json::parse(r.output, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.output << stderr_of(dir);
  return j.is_discarded() ? json::object() : j;
}

// After a resume: the study's identity and the trials the old program wrote are, in `study show
// --json`, what the old program showed; the study holds `trials` trials. Returns the new trials.
json expect_old_trials_kept(const fs::path& dir, const OldStudy& study, std::size_t trials) {
  const Result show = paratune_in(dir, "study show " + study.name + ".db --json");
  EXPECT_EQ(show.exit_code, 0) << show.output << stderr_of(dir);
  const json now = json::parse(show.output, nullptr, false);
  if (now.is_discarded() || !now.contains("trials")) {
    ADD_FAILURE() << show.output;
    return json::array();
  }
  const json old = expected_show(study);
  EXPECT_EQ(now["config"], old["config"]);
  EXPECT_EQ(now["trials"].size(), trials);
  const auto finished = static_cast<std::size_t>(study.max_trials);
  for (std::size_t i = 0; i < finished && i < now["trials"].size(); ++i)
    EXPECT_EQ(now["trials"][i], old["trials"][i]) << "trial " << i + 1;
  json added = json::array();
  for (std::size_t i = finished; i < now["trials"].size(); ++i) added.push_back(now["trials"][i]);
  return added;
}

// Resumed with its own --max-trials, a study has nothing to do: every trial reused, none started.
void expect_nothing_to_do(const OldStudy& study, const std::string& test) {
  const fs::path dir = copy_of(study, test);
  const json r = resume(dir, study, study.max_trials);
  EXPECT_EQ(r.value("reused", -1), study.max_trials) << r.dump(2);
  EXPECT_EQ(r.value("started", -1), 0) << r.dump(2);
  EXPECT_EQ(r.value("requeued", -1), 0) << r.dump(2);
  EXPECT_EQ(expect_old_trials_kept(dir, study, study.max_trials).size(), 0u);
}

std::set<std::pair<double, int>> points(const json& trials) {
  std::set<std::pair<double, int>> out;
  for (const json& t : trials) out.emplace(t["params"]["st"].get<double>(), t["params"]["k"].get<int>());
  return out;
}

TEST(OldStudies, ShowPrintsWhatTheOldProgramPrinted) {
  for (const OldStudy& study : {kGrid, kOppa, kHpo}) {
    SCOPED_TRACE(study.name);
    const fs::path dir = copy_of(study, "show_" + study.name);
    const Result text = paratune_in(dir, "study show " + study.name + ".db");
    EXPECT_EQ(text.exit_code, 0) << stderr_of(dir);
    EXPECT_EQ(text.output, read_file(data_dir() / (study.name + ".show.txt")));
    EXPECT_EQ(stderr_of(dir), "");
    const Result j = paratune_in(dir, "study show " + study.name + ".db --json");
    EXPECT_EQ(j.exit_code, 0) << stderr_of(dir);
    EXPECT_EQ(j.output, read_file(data_dir() / (study.name + ".show.json")));
    EXPECT_EQ(stderr_of(dir), "");
    // Opening and showing a study writes nothing to its file.
    EXPECT_TRUE(read_file(dir / (study.name + ".db")) == read_file(data_dir() / (study.name + ".db")))
        << "showing changed " << study.name << ".db";
  }
}

TEST(OldStudies, ReportHoldsWhatTheOldReportHeld) {
  for (const OldStudy& study : {kGrid, kOppa, kHpo}) {
    SCOPED_TRACE(study.name);
    const fs::path dir = copy_of(study, "report_" + study.name);
    const Result r = paratune_in(dir, "report " + study.name + ".db --html " + study.name + ".html");
    ASSERT_EQ(r.exit_code, 0) << r.output << stderr_of(dir);
    json now = report_data(read_file(dir / (study.name + ".html")));
    ASSERT_TRUE(now.is_object()) << "no study data in " << (dir / (study.name + ".html"));
    json old = json::parse(read_file(data_dir() / (study.name + ".report.json")));
    // Changed on purpose after e0b0512 (41541e1): see the top of this file.
    ASSERT_TRUE(now.contains("parameters"));
    std::set<std::string> described;
    for (const auto& [name, p] : now["parameters"].items()) described.insert(name);
    std::set<std::string> declared;
    for (const auto& [name, p] : old["config"]["space"]["parameters"].items()) declared.insert(name);
    EXPECT_EQ(described, declared);
    for (json* data : {&now, &old}) {
      data->erase("importance");
      data->erase("parameters");
    }
    EXPECT_EQ(now, old);
  }
}

TEST(OldStudies, AResumedStudyWithItsOwnTrialLimitHasNothingToDo) {
  expect_nothing_to_do(kGrid, "same_limit_grid");
  expect_nothing_to_do(kOppa, "same_limit_oppa");
  expect_nothing_to_do(kHpo, "same_limit_hpo");
}

TEST(OldStudies, GridStudyResumesWithTheRemainingPointsInOrder) {
  const fs::path dir = copy_of(kGrid, "resume_grid");
  const json r = resume(dir, kGrid, 6);
  EXPECT_EQ(r.value("reused", -1), 4) << r.dump(2);
  EXPECT_EQ(r.value("started", -1), 2) << r.dump(2);
  const json added = expect_old_trials_kept(dir, kGrid, 6);
  ASSERT_EQ(added.size(), 2u);
  // What e0b0512 ran when it resumed this file: the grid's next points, in its order.
  EXPECT_EQ(added[0]["number"], 5);
  EXPECT_EQ(added[0]["params"], json::parse(R"({"st": 0.01, "k": 3})"));
  EXPECT_EQ(added[1]["number"], 6);
  EXPECT_EQ(added[1]["params"], json::parse(R"({"st": 0.02, "k": 2})"));
  for (const json& t : added) EXPECT_EQ(t["status"], "completed") << t.dump(2);
  const Result text = paratune_in(dir, "study show config.db");
  EXPECT_EQ(text.exit_code, 0) << stderr_of(dir);
  EXPECT_NE(text.output.find("6 trials: 6 completed"), std::string::npos) << text.output;
}

TEST(OldStudies, OppaStudyResumesWithTheRemainingPoints) {
  const fs::path dir = copy_of(kOppa, "resume_oppa");
  const json r = resume(dir, kOppa, 6);
  EXPECT_EQ(r.value("reused", -1), 4) << r.dump(2);
  EXPECT_EQ(r.value("started", -1), 2) << r.dump(2);
  const json added = expect_old_trials_kept(dir, kOppa, 6);
  ASSERT_EQ(added.size(), 2u);
  // The two points of the space the old trials did not run (e0b0512: st=0.01 k=2, then st=0.02 k=2,
  // stopped early); a trial that cannot beat the best may be stopped early.
  EXPECT_EQ(points(added), (std::set<std::pair<double, int>>{{0.01, 2}, {0.02, 2}}));
  for (const json& t : added) EXPECT_TRUE(t["status"] == "completed" || t["status"] == "early-stopped") << t.dump(2);
}

TEST(OldStudies, HyperparameterStudyResumesItsSeededSequence) {
  const fs::path dir = copy_of(kHpo, "resume_hpo");
  const json r = resume(dir, kHpo, 5);
  EXPECT_EQ(r.value("reused", -1), 3) << r.dump(2);
  EXPECT_EQ(r.value("started", -1), 2) << r.dump(2);
  const json added = expect_old_trials_kept(dir, kHpo, 5);
  ASSERT_EQ(added.size(), 2u);
  // The random sequence of --seed 1 goes on where it stopped: what e0b0512 drew resuming this file.
  const double lr[] = {0.008739855755066946, 0.0137941294540437};
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(added[i]["number"], 4 + static_cast<int>(i));
    EXPECT_DOUBLE_EQ(added[i]["params"]["lr"].get<double>(), lr[i]) << added[i].dump(2);
    EXPECT_EQ(added[i]["params"]["st"], 0.01);
    EXPECT_EQ(added[i]["status"], "completed") << added[i].dump(2);
    EXPECT_TRUE(added[i]["objective"].is_number()) << added[i].dump(2);
  }
}

}  // namespace
