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
    fuzz::check_round_trip(calibration, [](const nlohmann::json& j) { return calibration_from_json(j, "round trip"); },
                           "calibration");
  });
}
