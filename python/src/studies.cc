// paratune.open_study / studies: stored studies (SQLite files, PostgreSQL databases), read-only, as
// `paratune study show` and `paratune report` read them -- whichever way they were run (the CLI,
// workers, or tune() from Python).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <cerrno>
#include <cstdlib>  // mkdtemp (POSIX, declared by glibc's stdlib.h)
#include <cstring>
#include <filesystem>

#include "convert.h"
#include "modules.h"
#include "paratune/hpo/study.h"
#include "paratune/report/html_page.h"
#include "paratune/report/study_data.h"
#include "paratune/report/tune_report.h"
#include "paratune/spec/error.h"
#include "paratune/store/study_copy.h"
#include "paratune/store/study_store.h"
#include "study_view.h"

namespace paratune::python {

TemporaryStore::TemporaryStore() {
  std::string pattern = (std::filesystem::temp_directory_path() / "paratune-study-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw Error(fmt::format("storage: cannot make a temporary directory for an in-memory study ({}): {}", pattern,
                            std::strerror(errno)));
  directory_ = pattern;
}

TemporaryStore::~TemporaryStore() {
  std::error_code ignored;  // a destructor must not throw; a leftover directory in TMPDIR is harmless
  std::filesystem::remove_all(directory_, ignored);
}

// A store that exists: an SQLite file that is not there is an error, not a new empty file.
std::unique_ptr<store::StudyStore> open_existing_store(const std::string& storage, store::Access access) {
  if (!store::is_postgres_locator(storage) && !std::filesystem::exists(storage))
    throw Error(fmt::format("{}: no such study file", storage));
  return store::open_store(storage, access);
}

StudyView read_study(const std::string& storage, const std::string& name) {
  StudyView view;
  std::unique_ptr<store::StudyStore> store = open_existing_store(storage, store::Access::kReadOnly);
  const std::vector<store::StudyInfo> studies = store->studies();
  view.info = choose_study(studies, name, store->locator());
  view.storage = storage;
  view.locator = store->locator();
  view.identity = nlohmann::ordered_json::parse(view.info.config_json, nullptr, false);
  const StudyObjective measured = study_objective(view.info);
  view.hpo = measured.hpo;
  view.objective = measured.objective;
  view.direction = hpo::to_string(measured.direction);
  view.trials = store->trials(view.info.id, /*with_steps=*/true);
  view.data = study_data(*store, view.info);
  // Several objectives have a Pareto front, not one best.
  if (measured.objectives.empty()) view.best = hpo::best_hpo_trial(view.trials, measured.direction);
  else view.front = hpo::pareto_front_trials(view.trials, measured.objectives, measured.directions);
  for (const hpo::Direction d : measured.directions) view.directions.emplace_back(hpo::to_string(d));
  if (view.directions.empty()) view.directions.push_back(view.direction);
  return view;
}

namespace {

py::dict metric_dict(const trial::MetricReport& m) {
  py::dict d;
  d["name"] = m.name;
  d["value"] = m.value;
  d["step"] = m.step ? py::object(py::int_(*m.step)) : py::object(py::none());
  return d;
}

py::object optional_number(const std::optional<double>& v) { return v ? py::object(py::float_(*v)) : py::object(py::none()); }

}  // namespace

void bind_studies(py::module_& m) {
  py::class_<store::StoredTrial>(m, "StoredTrial", "One trial of a stored study, as it ended (or runs).")
      .def_readonly("number", &store::StoredTrial::number)
      .def_readonly("status", &store::StoredTrial::status,
                    "running, completed, pruned, failed, oom, infeasible, timeout, interrupted or early-stopped")
      .def_property_readonly("params", [](const store::StoredTrial& t) {
        return to_python(nlohmann::ordered_json::parse(t.params_json, nullptr, false));
      })
      .def_property_readonly("objective", [](const store::StoredTrial& t) { return optional_number(t.objective); },
                             "Hyperparameter studies: the final value (completed) or the last one (pruned).")
      .def_property_readonly("throughput", [](const store::StoredTrial& t) { return optional_number(t.throughput); },
                             "Steps per second, measured.")
      .def_readonly("reason", &store::StoredTrial::reason)
      .def_readonly("steps", &store::StoredTrial::steps)
      .def_property_readonly("duration_s", [](const store::StoredTrial& t) -> py::object {
        if (t.status == "running" || t.ended_unix_s <= 0) return py::none();
        return py::float_(t.ended_unix_s - t.started_unix_s);
      }, "Seconds from its start to its end; None while it runs.")
      .def_readonly("started_unix_s", &store::StoredTrial::started_unix_s)
      .def_readonly("ended_unix_s", &store::StoredTrial::ended_unix_s)
      .def_readonly("location", &store::StoredTrial::location)
      .def_readonly("worker", &store::StoredTrial::worker)
      .def_property_readonly("metrics", [](const store::StoredTrial& t) {
        py::list out;
        for (const trial::MetricReport& metric : t.metrics) out.append(metric_dict(metric));
        return out;
      }, "Every metric it reported, in order: dicts of name, value, step.")
      .def("values", [](const store::StoredTrial& t, const std::string& name) {
        py::list out;
        for (const trial::MetricReport& metric : t.metrics)
          if (metric.name == name) out.append(py::make_tuple(metric.step ? py::object(py::int_(*metric.step)) : py::object(py::none()), metric.value));
        return out;
      }, py::arg("name"), "One metric's (step, value) pairs: a learning curve.")
      .def("to_dict", [](const store::StoredTrial& t) { return to_python(to_json(t)); })
      .def("__repr__", [](const store::StoredTrial& t) {
        std::string figure;
        if (t.objective) figure = fmt::format(" objective {}", *t.objective);
        else if (t.throughput) figure = fmt::format(" {:.4g} steps/s", *t.throughput);
        return fmt::format("<paratune.StoredTrial {} {}{} {}>", t.number, t.status, figure, t.params_json);
      });

  py::class_<StudyView>(m, "Study", "A stored study, read when opened (open it again to see later trials).")
      .def_property_readonly("name", [](const StudyView& s) { return s.info.name; })
      .def_property_readonly("storage", [](const StudyView& s) { return s.locator; })
      .def_property_readonly("kind", [](const StudyView& s) { return s.hpo ? "hpo" : "configurations"; },
                             "'hpo' (hyperparameters) or 'configurations' (parallel configurations).")
      .def_property_readonly("objective", [](const StudyView& s) { return s.objective; })
      .def_property_readonly("direction", [](const StudyView& s) { return s.direction; })
      .def_property_readonly("directions", [](const StudyView& s) { return s.directions; },
                             "Each objective's direction, in order (one for a study of one objective).")
      .def_property_readonly("identity", [](const StudyView& s) { return to_python(s.identity); },
                             "What the study was created with (space, objective, pruner, ...).")
      .def_property_readonly("trials", [](const StudyView& s) { return s.trials; })
      .def_property_readonly("best", [](const StudyView& s) -> py::object {
        return s.best ? py::cast(s.trials[*s.best]) : py::none();
      }, "The best completed trial, or None.")
      .def_property_readonly("best_trial", [](const StudyView& s) -> py::object {
        return s.best ? py::cast(s.trials[*s.best]) : py::none();
      }, "The same as best (Optuna's name).")
      .def_property_readonly("best_trials", [](const StudyView& s) {
        std::vector<store::StoredTrial> out;
        for (const std::size_t i : s.front) out.push_back(s.trials[i]);
        return out;
      }, "A study of several objectives: its Pareto front, best first by the first objective; [] otherwise.")
      .def_property_readonly("best_params", [](const StudyView& s) -> py::object {
        return s.best ? to_python(nlohmann::ordered_json::parse(s.trials[*s.best].params_json, nullptr, false)) : py::none();
      })
      .def_property_readonly("best_value", [](const StudyView& s) -> py::object {
        if (!s.best) return py::none();
        const store::StoredTrial& t = s.trials[*s.best];
        return optional_number(s.hpo ? t.objective : t.throughput);
      })
      .def("to_dict", [](const StudyView& s) { return to_python(s.data); },
           "Everything `paratune report` draws: trials, curves, importance, the fitted model.")
      .def("to_html", [](const StudyView& s) {
        std::string html;
        {
          py::gil_scoped_release release;
          const std::unique_ptr<store::StudyStore> store = store::open_store(s.storage, store::Access::kReadOnly);
          html = study_html(*store, s.info);
        }
        return html;
      }, "The report `paratune report --html` writes, of the study as stored now: one self-contained HTML page (str).")
      .def("__len__", [](const StudyView& s) { return s.trials.size(); })
      .def("__iter__", [](const StudyView& s) { return py::iter(py::cast(s.trials)); })
      .def("__repr__", [](const StudyView& s) {
        std::string best = "none completed";
        if (s.best) {
          const store::StoredTrial& t = s.trials[*s.best];
          const std::optional<double> value = s.hpo ? t.objective : t.throughput;
          best = fmt::format("best: trial {}, {} {}", t.number, s.objective, value ? fmt::format("{}", *value) : "?");
        }
        return fmt::format("<paratune.Study '{}' in {}: {} trials, {}>", s.info.name, s.locator, s.trials.size(), best);
      });

  m.def(
      "open_study",
      [](const py::object& storage, const std::string& name) { return read_study(text_or_path(storage, "storage"), name); },
      py::arg("storage"), py::arg("name") = "",
        "A stored study: storage is an SQLite file or a postgresql:// URI; name may be left out when the store "
        "holds one study. Opened read-only: it never blocks a running study.");
  m.def(
      "studies",
      [](const py::object& where) {
        std::vector<std::string> names;
        for (const store::StudyInfo& s :
             open_existing_store(text_or_path(where, "storage"), store::Access::kReadOnly)->studies())
          names.push_back(s.name);
        return names;
      },
      py::arg("storage"), "The names of the studies in a store.");
  // The engines of paratune.delete_study and paratune.copy_study (_study.py: Optuna's signatures).
  m.def(
      "_delete_study",
      [](const std::string& storage, const std::string& name) {
        const py::gil_scoped_release unlocked;
        return store::delete_study(*open_existing_store(storage, store::Access::kReadWrite), name);
      },
      py::arg("storage"), py::arg("name"), "Deletes a study with its trials; returns how many trials it held.");
  m.def(
      "_copy_study",
      [](const std::string& from, const std::string& to, const std::string& name, const std::string& new_name) {
        const py::gil_scoped_release unlocked;
        const std::unique_ptr<store::StudyStore> source = open_existing_store(from, store::Access::kReadOnly);
        return store::copy_studies(*source, *store::open_store(to), name, new_name).trials;
      },
      py::arg("from_storage"), py::arg("to_storage"), py::arg("name"), py::arg("new_name"),
      "Copies one study into another store (as new_name); returns how many trials it copied.");
}

}  // namespace paratune::python
