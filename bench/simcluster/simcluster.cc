// The simulated cluster's ground truth (simcluster.h).
#include "simcluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "paratune/cost/estimate.h"
#include "paratune/spec/error.h"
#include "paratune/spec/io.h"
#include "paratune/tune/surrogate.h"

namespace paratune::simcluster {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kDpBucketLaunchS = 40e-6;    // per gradient bucket reduced
constexpr double kZeroBucketLaunchS = 25e-6;  // per ZeRO gather/scatter bucket
constexpr double kSmallBucketOverlapPenalty = 1.03;
constexpr double kAllocatorOverhead = 1.04;

TrainingSpec training(int seq_len, int global_batch) {
  TrainingSpec t;
  t.seq_len = seq_len;
  t.global_batch = global_batch;
  return t;
}

}  // namespace

std::vector<Scenario> scenarios(const std::filesystem::path& dir) {
  const auto file = [&](const char* name) { return (dir / name).string(); };
  std::vector<Scenario> out;
  // OPPA Table 2: batch, sequence length, search time and q_max of each case.
  Scenario bert{"bert-a5000", "BERT-base on 8 x RTX A5000 (1 host)", "bert-base", file("a5000-8.yaml"),
                file("bert-a5000.space.yaml"), training(256, 256), 50, 20 * 60, 15};
  bert.intra_bandwidth_factor = 0.7;  // PCIe through a switch shared by pairs of GPUs
  out.push_back(bert);
  Scenario qwen{"qwen2-a5000", "Qwen2-1.5B on 8 x RTX A5000 (1 host)", "qwen2-1.5b", file("a5000-8.yaml"),
                file("qwen2-a5000.space.yaml"), training(1024, 64), 30, 20 * 60, 25};
  qwen.intra_bandwidth_factor = 0.7;
  out.push_back(qwen);
  Scenario llama1{"llama3-1b-3080", "Llama-3-1B on 2 x 8 RTX 3080 (Docker overlay network)", file("llama3-1b.yaml"),
                  file("rtx3080-16.yaml"), file("llama3-1b-3080.space.yaml"), training(1024, 64), 20, 60 * 60, 30};
  llama1.inter_bandwidth_factor = 0.4;  // the overlay network's encapsulation
  out.push_back(llama1);
  Scenario llama7{"llama2-7b-a100", "Llama-2-7B on 8 x 4 A100-40GB (HPC)", "llama2-7b", file("a100-32.yaml"),
                  file("llama2-7b-a100.space.yaml"), training(1024, 256), 30, 60 * 60, 45};
  llama7.inter_bandwidth_factor = 0.6;  // a shared fabric
  out.push_back(llama7);
  return out;
}

Scenario scenario(const std::filesystem::path& dir, const std::string& name) {
  std::vector<std::string> names;
  for (const Scenario& s : scenarios(dir)) {
    if (s.name == name) return s;
    names.push_back(s.name);
  }
  throw Error(fmt::format("--scenario {}: unknown (valid: {})", name, fmt::join(names, ", ")));
}

World load_world(const Scenario& s) {
  hpo::Space study_space = hpo::Space::load(s.space_file);
  tune::SearchSpace view = tune::SearchSpace::of(study_space);
  World w{s, load_model(s.model_arg), load_cluster(s.cluster_file), {}, std::move(study_space), std::move(view)};
  w.actual = w.nominal;
  w.actual.intra_node_bandwidth_bytes_per_s *= s.intra_bandwidth_factor;
  w.actual.inter_node_bandwidth_bytes_per_s *= s.inter_bandwidth_factor;
  return w;
}

Truth ground_truth(const World& w, const tune::Point& point) {
  Truth truth;
  const Scenario& s = w.scenario;
  ParallelConfig config;
  Estimate e;
  const double dp_bucket = tune::parameter_number(w.space, point, {"dp_bucket_mb"}, 64) * kMiB;
  const double zero_bucket = tune::parameter_number(w.space, point, {"zero_bucket_mb"}, 64) * kMiB;
  try {
    config = tune::parallel_config_of(w.space, point, s.training);
    // The overlap flag that helps only sometimes: with small buckets the overlapped reduction
    // does not hide anything (and costs a little, below).
    const bool wanted_overlap = config.overlap_grad_reduce;
    const bool overlap_works = dp_bucket >= 64 * kMiB;
    if (wanted_overlap && !overlap_works) config.overlap_grad_reduce = false;
    e = estimate(w.model, w.actual, s.training, config);
    double t = e.iteration_time_s;
    t *= 1 + s.tp_quirk * std::log2(static_cast<double>(config.tp));
    if (config.zero == 3) t *= 1 + s.zero3_quirk;
    // Buckets: a launch each, and the last DP bucket's reduction exposed after the backward pass.
    double params_per_gpu = 0;
    for (const StageEstimate& st : e.stages) params_per_gpu = std::max(params_per_gpu, st.params);
    const double grad_bytes = params_per_gpu * 4;  // fp32 gradient buffer
    if (config.dp > 1) {
      t += std::ceil(grad_bytes / dp_bucket) * kDpBucketLaunchS;
      const bool across_hosts = config.dp * config.tp > w.actual.gpus_per_node;
      const double bw = across_hosts ? w.actual.inter_node_bandwidth_bytes_per_s : w.actual.intra_node_bandwidth_bytes_per_s;
      t += std::min(dp_bucket, grad_bytes) * 2 * (config.dp - 1) / config.dp / bw;
    }
    if (config.zero > 0) t += std::ceil(params_per_gpu * 2 / zero_bucket) * kZeroBucketLaunchS;
    if (wanted_overlap && !overlap_works) t *= kSmallBucketOverlapPenalty;
    truth.step_time_s = t;
    truth.peak_memory_bytes = e.peak_memory_bytes * kAllocatorOverhead + dp_bucket * (wanted_overlap ? 2 : 1) +
                              (config.zero > 0 ? 2 * zero_bucket : 0);
    truth.oom = truth.peak_memory_bytes > w.actual.gpu.memory_bytes;
  } catch (const Error& error) {
    truth.valid = false;
    truth.problem = error.what();
  }
  return truth;
}

Optimum optimum(const World& w) {
  Optimum best;
  for (const tune::Point& p : w.space.enumerate()) {
    const Truth t = ground_truth(w, p);
    if (!t.valid) continue;
    ++best.valid;
    if (t.oom) continue;
    ++best.fitting;
    if (t.throughput() > best.throughput) {
      best.throughput = t.throughput();
      best.point = p;
    }
  }
  return best;
}

double noisy_step_time(double true_step_s, int step, std::mt19937_64& rng) {
  double t = true_step_s;
  if (step == 1) t *= 3.0;
  if (step == 2) t *= 1.4;
  t *= std::exp(std::normal_distribution<double>(0, 0.03)(rng));
  if (std::uniform_real_distribution<double>(0, 1)(rng) < 0.03) t *= std::uniform_real_distribution<double>(1.3, 2.0)(rng);
  return t;
}

}  // namespace paratune::simcluster
