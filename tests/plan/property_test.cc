// Properties of the cost model and the planner that must hold on any input (issue 21), checked on
// random small cases drawn from a fixed seed:
//  - a configuration's memory never shrinks when its micro-batch grows;
//  - the planner's best is never slower than any configuration `estimate` accepts (an independent
//    random sample of configurations, not the planner's own enumeration);
//  - twice the GPUs of the same kind, same global batch, never make the best plan slower by more
//    than noise.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../test_util.h"
#include "paratune/cost/estimate.h"
#include "paratune/plan/planner.h"
#include "paratune/spec/error.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/presets.h"

namespace paratune {
namespace {

const char* const kModels[] = {"gpt2", "llama3.1-8b", "gpt-j-6b"};

// The properties are checked at 4,096 tokens; GPT-2's learned positions stop at 1,024, so its shape
// gets a table long enough (as a model spec would give it).
ModelSpec at_4096_tokens(ModelSpec model) {
  if (model.position_embedding == PositionEmbedding::kLearned)
    model.max_position_embeddings = std::max(model.max_position_embeddings, 4096);
  return model;
}
const char* const kRecompute[] = {"none", "selective", "full"};

int pick(std::mt19937_64& rng, const std::vector<int>& values) {
  return values[std::uniform_int_distribution<std::size_t>(0, values.size() - 1)(rng)];
}

// A random configuration of `gpus` GPUs for a global batch of `batch` sequences: "dp=..,tp=..".
std::string random_config(std::mt19937_64& rng, int gpus, int batch, int mbs) {
  std::vector<int> splits;
  for (int tp : {1, 2, 4, 8})
    for (int pp : {1, 2, 4})
      if (gpus % (tp * pp) == 0 && batch % (gpus / (tp * pp) * mbs) == 0) splits.push_back(tp * 16 + pp);
  if (splits.empty()) return "";
  const int split = pick(rng, splits), tp = split / 16, pp = split % 16, dp = gpus / (tp * pp);
  return "dp=" + std::to_string(dp) + ",tp=" + std::to_string(tp) + ",pp=" + std::to_string(pp) +
         ",mbs=" + std::to_string(mbs) + ",zero=" + std::to_string(pick(rng, {0, 1, 2, 3})) +
         ",recompute=" + kRecompute[pick(rng, {0, 1, 2})] + (tp > 1 ? ",sp=true" : "");
}

// The estimate of a configuration the model accepts (nullopt: refused, e.g. tp not dividing the heads).
std::optional<Estimate> valid_estimate(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                                       const std::string& config) {
  try {
    return estimate(model, cluster, training, parse_parallel_config(config));
  } catch (const Error&) {
    return std::nullopt;
  }
}

TEST(Property, MemoryNeverShrinksWhenTheMicroBatchGrows) {
  std::mt19937_64 rng(21);
  int checked = 0;
  for (int i = 0; i < 300; ++i) {
    const ModelSpec model = at_4096_tokens(find_model_preset(kModels[pick(rng, {0, 1, 2})]).spec);
    const TrainingSpec training = testing::training(pick(rng, {1024, 2048, 4096}), 64);
    const int mbs = pick(rng, {1, 2, 4});
    const std::string small = random_config(rng, 8, 64, mbs);
    if (small.empty()) continue;
    std::string large = small;
    large.replace(large.find("mbs=" + std::to_string(mbs)), 4 + std::to_string(mbs).size(), "mbs=" + std::to_string(2 * mbs));
    if (64 % (2 * mbs * std::stoi(small.substr(3))) != 0) continue;  // dp x 2 mbs must divide the batch
    const std::optional<Estimate> a = valid_estimate(model, testing::dgx_h100(1), training, small);
    const std::optional<Estimate> b = valid_estimate(model, testing::dgx_h100(1), training, large);
    if (!a || !b) continue;
    EXPECT_GE(b->peak_memory_bytes, a->peak_memory_bytes) << model.name << " " << small << " -> " << large;
    for (std::size_t s = 0; s < a->stages.size(); ++s)
      EXPECT_GE(b->stages[s].memory.activations_bytes, a->stages[s].memory.activations_bytes)
          << model.name << " " << small << " stage " << s;
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

TEST(Property, ThePlannersBestBeatsEveryConfigurationEstimateAccepts) {
  std::mt19937_64 rng(2021);
  for (const char* name : {"gpt2", "llama3.1-8b"}) {
    const ModelSpec model = at_4096_tokens(find_model_preset(name).spec);
    const ClusterSpec cluster = testing::dgx_h100(1);
    const TrainingSpec training = testing::training(4096, 32);
    plan::PlanOptions options;
    options.baselines = false;
    const plan::PlanResult result = plan::plan(model, cluster, training, options);
    ASSERT_FALSE(result.plans.empty()) << name;
    const double best = result.plans.front().estimate.iteration_time_s;
    int accepted = 0;
    for (int i = 0; i < 200; ++i) {
      const std::string config = random_config(rng, 8, 32, pick(rng, {1, 2, 4}));
      if (config.empty()) continue;
      const std::optional<Estimate> e = valid_estimate(model, cluster, training, config);
      if (!e || !e->fits) continue;
      ++accepted;
      EXPECT_LE(best, e->iteration_time_s * (1 + 1e-9))
          << name << ": " << config << " runs in " << e->iteration_time_s << " s, the planner's best "
          << to_string(result.plans.front().estimate.config) << " in " << best << " s";
    }
    EXPECT_GT(accepted, 20) << name;
  }
}

TEST(Property, TwiceTheGpusNeverMakeTheBestPlanSlower) {
  for (const char* name : {"gpt2", "llama3.1-8b", "gpt-j-6b"}) {
    const ModelSpec model = at_4096_tokens(find_model_preset(name).spec);
    const TrainingSpec training = testing::training(4096, 64);
    plan::PlanOptions options;
    options.baselines = false;
    double previous = 0;
    for (int nodes : {1, 2, 4}) {
      const plan::PlanResult r = plan::plan(model, testing::dgx_h100(nodes), training, options);
      ASSERT_FALSE(r.plans.empty()) << name << " on " << 8 * nodes << " GPUs";
      const double t = r.plans.front().estimate.iteration_time_s;
      // 2% of noise: the model has none, but ties between plans of other shapes may shift rounding.
      if (previous > 0) EXPECT_LE(t, previous * 1.02) << name << " on " << 8 * nodes << " GPUs";
      previous = t;
    }
  }
}

}  // namespace
}  // namespace paratune
