// Samplers: what configuration a hyperparameter study tries next (module DESIGN: one Sampler
// interface, each algorithm one file behind it).
//   grid    every configuration of a finite space in odometer order (grid_sampler.cc)
//   random  a small finite space in a seeded random order, else independent draws from the prior
//           (grid_sampler.cc too: both are fixed orders or plain draws)
//   tpe     tree-structured Parzen estimator, multivariate (tpe.cc, hpo/tpe.h)
//   gp      Gaussian-process regression with log expected improvement; with several objectives a
//           GP per objective and expected hypervolume improvement (gp_sampler.cc)
//   cmaes   the covariance matrix adaptation evolution strategy over the float and int parameters,
//           for many continuous dimensions (cmaes_sampler.cc)
//   nsga2   the non-dominated sorting genetic algorithm II, for several objectives (nsga2_sampler.cc)
// Several objectives (SamplerOptions::directions, hpo/pareto.h): nsga2, tpe (then multi-objective
// TPE, hpo/tpe.h), gp (expected hypervolume improvement), random and grid search them; cmaes refuses
// such a study (make_sampler).
// tpe, gp and cmaes learn from failed trials (issue 21 item 17, src/hpo/feasibility.h): P(runs) from a GP
// classifier on every finished trial weighs and restricts their proposals, and a configuration whose
// failure is deterministic (trial/failure.h) is never proposed again. grid and random run each
// configuration of a finite space once.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "paratune/hpo/space.h"
#include "paratune/hpo/trial_record.h"

namespace paratune::hpo {

struct SamplerOptions {
  Direction direction = Direction::kMinimize;
  std::uint64_t seed = 0;
  // Configurations drawn from the prior before the model picks; -1: the sampler's own default
  // (tpe 10, gp max(5, 2 x dimensions)).
  int startup_trials = -1;
  // The study's --max-trials (0: none): a grid larger than it is sampled evenly (tune::grid_order).
  std::size_t max_trials = 0;
  // A study of several objectives: each one's direction, in the study's order (TrialRecord::values);
  // empty for a study of one objective (`direction`). Never of size 1: one objective is `direction`.
  std::vector<Direction> directions;
  // nsga2: the configurations per generation (-1: its default, 50 as Optuna's NSGAIISampler).
  int population_size = -1;
};

class Sampler {
 public:
  virtual ~Sampler() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  // The next configuration, given every trial of the study (running ones included: they are the
  // pending proposals a parallel search must not repeat); nullopt when there is nothing left.
  virtual std::optional<Config> propose(const std::vector<TrialRecord>& trials) = 0;
  // Why the last proposal was chosen (e.g. TPE's log l(x) - log g(x), the GP's mean, sd and log EI),
  // stored with the trial; empty when there is nothing to say.
  [[nodiscard]] virtual nlohmann::ordered_json proposal_notes() const { return {}; }
  // The fitted model (e.g. the GP's lengthscales), stored with the study; empty: none.
  [[nodiscard]] virtual nlohmann::ordered_json model_summary() const { return {}; }
};

enum class SamplerKind { kGrid, kRandom, kTpe, kGp, kCmaes, kNsga2 };
const char* to_string(SamplerKind kind);
SamplerKind parse_sampler(std::string_view name);  // throws Error listing the names

// Throws Error when the sampler cannot search the space (grid on continuous parameters) or the
// study's objectives (cmaes with several; options.directions of size 1).
std::unique_ptr<Sampler> make_sampler(SamplerKind kind, const Space& space, const SamplerOptions& options);

// Each sampler's factory (one per file).
std::unique_ptr<Sampler> make_grid_sampler(const Space& space, const SamplerOptions& options);
std::unique_ptr<Sampler> make_random_sampler(const Space& space, const SamplerOptions& options);
std::unique_ptr<Sampler> make_tpe_sampler(const Space& space, const SamplerOptions& options);
std::unique_ptr<Sampler> make_gp_sampler(const Space& space, const SamplerOptions& options);
// Throws Error when the space has no float or int parameter that is always active.
std::unique_ptr<Sampler> make_cmaes_sampler(const Space& space, const SamplerOptions& options);
std::unique_ptr<Sampler> make_nsga2_sampler(const Space& space, const SamplerOptions& options);

// Whether the sampler searches a study of several objectives (all but cmaes).
bool searches_many_objectives(SamplerKind kind);
// Throws Error when options.directions has one entry, or several and the sampler searches one
// objective (make_sampler's check, for those who make samplers later: a define-by-run study).
void check_objectives(SamplerKind kind, const SamplerOptions& options);

}  // namespace paratune::hpo
