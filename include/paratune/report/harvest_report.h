// Bubble harvest reports: `paratune simulate --harvest-ratio S`, the tuning work a planned job's
// pipeline bubbles can hold (sim/harvest.h), per stage and per day; `paratune harvest`, a real job
// measured with and without trials in its bubbles (hpo/bubble_coordinator.h).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "paratune/cost/surrogate_footprint.h"
#include "paratune/hpo/bubble_coordinator.h"
#include "paratune/sim/harvest.h"

namespace paratune {

struct HarvestReport {
  SurrogateFootprint footprint;
  sim::HarvestTrial trial;
  sim::BubbleHarvest harvest;
  int gpus_per_stage = 1;  // every GPU of a stage has its timeline
};

// GPU-hours of trial work per day over all GPUs of the job.
double harvested_gpu_hours_per_day(const HarvestReport& r);
// Member-steps (one surrogate trial's training steps) per day over all GPUs of the job.
double harvested_trial_steps_per_day(const HarvestReport& r);

std::string format_harvest(const HarvestReport& r);
nlohmann::json to_json(const HarvestReport& r);

// `paratune harvest`: the real job with and without trials in its bubbles (hpo/bubble_coordinator.h).

struct HarvestMeasurement {
  std::optional<hpo::HarvestRun> baseline;  // the job alone (--baseline)
  hpo::HarvestRun harvest;                  // the job with trials in its bubbles
  int ranks = 2;
};

// Each rank's bubble time over the run's time.
std::vector<double> bubble_fractions(const hpo::HarvestRun& run, int ranks);
// Member-steps of trials per hour of the job (a fused step trains every member).
double trial_member_steps_per_hour(const hpo::HarvestRun& run);

std::string format_harvest_measurement(const HarvestMeasurement& m);
nlohmann::json to_json(const HarvestMeasurement& m);
// Both runs on one timeline: per rank, the job's compute and its bubbles (green where a trial ran,
// with a tick at each trial step), over the job's steps first_step .. first_step + steps - 1.
std::string harvest_timeline_svg(const HarvestMeasurement& m, std::size_t first_step, std::size_t steps);

}  // namespace paratune
