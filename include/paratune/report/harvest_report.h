// `paratune simulate --harvest-ratio S`: the tuning work a job's pipeline bubbles can hold
// (sim/harvest.h), per stage and per day.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "paratune/cost/surrogate_footprint.h"
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

}  // namespace paratune
