// How long one optimizer step of a paratune-train trial takes under each parallel strategy (none,
// dp, mp, gpipe, dp+gpipe) on this host: the cost model behind `paratune tune --strategy auto`.
//
// It is built the way the planners of large-model training are (Alpa, Piper, paratune's own
// planner): per-layer costs measured once, composed analytically. The measurements come from
// `paratune-train --profile` (src/trainer/profile.cc): each layer unit's forward + backward time at
// a few batch sizes with the threads a rank of an R-rank trial has (measured with all R ranks busy,
// as they are in a trial), the optimizer step, and Gloo's all-reduce and point-to-point times at a
// few sizes. The composition, per strategy, is in strategy_cost.cc next to each formula.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "paratune/train/options.h"
#include "paratune/train/workload.h"

namespace paratune::train {

// seconds = latency_s + bytes x seconds_per_byte (Hockney's alpha-beta model).
struct LinearCost {
  double latency_s = 0;
  double seconds_per_byte = 0;
  [[nodiscard]] double seconds(double bytes) const { return latency_s + bytes * seconds_per_byte; }
};

// Least-squares fit of (bytes, seconds) points in relative error, both coefficients >= 0.
LinearCost fit_linear_cost(const std::vector<std::pair<double, double>>& points);

// What `paratune-train --profile` measures for one model on one host with `ranks` ranks busy.
struct StrategyProfile {
  int ranks = 1;
  int threads = 1;                                // intra-op threads per rank
  std::vector<double> batches;                    // samples per forward pass, ascending
  std::vector<std::vector<double>> unit_seconds;  // [unit][batch]: forward + backward (the loss's with the last unit)
  double optimizer_s = 0;                         // one optimizer step over every parameter
  LinearCost allreduce;                           // a sum over all `ranks` ranks (ranks > 1)
  LinearCost p2p;                                 // one tensor from one rank to another (ranks > 1)

  // Forward + backward of unit `unit` on `batch` samples: linear between the measured batches,
  // extended along the last two beyond them, never below 0.
  [[nodiscard]] double unit_time(std::size_t unit, double batch) const;

  [[nodiscard]] nlohmann::json to_json() const;
  // Throws Error naming `source` and the field when a field is missing or out of range.
  static StrategyProfile from_json(const nlohmann::json& json, const std::string& source);
};

struct StrategyPrediction {
  Strategy strategy = Strategy::kNone;
  int dp = 1, pp = 1, micro_batches = 1;
  std::vector<int> stage_layers;
  double step_s = 0;         // predicted seconds per optimizer step
  double compute_s = 0;      // of which compute (the pipeline's critical path for mp and gpipe)
  double communication_s = 0;  // and communication that is not hidden behind compute
};

// The predicted step time of `options` (resolved: strategy, dp, pp and micro-batches set) with
// `units` its model's units and `profile` measured with options.ranks ranks. Throws Error when the
// profile does not match (its unit count or ranks).
StrategyPrediction predict_step(const TrainOptions& options, const std::vector<UnitShape>& units,
                                const StrategyProfile& profile);

// Every strategy that can run `options` (unresolved: its strategy is ignored) on options.ranks
// ranks, each resolved as paratune-train would (an option the user fixed, like micro_batches,
// stays), predicted and sorted fastest first; a tie keeps the simpler strategy (none, dp, gpipe,
// mp, dp+gpipe). `rejected` (if given) receives "strategy: why" for those that cannot run.
std::vector<StrategyPrediction> rank_strategies(const TrainOptions& options, const StrategyProfile& profile,
                                                std::vector<std::string>* rejected = nullptr);

// The command-line options that fix a profile's model and host use -- the model's shapes, its
// optimizer and threads -- as paratune-train arguments (without --ranks, --strategy, --profile).
std::vector<std::string> profile_model_arguments(const TrainOptions& options);

}  // namespace paratune::train
