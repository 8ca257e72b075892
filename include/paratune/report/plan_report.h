// Rendering `paratune plan` results: the ranked table, the winner explained, JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
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

// A search in progress, in one line for a terminal (`paratune plan`, src/cli/plan_progress.h):
// the stage, its count against the most it can reach (mesh shapes while bounding, the candidates
// the memory bound kept while estimating), elapsed_s since the search began and, when given, the
// rate of the stage's count (PlanProgress::Snapshot::stage_count), e.g. "plan: level 1: estimated
// 2.3K of at most 1.2M candidates that may fit (1.5M bounded) | 2.1 s | 1.1K/s". "" once the search
// is done.
std::string format_plan_progress(const plan::PlanProgress::Snapshot& progress, double elapsed_s,
                                 std::optional<double> rate_per_s);

}  // namespace paratune
