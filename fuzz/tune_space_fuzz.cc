// Search spaces of `paratune tune` (value lists and muparser constraints, tune/space.h).
// Properties, for spaces small enough to enumerate (at most 1,024 combinations; larger ones are
// legitimate and slow, not bugs): every enumerated point satisfies the constraints, reads back
// from its JSON (point_of) and has a word per parameter.
#include "fuzz_target.h"
#include "paratune/tune/space.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace paratune;
  return fuzz::expect_result_or_error([&] {
    const tune::SearchSpace space = tune::SearchSpace::parse(fuzz::as_text(data, size), "space.yaml");
    (void)space.describe().dump();
    if (space.cartesian_size() > 1024) return;
    for (const tune::Point& point : space.enumerate()) {
      fuzz::require(space.satisfies(point), "an enumerated point satisfies the constraints");
      fuzz::require(space.point_of(space.to_json(point)) == point, "a point reads back from its JSON");
      fuzz::require(space.words(point).size() == space.parameters().size(), "a point has a word per parameter");
    }
  });
}
