// paratune._Engine: the study that paratune.create_study / load_study return (python/paratune/_study.py)
// runs on -- hpo/ask_tell.h's define-by-run study on a study store, the samplers, pruners and stores
// of tune() and `paratune tune`. The Python side adds Optuna's shape (optimize, ask/tell, trials,
// best_*); this side holds what the engine needs and releases the GIL while it works.
//
// The study is opened (its controller lock taken) only while trials run: at the first ask, closed
// again once every asked trial is told. So another Study object, or another process, may load the
// same study between optimize() calls, as Optuna allows; reading trials never takes the lock.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <mutex>
#include <utility>

#include "convert.h"
#include "modules.h"
#include "paratune/hpo/ask_tell.h"
#include "paratune/hpo/pruner.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/study.h"
#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/store/study_store.h"
#include "study_view.h"

namespace paratune::python {
namespace {

hpo::ParamType param_type(const std::string& type) {
  if (type == "float") return hpo::ParamType::kFloat;
  if (type == "int") return hpo::ParamType::kInt;
  return hpo::ParamType::kCategorical;
}

// A stored trial as _study.py's FrozenTrial reads it. Several objectives (`objectives` not empty):
// "values", each objective's (hpo::trial_values), or None unless it completed with every one.
py::dict trial_dict(const store::StoredTrial& t, const std::string& objective,
                    const std::vector<std::string>& objectives) {
  py::dict d;
  d["number"] = t.number;
  d["status"] = t.status;
  d["params"] = to_python(nlohmann::ordered_json::parse(t.params_json, nullptr, false));
  d["value"] = t.objective ? py::object(py::float_(*t.objective)) : py::object(py::none());
  if (!objectives.empty()) {
    const std::optional<std::vector<double>> values = hpo::trial_values(t, objectives);
    d["values"] = values ? py::object(py::cast(*values)) : py::object(py::none());
  }
  d["reason"] = t.reason;
  d["started_unix_s"] = t.started_unix_s;
  d["ended_unix_s"] = t.ended_unix_s > 0 ? py::object(py::float_(t.ended_unix_s)) : py::object(py::none());
  py::dict intermediate;
  for (const trial::MetricReport& m : t.metrics)
    if (m.name == objective) intermediate[py::int_(m.step.value_or(0))] = m.value;
  d["intermediate_values"] = intermediate;
  const nlohmann::ordered_json state =
      nlohmann::ordered_json::parse(t.hpo_json.empty() ? "{}" : t.hpo_json, nullptr, false);
  const auto part = [&](const char* key) {
    return state.is_object() && state.contains(key) ? to_python(state[key]) : py::object(py::dict());
  };
  d["distributions"] = part("distributions");
  d["user_attrs"] = part("user_attrs");
  return d;
}

// The pruner a stored study was created with (its identity's "pruner", hpo::Pruner::describe), by
// name, and its settings into `options`. "" when the identity names none.
std::string stored_pruner(const nlohmann::ordered_json& identity, hpo::PrunerOptions& options) {
  if (!identity.contains("pruner") || !identity["pruner"].is_object()) return "";
  const nlohmann::ordered_json& p = identity["pruner"];
  std::string name = p.value("pruner", std::string());
  if (p.contains("percentile") && p["percentile"].is_number()) options.percentile = p["percentile"].get<double>();
  if (p.contains("startup_trials") && p["startup_trials"].is_number_integer())
    options.startup_trials = p["startup_trials"].get<int>();
  if (p.contains("warmup_steps") && p["warmup_steps"].is_number_integer())
    options.warmup_steps = p["warmup_steps"].get<std::int64_t>();
  if (p.contains("eta") && p["eta"].is_number()) options.eta = p["eta"].get<double>();
  // ASHA / Hyperband: the first rung of the first bracket is the minimum resource (asha.cc describe).
  if (p.contains("brackets") && p["brackets"].is_array() && !p["brackets"].empty() && p["brackets"][0].is_array() &&
      !p["brackets"][0].empty() && p["brackets"][0][0].is_number_integer())
    options.min_resource = p["brackets"][0][0].get<std::int64_t>();
  return name;
}

class Engine {
 public:
  struct Args {
    std::string storage;  // "" or ":memory:": a temporary store held by this engine
    std::string study_name, direction, sampler, pruner;
    // Several objectives (Optuna's directions): one each, two or more; empty: one objective (direction).
    std::vector<std::string> directions;
    std::uint64_t seed = 0;
    int startup_trials = -1;  // the sampler's prior draws before its model; -1: its default
    bool load_if_exists = false, must_exist = false;
    std::int64_t steps = 0;
    py::dict pruner_options;
  };

  explicit Engine(const Args& a) {
    if (a.storage.empty() || a.storage == ":memory:") {
      temporary_ = std::make_shared<const TemporaryStore>();
      storage_ = temporary_->path();
    } else {
      storage_ = a.storage;
    }
    options_.runner = "python objective";
    sampler_kind_ = hpo::parse_sampler(a.sampler);
    sampler_name_ = hpo::to_string(sampler_kind_);
    sampler_options_.seed = a.seed;
    sampler_options_.startup_trials = a.startup_trials;
    // The pruner's settings: a stored study's as stored (below), then those given here over them.
    hpo::PrunerOptions po;
    const auto apply_given_pruner_options = [&] {
      for (const auto& item : a.pruner_options) {
        const std::string key = py::str(item.first);
        const py::handle v = item.second;
        if (key == "startup_trials") po.startup_trials = v.cast<int>();
        else if (key == "min_resource") po.min_resource = v.cast<std::int64_t>();
        else if (key == "eta") po.eta = v.cast<double>();
        else if (key == "warmup_steps") po.warmup_steps = v.cast<std::int64_t>();
        else if (key == "percentile") po.percentile = v.cast<double>();
        else
          throw Error(fmt::format("pruner_options: unknown option '{}'; valid: startup_trials, warmup_steps, "
                                  "percentile, min_resource, eta",
                                  key));
      }
    };
    std::unique_ptr<store::StudyStore> store;
    std::optional<store::StudyInfo> existing;
    std::vector<store::StudyInfo> studies;
    {
      py::gil_scoped_release release;
      store = store::open_store(storage_);
      studies = store->studies();
    }
    // load_study(study_name=None): the store's only study (Optuna's rule).
    options_.name = a.study_name.empty() && a.must_exist && studies.size() == 1 ? studies.front().name : a.study_name;
    for (const store::StudyInfo& info : studies)
      if (info.name == options_.name) existing = info;
    nlohmann::ordered_json identity;
    if (existing) {
      identity = nlohmann::ordered_json::parse(existing->config_json, nullptr, false);
      if (!identity.is_object() || !identity.contains("space_by"))
        throw Error(fmt::format("study_name '{}': the study in {} was not made by create_study (its space was given "
                                "in advance): read it with paratune.open_study, resume it with paratune.tune",
                                options_.name, store->locator()));
      if (!a.load_if_exists && !a.must_exist)
        throw Error(fmt::format("study_name '{}': {} has a study of that name already; pass load_if_exists=True to "
                                "go on with it, or another study_name",
                                options_.name, store->locator()));
      // load_study: the study's own settings.
      options_.objective = identity.value("objective", std::string("value"));
      options_.steps = identity.value("steps", std::int64_t{0});
      if (a.steps != 0 && a.steps != options_.steps)
        throw Error(fmt::format("steps {}: study '{}' in {} was created with steps {}; give those, or none", a.steps,
                                options_.name, store->locator(), options_.steps));
      options_.direction = hpo::parse_direction(a.must_exist ? identity.value("direction", std::string("minimize"))
                                                             : a.direction);
      // load_study: the objectives as stored; create_study(load_if_exists=True): as given (the
      // identity's check says so when they differ).
      if (a.must_exist && identity.contains("objectives") && identity.contains("directions")) {
        for (const auto& o : identity["objectives"]) options_.objectives.push_back(o.get<std::string>());
        for (const auto& d : identity["directions"]) options_.directions.push_back(hpo::parse_direction(d.get<std::string>()));
      } else if (!a.must_exist) {
        set_objectives(a.directions);
      }
    } else {
      if (a.must_exist) {
        std::string names;
        for (const store::StudyInfo& info : studies) names += (names.empty() ? "" : ", ") + info.name;
        if (a.study_name.empty() && studies.empty())
          throw Error(fmt::format("study_name None: {} holds no study", store->locator()));
        if (a.study_name.empty())
          throw Error(fmt::format("study_name None: {} holds {} studies, so name one (it has: {})", store->locator(),
                                  studies.size(), names));
        throw Error(fmt::format("study_name '{}': {} has no such study (it has: {})", a.study_name, store->locator(),
                                names.empty() ? std::string("none") : names));
      }
      options_.direction = hpo::parse_direction(a.direction);
      options_.steps = a.steps;
      set_objectives(a.directions);
    }
    hpo::validate(options_);
    // A stored study's pruner when none is named (or the same one is): its settings as stored, those
    // given in pruner_options over them. A new study without one: Optuna's default, the median pruner
    // -- none with several objectives, which no pruner judges (known only now for a study loaded as
    // stored).
    std::string pruner = a.pruner;
    if (existing) {
      hpo::PrunerOptions stored_options;
      const std::string stored = stored_pruner(identity, stored_options);
      if (!stored.empty() && (pruner.empty() || pruner == stored)) {
        pruner = stored;
        po = stored_options;
      }
    }
    if (pruner.empty()) pruner = options_.objectives.empty() ? "median" : "none";
    apply_given_pruner_options();
    pruner_kind_ = hpo::parse_pruner(pruner);
    sampler_options_.direction = options_.direction;
    sampler_options_.directions = options_.directions;
    po.direction = options_.direction;
    po.max_resource = options_.steps > 0 ? options_.steps : std::numeric_limits<int>::max();
    if ((pruner_kind_ == hpo::PrunerKind::kAsha || pruner_kind_ == hpo::PrunerKind::kHyperband) && options_.steps == 0)
      throw Error(fmt::format("pruner '{}': needs steps= (the steps of a full trial: its rungs are fractions of it)",
                              pruner));
    pruner_ = hpo::make_pruner(pruner_kind_, po);
    locator_ = store->locator();
    if (existing) {
      // Its settings are checked now, without the controller lock: another process may be running
      // its trials, and reading them (best_value, trials) must not wait for it.
      const std::string now = hpo::ask_tell_identity(nullptr, options_, *pruner_).dump();
      if (now != existing->config_json)
        throw Error(fmt::format("study_name '{}': {} holds it with other settings: {}; load it with the settings it "
                                "was created with (or none: load_study takes them as stored)",
                                options_.name, locator_, store::identity_difference(existing->config_json, now)));
      py::gil_scoped_release release;
      store_ = std::move(store);
      return;
    }
    // Created now (not at the first trial), so that load_study finds it.
    py::gil_scoped_release release;
    store_ = std::move(store);
    open();
    close_if_idle();
  }

  ~Engine() {
    py::gil_scoped_release release;
    const std::lock_guard lock(mutex_);
    study_.reset();  // trials never told: interrupted
    store_.reset();
  }

  // A new trial; with `fixed` (parameter values) and `attrs`, one that takes them before any queued by
  // enqueue (LiveStudy.add_trial), in one step so no other thread's ask takes them.
  int ask(const py::object& fixed, const py::object& attrs) {
    std::optional<nlohmann::ordered_json> values, user_attrs;
    if (!fixed.is_none()) {
      values = from_python(fixed, "add_trial: params");
      user_attrs = from_python(attrs, "add_trial: user_attrs");
    }
    py::gil_scoped_release release;
    const std::lock_guard lock(mutex_);
    open();
    if (values) study_->enqueue(*values, *user_attrs, /*first=*/true);
    const std::optional<hpo::AskTellStudy::Asked> asked = study_->ask();
    if (!asked) throw Error("ask: the sampler has no configuration left");
    if (!values && enqueued_ > 0) --enqueued_;
    return asked->number;
  }

  py::object suggest(int number, const std::string& name, const std::string& type, double low, double high,
                     double step, bool log, const py::object& choices, const std::string& call) {
    hpo::Distribution d;
    d.param.name = name;
    d.param.type = param_type(type);
    d.param.low = low;
    d.param.high = high;
    d.param.log = log;
    d.step = step;
    if (!choices.is_none()) {
      const nlohmann::ordered_json list = from_python(choices, call + ": choices");
      for (const auto& c : list) d.param.choices.emplace_back(c);
    }
    d = hpo::checked_distribution(std::move(d), call);
    nlohmann::json value;
    {
      py::gil_scoped_release release;
      value = with_study(number, [&](hpo::AskTellStudy& s) { return s.suggest(number, d); });
    }
    return to_python(value);
  }

  bool report(int number, std::int64_t step, double value) {
    py::gil_scoped_release release;
    return with_study(number, [&](hpo::AskTellStudy& s) { return s.report(number, step, value); });
  }
  void report_metric(int number, const std::string& name, double value, std::optional<std::int64_t> step) {
    py::gil_scoped_release release;
    with_study(number, [&](hpo::AskTellStudy& s) { s.report_metric(number, name, value, step); });
  }
  bool should_prune(int number) {
    py::gil_scoped_release release;
    return with_study(number, [&](hpo::AskTellStudy& s) { return s.should_prune(number); });
  }
  void set_user_attr(int number, const std::string& key, const py::object& value) {
    const nlohmann::ordered_json j = from_python(value, fmt::format("set_user_attr('{}')", key));
    py::gil_scoped_release release;
    with_study(number, [&](hpo::AskTellStudy& s) { s.set_user_attr(number, key, j); });
  }

  py::object user_attrs(int number) {
    nlohmann::ordered_json attrs;
    {
      py::gil_scoped_release release;
      attrs = with_study(number, [&](hpo::AskTellStudy& s) { return s.user_attrs(number); });
    }
    return to_python(attrs);
  }

  // enqueue_trial: values the next trial asked takes (hpo/ask_tell.h enqueue). The queue lives with
  // the open study, so the study opens now and stays open until the enqueued trials are asked and told.
  void enqueue(const py::dict& values, const py::dict& user_attrs) {
    const nlohmann::ordered_json v = from_python(values, "enqueue_trial: params");
    const nlohmann::ordered_json a = from_python(user_attrs, "enqueue_trial: user_attrs");
    py::gil_scoped_release release;
    const std::lock_guard lock(mutex_);
    open();
    study_->enqueue(v, a);
    ++enqueued_;
  }

  // optimize(): the study stays open from its first trial to its end, not reopened for each trial.
  void hold() {
    py::gil_scoped_release release;
    const std::lock_guard lock(mutex_);
    ++holds_;
    open();
  }
  void release() {
    py::gil_scoped_release release;
    const std::lock_guard lock(mutex_);
    --holds_;
    close_if_idle();
  }

  // state: complete, pruned, fail, oom, interrupted. Returns the trial as stored (without its curve).
  py::dict tell(int number, const std::string& state, std::optional<double> value, const std::string& reason,
               const std::vector<double>& values) {
    hpo::TrialEnd end;
    end.value = value;
    end.values = values;
    end.reason = reason;
    if (state == "complete") end.kind = hpo::TrialEnd::Kind::kCompleted;
    else if (state == "pruned") end.kind = hpo::TrialEnd::Kind::kPruned;
    else if (state == "oom") end.kind = hpo::TrialEnd::Kind::kOutOfMemory;
    else if (state == "interrupted") end.kind = hpo::TrialEnd::Kind::kInterrupted;
    else end.kind = hpo::TrialEnd::Kind::kFailed;
    store::StoredTrial stored;
    {
      py::gil_scoped_release release;
      const std::lock_guard lock(mutex_);
      if (!study_) throw not_running(number);
      stored = study_->tell(number, end);
      close_if_idle();
    }
    return trial_dict(stored, options_.objective, options_.objectives);
  }

  // Every trial as stored, in number order (dicts: _study.py makes FrozenTrials of them).
  py::list trials() {
    py::list out;
    for (const store::StoredTrial& t : stored_trials()) out.append(trial_dict(t, options_.objective, options_.objectives));
    return out;
  }

  // Several objectives: the numbers of the trials on the Pareto front, best first by the first
  // objective (hpo::pareto_front_trials); empty for one objective.
  std::vector<int> front() {
    const std::vector<store::StoredTrial> all = stored_trials();
    std::vector<int> numbers;
    if (options_.objectives.empty()) return numbers;
    for (const std::size_t i : hpo::pareto_front_trials(all, options_.objectives, options_.directions))
      numbers.push_back(all[i].number);
    return numbers;
  }

  [[nodiscard]] std::vector<std::string> directions() const {
    std::vector<std::string> out;
    for (const hpo::Direction d : options_.directions) out.emplace_back(hpo::to_string(d));
    if (out.empty()) out.emplace_back(hpo::to_string(options_.direction));
    return out;
  }

 private:
  // Every trial as stored, with its metrics: from the open study, else read afresh.
  std::vector<store::StoredTrial> stored_trials() {
    std::vector<store::StoredTrial> all;
    {
      py::gil_scoped_release release;
      const std::lock_guard lock(mutex_);
      if (study_) {
        all = study_->trials();
      } else {
        const std::unique_ptr<store::StudyStore> reader = store::open_store(storage_, store::Access::kReadOnly);
        for (const store::StudyInfo& info : reader->studies())
          if (info.name == options_.name) all = reader->trials(info.id, true);
      }
    }
    return all;
  }

  // create_study's directions: two or more make a study of several objectives, stored as the metrics
  // values_0, values_1, ... (the names of Optuna's trials_dataframe columns); the first is `direction`.
  void set_objectives(const std::vector<std::string>& directions) {
    if (directions.size() < 2) return;
    for (std::size_t i = 0; i < directions.size(); ++i) {
      options_.objectives.push_back(fmt::format("values_{}", i));
      options_.directions.push_back(hpo::parse_direction(directions[i]));
    }
    options_.objective = options_.objectives.front();
    options_.direction = options_.directions.front();
  }

 public:

  [[nodiscard]] const std::string& name() const { return options_.name; }
  [[nodiscard]] std::string direction() const { return hpo::to_string(options_.direction); }
  [[nodiscard]] const std::string& locator() const { return locator_; }
  [[nodiscard]] const std::string& storage() const { return storage_; }
  [[nodiscard]] const std::string& sampler() const { return sampler_name_; }
  [[nodiscard]] std::string pruner() const { return pruner_->name(); }

 private:
  // Under mutex_.
  void open() {
    if (study_) return;
    study_ = std::make_unique<hpo::AskTellStudy>(options_, *store_, sampler_kind_, sampler_options_, *pruner_,
                                                 pruner_kind_);
    sampler_name_ = study_->sampler_name();
  }
  void close_if_idle() {
    if (study_ && holds_ == 0 && enqueued_ == 0 && study_->running() == 0) study_.reset();
  }
  // `call` on the open study, under mutex_ (so that no other thread's tell closes it meanwhile); the
  // GIL released by the caller. Error when the study is closed: no trial runs.
  template <typename Call>
  auto with_study(int number, const Call& call) -> decltype(call(std::declval<hpo::AskTellStudy&>())) {
    const std::lock_guard lock(mutex_);
    if (!study_) throw not_running(number);
    return call(*study_);
  }
  Error not_running(int number) const {
    return Error(fmt::format("study '{}': trial {} is not running (never asked, or already told how it ended)",
                             options_.name, number));
  }

  std::shared_ptr<const TemporaryStore> temporary_;  // declared first: removed last
  std::string storage_, locator_, sampler_name_;
  hpo::AskTellOptions options_;
  hpo::SamplerKind sampler_kind_{};
  hpo::SamplerOptions sampler_options_;
  hpo::PrunerKind pruner_kind_{};
  std::unique_ptr<hpo::Pruner> pruner_;
  std::unique_ptr<store::StudyStore> store_;
  std::mutex mutex_;
  int holds_ = 0;     // optimize() calls in progress (under mutex_)
  int enqueued_ = 0;  // enqueued trials not yet asked (under mutex_): their queue is the open study's
  std::unique_ptr<hpo::AskTellStudy> study_;
};

}  // namespace

void bind_define_by_run(py::module_& m) {
  py::class_<Engine, std::shared_ptr<Engine>>(m, "_Engine", "create_study's engine (python/paratune/_study.py).")
      .def(py::init([](const std::string& storage, const std::string& study_name, const std::string& direction,
                       const std::string& sampler, const std::string& pruner, std::uint64_t seed, int startup_trials,
                       bool load_if_exists,
                       bool must_exist, std::int64_t steps, const py::dict& pruner_options,
                       const std::vector<std::string>& directions) {
             Engine::Args args{storage, study_name, direction, sampler, pruner, {}, seed, startup_trials,
                               load_if_exists, must_exist, steps, pruner_options};
             args.directions = directions;
             return std::make_shared<Engine>(args);
           }),
           py::arg("storage"), py::arg("study_name"), py::arg("direction"), py::arg("sampler"), py::arg("pruner"),
           py::arg("seed"), py::arg("startup_trials"), py::arg("load_if_exists"), py::arg("must_exist"), py::arg("steps"),
           py::arg("pruner_options"), py::arg("directions"))
      .def("ask", &Engine::ask, py::arg("fixed") = py::none(), py::arg("attrs") = py::none())
      .def("suggest", &Engine::suggest)
      .def("report", &Engine::report)
      .def("report_metric", &Engine::report_metric)
      .def("should_prune", &Engine::should_prune)
      .def("set_user_attr", &Engine::set_user_attr)
      .def("user_attrs", &Engine::user_attrs)
      .def("tell", &Engine::tell)
      .def("enqueue", &Engine::enqueue)
      .def("hold", &Engine::hold)
      .def("release", &Engine::release)
      .def("trials", &Engine::trials)
      .def("front", &Engine::front)
      .def_property_readonly("directions", &Engine::directions)
      .def_property_readonly("name", &Engine::name)
      .def_property_readonly("direction", &Engine::direction)
      .def_property_readonly("locator", &Engine::locator)
      .def_property_readonly("storage", &Engine::storage)
      .def_property_readonly("sampler", &Engine::sampler)
      .def_property_readonly("pruner", &Engine::pruner);
}

}  // namespace paratune::python
