#include "paratune/train/strategy_cost.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "paratune/spec/error.h"
#include "paratune/train/stage_split.h"

namespace paratune::train {
namespace {

constexpr double kFloatBytes = 4;
// The backward pass of a layer is about twice its forward (gradients of the inputs and of the
// weights, each about one forward), so two thirds of a measured forward + backward.
constexpr double kBackwardShare = 2.0 / 3.0;

LinearCost cost_from_json(const nlohmann::json& j, const std::string& source, const char* field) {
  if (!j.contains(field) || !j[field].is_object())
    throw Error(fmt::format("{}: {}: missing (an object with latency_s and seconds_per_byte)", source, field));
  LinearCost c;
  for (auto [name, target] : {std::pair{"latency_s", &c.latency_s}, std::pair{"seconds_per_byte", &c.seconds_per_byte}}) {
    const nlohmann::json& v = j[field].value(name, nlohmann::json());
    if (!v.is_number() || v.get<double>() < 0 || !std::isfinite(v.get<double>()))
      throw Error(fmt::format("{}: {}.{}: value {} must be a number >= 0", source, field, name, v.dump()));
    *target = v.get<double>();
  }
  return c;
}

}  // namespace

LinearCost fit_linear_cost(const std::vector<std::pair<double, double>>& points) {
  // Weighted by 1 / seconds^2: relative errors count alike, so the small messages (which set the
  // latency) are not drowned by the large ones (which set the bandwidth).
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : points) {
    const double w = y > 0 ? 1 / (y * y) : 0;
    sw += w;
    sx += w * x;
    sy += w * y;
    sxx += w * x * x;
    sxy += w * x * y;
  }
  if (sw == 0) return {};
  const double spread = sw * sxx - sx * sx;
  LinearCost c;
  c.seconds_per_byte = spread > 0 ? (sw * sxy - sx * sy) / spread : 0;
  c.latency_s = (sy - c.seconds_per_byte * sx) / sw;
  if (c.seconds_per_byte < 0) c = {sy / sw, 0};
  if (c.latency_s < 0) c = {0, sxx > 0 ? sxy / sxx : 0};
  return c;
}

double StrategyProfile::unit_time(std::size_t unit, double batch) const {
  const std::vector<double>& t = unit_seconds.at(unit);
  if (batches.size() == 1) return t[0] * batch / batches[0];
  // The segment holding `batch`, or the first/last one to extend.
  std::size_t k = 0;
  while (k + 2 < batches.size() && batch > batches[k + 1]) ++k;
  const double slope = (t[k + 1] - t[k]) / (batches[k + 1] - batches[k]);
  return std::max(0.0, t[k] + slope * (batch - batches[k]));
}

nlohmann::json StrategyProfile::to_json() const {
  return {{"ranks", ranks},
          {"threads", threads},
          {"batches", batches},
          {"unit_seconds", unit_seconds},
          {"optimizer_s", optimizer_s},
          {"allreduce", {{"latency_s", allreduce.latency_s}, {"seconds_per_byte", allreduce.seconds_per_byte}}},
          {"p2p", {{"latency_s", p2p.latency_s}, {"seconds_per_byte", p2p.seconds_per_byte}}}};
}

StrategyProfile StrategyProfile::from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw Error(fmt::format("{}: a strategy profile must be a JSON object", source));
  StrategyProfile p;
  for (auto [name, target] : {std::pair{"ranks", &p.ranks}, std::pair{"threads", &p.threads}}) {
    const nlohmann::json& v = j.value(name, nlohmann::json());
    if (!v.is_number_integer() || v.get<int>() < 1)
      throw Error(fmt::format("{}: {}: value {} must be an integer >= 1", source, name, v.dump()));
    *target = v.get<int>();
  }
  const nlohmann::json& batches = j.value("batches", nlohmann::json());
  if (!batches.is_array() || batches.empty())
    throw Error(fmt::format("{}: batches: must be a non-empty list of increasing batch sizes", source));
  for (const nlohmann::json& b : batches) {
    if (!b.is_number() || b.get<double>() <= 0 || (!p.batches.empty() && b.get<double>() <= p.batches.back()))
      throw Error(fmt::format("{}: batches: value {} must be a number > 0, each above the one before", source, b.dump()));
    p.batches.push_back(b.get<double>());
  }
  const nlohmann::json& units = j.value("unit_seconds", nlohmann::json());
  if (!units.is_array() || units.empty())
    throw Error(fmt::format("{}: unit_seconds: must be a list with one list of times per layer unit", source));
  for (std::size_t u = 0; u < units.size(); ++u) {
    if (!units[u].is_array() || units[u].size() != p.batches.size())
      throw Error(fmt::format("{}: unit_seconds[{}]: must hold one time per batch ({})", source, u, p.batches.size()));
    std::vector<double> row;
    for (const nlohmann::json& t : units[u]) {
      if (!t.is_number() || t.get<double>() < 0 || !std::isfinite(t.get<double>()))
        throw Error(fmt::format("{}: unit_seconds[{}]: value {} must be a number of seconds >= 0", source, u, t.dump()));
      row.push_back(t.get<double>());
    }
    p.unit_seconds.push_back(std::move(row));
  }
  const nlohmann::json& optimizer = j.value("optimizer_s", nlohmann::json());
  if (!optimizer.is_number() || optimizer.get<double>() < 0)
    throw Error(fmt::format("{}: optimizer_s: value {} must be a number of seconds >= 0", source, optimizer.dump()));
  p.optimizer_s = optimizer.get<double>();
  p.allreduce = cost_from_json(j, source, "allreduce");
  p.p2p = cost_from_json(j, source, "p2p");
  return p;
}

StrategyPrediction predict_step(const TrainOptions& o, const std::vector<UnitShape>& units,
                                const StrategyProfile& profile) {
  if (profile.unit_seconds.size() != units.size())
    throw Error(fmt::format("the strategy profile has {} layer units and the model {}: profiled for another model",
                            profile.unit_seconds.size(), units.size()));
  if (profile.ranks != o.ranks)
    throw Error(fmt::format("the strategy profile was measured with {} ranks, the trial has {}", profile.ranks, o.ranks));
  StrategyPrediction p;
  p.strategy = o.strategy;
  p.dp = std::max(1, o.dp);
  p.pp = std::max(1, o.pp);
  p.micro_batches = std::max(1, o.micro_batches);
  const int m = p.micro_batches;
  const double micro = static_cast<double>(o.batch_size) / p.dp / m;  // samples per forward pass

  std::vector<double> flops;
  flops.reserve(units.size());
  for (const UnitShape& u : units) flops.push_back(u.forward_flops_per_sample);
  p.stage_layers = !o.stage_layers.empty() ? o.stage_layers
                   : p.pp > 1              ? split_stages(flops, p.pp, m)
                                           : std::vector<int>{static_cast<int>(units.size())};

  std::int64_t total_parameters = 0;
  for (const UnitShape& u : units) total_parameters += u.parameters;

  // Per stage s, one micro-batch: its layers' forward + backward, plus sending its output forward
  // and its input's gradient back (what a neighbour waits for).
  double slowest = 0, sum = 0, slowest_work = 0, sum_work = 0, optimizer = 0, exposed_allreduce = 0;
  int first = 0;
  for (int s = 0; s < p.pp; ++s) {
    const int last = first + p.stage_layers[static_cast<std::size_t>(s)];
    double work = 0, backward_after_first = 0;
    std::int64_t parameters = 0;
    for (int i = first; i < last; ++i) {
      const double t = profile.unit_time(static_cast<std::size_t>(i), micro);
      work += t;
      if (i > first) backward_after_first += kBackwardShare * t;
      parameters += units[static_cast<std::size_t>(i)].parameters;
    }
    double transfers = 0;
    if (s + 1 < p.pp) transfers += profile.p2p.seconds(kFloatBytes * micro * units[static_cast<std::size_t>(last - 1)].output_elements);
    if (s > 0) transfers += profile.p2p.seconds(kFloatBytes * micro * units[static_cast<std::size_t>(first - 1)].output_elements);
    slowest = std::max(slowest, work + transfers);
    sum += work + transfers;
    slowest_work = std::max(slowest_work, work);
    sum_work += work;
    // The stages step their optimizers at once: the largest share of the parameters is the wait.
    if (total_parameters > 0)
      optimizer = std::max(optimizer, profile.optimizer_s * static_cast<double>(parameters) / total_parameters);

    // Data parallelism: the stage's gradients averaged over its dp replicas in buckets of
    // bucket_mb MiB (PyTorch DDP, Li et al. 2020). With overlap the buckets go while the last
    // micro-batch's backward pass still runs through the earlier layers; what is left is exposed,
    // and at least the last bucket's all-reduce always is.
    if (p.dp > 1 && parameters > 0) {
      const double bytes = kFloatBytes * static_cast<double>(parameters);
      const double bucket = std::max(kFloatBytes, kFloatBytes * std::floor(o.bucket_mb * 1024 * 1024 / kFloatBytes));
      const double full_buckets = std::floor(bytes / bucket);
      const double rest = bytes - full_buckets * bucket;
      const double all = full_buckets * profile.allreduce.seconds(bucket) + (rest > 0 ? profile.allreduce.seconds(rest) : 0);
      const double last_bucket = profile.allreduce.seconds(rest > 0 ? rest : bucket);
      exposed_allreduce = std::max(exposed_allreduce, o.overlap ? std::max(last_bucket, all - backward_after_first) : all);
    }
    first = last;
  }
  // GPipe's schedule (Huang et al. 2019): the first micro-batch crosses every stage, then the slowest
  // stage paces the other m - 1 -- forward and backward alike, so on whole forward + backward times.
  const double pipeline = (m - 1) * slowest + sum;
  double extra = exposed_allreduce;
  if (p.dp > 1) extra += profile.allreduce.seconds(8);  // the step's loss, averaged over the replicas
  if (o.clip_norm > 0 && o.ranks > 1) extra += profile.allreduce.seconds(8);  // the global gradient norm
  // A tied embedding split over the pipeline: its first and last stages swap their gradients.
  if (p.pp > 1 && o.model == Workload::kGpt && o.tied_embeddings)
    extra += profile.p2p.seconds(kFloatBytes * 256.0 * o.d_model);  // 256 byte values x d_model
  p.compute_s = (m - 1) * slowest_work + sum_work + optimizer;
  p.step_s = pipeline + optimizer + extra;
  p.communication_s = p.step_s - p.compute_s;
  return p;
}

std::vector<StrategyPrediction> rank_strategies(const TrainOptions& options, const StrategyProfile& profile,
                                                std::vector<std::string>* rejected) {
  // The candidates in order of simplicity, which breaks a tie.
  std::vector<TrainOptions> candidates;
  auto add = [&](Strategy s, int dp, int pp) {
    TrainOptions c = options;
    c.strategy = s;
    c.dp = dp;
    c.pp = pp;
    candidates.push_back(c);
  };
  const int r = options.ranks;
  if (r == 1) add(Strategy::kNone, 0, 0);
  if (r > 1) {
    add(Strategy::kDp, 0, 0);
    add(Strategy::kGpipe, 0, 0);
    add(Strategy::kMp, 0, 0);
    for (int pp = 2; pp < r; ++pp)
      if (r % pp == 0) add(Strategy::kDpGpipe, r / pp, pp);
  }
  const std::vector<UnitShape> units = workload_units(options);
  std::vector<StrategyPrediction> ranked;
  for (TrainOptions& c : candidates) {
    try {
      resolve(c);
    } catch (const Error& e) {
      if (rejected) rejected->push_back(fmt::format("{}: {}", to_string(c.strategy), e.what()));
      continue;
    }
    ranked.push_back(predict_step(c, units, profile));
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const StrategyPrediction& a, const StrategyPrediction& b) { return a.step_s < b.step_s; });
  return ranked;
}

std::vector<std::string> profile_model_arguments(const TrainOptions& options) {
  const TrainOptions o = narrowed(options);  // a surrogate is profiled at its own widths
  auto list = [](const std::vector<int>& values) {
    std::string text;
    for (int v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
    return text;
  };
  std::vector<std::string> args{"--model", to_string(o.model), "--optimizer", to_string(o.optimizer)};
  switch (o.model) {
    case Workload::kMlp:
      args.push_back("--mlp-hidden=" + list(o.mlp_hidden));
      break;
    case Workload::kCnn:
      args.insert(args.end(), {"--cnn-channels", list(o.cnn_channels)});
      break;
    case Workload::kGpt:
      args.insert(args.end(), {"--layers", std::to_string(o.layers), "--d-model", std::to_string(o.d_model), "--heads",
                               std::to_string(o.heads), "--seq-len", std::to_string(o.seq_len), "--mlp-ratio",
                               std::to_string(o.mlp_ratio), "--tied-embeddings", o.tied_embeddings ? "true" : "false"});
      break;
  }
  if (o.threads > 0) args.insert(args.end(), {"--threads", std::to_string(o.threads)});
  return args;
}

}  // namespace paratune::train
