// paratune.tune(objective, space, storage=...): a hyperparameter study whose trials are calls of a
// Python function, Optuna-style (objective(trial) with trial.suggest_*, trial.report, trial.should_prune),
// on hpo/ask_tell.h -- the samplers, pruners and stores of `paratune tune --space`, no second copy.
//
// How a call ends decides how the trial is stored:
//   returns a number               completed with that value (None: its last reported value)
//   raises paratune.TrialPruned    pruned (or any exception class named TrialPruned: Optuna's)
//   raises MemoryError, or an exception whose class is named *OutOfMemoryError (torch's)   oom
//   raises KeyboardInterrupt       interrupted (asked again when the study resumes); tune() stops
//                                  and re-raises it
//   raises anything else           failed, with "Type: message" as its reason; the study goes on
//   misuses the trial (suggests a parameter the space does not have, or with other bounds)
//                                  failed, and tune() re-raises: every trial would repeat it
// A trial is valid only inside its call: kept (or used by a thread that outlives the call), every
// call that needs the run is a paratune.Error (PyTrial).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <system_error>
#include <thread>
#include <limits>
#include <type_traits>
#include <functional>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "convert.h"
#include "modules.h"
#include "paratune/hpo/ask_tell.h"
#include "paratune/hpo/pruner.h"
#include "paratune/hpo/sampler.h"
#include "paratune/hpo/space.h"
#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/spec/input_file.h"
#include "study_view.h"

namespace paratune::python {
namespace {

using Clock = std::chrono::steady_clock;

// paratune.TrialPruned: raised by an objective to stop its trial (after should_prune() said so).
py::handle trial_pruned_type() {
  static py::handle type = PyErr_NewExceptionWithDoc(
      "paratune.TrialPruned", "Raise it from an objective to end its trial as pruned (after trial.should_prune()).",
      PyExc_Exception, nullptr);
  return type;
}

// Categorical choices as they are stored: None, a bool, a number or a str as itself; any other
// hashable (a tuple, an enum member) as its repr(). The objective gets back the very object it
// listed (listed_choice), as in Optuna. Error naming `what` for a str or a non-iterable.
nlohmann::ordered_json stored_choices(const py::handle& choices, const std::string& what) {
  if (py::isinstance<py::str>(choices) || py::isinstance<py::bytes>(choices) || !py::hasattr(choices, "__iter__"))
    throw Error(fmt::format("{} {}: must be a list of values", what, shown(choices)));
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const py::handle c : choices) {
    const bool plain = c.is_none() || py::isinstance<py::bool_>(c) || py::isinstance<py::str>(c) ||
                       PyIndex_Check(c.ptr()) != 0 || PyFloat_Check(c.ptr()) != 0;
    if (!plain) out.push_back(py::repr(c).cast<std::string>());
    else if (PyIndex_Check(c.ptr()) != 0 && !py::isinstance<py::bool_>(c)) out.push_back(from_python(py::int_(py::reinterpret_borrow<py::object>(c)), what));
    else out.push_back(from_python(c, what));
  }
  return out;
}

// The object the objective listed whose stored form is `value` (stored_choices); `value` itself
// when none is (the choices were not given).
py::object listed_choice(const py::handle& choices, const nlohmann::ordered_json& stored,
                         const nlohmann::ordered_json& value) {
  if (!choices.is_none()) {
    const py::list listed(py::reinterpret_borrow<py::object>(choices));
    for (std::size_t i = 0; i < stored.size() && i < listed.size(); ++i)
      if (stored[i] == value && stored[i].is_number_float() == value.is_number_float()) return listed[i];
  }
  return to_python(value);
}

// The space: a dict (the YAML space file's content, or only its `parameters`), or a space file.
hpo::Space space_of(const py::handle& value) {
  if (py::isinstance<py::dict>(value)) {
    nlohmann::ordered_json doc = from_python(value, "space");
    if (!doc.contains("parameters")) doc = nlohmann::ordered_json{{"parameters", doc}};
    return hpo::Space::parse(doc.dump(), "space (dict)");  // JSON is YAML
  }
  return hpo::Space::load(text_or_path(value, "space"));
}

// The dict options of the sampler and the pruner, by the library's field names.
void reject_unknown(const py::dict& options, const std::vector<std::string>& known, const char* what) {
  for (const auto& item : options) {
    const std::string key = text_arg(item.first, what);
    if (std::find(known.begin(), known.end(), key) == known.end())
      throw Error(fmt::format("{}: {}", what, unknown_name_message("option", key, known)));
  }
}

// A number of the sampler's or the pruner's options dict: a whole number in T's range for integral
// T, any finite number for double.
template <typename T>
T option_value(const py::dict& options, const char* key, T fallback, const char* what) {
  if (!options.contains(key)) return fallback;
  const py::handle v = options[key];
  const std::string field = fmt::format("{}.{}", what, key);
  if constexpr (std::is_integral_v<T>) {
    if (py::isinstance<py::bool_>(v) || !py::isinstance<py::int_>(v))
      throw OptionError(field, shown(v), "must be a whole number");
    const long long value = PyLong_AsLongLong(v.ptr());
    if ((value == -1 && PyErr_Occurred() != nullptr) || value < std::numeric_limits<T>::min() ||
        value > std::numeric_limits<T>::max()) {
      PyErr_Clear();
      throw OptionError(field, shown(v),
                        fmt::format("must be a whole number from {} to {}", std::numeric_limits<T>::min(),
                                    std::numeric_limits<T>::max()));
    }
    return static_cast<T>(value);
  } else {
    if (py::isinstance<py::bool_>(v) || !(py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)))
      throw OptionError(field, shown(v), "must be a number");
    return v.cast<T>();
  }
}

// Runs `build`; an OptionError from it is re-thrown with each option named as tune() calls it
// (`names`: the library's field -> tune()'s keyword), the rest of the message as it was.
void with_python_names(const std::map<std::string, std::string>& names, const std::function<void()>& build) {
  try {
    build();
  } catch (const OptionError& e) {
    throw Error(e.render([&](std::string_view field) -> std::optional<std::string> {
      const auto it = names.find(std::string(field));
      return it == names.end() ? std::nullopt : std::optional<std::string>(it->second);
    }));
  }
}

// suggest_float and suggest_int are one call on a float or an int parameter.
template <typename Number>
struct NumberParam;
template <>
struct NumberParam<double> {
  static constexpr hpo::ParamType kType = hpo::ParamType::kFloat;
  static constexpr const char* kCall = "suggest_float";
};
template <>
struct NumberParam<std::int64_t> {
  static constexpr hpo::ParamType kType = hpo::ParamType::kInt;
  static constexpr const char* kCall = "suggest_int";
};

// A running study shared by the threads that call the objective.
struct Run {
  hpo::AskTellStudy* study = nullptr;
  const hpo::Space* space = nullptr;
  std::atomic<bool> stopping{false};  // Ctrl-C, or a misused trial: no new trials; running ones unwind
  std::atomic<int> asked{0};          // trials asked by this run
  bool space_probed = false;          // the space was read from the objective's first call (space=None)
  std::mutex ask_mutex;               // may_ask and the count of asked trials move together
  int max_trials = 0;                 // in the study in all (reused ones included); 0: no limit
  double timeout_s = 0;               // no new trial after this long; 0: none
  Clock::time_point start = Clock::now();
  py::object objective;
  std::string objective_name;         // what its values are called (tune's objective_name)
  py::object logger;                  // logging.getLogger("paratune")
  hpo::Direction direction = hpo::Direction::kMinimize;
  std::mutex best_mutex;
  std::optional<std::pair<int, double>> best;  // the best completed trial (number, value), for the log
  std::mutex error_mutex;
  std::optional<py::error_already_set> error;  // re-raised by tune() (guarded by error_mutex; GIL held)
};

// What the objective gets: its configuration and the calls that report to the study.
//
// An objective may keep its Trial past its call (in a list, in a thread it started), and tune() may
// have returned by the time it is used again: the Run it reports to lives on tune()'s stack. So a
// trial reaches the run only through `run_`, which end() clears once the call is over -- run_trial
// ends every trial on every way out, an exception included -- and each call that needs the run holds
// it for its whole length (RunUse), so end() waits for calls in flight in other threads. Once ended,
// every such call is a paratune.Error; number and params, the trial's own copies, stay readable.
class PyTrial {
 public:
  PyTrial(Run& run, int number, hpo::Config config) : run_(&run), number_(number), config_(std::move(config)) {}

  // The objective's call is over: from now on the trial refuses every call that needs the run.
  // Waits for the calls in flight (other threads'); with the GIL released, which they may need to
  // finish, and which no thread holds while it waits for `mutex_` (RunUse), so none can deadlock.
  void end() noexcept {
    const py::gil_scoped_release release;
    const std::unique_lock lock(mutex_);
    run_.store(nullptr);
  }
  [[nodiscard]] int number() const { return number_; }
  [[nodiscard]] py::object params() const { return to_python(config_); }
  [[nodiscard]] bool misused() const { return misused_; }
  [[nodiscard]] std::string repr() const {
    return fmt::format("<paratune.Trial {} {}{}>", number_, config_.dump(), run_.load() == nullptr ? " (ended)" : "");
  }

  py::object suggest(const std::string& name, hpo::ParamType type, const char* call,
                     const std::function<std::string(const hpo::ParamSpec&)>& mismatch) {
    const RunUse use(*this, call);
    const Run& run = use.run();
    const std::optional<std::size_t> index = run.space->index_of(name);
    if (!index) {
      std::vector<std::string> names;
      for (const hpo::ParamSpec& p : run.space->parameters()) names.push_back(p.name);
      misuse(fmt::format("{}('{}'): {}{}", call, name, unknown_name_message("parameter", name, names),
                         run.space_probed ? "; the space was read from the objective's first call, which did not "
                                            "suggest it (a branch that call did not take): give tune() the space, "
                                            "with `when` for conditional parameters, under a new study_name"
                                          : ""));
    }
    const hpo::ParamSpec& p = run.space->parameters()[*index];
    if (p.type != type)
      misuse(fmt::format("{}('{}'): the space declares '{}' as {}", call, name, name, hpo::to_string(p.type)));
    if (const std::string problem = mismatch(p); !problem.empty())
      misuse(fmt::format("{}('{}'): {}; the space declares {}", call, name, problem, declared(p)));
    const auto it = config_.find(name);
    if (it == config_.end())
      misuse(fmt::format("{}('{}'): not active in this trial (it has a condition: when '{}')", call, name, p.when));
    return to_python(nlohmann::ordered_json(*it));
  }

  // suggest_float / suggest_int: the bounds and log, when given, must be the space's.
  template <typename Number>
  py::object suggest_number(const std::string& name, std::optional<Number> low, std::optional<Number> high,
                            std::optional<bool> log) {
    using Param = NumberParam<Number>;
    return suggest(name, Param::kType, Param::kCall, [&](const hpo::ParamSpec& p) {
      const auto differs = [](std::optional<Number> asked, double declared) {
        return asked && static_cast<double>(*asked) != declared;
      };
      const auto shown = [](std::optional<Number> bound) { return bound ? fmt::format("{}", *bound) : "?"; };
      if (differs(low, p.low) || differs(high, p.high) || (log && *log != p.log))
        return fmt::format("asked for {} from {} to {}{}", hpo::to_string(Param::kType), shown(low), shown(high),
                           log && *log ? ", log" : "");
      return std::string();
    });
  }

  void report(double value, std::int64_t step) {
    const RunUse use(*this, "report");
    unwind_if_stopping(use.run());
    // A diverged run (NaN, infinity) fails this trial; the study goes on. Other report errors (a
    // negative step) are the objective's code: every trial would repeat them.
    if (!std::isfinite(value))
      throw Error(fmt::format("trial {}: report: value {} at step {} is not a finite number", number_, value, step));
    bool stored = false;
    try {
      const py::gil_scoped_release release;
      stored = use.run().study->report(number_, step, value);
    } catch (const Error& e) {
      misuse(e.what());
    }
    // Optuna's behaviour: a step reported again is ignored with a warning (steps may come in any order).
    if (!stored) {
      const std::string message =
          fmt::format("trial {}: report: step {} was reported already; the value {} is ignored", number_, step, value);
      if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) != 0) throw py::error_already_set();
    }
  }

  void report_metric(const std::string& name, double value, std::optional<std::int64_t> step) {
    const RunUse use(*this, "report_metric");
    if (!std::isfinite(value))
      throw Error(fmt::format("trial {}: report_metric: {} = {} is not a finite number", number_, name, value));
    try {
      const py::gil_scoped_release release;
      use.run().study->report_metric(number_, name, value, step);
    } catch (const Error& e) {
      misuse(e.what());
    }
  }

  bool should_prune() {
    const RunUse use(*this, "should_prune");
    unwind_if_stopping(use.run());
    const py::gil_scoped_release release;
    return use.run().study->should_prune(number_);
  }

 private:
  // One call's hold on the run: taken with the GIL released (see end()), kept until the call
  // returns. Error naming `call` when the trial has ended.
  class RunUse {
   public:
    RunUse(const PyTrial& trial, const char* call) {
      {
        const py::gil_scoped_release release;
        lock_ = std::shared_lock(trial.mutex_);
      }
      run_ = trial.run_.load();
      if (run_ == nullptr)
        throw Error(fmt::format("trial {}: {}: the trial has ended (its objective call returned or raised); use a "
                                "trial only inside the objective call it was given to",
                                trial.number_, call));
    }
    [[nodiscard]] Run& run() const { return *run_; }

   private:
    std::shared_lock<std::shared_mutex> lock_;
    Run* run_ = nullptr;
  };

  static std::string declared(const hpo::ParamSpec& p) {
    if (p.type == hpo::ParamType::kCategorical) return fmt::format("choices {}", nlohmann::json(p.choices).dump());
    return fmt::format("{} from {} to {}{}", hpo::to_string(p.type), p.low, p.high, p.log ? ", log" : "");
  }
  // A mistake in the objective's code rather than in this configuration: every trial would repeat it.
  [[noreturn]] void misuse(const std::string& message) {
    misused_ = true;
    const std::string prefix = fmt::format("trial {}: ", number_);
    throw Error(message.starts_with(prefix) ? message : prefix + message);  // the study's errors name it already
  }
  static void unwind_if_stopping(const Run& run) {
    if (!run.stopping.load()) return;
    PyErr_SetString(PyExc_KeyboardInterrupt, "the study is stopping (KeyboardInterrupt in another thread)");
    throw py::error_already_set();
  }

  // run_ is cleared under mutex_ held exclusively (end()) and used under it held shared (RunUse);
  // atomic so that repr() may read it without waiting.
  mutable std::shared_mutex mutex_;
  std::atomic<Run*> run_;  // null once the trial has ended
  int number_;
  hpo::Config config_;
  std::atomic<bool> misused_ = false;
};

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text.size() > 500 ? text.substr(0, 497) + "..." : text;
}

// An exception the objective raised, on one line (convert.h exception_text). `has_message`:
// whether anything follows its type.
std::string raised_text(const py::error_already_set& e, bool* has_message = nullptr) {
  std::string text = one_line(exception_text(e));
  if (has_message != nullptr) *has_message = text != type_name(e.type());
  return text;
}

// paratune._ProbeDone: ends the call that reads the space from the objective (a BaseException, so
// that an objective's `except Exception` does not swallow it).
py::handle probe_done_type() {
  static py::handle type = PyErr_NewExceptionWithDoc(
      "paratune._ProbeDone", "Ends the call of the objective that reads its space (tune() with space=None).",
      PyExc_BaseException, nullptr);
  return type;
}

// space=None (define-by-run, Optuna's way): one call of the objective records its suggest_* calls,
// with their bounds or choices, as the study's space; the call ends at its first report,
// should_prune or return, before any training. Each suggestion gets the middle of its range (the
// geometric middle with log) or the first choice.
class SpaceProbe {
 public:
  // The middle of the range (the geometric middle with log), rounded for an int.
  template <typename Number>
  py::object suggest_number(const std::string& name, std::optional<Number> low, std::optional<Number> high,
                            std::optional<bool> log) {
    using Param = NumberParam<Number>;
    check_open(Param::kCall);
    if (!low || !high) refuse(missing_bounds(Param::kCall, name, "its low and high"));
    const hpo::ParamSpec p =
        spec(name, Param::kType, static_cast<double>(*low), static_cast<double>(*high), log.value_or(false));
    const double middle = p.log && p.low > 0 && p.high > 0 ? std::sqrt(p.low * p.high) : (p.low + p.high) / 2;
    if constexpr (std::is_integral_v<Number>)
      return add(p, static_cast<Number>(std::clamp(std::round(middle), std::min(p.low, p.high), std::max(p.low, p.high))));
    else
      return add(p, middle);
  }
  py::object suggest_categorical(const std::string& name, const py::object& choices) {
    check_open("suggest_categorical");
    if (choices.is_none()) refuse(missing_bounds("suggest_categorical", name, "its choices"));
    nlohmann::ordered_json list;
    try {
      list = stored_choices(choices, fmt::format("suggest_categorical('{}'): choices", name));
    } catch (const Error& e) {
      refuse(e.what());
    }
    if (!list.is_array() || list.empty())
      refuse(fmt::format("suggest_categorical('{}'): choices must be a non-empty list", name));
    hpo::ParamSpec p = spec(name, hpo::ParamType::kCategorical, 0, 0, false);
    for (const auto& c : list) p.choices.emplace_back(c);
    add(std::move(p), list.front());
    return listed_choice(choices, list, values_[name]);
  }
  // report, report_metric, should_prune: the space is read; the call ends here.
  [[noreturn]] void done(const char* call) const {
    check_open(call);
    PyErr_SetString(probe_done_type().ptr(), "the space is read");
    throw py::error_already_set();
  }
  // The call is over (every call of the probe runs with the GIL held: a plain flag will do).
  void end() { ended_ = true; }
  [[nodiscard]] py::object params() const { return to_python(values_); }
  [[nodiscard]] const nlohmann::ordered_json& values() const { return values_; }
  [[nodiscard]] const std::vector<hpo::ParamSpec>& specs() const { return specs_; }
  // Whether a suggestion was refused (no bounds, other bounds than before): the objective's code.
  [[nodiscard]] bool refused() const { return refused_; }

 private:
  void check_open(const char* call) const {
    if (ended_)
      throw Error(fmt::format("{}: the call that read the space has ended; use a trial only inside the objective "
                              "call it was given to",
                              call));
  }
  static hpo::ParamSpec spec(const std::string& name, hpo::ParamType type, double low, double high, bool log) {
    hpo::ParamSpec p;
    p.name = name;
    p.type = type;
    p.low = low;
    p.high = high;
    p.log = log;
    return p;
  }
  [[noreturn]] void refuse(const std::string& message) {
    refused_ = true;
    throw Error(message);
  }
  static std::string missing_bounds(const char* call, const std::string& name, const char* what) {
    return fmt::format("{}('{}'): tune() was given no space, so the space is read from the objective's suggestions, "
                       "and each must give {}",
                       call, name, what);
  }
  py::object add(hpo::ParamSpec p, const nlohmann::ordered_json& value) {
    for (const hpo::ParamSpec& seen : specs_)
      if (seen.name == p.name) {
        if (seen.type != p.type || seen.low != p.low || seen.high != p.high || seen.log != p.log || seen.choices != p.choices)
          refuse(fmt::format("'{}' is suggested twice with different bounds or choices", p.name));
        return to_python(values_[p.name]);
      }
    values_[p.name] = value;
    specs_.push_back(std::move(p));
    return to_python(value);
  }
  std::vector<hpo::ParamSpec> specs_;
  nlohmann::ordered_json values_ = nlohmann::ordered_json::object();
  bool refused_ = false;
  bool ended_ = false;
};

// The space a resumed study was stored with (space=None), if the store has the study.
std::optional<hpo::Space> stored_space(const std::string& storage, const std::string& name) {
  if (!store::is_postgres_locator(storage) && !std::filesystem::exists(storage)) return std::nullopt;
  std::unique_ptr<store::StudyStore> store;
  std::vector<store::StudyInfo> studies;
  {
    py::gil_scoped_release release;
    store = store::open_store(storage);
    studies = store->studies();
  }
  for (const store::StudyInfo& info : studies) {
    if (info.name != name) continue;
    // Ordered: the parameters keep their order, which is part of the identity.
    const nlohmann::ordered_json identity = nlohmann::ordered_json::parse(info.config_json, nullptr, false);
    if (!identity.is_object() || !identity.contains("space"))
      throw Error(fmt::format("{}: study '{}' is not a hyperparameter study", store->locator(), name));
    return hpo::Space::parse(identity["space"].dump(), fmt::format("{} (study '{}')", store->locator(), name));
  }
  return std::nullopt;
}

hpo::Space probed_space(const py::function& objective) {
  auto probe = std::make_shared<SpaceProbe>();
  try {
    // Ended on every way out (its own _ProbeDone included): a probe the objective kept refuses calls.
    const struct EndsProbe {
      SpaceProbe& probe;
      ~EndsProbe() { probe.end(); }
    } ends{*probe};
    objective(py::cast(probe));
  } catch (py::error_already_set& e) {
    // An objective that fails for the middle values (a trial of them would fail the same way) has
    // still suggested its parameters: those are the space. Raised before any suggestion, by the
    // probe itself (a suggestion without bounds, or with two), or not an Exception (Ctrl-C,
    // SystemExit), it stops tune().
    const bool objectives_own = e.matches(PyExc_Exception) && !probe->refused();
    if (!e.matches(probe_done_type()) && (!objectives_own || probe->specs().empty())) throw;
    if (!e.matches(probe_done_type()))
      py::module_::import("logging").attr("getLogger")("paratune").attr("warning")(
          fmt::format("the call that reads the space raised {}; its suggestions before that are the space ({})",
                      raised_text(e), probe->specs().size()));
  }
  if (probe->specs().empty())
    throw Error("space: none given, and the objective suggested no parameter before its first report or return; "
                "pass space=");
  return hpo::Space(probe->specs(), {}, "the objective's suggestions");
}

// Whether the exception class, or a class it derives from, is named TrialPruned (_study.py
// _is_pruned: the same rule). What is read cannot raise: __mro__ is a tuple of classes.
bool named_trial_pruned(const py::handle& type) {
  const py::object mro = py::getattr(type, "__mro__", py::tuple());
  if (!py::isinstance<py::tuple>(mro)) return false;
  for (const py::handle cls : mro.cast<py::tuple>())
    if (type_name(cls) == "TrialPruned") return true;
  return false;
}

// Calls the objective and says how the call ended, as the study stores it; `reraise`: the error
// tune() raises (Ctrl-C, a misused trial). Only the objective's own exceptions are caught, and what
// is read of them cannot raise (convert.h text_of), so nothing here escapes from a catch block.
hpo::TrialEnd call_objective(Run& run, const std::shared_ptr<PyTrial>& trial,
                             std::optional<py::error_already_set>& reraise) {
  hpo::TrialEnd end;
  py::object result;
  try {
    result = run.objective(py::cast(trial));
  } catch (py::error_already_set& e) {
    bool has_message = false;
    const std::string text = raised_text(e, &has_message);
    // paratune.TrialPruned, or an exception with a class of that name in its MRO, from code ported
    // from Optuna (optuna.TrialPruned = optuna.exceptions.TrialPruned, or a subclass of it), without
    // importing Optuna.
    if (e.matches(trial_pruned_type()) || named_trial_pruned(e.type())) {
      end.kind = hpo::TrialEnd::Kind::kPruned;
      end.reason = has_message ? fmt::format("the objective raised {}", text) : "";
    } else if (e.matches(PyExc_KeyboardInterrupt)) {
      end.kind = hpo::TrialEnd::Kind::kInterrupted;
      end.reason = text;
      run.stopping = true;
      reraise = std::move(e);
    } else {
      const bool oom = e.matches(PyExc_MemoryError) || type_name(e.type()).ends_with("OutOfMemoryError");
      end.kind = oom ? hpo::TrialEnd::Kind::kOutOfMemory : hpo::TrialEnd::Kind::kFailed;
      end.reason = text;
      if (trial->misused()) {
        run.stopping = true;
        reraise = std::move(e);
      }
    }
    return end;
  }
  if (result.is_none()) return end;  // its last reported value
  // A number: anything with __float__ or __index__ (numpy and torch scalars too), but not a bool
  // and not a string that float() would parse.
  const bool text_or_bool =
      py::isinstance<py::bool_>(result) || py::isinstance<py::str>(result) || py::isinstance<py::bytes>(result);
  const double value = text_or_bool ? -1.0 : PyFloat_AsDouble(result.ptr());
  if (text_or_bool || (value == -1.0 && PyErr_Occurred() != nullptr)) {
    PyErr_Clear();
    std::string why;
    const std::optional<std::string> printed = text_of(result, /*repr=*/true, &why);
    end.kind = hpo::TrialEnd::Kind::kFailed;
    end.reason = fmt::format("the objective returned {}, not a number",
                             printed ? one_line(*printed)
                                   : fmt::format("an object of type {} (its repr could not be read: {})",
                                                 type_name(py::type::handle_of(result)), one_line(why)));
  } else {
    end.value = value;
  }
  return end;
}

// Keeps the best completed trial for the log, by the study's rule (hpo/study.h best_hpo_trial: the
// better value, the earlier trial on a tie); returns it as the log line's end.
std::string note_best(Run& run, const store::StoredTrial& t) {
  const std::lock_guard lock(run.best_mutex);
  if (t.status == "completed" && t.objective) {
    const bool better = !run.best || (run.direction == hpo::Direction::kMinimize ? *t.objective < run.best->second
                                                                                 : *t.objective > run.best->second) ||
                        (*t.objective == run.best->second && t.number < run.best->first);
    if (better) run.best = {t.number, *t.objective};
  }
  if (!run.best) return "no trial completed yet";
  return fmt::format("best is trial {} with {} {}", run.best->first, run.objective_name, run.best->second);
}

// One line per trial on the "paratune" logger, as Optuna logs each trial: its number, how it ended,
// its value, its parameters and the best trial so far. Failures are warnings.
void log_trial(Run& run, const store::StoredTrial& t) {
  const std::string params = one_line(t.params_json);
  const std::string best = note_best(run, t);
  const std::string value = t.objective ? fmt::format("{} {}", run.objective_name, *t.objective) : "";
  if (t.status == "completed") {
    run.logger.attr("info")(fmt::format("trial {} completed with {} and parameters {}; {}", t.number, value, params,
                                        best));
  } else if (t.status == "pruned") {
    run.logger.attr("info")(fmt::format("trial {} pruned after {} step{}{} with parameters {}{}; {}", t.number, t.steps,
                                        t.steps == 1 ? "" : "s", value.empty() ? "" : " (" + value + ")", params,
                                        t.reason.empty() ? "" : " (" + t.reason + ")", best));
  } else if (t.status == "interrupted") {
    run.logger.attr("info")(fmt::format("trial {} interrupted ({}) with parameters {}: asked again first when the "
                                        "study resumes; {}",
                                        t.number, t.reason, params, best));
  } else {
    run.logger.attr("warning")(fmt::format("trial {} {} with parameters {}: {}; {}", t.number, t.status, params,
                                           t.reason, best));
  }
}

// Ends the trial however its call ended -- returned, raised, or an error of ours while reading
// either -- before anything else runs: a Trial the objective kept can no longer reach the run.
class EndsTrial {
 public:
  explicit EndsTrial(PyTrial& trial) : trial_(trial) {}
  ~EndsTrial() { trial_.end(); }
  EndsTrial(const EndsTrial&) = delete;
  EndsTrial& operator=(const EndsTrial&) = delete;

 private:
  PyTrial& trial_;
};

// One trial: the objective called with the GIL held, its end told with the GIL released.
void run_trial(Run& run, const hpo::AskTellStudy::Asked& asked) {
  // Shared with Python: an objective may keep its trial, which refuses every call once ended.
  const auto trial = std::make_shared<PyTrial>(run, asked.number, asked.config);
  std::optional<py::error_already_set> reraise;
  hpo::TrialEnd end;
  {
    const EndsTrial ends(*trial);
    end = call_objective(run, trial, reraise);
  }
  store::StoredTrial stored;
  {
    const py::gil_scoped_release release;
    stored = run.study->tell(asked.number, end);
  }
  if (reraise) {
    const std::lock_guard lock(run.error_mutex);
    if (!run.error) run.error = std::move(reraise);
  }
  log_trial(run, stored);
}

bool may_ask(const Run& run) {
  if (run.stopping.load()) return false;
  if (run.max_trials > 0 && run.study->reused() + run.asked.load() >= run.max_trials) return false;
  if (run.timeout_s > 0 && std::chrono::duration<double>(Clock::now() - run.start).count() >= run.timeout_s) return false;
  return true;
}

// Asks for a trial unless the run is done (GIL released while the sampler works).
std::optional<hpo::AskTellStudy::Asked> next_trial(Run& run) {
  py::gil_scoped_release release;
  std::lock_guard lock(run.ask_mutex);
  if (!may_ask(run)) return std::nullopt;
  std::optional<hpo::AskTellStudy::Asked> asked = run.study->ask();
  if (asked) ++run.asked;
  return asked;
}

// In a worker thread's catch block (the GIL held): keeps the first error for tune() to raise, as
// Python would see it (paratune.Error for the library's), and stops the run.
void record_error(Run& run) {
  std::optional<py::error_already_set> error;
  try {
    throw;
  } catch (py::error_already_set& e) {
    error = std::move(e);
  } catch (const Error& e) {
    PyErr_SetString(py::module_::import("paratune").attr("Error").ptr(), e.what());
    error = py::error_already_set();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    error = py::error_already_set();
  }
  run.stopping = true;
  std::lock_guard lock(run.error_mutex);
  if (!run.error) run.error = std::move(error);
}

// n_jobs threads call the objective (each takes the GIL for it, as Python threads do); this thread
// waits, checking for Ctrl-C (signals reach Python's main thread only).
void run_threads(Run& run, int n_jobs) {
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n_jobs));
  std::atomic<int> running{n_jobs};
  std::string start_failure;  // a thread the system would not start: the others stop, then tune() raises
  for (int j = 0; j < n_jobs; ++j) {
    try {
      threads.emplace_back([&run, &running] {
        {
          py::gil_scoped_acquire gil;
          for (;;) {
            std::optional<hpo::AskTellStudy::Asked> asked;
            try {
              asked = next_trial(run);
              if (!asked) break;
              run_trial(run, *asked);
            } catch (...) {
              record_error(run);
              break;
            }
          }
        }
        --running;
      });
    } catch (const std::system_error& e) {
      start_failure = fmt::format("thread {} of {} could not start ({})", j + 1, n_jobs, e.what());
      run.stopping = true;
      running -= n_jobs - j;
      break;
    }
  }
  {
    py::gil_scoped_release release;
    while (running.load() > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) {
        run.stopping = true;
        std::lock_guard lock(run.error_mutex);
        if (!run.error) run.error = py::error_already_set();
        else PyErr_Clear();
      }
    }
    for (std::thread& t : threads) t.join();
  }
  if (!start_failure.empty()) throw OptionError("n_jobs", std::to_string(n_jobs), start_failure);
}

// tune()'s arguments, as Python gave them.
struct TuneArgs {
  py::object space;  // None: read from the objective (or the stored study, when it resumes)
  std::string storage;
  std::string study_name;
  std::string direction;
  std::string objective_name;
  std::string sampler;
  std::string pruner;
  std::int64_t max_trials = 0;
  double timeout = 0;
  int n_jobs = 1;
  std::uint64_t seed = 0;
  std::int64_t steps = 0;
  py::dict sampler_options;
  py::dict pruner_options;
};

// The study's options, sampler and pruner from tune()'s arguments, each checked and any error naming
// tune()'s keyword. The sampler needs the space, so it is made later from `sampler_kind`.
struct TuneSetup {
  hpo::AskTellOptions study;
  hpo::SamplerKind sampler_kind{};
  hpo::SamplerOptions sampler;
  hpo::PrunerKind pruner_kind{};
  std::unique_ptr<hpo::Pruner> pruner;
};

TuneSetup checked_setup(const TuneArgs& args) {
  if (args.max_trials < 0 || args.max_trials > std::numeric_limits<int>::max())
    throw OptionError("max_trials", std::to_string(args.max_trials), "must be >= 0 (0: no limit)");
  if (!(args.timeout >= 0) || !std::isfinite(args.timeout))
    throw OptionError("timeout", fmt::format("{}", args.timeout), "must be a finite number of seconds >= 0 (0: none)");
  if (args.n_jobs < 1 || args.n_jobs > 256)
    throw OptionError("n_jobs", std::to_string(args.n_jobs), "must be from 1 to 256");
  TuneSetup setup;
  hpo::AskTellOptions& options = setup.study;
  options.name = args.study_name;
  options.objective = args.objective_name;
  options.direction = hpo::parse_direction(args.direction);
  options.steps = args.steps;
  options.runner = "python objective";
  with_python_names({{"name", "study_name"}, {"objective", "objective_name"}}, [&] { hpo::validate(options); });

  hpo::SamplerOptions& so = setup.sampler;
  reject_unknown(args.sampler_options, {"startup_trials"}, "sampler_options");
  so.direction = options.direction;
  so.seed = args.seed;
  so.startup_trials = option_value<int>(args.sampler_options, "startup_trials", -1, "sampler_options");
  so.max_trials = static_cast<std::size_t>(args.max_trials);
  setup.sampler_kind = hpo::parse_sampler(args.sampler);

  hpo::PrunerOptions po;
  reject_unknown(args.pruner_options, {"startup_trials", "warmup_steps", "percentile"}, "pruner_options");
  po.direction = options.direction;
  // The median and percentile pruners never use the full resource; a study without a fixed length
  // states none (0) and gives them the largest.
  po.max_resource = args.steps > 0 ? args.steps : std::numeric_limits<int>::max();
  po.startup_trials = option_value<int>(args.pruner_options, "startup_trials", po.startup_trials, "pruner_options");
  po.warmup_steps = option_value<std::int64_t>(args.pruner_options, "warmup_steps", po.warmup_steps, "pruner_options");
  po.percentile = option_value<double>(args.pruner_options, "percentile", po.percentile, "pruner_options");
  setup.pruner_kind = hpo::parse_pruner(args.pruner);
  hpo::check_in_process_pruner(setup.pruner_kind);
  with_python_names({{"startup_trials", "pruner_options.startup_trials"},
                     {"warmup_steps", "pruner_options.warmup_steps"},
                     {"percentile", "pruner_options.percentile"},
                     {"max_resource", "steps"}},
                    [&] { setup.pruner = hpo::make_pruner(setup.pruner_kind, po); });
  return setup;
}

// The study's space: the one given, else the stored study's (a resume), else the objective's
// suggestions (read from one call, after the options are checked).
hpo::Space study_space(const py::function& objective, const TuneArgs& args, bool& probed) {
  probed = false;
  if (!args.space.is_none()) return space_of(args.space);
  if (std::optional<hpo::Space> stored = stored_space(args.storage, args.study_name)) return std::move(*stored);
  probed = true;
  return probed_space(objective);
}

// Runs (or resumes) the study; returns it as stored.
StudyView tune(const py::function& objective, const TuneArgs& args) {
  TuneSetup setup = checked_setup(args);
  bool probed = false;
  const hpo::Space space = study_space(objective, args, probed);
  std::unique_ptr<hpo::Sampler> sampler;
  with_python_names({{"startup_trials", "sampler_options.startup_trials"}},
                    [&] { sampler = hpo::make_sampler(setup.sampler_kind, space, setup.sampler); });
  std::unique_ptr<store::StudyStore> store;
  std::unique_ptr<hpo::AskTellStudy> study;
  std::optional<store::StoredTrial> best;  // a resumed study's best trial so far, for the log
  {
    py::gil_scoped_release release;
    store = store::open_store(args.storage);
    study = std::make_unique<hpo::AskTellStudy>(space, setup.study, *store, *sampler, *setup.pruner,
                                                setup.pruner_kind);
    if (study->reused() > 0) best = study->best();
  }
  Run run;
  run.study = study.get();
  run.space = &space;
  run.space_probed = probed;
  run.max_trials = static_cast<int>(args.max_trials);
  run.timeout_s = args.timeout;
  run.objective = objective;
  run.objective_name = args.objective_name;
  run.logger = py::module_::import("logging").attr("getLogger")("paratune");
  run.direction = setup.study.direction;
  if (best) run.best = {best->number, *best->objective};  // completed, with an objective (best_hpo_trial)
  if (args.max_trials == 0 && args.timeout == 0)  // Optuna's optimize() without n_trials or timeout does the same
    run.logger.attr("warning")("tune: neither max_trials nor timeout given: trials run until the sampler has no "
                               "configuration left (a grid's end) or Ctrl-C");
  if (args.n_jobs == 1) {
    // In this thread: Ctrl-C reaches the objective as KeyboardInterrupt.
    while (std::optional<hpo::AskTellStudy::Asked> asked = next_trial(run)) {
      run_trial(run, *asked);
      if (run.error) break;
    }
  } else {
    run_threads(run, args.n_jobs);
  }
  {
    py::gil_scoped_release release;
    study.reset();  // trials never told are stored interrupted; the lock is released
    store.reset();
  }
  if (run.error) {
    run.error->restore();
    throw py::error_already_set();
  }
  return read_study(args.storage, args.study_name);
}

}  // namespace

void bind_tuning(py::module_& m) {
  m.attr("TrialPruned") = trial_pruned_type();
  m.attr("_ProbeDone") = probe_done_type();
  py::class_<SpaceProbe, std::shared_ptr<SpaceProbe>>(m, "_SpaceProbe",
                                                     "The trial of the call that reads the space from the objective.")
      .def_property_readonly("number", [](const SpaceProbe&) { return 0; })
      .def_property_readonly("params", &SpaceProbe::params)
      .def("suggest_float", &SpaceProbe::suggest_number<double>, py::arg("name"), py::arg("low") = py::none(),
           py::arg("high") = py::none(), py::kw_only(), py::arg("log") = py::none())
      .def("suggest_int", &SpaceProbe::suggest_number<std::int64_t>, py::arg("name"), py::arg("low") = py::none(),
           py::arg("high") = py::none(), py::kw_only(), py::arg("log") = py::none())
      .def("suggest_categorical", &SpaceProbe::suggest_categorical, py::arg("name"), py::arg("choices") = py::none())
      .def("report", [](const SpaceProbe& p, const py::object&, const py::object&) { p.done("report"); },
           py::arg("value"), py::arg("step"))
      .def("report_metric", [](const SpaceProbe& p, const py::object&, const py::object&, const py::object&) {
        p.done("report_metric");
      }, py::arg("name"), py::arg("value"), py::arg("step") = py::none())
      .def("should_prune", [](const SpaceProbe& p) -> bool { p.done("should_prune"); })
      .def("__repr__", [](const SpaceProbe& p) {
        return fmt::format("<paratune.Trial 0 (the call that reads the space) {}>", p.values().dump());
      });

  py::class_<PyTrial, std::shared_ptr<PyTrial>>(m, "Trial", "One trial of tune(): its configuration, and what it reports.")
      .def_property_readonly("number", &PyTrial::number, "The trial's number in the study (1, 2, ...).")
      .def_property_readonly("params", &PyTrial::params, "Every active parameter of its configuration.")
      .def("suggest_float", &PyTrial::suggest_number<double>, py::arg("name"), py::arg("low") = py::none(),
           py::arg("high") = py::none(), py::kw_only(), py::arg("log") = py::none(),
           "The trial's value of a float parameter of the space (bounds, when given, must be the space's).")
      .def("suggest_int", &PyTrial::suggest_number<std::int64_t>, py::arg("name"), py::arg("low") = py::none(),
           py::arg("high") = py::none(), py::kw_only(), py::arg("log") = py::none(),
           "The trial's value of an int parameter of the space (bounds, when given, must be the space's).")
      .def(
          "suggest_categorical",
          [](PyTrial& t, const std::string& name, const py::object& choices) {
            nlohmann::ordered_json asked;
            const py::object value =
                t.suggest(name, hpo::ParamType::kCategorical, "suggest_categorical", [&](const hpo::ParamSpec& p) {
                  if (choices.is_none()) return std::string();
                  try {
                    asked = stored_choices(choices, "choices");
                  } catch (const Error& e) {
                    return std::string(e.what());  // the objective's code: a misuse, as other bounds are
                  }
                  if (asked == nlohmann::ordered_json(p.choices)) return std::string();
                  return fmt::format("asked for choices {}", asked.dump());
                });
            return listed_choice(choices, asked, from_python(value, "value"));  // the object listed
          },
          py::arg("name"), py::arg("choices") = py::none(),
          "The trial's value of a categorical parameter of the space (choices, when given, must be the space's).")
      .def("report", &PyTrial::report, py::arg("value"), py::arg("step"),
           "The objective's value after a step (0-based, in any order; a step reported again is ignored): its "
           "learning curve, which the pruner judges.")
      .def("report_metric", &PyTrial::report_metric, py::arg("name"), py::arg("value"), py::arg("step") = py::none(),
           "Another metric, stored with the trial (not judged).")
      .def("should_prune", &PyTrial::should_prune,
           "Whether the pruner stops the trial now; then raise paratune.TrialPruned.")
      .def("__repr__", &PyTrial::repr);

  m.def(
      "tune",
      [](const py::function& objective, const py::object& space, const py::object& storage,
         const std::string& study_name, const std::string& direction, const std::string& objective_name,
         const std::string& sampler, const std::string& pruner, std::int64_t max_trials, double timeout, int n_jobs,
         std::uint64_t seed, std::int64_t steps, const py::dict& sampler_options, const py::dict& pruner_options) {
        // storage=None or ":memory:" (Optuna's in-memory storage): a store of its own, held by the
        // Study returned, removed with it.
        std::shared_ptr<const TemporaryStore> temporary;
        std::string where = storage.is_none() ? ":memory:" : text_or_path(storage, "storage");
        if (where == ":memory:") {
          temporary = std::make_shared<const TemporaryStore>();
          where = temporary->path();
        }
        StudyView view = tune(objective, TuneArgs{space, where, study_name, direction, objective_name, sampler, pruner,
                                                  max_trials, timeout, n_jobs, seed, steps, sampler_options,
                                                  pruner_options});
        view.temporary = std::move(temporary);
        return view;
      },
      py::arg("objective"), py::arg("space") = py::none(), py::kw_only(), py::arg("storage") = py::none(),
      py::arg("study_name") = "main",
      py::arg("direction") = "minimize", py::arg("objective_name") = "value", py::arg("sampler") = "tpe",
      py::arg("pruner") = "median", py::arg("max_trials") = 0, py::arg("timeout") = 0.0, py::arg("n_jobs") = 1,
      py::arg("seed") = 0, py::arg("steps") = 0, py::arg("sampler_options") = py::dict(),
      py::arg("pruner_options") = py::dict(),
      "Runs (or resumes) a hyperparameter study whose trials call objective(trial). Returns the stored Study. "
      "storage: an SQLite file or a postgresql:// URI; None or ':memory:' keeps the study only as long as the "
      "Study returned (in a temporary file). "
      "Without a space, the space is the objective's suggestions (with their bounds), read from one call that "
      "ends at its first report or return -- or the stored study's, when it resumes. Each trial is logged on the "
      "'paratune' logger: its number, how it ended, its value, its parameters and the best trial so far.");
}

}  // namespace paratune::python
