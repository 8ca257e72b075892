#include "paratune/tune/derived_space.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "paratune/plan/ranking.h"
#include "paratune/spec/enums.h"
#include "paratune/spec/error.h"

namespace paratune::tune {
namespace {

// A candidate's value on each derived parameter, in kNames order.
constexpr std::array<const char*, 13> kNames{"dp", "tp",   "pp", "cp", "ep",       "etp",      "mbs",
                                             "vpp", "zero", "op", "sp", "schedule", "recompute"};

// etp is the resolved expert-TP degree: the planner leaves it 0 ("same as tp") for a dense model,
// and a 0 handed to a trial's command ({etp}, {config}) is no degree any framework accepts
// (Megatron's --expert-tensor-parallel-size must be >= 1); ParallelConfig::to_string writes the
// same resolved value.
std::array<nlohmann::json, kNames.size()> values_of(const plan::Candidate& c) {
  const int etp = c.etp > 0 ? c.etp : c.tp;
  return {c.dp,  c.tp,   c.pp, c.cp, c.ep, etp, c.mbs, c.vpp, c.zero, c.op, c.sequence_parallel != 0,
          to_string(c.schedule), to_string(c.recompute)};
}

// Values in a stable order: numbers ascending, false before true, names alphabetically.
bool value_less(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() < b.get<double>();
  return a < b;
}

}  // namespace

DerivedSpace derive_space(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                          const plan::SearchSpace& axes, const Calibration& calibration, const EstimateOptions& options) {
  struct Fitting {
    plan::Candidate candidate;
    double iteration_s;
  };
  std::vector<Fitting> fitting;
  std::size_t candidates = 0;
  // The derived parameters (kNames) have no ep_overlap yet: search it off, so points stay distinct.
  plan::SearchSpace searched = axes;
  searched.rule(plan::Axis::kEpOverlap).allowed = {0};
  searched.rule(plan::Axis::kDispatcher).allowed = {static_cast<int>(MoeDispatcher::kAllToAll)};
  searched.rule(plan::Axis::kOffload).allowed = {0};
  for (const plan::MeshShape& mesh : plan::mesh_shapes(model, cluster, training, searched)) {
    plan::enumerate_mesh(
        model, training, searched, mesh, [](const plan::Candidate&) {},
        [&](const plan::Candidate& c) {
          ++candidates;
          const Estimate e = estimate(model, cluster, training, plan::to_config(c), calibration, options);
          if (e.fits) fitting.push_back({c, e.iteration_time_s});
        });
  }
  if (fitting.empty())
    throw Error(fmt::format("none of the {} valid configurations of {} on {} GPUs fits in memory by the cost model; "
                            "search a space file of your own to try them anyway",
                            candidates, model.name, cluster.num_gpus()));
  // Fastest predicted first; ties (within 1e-9) simpler configuration first (plan/ranking.h).
  plan::rank(fitting, [](const Fitting& f) { return f.iteration_s; },
             [](const Fitting& f) { return plan::to_config(f.candidate); });

  std::vector<hpo::ParamSpec> parameters(kNames.size());
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    parameters[i].name = kNames[i];
    parameters[i].type = hpo::ParamType::kCategorical;
  }
  for (const Fitting& f : fitting) {
    const auto values = values_of(f.candidate);
    for (std::size_t i = 0; i < kNames.size(); ++i)
      if (std::find(parameters[i].choices.begin(), parameters[i].choices.end(), values[i]) == parameters[i].choices.end())
        parameters[i].choices.push_back(values[i]);
  }
  for (hpo::ParamSpec& p : parameters) std::sort(p.choices.begin(), p.choices.end(), value_less);

  std::vector<hpo::Config> configurations;
  std::vector<double> predicted;
  for (const Fitting& f : fitting) {
    const auto values = values_of(f.candidate);
    hpo::Config config = hpo::Config::object();
    for (std::size_t i = 0; i < kNames.size(); ++i) config[kNames[i]] = values[i];
    configurations.push_back(std::move(config));
    predicted.push_back(f.iteration_s);
  }
  const std::string source = fmt::format("configurations of {} on {} x {}, seq {}, global batch {}", model.name,
                                         cluster.num_gpus(), cluster.gpu.name, training.seq_len, training.global_batch);
  return {hpo::Space::listed(std::move(parameters), std::move(configurations), source), std::move(predicted),
          candidates};
}

}  // namespace paratune::tune
