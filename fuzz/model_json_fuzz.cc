// Model files in JSON: a Hugging Face config.json (every supported model_type) or paratune's model
// spec, through the JSON reader (duplicate keys, numbers out of range) and validate().
// Property: a model read back from its own JSON (to_json) is the same model.
#include "fuzz_target.h"
#include "model_round_trip.h"
#include "paratune/spec/io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace paratune;
  return fuzz::expect_result_or_error([&] {
    const nlohmann::json doc = parse_document(fuzz::as_text(data, size), "config.json", DocumentFormat::kJson);
    fuzz::check_model_round_trip(model_from_document(doc, "config.json"));
  });
}
