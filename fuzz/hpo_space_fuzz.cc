// Search spaces of hyperparameter studies (typed, conditional parameters and constraints,
// hpo/space.h).
// Properties: the space's description (stored with a study and parsed again on resume) parses to
// the same space; a configuration drawn from the prior is one of the space's (check() is empty) and
// each of its values survives the unit-cube round trip the samplers make; small finite spaces
// (at most 256 combinations) enumerate to configurations that check() accepts.
#include <cmath>
#include <random>

#include "fuzz_target.h"
#include "paratune/hpo/space.h"

namespace {

// Combinations of a finite space's values (inactive parameters counted as active), capped.
double grid_size(const paratune::hpo::Space& space) {
  double n = 1;
  for (const auto& p : space.parameters())
    n *= p.type == paratune::hpo::ParamType::kCategorical ? static_cast<double>(p.choices.size()) : p.high - p.low + 1;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace paratune;
  return fuzz::expect_result_or_error([&] {
    const hpo::Space space = hpo::Space::parse(fuzz::as_text(data, size), "space.yaml");
    const std::string described = space.describe().dump();
    const hpo::Space again = hpo::Space::parse(described, "stored space");
    fuzz::require(again.describe().dump() == described, "a space parses back from its description");

    std::mt19937_64 rng(1);
    for (int draw = 0; draw < 4; ++draw) {
      hpo::Config config;
      try {
        config = space.sample(rng);  // Error when the constraints reject every draw
      } catch (const Error&) {
        break;
      }
      const std::string problem = space.check(config);
      if (!problem.empty()) std::fprintf(stderr, "%s\n", problem.c_str());
      fuzz::require(problem.empty(), "a drawn configuration is one of the space's");
      for (std::size_t i = 0; i < space.size(); ++i) {
        const auto it = config.find(space.parameters()[i].name);
        if (it == config.end()) continue;
        const nlohmann::json back = space.from_unit(i, space.to_unit(i, *it));
        const hpo::ParamSpec& p = space.parameters()[i];
        if (p.type == hpo::ParamType::kFloat) {
          // Within rounding: of the range (linear) or of log(high / low) (log).
          const double x = it->get<double>();
          const double tolerance = p.log ? 1e-9 * x * (1 + std::log(p.high / p.low)) : 1e-9 * (std::fabs(x) + (p.high - p.low));
          fuzz::require(std::fabs(back.get<double>() - x) <= tolerance, "a float survives the unit-cube round trip");
        } else {
          fuzz::require(back.dump() == it->dump(), "an int or a choice survives the unit-cube round trip");
        }
      }
    }
    if (space.finite() && grid_size(space) <= 256)
      for (const hpo::Config& config : space.enumerate())
        fuzz::require(space.check(config).empty(), "an enumerated configuration is one of the space's");
  });
}
