#include "paratune/hpo/sampler.h"

#include <fmt/format.h>

#include <array>

#include "paratune/spec/error.h"

namespace paratune::hpo {
namespace {
constexpr std::array<const char*, 6> kSamplerNames{"grid", "random", "tpe", "gp", "cmaes", "nsga2"};
}  // namespace

const char* to_string(SamplerKind kind) { return kSamplerNames[static_cast<std::size_t>(kind)]; }

SamplerKind parse_sampler(std::string_view name) {
  for (std::size_t i = 0; i < kSamplerNames.size(); ++i)
    if (name == kSamplerNames[i]) return static_cast<SamplerKind>(i);
  const std::vector<std::string> valid(kSamplerNames.begin(), kSamplerNames.end());
  throw Error(unknown_name_message("hyperparameter sampler", name, valid));
}

bool searches_many_objectives(SamplerKind kind) { return kind != SamplerKind::kCmaes; }

void check_objectives(SamplerKind kind, const SamplerOptions& options) {
  if (options.directions.size() == 1)
    throw Error("sampler options: directions has one entry; a study of one objective sets direction instead");
  if (options.directions.size() > 1 && !searches_many_objectives(kind))
    throw Error(fmt::format("sampler {}: searches one objective, the study has {}; for several use nsga2, tpe "
                            "(multi-objective TPE), gp (expected hypervolume improvement) or random",
                            to_string(kind), options.directions.size()));
}

std::unique_ptr<Sampler> make_sampler(SamplerKind kind, const Space& space, const SamplerOptions& options) {
  check_objectives(kind, options);
  switch (kind) {
    case SamplerKind::kGrid: return make_grid_sampler(space, options);
    case SamplerKind::kRandom: return make_random_sampler(space, options);
    case SamplerKind::kTpe: return make_tpe_sampler(space, options);
    case SamplerKind::kGp: return make_gp_sampler(space, options);
    case SamplerKind::kCmaes: return make_cmaes_sampler(space, options);
    case SamplerKind::kNsga2: return make_nsga2_sampler(space, options);
  }
  throw Error("make_sampler: unknown sampler");
}

}  // namespace paratune::hpo
