// Published-runs CSV files (`paratune validate/calibrate --runs`, calib/published_runs.h): the
// RFC 4180 reader, the header check, and each row turned into a model, cluster, training and the
// configurations to search (setup_for_run; a row it cannot use is a RowSkipped, an Error).
// Properties: an accepted row has a model and cluster that validate and at least one candidate.
#include "fuzz_target.h"
#include "paratune/calib/published_runs.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace paratune;
  return fuzz::expect_result_or_error([&] {
    const std::vector<PublishedRun> runs = parse_published_runs(fuzz::as_text(data, size), "runs.csv");
    for (const PublishedRun& run : runs) {
      RunSetup setup;
      try {
        setup = setup_for_run(run);
      } catch (const Error&) {
        continue;
      }
      validate(setup.model);
      validate(setup.cluster);
      fuzz::require(!setup.candidates.empty(), "an accepted row has a configuration to estimate");
    }
  });
}
