// Rendering an Estimate for people (text) and machines (JSON).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "paratune/cost/estimate.h"
#include "paratune/cost/model_stats.h"

namespace paratune {

nlohmann::json to_json(const Estimate& estimate);
std::string format_estimate(const Estimate& estimate, const ModelSpec& model, const ClusterSpec& cluster,
                            const TrainingSpec& training);

nlohmann::json model_summary_json(const ModelSpec& model, int seq_len);
std::string format_model_summary(const ModelSpec& model, int seq_len);

}  // namespace paratune
