// Rendering `paratune plan` results: the ranked table, the winner explained, JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "paratune/plan/planner.h"

namespace paratune {

// {"plans": [...], "baselines": {"expert": ..., "three_axis": ...}, "search": {...}, ...}; each plan's
// config has every axis, with stage_layers and recompute_layers as per-stage lists.
nlohmann::json to_json(const plan::PlanResult& result);

std::string format_plan(const plan::PlanResult& result, const ModelSpec& model, const ClusterSpec& cluster,
                        const TrainingSpec& training);

// One line per configuration, the axes that matter ("dp=8 tp=4 pp=4 ep=8 mbs=1 sp zero=1 ...").
std::string compact_config(const ParallelConfig& config);

}  // namespace paratune
