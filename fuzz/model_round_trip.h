// The model targets' property: to_json(model) reads back as the same model (to_json is what
// `paratune model --json` prints and what studies store).
#pragma once

#include "fuzz_target.h"
#include "paratune/spec/io.h"

namespace paratune::fuzz {

inline void check_model_round_trip(const ModelSpec& model) {
  check_round_trip(model, [](const nlohmann::json& j) { return model_from_json(j, "round trip"); }, "model");
}

}  // namespace paratune::fuzz
