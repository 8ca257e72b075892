// A simulated cluster for benchmarking and testing the tuner's searches (issue 6): the ground-truth
// step time and peak memory of a configuration, built from paratune's cost model and simulator
// (cost/estimate.h) on the *actual* cluster plus hidden perturbations that the prior, which sees
// only the nominal cluster, does not know:
//   - a slower link than the cluster file says (inter-node for multi-host scenarios, PCIe inside a
//     host for the single-host one);
//   - per-axis efficiency quirks: tensor parallelism costs (1 + tp_quirk x log2 tp) more than
//     modelled (kernel shapes, PCIe contention), ZeRO-3 prefetching costs zero3_quirk more;
//   - an overlap flag that helps only sometimes: overlapping the gradient reduction (overlap_comm)
//     only pays with buckets of 64 MB or more; with smaller ones it costs 3% (launch contention);
//   - bucket sizes the model ignores: every DP/ZeRO bucket costs a launch latency, and the last
//     DP bucket is exposed after the backward pass; buckets take memory (twice when overlapped);
//   - allocator overhead: the true peak is 4% above the model's.
// The scenarios follow OPPA's (App. H.1): BERT-base and Qwen2-1.5B on 8 x RTX A5000, Llama-3-1B
// on 2 x 8 RTX 3080, Llama-2-7B on 8 x 4 A100-40GB, with OPPA's search space (Table 1) in
// scenarios/NAME.space.yaml.
//
// The trial program (sim_trial.cc) plays a trial: warm-up steps, multiplicative per-step noise,
// occasional slow outliers, a CUDA-style out-of-memory failure above the GPU's memory — all
// through the @paratune protocol, with sleeps scaled down so that a whole search takes seconds.
#pragma once

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "paratune/spec/hardware.h"
#include "paratune/spec/model.h"
#include "paratune/spec/training.h"
#include "paratune/hpo/space.h"
#include "paratune/tune/space.h"

namespace paratune::simcluster {

struct Scenario {
  std::string name;          // "bert-a5000", ...
  std::string title;         // "BERT-base on 8 x RTX A5000 (1 host)"
  std::string model_arg;     // as --model takes it (preset name or file)
  std::string cluster_file;  // the nominal cluster, as --cluster takes it
  std::string space_file;
  TrainingSpec training;
  int steps = 20;            // q_max (OPPA Table 2)
  double search_budget_s = 0;  // OPPA Table 2's search time
  double startup_s = 0;      // launching a trial (processes, NCCL, model build), charged to search time

  // Hidden (what makes the truth differ from the prior).
  double intra_bandwidth_factor = 1, inter_bandwidth_factor = 1;
  double tp_quirk = 0.05, zero3_quirk = 0.08;
};

// The four scenarios; files are resolved against `dir` (bench/simcluster/scenarios).
std::vector<Scenario> scenarios(const std::filesystem::path& dir);
// Throws Error listing the names.
Scenario scenario(const std::filesystem::path& dir, const std::string& name);

struct World {
  Scenario scenario;
  ModelSpec model;
  ClusterSpec nominal, actual;
  hpo::Space study_space;   // the space file as a study reads it
  tune::SearchSpace space;  // its configurations as the searches index them (SearchSpace::of)
};
World load_world(const Scenario& scenario);

struct Truth {
  bool valid = true;          // the configuration runs at all (else `problem`)
  std::string problem;
  double step_time_s = 0;     // noise-free
  double peak_memory_bytes = 0;
  bool oom = false;           // peak above the GPU's memory
  [[nodiscard]] double throughput() const { return valid && !oom ? 1 / step_time_s : 0; }
};
Truth ground_truth(const World& world, const tune::Point& point);

// The best true throughput over every valid point that fits, and how many fit.
struct Optimum {
  double throughput = 0;
  tune::Point point;
  int fitting = 0, valid = 0;
};
Optimum optimum(const World& world);

// Step j (1-based) of a trial: the true step time x warm-up (step 1: x3, step 2: x1.4) x lognormal
// noise (sigma 3%) x an outlier (3% of steps: x1.3-2.0).
double noisy_step_time(double true_step_s, int step, std::mt19937_64& rng);

}  // namespace paratune::simcluster
