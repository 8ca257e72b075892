// Model files in YAML (paratune's model spec, or a Hugging Face config written as YAML): the YAML
// reader (aliases, duplicate keys, scalars typed), then the model readers and validate().
// Property: a model read back from its own JSON (to_json) is the same model.
#include "fuzz_target.h"
#include "model_round_trip.h"
#include "paratune/spec/io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace paratune;
  return fuzz::expect_result_or_error([&] {
    const nlohmann::json doc = parse_document(fuzz::as_text(data, size), "fuzz.yaml", DocumentFormat::kYaml);
    fuzz::check_model_round_trip(model_from_document(doc, "fuzz.yaml"));
  });
}
