// The commands on stored studies: `paratune study show`, `study copy`, `study delete` and `paratune
// report` (show and report open and choose a study alike).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "output.h"
#include "paratune/hpo/importance.h"
#include "paratune/hpo/study.h"
#include "paratune/report/hpo_report.h"
#include "paratune/report/html_page.h"
#include "paratune/report/study_data.h"
#include "paratune/report/tune_report.h"
#include "paratune/spec/error.h"
#include "paratune/store/study_copy.h"
#include "paratune/store/study_store.h"

namespace paratune::cli {
namespace {

// How `study show` and `report` open a store: read-write where they may (an SQLite file of an older
// schema is upgraded in place), read-only where the file or its directory cannot be written (a
// read-only mount, someone else's file: reading needs no write) and where the file is empty (its
// creator has not committed yet: a reader waits for it rather than making a study of it).
store::Access reading_access(const std::string& locator) {
  if (store::is_postgres_locator(locator)) return store::Access::kReadWrite;
  const std::filesystem::path path(locator);
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  const bool empty = std::filesystem::file_size(path, ec) == 0 && !ec;
  return !empty && ::access(path.c_str(), W_OK) == 0 && ::access(dir.c_str(), W_OK) == 0 ? store::Access::kReadWrite
                                                                                         : store::Access::kReadOnly;
}

// A store named on the command line that must exist (an SQLite file; a PostgreSQL database is for
// its server to find).
std::unique_ptr<store::StudyStore> open_existing(const std::string& locator, store::Access access) {
  if (!store::is_postgres_locator(locator) && !std::filesystem::exists(locator))
    throw Error(fmt::format("{}: no such study file", locator));
  return store::open_store(locator, access);
}

// A study as `study show` and `report` read it: its store opened with reading_access, the study
// chosen by choose_study (report/study_data.h), whose errors are about --study-name when there are
// studies to choose from (a store with none is the store's problem, whatever the flag).
struct StoredStudy {
  std::unique_ptr<store::StudyStore> store;
  store::StudyInfo study;
};

StoredStudy read_study(const std::string& locator, const std::string& name) {
  StoredStudy read{open_existing(locator, reading_access(locator)), {}};
  const std::vector<store::StudyInfo> studies = read.store->studies();
  try {
    read.study = choose_study(studies, name, read.store->locator());
  } catch (const Error& e) {
    if (studies.empty()) throw;
    throw e.with_context("--study-name");
  }
  return read;
}

// `paratune study show`: every trial of a stored study and the best one; of a hyperparameter study
// also its learning curves, pruning and which parameters mattered, of a configuration study what its
// search predicted and the model it fitted.
int run_study_show(const std::string& locator, const std::string& name, bool json) {
  const StoredStudy read = read_study(locator, name);
  const store::StudyStore& store = *read.store;
  const store::StudyInfo& study = read.study;
  const std::string path = store.locator();  // a PostgreSQL URI with its password masked
  const nlohmann::json identity = nlohmann::json::parse(study.config_json, nullptr, false);
  const StudyObjective measured = study_objective(study);
  const std::vector<store::StoredTrial> trials = store.trials(study.id, /*with_steps=*/measured.hpo);
  // Several objectives have a Pareto front, not one best.
  const std::optional<std::size_t> best =
      measured.objectives.empty() ? hpo::best_hpo_trial(trials, measured.direction) : std::nullopt;
  const TrialAnalysis analysis = measured.hpo ? analyse_trials(store, study, trials) : TrialAnalysis{};
  const std::vector<hpo::TrialRecord>& records = analysis.records;
  if (json) {
    nlohmann::ordered_json j{{"study", study.name}, {"config", identity}};
    j.update(trials_json(trials, best));
    if (measured.hpo) {
      j["curves"] = curves_json(records, measured.direction);
      j["importance"] = importance_json(analysis.importance);
      // Only a study with retrains has the key: what an older study shows stays as it was.
      if (auto re = reevaluations_json(store, study.name, measured); !re["runs"].empty()) j["reevaluations"] = std::move(re);
      // Only a study of several objectives has the key, as above.
      if (!measured.objectives.empty())
        j["pareto_front"] = pareto_front_json(trials, pareto_front_of(trials, measured.objectives, measured.directions));
    }
    j["model"] = study.model_json.empty() ? nlohmann::ordered_json(nullptr)
                                          : nlohmann::ordered_json::parse(study.model_json, nullptr, false);
    write_json(j);
    return 0;
  }
  std::cout << fmt::format("study '{}' in {}\n", study.name, path);
  if (!measured.hpo) {
    if (identity.is_object() && identity.contains("command"))
      std::cout << fmt::format("command: {}\nsteps per trial: {}\n\n", identity["command"].get<std::string>(),
                               identity["steps"].dump());
    std::cout << format_trials(trials, best);
    for (const std::string& part : {format_predictions(trials), format_model(study.model_json)})
      if (!part.empty()) std::cout << "\n" << part;
    return 0;
  }
  // Trials are commands, or calls of a program's own function (hpo/ask_tell.h: identity "runner").
  const std::string command = identity.value("command", "");
  const std::string trials_are = command.empty() && identity.contains("runner")
                                     ? fmt::format("trials: {} (in-process)", identity.value("runner", ""))
                                     : fmt::format("command: {}", command);
  const std::string steps = identity["steps"] == 0 ? "no fixed number of steps per trial"
                                                    : fmt::format("up to {} steps per trial", identity["steps"].dump());
  const bool many = !measured.objectives.empty();
  std::string objectives = fmt::format("objective: {} ({})", measured.objective, hpo::to_string(measured.direction));
  if (many) {
    objectives = "objectives:";
    for (std::size_t i = 0; i < measured.objectives.size(); ++i)
      objectives += fmt::format("{} {} ({})", i ? "," : "", measured.objectives[i], hpo::to_string(measured.directions[i]));
  }
  std::cout << fmt::format("{}\n{}, {}, pruner {}\n\n", trials_are, objectives, steps, identity["pruner"].dump());
  std::cout << format_hpo_trials(trials, best, measured.objective, many);
  if (many)
    std::cout << "\n" << format_pareto_front(trials, pareto_front_of(trials, measured.objectives, measured.directions));
  const auto completed = static_cast<std::size_t>(std::count_if(records.begin(), records.end(), [](const auto& r) {
    return r.state == hpo::TrialRecord::State::kCompleted;
  }));
  for (const std::string& part : {format_pruning(trials), format_curves(records, measured.objective, measured.direction),
                                  format_importance(analysis.importance, completed)})
    if (!part.empty()) std::cout << "\n" << part;
  // Its best configurations retrained (--retrain, --retrain-top), each study of its own beside it.
  const std::vector<hpo::RetrainResult> retrains = hpo::stored_reevaluations(store, study.name, measured.objective);
  if (!retrains.empty())
    std::cout << "\nretrains of the best configurations (study NAME.retrain.TRIAL.STEPSsteps each):\n"
              << format_reevaluations(retrains, hpo::best_reevaluation(retrains, measured.direction),
                                      measured.objective);
  return 0;
}

// `paratune report STUDY --html FILE`: the study as one self-contained HTML page.
int run_report(const std::string& locator, const std::string& name, const std::string& html_path) {
  if (html_path.empty()) throw Error("report: give --html FILE (the report is one self-contained HTML file)");
  const StoredStudy read = read_study(locator, name);
  write_file(html_path, study_html(*read.store, read.study));
  std::cout << fmt::format("wrote {} (study '{}': HTML report, open in a browser)\n", html_path, read.study.name);
  return 0;
}

// `paratune study copy FROM TO [--study NAME [--as NEW]]`.
int run_study_copy(const std::string& from_locator, const std::string& to_locator, const std::string& name,
                   const std::string& new_name, bool json) {
  const std::unique_ptr<store::StudyStore> from = open_existing(from_locator, store::Access::kReadWrite);
  const std::unique_ptr<store::StudyStore> to = store::open_store(to_locator);
  const store::CopySummary copied = store::copy_studies(*from, *to, name, new_name);
  if (json) {
    write_json({{"from", from->locator()},
                {"to", to->locator()},
                {"studies", copied.studies},
                {"trials", copied.trials},
                {"steps", copied.steps},
                {"metrics", copied.metrics}});
    return 0;
  }
  std::cout << fmt::format("copied {} ({} trials, {} steps, {} metrics) from {} to {}\n", join(copied.studies),
                           copied.trials, copied.steps, copied.metrics, from->locator(), to->locator());
  return 0;
}

// `paratune study delete STORE --study-name NAME`.
int run_study_delete(const std::string& locator, const std::string& name, bool json) {
  const std::unique_ptr<store::StudyStore> store = open_existing(locator, store::Access::kReadWrite);
  const std::int64_t trials = store::delete_study(*store, name);
  if (json) {
    write_json({{"store", store->locator()}, {"deleted", name}, {"trials", trials}});
    return 0;
  }
  std::cout << fmt::format("deleted study '{}' ({} trials) from {}\n", name, trials, store->locator());
  return 0;
}

}  // namespace

void add_study_command(CLI::App& app, Commands& commands) {
  auto* study_cmd = app.add_subcommand("study", "inspect stored tuning studies");
  study_cmd->require_subcommand(1);

  struct ShowFlags {
    std::string path, name;
    bool json = false;
  };
  const auto show = std::make_shared<ShowFlags>();
  auto* show_cmd = study_cmd->add_subcommand("show", "list a study's trials and the best one");
  show_cmd->add_option("study", show->path, "study store: SQLite file or postgresql:// URI")->required();
  show_cmd->add_option("--study-name", show->name, "study within the file (needed when it holds several)");
  show_cmd->add_flag("--json", show->json, "machine-readable output");
  commands.push_back({show_cmd, [show] { return run_study_show(show->path, show->name, show->json); }});

  struct CopyFlags {
    std::string from, to, name, new_name;
    bool json = false;
  };
  const auto copy = std::make_shared<CopyFlags>();
  auto* copy_cmd = study_cmd->add_subcommand(
      "copy", "copy studies with every trial, step and metric between stores (SQLite files, postgresql:// URIs)");
  copy_cmd->add_option("from", copy->from, "study store to copy from")->required();
  copy_cmd->add_option("to", copy->to, "study store to copy into (created if needed; a study of the same name there "
                                       "is never overwritten)")->required();
  copy_cmd->add_option("--study", copy->name, "copy this study only (default: every study)");
  copy_cmd->add_option("--as", copy->new_name, "the copy's name in the store copied into (with --study)");
  copy_cmd->add_flag("--json", copy->json, "machine-readable summary");
  commands.push_back({copy_cmd, [copy] {
                        return run_study_copy(copy->from, copy->to, copy->name, copy->new_name, copy->json);
                      }});

  struct DeleteFlags {
    std::string path, name;
    bool json = false;
  };
  const auto remove = std::make_shared<DeleteFlags>();
  auto* delete_cmd = study_cmd->add_subcommand(
      "delete", "delete a study with every trial, step and metric (refused while a controller or worker runs it)");
  delete_cmd->add_option("study", remove->path, "study store: SQLite file or postgresql:// URI")->required();
  delete_cmd->add_option("--study-name", remove->name, "the study to delete")->required();
  delete_cmd->add_flag("--json", remove->json, "machine-readable summary");
  commands.push_back({delete_cmd, [remove] { return run_study_delete(remove->path, remove->name, remove->json); }});
}

void add_report_command(CLI::App& app, Commands& commands) {
  struct ReportFlags {
    std::string path, name, html;
  };
  const auto flags = std::make_shared<ReportFlags>();
  auto* report_cmd = app.add_subcommand("report", "write a study as one self-contained HTML report (opens offline)");
  report_cmd->add_option("study", flags->path, "study store: SQLite file or postgresql:// URI")->required();
  report_cmd->add_option("--study-name", flags->name, "study within the store (needed when it holds several)");
  report_cmd->add_option("--html", flags->html, "the HTML file to write")->required();
  commands.push_back({report_cmd, [flags] { return run_report(flags->path, flags->name, flags->html); }});
}

}  // namespace paratune::cli
