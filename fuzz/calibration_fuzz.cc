// Calibration files (`--calibration`, cost/calibration.h): every coefficient range-checked, GPU maps.
// Property: a calibration read back from its own JSON (to_json) is the same calibration.
#include "fuzz_target.h"
#include "paratune/cost/calibration.h"
#include "paratune/spec/io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace paratune;
  return fuzz::expect_result_or_error([&] {
    const nlohmann::json doc = parse_document(fuzz::as_text(data, size), "calibration.yaml", DocumentFormat::kYaml);
    const Calibration calibration = calibration_from_json(doc, "calibration.yaml");
    const nlohmann::json written = to_json(calibration);
    Calibration again;
    try {
      again = calibration_from_json(written, "round trip");
    } catch (const Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      fuzz::require(false, "a calibration that was accepted is accepted again from its own JSON");
    }
    fuzz::require(to_json(again) == written, "a calibration read back from its own JSON is the same calibration");
  });
}
