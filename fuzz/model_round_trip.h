// The model targets' property: to_json(model) reads back as the same model (to_json is what
// `paratune model --json` prints and what studies store).
#pragma once

#include "fuzz_target.h"
#include "paratune/spec/io.h"

namespace paratune::fuzz {

inline void check_model_round_trip(const ModelSpec& model) {
  const nlohmann::json written = to_json(model);
  ModelSpec again;
  try {
    again = model_from_json(written, "round trip");
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    require(false, "a model that was accepted is accepted again from its own JSON");
  }
  require(to_json(again) == written, "a model read back from its own JSON is the same model");
}

}  // namespace paratune::fuzz
