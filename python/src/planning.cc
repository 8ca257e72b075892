// paratune.load_model / load_cluster / estimate / plan / simulate / launch_args: the library's cost
// model, planner, pipeline replay and launch emitters, as `paratune estimate|plan|simulate` use them.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>

#include "convert.h"
#include "modules.h"
#include "paratune/cost/calibration.h"
#include "paratune/cost/estimate.h"
#include "paratune/cost/hardware_profile.h"
#include "paratune/launch/framework_support.h"
#include "paratune/launch/launch.h"
#include "paratune/launch/schema_check.h"
#include "paratune/plan/planner.h"
#include "paratune/report/estimate_report.h"
#include "paratune/report/html_page.h"
#include "paratune/report/plan_report.h"
#include "paratune/report/sim_report.h"
#include "paratune/sim/pipeline.h"
#include "paratune/spec/enums.h"
#include "paratune/spec/error.h"
#include "paratune/spec/io.h"
#include "paratune/spec/option_error.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/presets.h"
#include "paratune/spec/units.h"
#include "paratune/version.h"

namespace paratune::python {
namespace {

// What every prediction is made from: the specs, the training, the calibration and the margin.
struct Setup {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  Calibration calibration;
  std::optional<HardwareProfile> profile;  // profile=: what `paratune profile` measured
  EstimateOptions options;  // options.profile points to `profile`: a Setup is never copied
  std::string calibration_source;  // "shipped" or the file
  Setup() = default;
  Setup(const Setup&) = delete;
  Setup& operator=(const Setup&) = delete;
};
using SetupPtr = std::shared_ptr<const Setup>;

// Labels each figure as the CLI's --json does (cli/main.cc prediction_json).
nlohmann::json predicted_by(const Setup& s) {
  nlohmann::json j = {{"kind", "model prediction"},
                      {"model", fmt::format("paratune {} analytic cost model", paratune::version())},
                      {"calibration", s.calibration_source}};
  if (s.profile)
    j["profile"] = {{"file", s.profile->source},
                    {"measured", "the GEMMs, flash attention, collectives and memory bandwidth it measured, interpolated "
                                 "between its shapes and sizes; the fitted model elsewhere"}};
  return j;
}

// The reports' title line, as the CLI writes it.
std::string report_title(const char* command, const Setup& s) {
  return fmt::format("paratune {}: {} on {} ({} x {}), seq {}, global batch {}", command, s.model.name, s.cluster.name,
                     s.cluster.num_gpus(), s.cluster.gpu.name, s.training.seq_len, s.training.global_batch);
}

ModelSpec model_of(const py::handle& value) {
  if (py::isinstance<ModelSpec>(value)) return value.cast<ModelSpec>();
  if (py::isinstance<py::dict>(value)) return model_from_document(nlohmann::json(from_python(value, "model")), "model (dict)");
  return load_model(text_or_path(value, "model"));
}

ClusterSpec cluster_of(const py::handle& value) {
  if (py::isinstance<ClusterSpec>(value)) return value.cast<ClusterSpec>();
  if (py::isinstance<py::dict>(value))
    return cluster_from_json(nlohmann::json(from_python(value, "cluster")), "cluster (dict)");
  return load_cluster(text_or_path(value, "cluster"));
}

// A configuration as text ("tp=2,pp=4,mbs=1") or a dict ({"tp": 2, "pp": 4}).
ParallelConfig config_of(const py::handle& value) {
  std::string text;
  if (py::isinstance<py::dict>(value)) {
    for (const auto& [key, v] : value.cast<py::dict>()) {
      const std::string name = text_arg(key, "config");
      const std::string item = text_arg(v, fmt::format("config: {}", name));
      text += fmt::format("{}{}={}", text.empty() ? "" : ",", name,
                          py::isinstance<py::bool_>(v) ? (v.cast<bool>() ? "true" : "false") : item);
    }
  } else if (py::isinstance<py::str>(value)) {
    text = text_arg(value, "config");
  } else {
    throw Error("config: expected a str like \"tp=2,pp=4,mbs=1\" or a dict like {\"tp\": 2, \"pp\": 4}");
  }
  try {
    return parse_parallel_config(text);
  } catch (const Error& e) {
    throw e.with_context("config");
  }
}

// The keyword options every prediction takes besides seq_len and global_batch (the CLI's setup
// flags without their dashes); anything else is an Error naming the closest.
const std::vector<std::string> kTrainingKeys{"precision",       "fp8_recipe", "fp8_param_gather",
                                             "moe_balancing",   "moe_capacity_factor", "optimizer",
                                             "flash_attention", "memory_margin",       "calibration",
                                             "profile"};

template <typename E>
E enum_option(const py::dict& options, const char* key, E fallback) {
  if (!options.contains(key)) return fallback;
  const std::string text = text_arg(options[key], key);
  try {
    return parse_enum<E>(text);
  } catch (const Error& e) {
    throw e.with_context(key);
  }
}

double number_option(const py::dict& options, const char* key, double fallback) {
  if (!options.contains(key)) return fallback;
  const py::handle v = options[key];
  if (py::isinstance<py::bool_>(v) || !(py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)))
    throw OptionError(key, shown(v), "must be a number");
  return v.cast<double>();
}

bool bool_option(const py::dict& options, const char* key, bool fallback) {
  if (!options.contains(key)) return fallback;
  if (!py::isinstance<py::bool_>(options[key]))
    throw OptionError(key, shown(options[key]), "must be True or False");
  return options[key].cast<bool>();
}

SetupPtr setup_of(const py::handle& model, const py::handle& cluster, std::int64_t seq_len, std::int64_t global_batch,
                  const py::dict& options, const std::vector<std::string>& other_keys = {}) {
  std::vector<std::string> known = kTrainingKeys;
  known.insert(known.end(), other_keys.begin(), other_keys.end());
  for (const auto& item : options) {
    const std::string key = text_arg(item.first, "keyword argument");
    if (std::find(known.begin(), known.end(), key) == known.end())
      throw Error(unknown_name_message("keyword argument", key, known));
  }
  auto s = std::make_shared<Setup>();
  s->model = model_of(model);
  s->cluster = cluster_of(cluster);
  const auto in_int = [](std::int64_t v, const char* field) {
    if (v < 1 || v > std::numeric_limits<int>::max())
      throw OptionError(field, std::to_string(v), fmt::format("must be a whole number from 1 to {}", std::numeric_limits<int>::max()));
    return static_cast<int>(v);
  };
  s->training.seq_len = in_int(seq_len, "seq_len");
  s->training.global_batch = in_int(global_batch, "global_batch");
  s->training.precision = enum_option(options, "precision", s->training.precision);
  s->training.fp8_recipe = enum_option(options, "fp8_recipe", s->training.fp8_recipe);
  s->training.moe_balancing = enum_option(options, "moe_balancing", s->training.moe_balancing);
  s->training.optimizer = enum_option(options, "optimizer", s->training.optimizer);
  s->training.fp8_param_gather = bool_option(options, "fp8_param_gather", false);
  s->training.flash_attention = bool_option(options, "flash_attention", true);
  s->training.moe_capacity_factor = number_option(options, "moe_capacity_factor", 0);
  validate(s->training);
  s->options.memory_margin = number_option(options, "memory_margin", s->options.memory_margin);
  if (!(s->options.memory_margin >= 0 && s->options.memory_margin < 1))
    throw OptionError("memory_margin", fmt::format("{}", s->options.memory_margin),
                      "must be a finite number >= 0 and < 1 (the fraction of GPU memory kept free)");
  if (options.contains("calibration") && !options["calibration"].is_none()) {
    s->calibration_source = text_or_path(options["calibration"], "calibration");
    try {
      s->calibration = load_calibration(s->calibration_source);
    } catch (const Error& e) {
      throw e.with_context("calibration");
    }
  } else {
    s->calibration = default_calibration();
    s->calibration_source = "shipped";
  }
  if (options.contains("profile") && !options["profile"].is_none()) {
    try {
      s->profile = read_hardware_profile(text_or_path(options["profile"], "profile"));
      check_profile_applies(*s->profile, s->model, s->cluster, s->training);
    } catch (const Error& e) {
      throw e.with_context("profile");
    }
    s->options.profile = &*s->profile;
  }
  return s;
}

// A prediction with the setup it came from (launch_args needs the model and the training).
struct PyEstimate {
  Estimate estimate;
  SetupPtr setup;
  [[nodiscard]] py::object to_dict() const {
    nlohmann::json j = to_json(estimate);
    j["predicted_by"] = predicted_by(*setup);
    return to_python(j);
  }
};

struct PyPlan {
  plan::Plan plan;
  SetupPtr setup;
};

struct PyPlanResult {
  plan::PlanResult result;
  SetupPtr setup;
};

nlohmann::json plan_json(const PyPlanResult& r) {
  nlohmann::json j = to_json(r.result);
  j["predicted_by"] = predicted_by(*r.setup);
  return j;
}

struct PySimulation {
  sim::PipelineProblem problem;
  sim::SimulationResult result;
  ParallelConfig config;
  SetupPtr setup;
};

nlohmann::json simulation_document(const PySimulation& s) {
  nlohmann::json j = simulation_json(s.result, s.problem, s.config, s.setup->training);
  j["predicted_by"] = predicted_by(*s.setup);
  return j;
}

double simulated_peak_bytes(const PySimulation& s) {
  double peak = 0;
  for (const sim::StageResult& stage : s.result.stages) peak = std::max(peak, stage.peak_memory_bytes);
  return peak;
}

py::list events_of(const PySimulation& s) {
  static const char* kLanes[] = {"compute", "p2p", "grad_sync"};
  py::list events;
  for (const sim::Event& e : s.result.events) {
    py::dict d;
    d["kind"] = sim::to_string(e.kind);
    d["lane"] = kLanes[static_cast<int>(e.lane)];
    d["stage"] = e.stage;
    d["peer"] = e.peer < 0 ? py::object(py::none()) : py::object(py::int_(e.peer));
    d["microbatch"] = e.microbatch < 0 ? py::object(py::none()) : py::object(py::int_(e.microbatch));
    d["chunk"] = e.chunk < 0 ? py::object(py::none()) : py::object(py::int_(e.chunk));
    d["start_s"] = e.start_s;
    d["end_s"] = e.end_s;
    events.append(d);
  }
  return events;
}

struct PyLaunch {
  std::string framework;  // "megatron@0.20.0-dev"
  launch::LaunchSettings settings;
};

// The launch of `config`. A framework that cannot run it as planned (launch/framework_support.h) is an
// error unless allow_unsupported: a launch that trains something else must not pass for the plan.
PyLaunch launch_for(const ParallelConfig& config, const Setup& s, const std::string& framework,
                    bool allow_unsupported) {
  launch::FrameworkTarget t;
  try {
    t = launch::parse_framework_target(framework);
  } catch (const Error& e) {
    throw e.with_context("framework");
  }
  if (!allow_unsupported) {
    const std::vector<std::string> reasons = launch::unsupported_reasons(t.framework, config, s.model, s.training);
    if (!reasons.empty())
      throw Error(fmt::format("launch_args: {} cannot run {} as planned: {}; plan(..., framework='{}') searches only "
                              "what it can run (allow_unsupported=True gives its nearest launch, what differs in "
                              ".cannot_express)",
                              to_string(t), to_string(config), fmt::join(reasons, "; "), to_string(t.framework)));
  }
  const launch::LaunchTarget target{.version = t.version,
                                    .nodes = s.cluster.nodes,
                                    .gpus_per_node = s.cluster.gpus_per_node,
                                    .gpu = s.cluster.gpu.name};
  return {to_string(t), launch::launch_settings(t.framework, config, s.model, s.training, target)};
}

// fix / allow / max: one text ("tp=2,pp=4"), a list of them, or a dict ({"tp": [1, 2], "pp": 4}).
void add_plan_constraints(plan::SearchSpace& space, const py::object& value, plan::ConstraintKind kind, const char* name) {
  if (value.is_none()) return;
  std::vector<std::string> texts;
  if (py::isinstance<py::str>(value)) {
    texts.push_back(text_arg(value, name));
  } else if (py::isinstance<py::dict>(value)) {
    std::string text;
    for (const auto& [key, v] : value.cast<py::dict>()) {
      std::string values;
      if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
        for (const auto& x : v) values += fmt::format("{}{}", values.empty() ? "" : ",", text_arg(x, name));
      } else {
        values = text_arg(v, name);
      }
      text += fmt::format("{}{}={}", text.empty() ? "" : ",", text_arg(key, name), values);
    }
    texts.push_back(text);
  } else if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    for (const auto& x : value) texts.push_back(text_or_path(x, name));
  } else {
    throw Error(fmt::format("{}: expected a str like \"tp=2,pp=4\", a list of them or a dict", name));
  }
  for (const std::string& text : texts) plan::add_constraints(space, text, kind, name);
}

// What a result's repr shows of its predicted iteration: "1.23 s/iteration, 45,678 tokens/s, MFU
// 41.2%, peak 60.1 GiB of 76.0 GiB".
std::string figures(const Estimate& e) {
  return fmt::format("{:.4g} s/iteration, {:.0f} tokens/s, MFU {:.1f}%, peak {} of {}", e.iteration_time_s,
                     e.tokens_per_s, 100 * e.mfu, units::format_bytes(e.peak_memory_bytes),
                     units::format_bytes(e.memory_limit_bytes));
}

// The figures every result of a prediction shows as attributes, from its Estimate (Estimate, Plan):
// what a user reaches for first is result.mfu, not result.estimate.mfu.
template <typename Class, typename Get>
void add_estimate_figures(py::class_<Class>& c, Get estimate_of) {
  c.def_property_readonly("iteration_time_s", [=](const Class& x) { return estimate_of(x).iteration_time_s; },
                          "Predicted seconds per training iteration.")
      .def_property_readonly("tokens_per_s", [=](const Class& x) { return estimate_of(x).tokens_per_s; },
                             "Predicted training tokens per second, the whole cluster.")
      .def_property_readonly("mfu", [=](const Class& x) { return estimate_of(x).mfu; },
                             "Predicted model FLOPs utilization (0 to 1).")
      .def_property_readonly("tflops_per_gpu", [=](const Class& x) { return estimate_of(x).tflops_per_gpu; })
      .def_property_readonly("bubble_fraction", [=](const Class& x) { return estimate_of(x).bubble_fraction; })
      .def_property_readonly("peak_memory_bytes", [=](const Class& x) { return estimate_of(x).peak_memory_bytes; },
                             "Predicted peak memory of the fullest GPU.")
      .def_property_readonly("memory_limit_bytes", [=](const Class& x) { return estimate_of(x).memory_limit_bytes; },
                             "The GPU's usable memory (its capacity less the margin).")
      .def_property_readonly("fits", [=](const Class& x) { return estimate_of(x).fits; })
      .def_property_readonly("reason", [=](const Class& x) { return estimate_of(x).reason; },
                             "Why it does not fit (empty when it fits).");
}

}  // namespace

void bind_planning(py::module_& m) {
  py::class_<ModelSpec>(m, "Model", "A model: a preset, a model-spec file, a Hugging Face config.json or a dict.")
      .def_readonly("name", &ModelSpec::name)
      .def("to_dict", [](const ModelSpec& s) { return to_python(to_json(s)); }, "The spec as paratune's model format.")
      .def("summary", [](const ModelSpec& s, int seq_len) { return to_python(model_summary_json(s, seq_len)); },
           py::arg("seq_len"), "Parameters, FLOPs per token and layer counts at this sequence length.")
      .def("__repr__", [](const ModelSpec& s) { return fmt::format("<paratune.Model '{}'>", s.name); });
  py::class_<ClusterSpec>(m, "Cluster", "A cluster: PRESET:NODES, GPUxCOUNT, a cluster file or a dict.")
      .def_readonly("name", &ClusterSpec::name)
      .def_property_readonly("num_gpus", &ClusterSpec::num_gpus)
      .def_readonly("nodes", &ClusterSpec::nodes)
      .def_readonly("gpus_per_node", &ClusterSpec::gpus_per_node)
      .def_property_readonly("gpu", [](const ClusterSpec& c) { return c.gpu.name; })
      .def("to_dict", [](const ClusterSpec& c) { return to_python(to_json(c)); })
      .def("__repr__", [](const ClusterSpec& c) {
        return fmt::format("<paratune.Cluster '{}': {} x {}>", c.name, c.num_gpus(), c.gpu.name);
      });

  m.def("load_model", &model_of, py::arg("model"),
        "A model from a preset name, a model-spec file (YAML/JSON), a Hugging Face config.json path, or a dict "
        "in either format.");
  m.def("load_cluster", &cluster_of, py::arg("cluster"),
        "A cluster from 'dgx-h100:16' (preset:nodes), 'h100x128' (GPU x count), a cluster file, or a dict.");
  m.def("presets", [] {
    py::dict d;
    d["models"] = model_preset_names();
    d["gpus"] = gpu_preset_names();
    d["clusters"] = cluster_preset_names();
    return d;
  }, "The names of the shipped model, GPU and cluster presets.");

  py::class_<PyEstimate> estimate_class(m, "Estimate", "One configuration's predicted iteration (a model prediction).");
  estimate_class.def_property_readonly("config", [](const PyEstimate& e) { return to_string(e.estimate.config); });
  add_estimate_figures(estimate_class, [](const PyEstimate& e) -> const Estimate& { return e.estimate; });
  estimate_class.def("to_dict", &PyEstimate::to_dict, "Everything `paratune estimate --json` prints.")
      .def("__repr__", [](const PyEstimate& e) {
        return fmt::format("<paratune.Estimate {}: {}{}>", to_string(e.estimate.config), figures(e.estimate),
                           e.estimate.fits ? "" : ", does not fit");
      });

  m.def(
      "estimate",
      [](const py::object& model, const py::object& cluster, const py::object& config, std::int64_t seq_len,
         std::int64_t global_batch, const py::kwargs& kwargs) {
        SetupPtr s = setup_of(model, cluster, seq_len, global_batch, kwargs);
        const ParallelConfig c = config_of(config);
        Estimate e;
        {
          py::gil_scoped_release release;
          try {
            e = paratune::estimate(s->model, s->cluster, s->training, c, s->calibration, s->options);
          } catch (const Error& error) {
            throw error.with_context("config");
          }
        }
        return PyEstimate{std::move(e), std::move(s)};
      },
      py::arg("model"), py::arg("cluster"), py::arg("config"), py::arg("seq_len"), py::arg("global_batch"),
      "The predicted time, throughput and memory of one configuration (paratune estimate).");

  py::class_<PyPlan> plan_class(m, "Plan", "One ranked plan: a configuration and its predicted iteration.");
  plan_class.def_property_readonly("config", [](const PyPlan& p) { return to_string(p.plan.estimate.config); },
                                   "The configuration, every axis resolved (\"dp=4,tp=2,pp=1,...\").");
  add_estimate_figures(plan_class, [](const PyPlan& p) -> const Estimate& { return p.plan.estimate; });
  plan_class.def_property_readonly("estimate", [](const PyPlan& p) { return PyEstimate{p.plan.estimate, p.setup}; })
      .def("to_dict", [](const PyPlan& p) {
        plan::PlanResult one;
        one.plans.push_back(p.plan);
        nlohmann::json j = to_json(one)["plans"][0];
        j["predicted_by"] = predicted_by(*p.setup);
        return to_python(j);
      })
      .def("__repr__", [](const PyPlan& p) {
        return fmt::format("<paratune.Plan {}: {}>", to_string(p.plan.estimate.config), figures(p.plan.estimate));
      });
  py::class_<PyPlanResult>(m, "PlanResult", "What plan() found: the ranked plans, the baselines and the search's figures.")
      .def_property_readonly("plans", [](const PyPlanResult& r) {
        std::vector<PyPlan> plans;
        for (const plan::Plan& p : r.result.plans) plans.push_back({p, r.setup});
        return plans;
      })
      .def_property_readonly("best", [](const PyPlanResult& r) -> py::object {
        if (r.result.plans.empty()) return py::none();
        return py::cast(PyPlan{r.result.plans.front(), r.setup});
      })
      .def_property_readonly("advice", [](const PyPlanResult& r) { return r.result.advice; })
      .def("to_dict", [](const PyPlanResult& r) { return to_python(plan_json(r)); }, "Everything `paratune plan --json` prints.")
      .def("to_html", [](const PyPlanResult& r) {
        // The winner's iteration replayed for its timeline, as `plan --html` draws it.
        const Setup& s = *r.setup;
        std::optional<sim::PipelineProblem> problem;
        std::optional<sim::SimulationResult> simulated;
        if (!r.result.plans.empty()) {
          problem = pipeline_problem(s.model, s.cluster, s.training, r.result.plans.front().estimate.config,
                                     s.calibration, s.options);
          simulated = sim::simulate(*problem);
        }
        return plan_html(nlohmann::ordered_json(plan_json(r)), simulated ? &*simulated : nullptr,
                         problem ? &*problem : nullptr, report_title("plan", s));
      }, "The report `paratune plan --html` writes: one self-contained HTML page (str).")
      .def("__len__", [](const PyPlanResult& r) { return r.result.plans.size(); })
      .def("__getitem__", [](const PyPlanResult& r, std::size_t i) {
        if (i >= r.result.plans.size()) throw py::index_error(fmt::format("plan {} of {}", i, r.result.plans.size()));
        return PyPlan{r.result.plans[i], r.setup};
      })
      .def("__repr__", [](const PyPlanResult& r) {
        const std::vector<plan::Plan>& plans = r.result.plans;
        if (plans.empty())
          return fmt::format("<paratune.PlanResult: nothing fits{}; see .advice>",
                             r.result.closest ? fmt::format(" (closest: {}, peak {} of {})",
                                                            to_string(r.result.closest->config),
                                                            units::format_bytes(r.result.closest->peak_memory_bytes),
                                                            units::format_bytes(r.result.closest->memory_limit_bytes))
                                              : "");
        return fmt::format("<paratune.PlanResult: {} plan{}, best {}: {}>", plans.size(), plans.size() == 1 ? "" : "s",
                           to_string(plans.front().estimate.config), figures(plans.front().estimate));
      });

  m.def(
      "plan",
      [](const py::object& model, const py::object& cluster, std::int64_t seq_len, std::int64_t global_batch, int top,
         int keep, int threads, const py::object& fix, const py::object& allow, const py::object& max,
         const py::object& framework, bool baselines, const py::kwargs& kwargs) {
        SetupPtr s = setup_of(model, cluster, seq_len, global_batch, kwargs);
        plan::PlanOptions options;
        add_plan_constraints(options.space, fix, plan::ConstraintKind::kFix, "fix");
        add_plan_constraints(options.space, allow, plan::ConstraintKind::kAllow, "allow");
        add_plan_constraints(options.space, max, plan::ConstraintKind::kMax, "max");
        try {  // None: the default, "any"
          options.frameworks = launch::parse_searched_frameworks(
              framework.is_none() ? std::string("any") : text_or_path(framework, "framework"));
        } catch (const Error& e) {
          throw e.with_context("framework");
        }
        options.top = top;
        options.keep = std::max(keep, top);
        options.threads = threads;
        options.estimate = s->options;
        options.baselines = baselines;
        plan::PlanResult result;
        {
          py::gil_scoped_release release;  // a long search: other Python threads run meanwhile
          result = plan::plan(s->model, s->cluster, s->training, options, s->calibration);
        }
        return PyPlanResult{std::move(result), std::move(s)};
      },
      py::arg("model"), py::arg("cluster"), py::arg("seq_len"), py::arg("global_batch"), py::kw_only(),
      py::arg("top") = 5, py::arg("keep") = 16, py::arg("threads") = 1, py::arg("fix") = py::none(),
      py::arg("allow") = py::none(), py::arg("max") = py::none(), py::arg("framework") = "any",
      py::arg("baselines") = true,
      "The fastest configurations that fit, searched jointly over every axis (paratune plan). Releases the GIL.");

  py::class_<PySimulation>(m, "Simulation", "A configuration's iteration replayed event by event.")
      .def_property_readonly("iteration_time_s", [](const PySimulation& s) { return s.result.iteration_time_s; })
      .def_property_readonly("bubble_fraction", [](const PySimulation& s) { return s.result.bubble_fraction; })
      .def_property_readonly("config", [](const PySimulation& s) { return to_string(s.config); })
      .def_property_readonly(
          "fits",
          [](const PySimulation& s) { return fits_in_memory(s.result, s.problem).value_or(true); },
          "Whether every stage's peak memory is within the GPU's usable memory (as estimate's fits).")
      .def_property_readonly("tokens_per_s", [](const PySimulation& s) {
        const TrainingSpec& t = s.setup->training;
        return static_cast<double>(t.seq_len) * t.global_batch / s.result.iteration_time_s;
      }, "Training tokens per second, the whole cluster, at the replayed iteration time.")
      .def_property_readonly("peak_memory_bytes", &simulated_peak_bytes,
                             "The replay's peak memory of the fullest stage (static and activations).")
      .def_property_readonly("events", &events_of,
                             "Every event of the timeline: kind, lane, stage, peer, microbatch, chunk, start_s, end_s.")
      .def("to_dict", [](const PySimulation& s) { return to_python(simulation_document(s)); },
           "Everything `paratune simulate --json` prints.")
      .def("to_html", [](const PySimulation& s) {
        return simulate_html(nlohmann::ordered_json(simulation_document(s)), s.result, s.problem,
                             report_title("simulate", *s.setup));
      }, "The report `paratune simulate --html` writes: one self-contained HTML page (str).")
      .def("chrome_trace", [](const PySimulation& s) { return to_python(chrome_trace(s.result, s.problem)); },
           "The timeline in Chrome's trace format (chrome://tracing, Perfetto).")
      .def("__repr__", [](const PySimulation& s) {
        return fmt::format("<paratune.Simulation {}: {:.4g} s/iteration, bubble {:.1f}%, peak {}{}>",
                           to_string(s.config), s.result.iteration_time_s, 100 * s.result.bubble_fraction,
                           units::format_bytes(simulated_peak_bytes(s)),
                           fits_in_memory(s.result, s.problem).value_or(true) ? "" : ", does not fit");
      });

  m.def(
      "simulate",
      [](const py::object& model, const py::object& cluster, const py::object& config, std::int64_t seq_len,
         std::int64_t global_batch, const py::object& schedule, const py::object& grad_sync, const py::kwargs& kwargs) {
        SetupPtr s = setup_of(model, cluster, seq_len, global_batch, kwargs);
        ParallelConfig c = config_of(config);
        try {
          if (!schedule.is_none()) c.schedule = parse_enum<Schedule>(text_arg(schedule, "schedule"));
          if (!grad_sync.is_none()) c.grad_sync = parse_enum<GradSync>(text_arg(grad_sync, "grad_sync"));
        } catch (const Error& e) {
          throw e.with_context("schedule/grad_sync");
        }
        if (!schedule.is_none() && c.schedule == Schedule::kOneFOneB && c.vpp > 1)
          throw Error(fmt::format("schedule 1f1b: config has vpp={}, and 1F1B with virtual stages is the interleaved "
                                  "schedule; give schedule='interleaved-1f1b', or vpp=1 for plain 1F1B",
                                  c.vpp));
        PySimulation out;
        {
          py::gil_scoped_release release;
          try {
            out.problem = pipeline_problem(s->model, s->cluster, s->training, c, s->calibration, s->options);
          } catch (const Error& e) {
            throw e.with_context("config");
          }
          out.config = resolve(c, s->model, s->cluster, s->training);
          out.result = sim::simulate(out.problem);
        }
        out.setup = std::move(s);
        return out;
      },
      py::arg("model"), py::arg("cluster"), py::arg("config"), py::arg("seq_len"), py::arg("global_batch"),
      py::kw_only(), py::arg("schedule") = py::none(), py::arg("grad_sync") = py::none(),
      "Replays one iteration's pipeline schedule event by event (paratune simulate).");

  py::class_<PyLaunch>(m, "Launch", "A framework's launch settings for a plan (str() gives the text to paste).")
      .def_readonly("framework", &PyLaunch::framework)
      .def_property_readonly("text", [](const PyLaunch& l) { return l.settings.text; })
      .def_property_readonly("cannot_express", [](const PyLaunch& l) { return l.settings.cannot_express; },
                             "Parts of the plan the framework has no setting for.")
      .def("__str__", [](const PyLaunch& l) { return l.settings.text; })
      .def("__repr__", [](const PyLaunch& l) {
        const std::string& text = l.settings.text;
        const std::string first = text.substr(0, std::min(text.find('\n'), std::size_t{60}));
        return fmt::format("<paratune.Launch {}: {}{}{}>", l.framework, first, first.size() < text.size() ? " ..." : "",
                           l.settings.cannot_express.empty()
                               ? ""
                               : fmt::format(" ({} cannot be expressed)", l.settings.cannot_express.size()));
      });
  m.def(
      "launch_args",
      [](const py::object& what, const std::string& framework, bool allow_unsupported) {
        if (py::isinstance<PyPlanResult>(what)) {
          const auto& r = what.cast<const PyPlanResult&>();
          if (r.result.plans.empty()) throw Error("launch_args: the plan result has no plan (nothing fits)");
          return launch_for(r.result.plans.front().estimate.config, *r.setup, framework, allow_unsupported);
        }
        if (py::isinstance<PyPlan>(what)) {
          const auto& p = what.cast<const PyPlan&>();
          return launch_for(p.plan.estimate.config, *p.setup, framework, allow_unsupported);
        }
        if (py::isinstance<PyEstimate>(what)) {
          const auto& e = what.cast<const PyEstimate&>();
          return launch_for(e.estimate.config, *e.setup, framework, allow_unsupported);
        }
        throw Error("launch_args: expected a Plan, a PlanResult (its best plan) or an Estimate");
      },
      py::arg("plan"), py::arg("framework"), py::kw_only(), py::arg("allow_unsupported") = false,
      "The launch for Megatron-LM, torchtitan or DeepSpeed ('megatron', 'torchtitan', 'deepspeed', optionally "
      "'@VERSION'), checked against that version's flags and rules. A plan the framework cannot run as planned "
      "raises paratune.Error with the reasons (plan(..., framework=) searches only what it can run), unless "
      "allow_unsupported=True: then its nearest launch, what differs in .cannot_express.");
}

}  // namespace paratune::python
