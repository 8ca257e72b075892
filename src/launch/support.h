// The machinery of the frameworks' support rules (paratune/launch/framework_support.h), shared by
// the files that hold one framework's rules each: megatron_support.cc, torchtitan_support.cc and
// deepspeed_support.cc. framework_support.cc judges a configuration with the framework's function.
// Internal.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "paratune/launch/framework_support.h"

namespace paratune::launch::support_detail {

// Collects the reasons, or only whether there is one (reasons == nullptr: stop at the first).
class Verdict {
 public:
  explicit Verdict(std::vector<std::string>* reasons) : reasons_(reasons) {}
  // Records a refusal; true when the caller may stop checking.
  template <typename Why>
  bool refuse(Why&& why) {
    refused_ = true;
    if (reasons_) reasons_->push_back(why());
    return reasons_ == nullptr;
  }
  [[nodiscard]] bool refused() const { return refused_; }

 private:
  std::vector<std::string>* reasons_;
  bool refused_ = false;
};

struct Input {
  const ParallelConfig& c;
  const ModelSpec& model;
  const TrainingSpec& training;
  bool judge_grad_sync;
};

inline std::string join_slash(const std::vector<int>& v) { return fmt::format("{}", fmt::join(v, "/")); }

// Whether stage layouts or per-stage recompute counts are given (a level-1 configuration has
// neither: even stages, every layer recomputed with recompute=full).
inline bool has_stage_detail(const ParallelConfig& c) {
  return !c.stage_layers.empty() || !c.stage_recompute_layers.empty() || c.recompute_layers >= 0;
}

inline std::vector<int> layers_per_stage(const ParallelConfig& c, const ModelSpec& model) {
  return c.stage_layers.empty() ? even_stage_layers(model.num_layers, c.pp) : c.stage_layers;
}

// Fully recomputed layers of each stage (0 unless recompute=full).
inline std::vector<int> recomputed_per_stage(const ParallelConfig& c, const std::vector<int>& layers) {
  std::vector<int> out(layers.size(), 0);
  if (c.recompute != RecomputeMode::kFull) return out;
  for (std::size_t s = 0; s < layers.size(); ++s)
    out[s] = !c.stage_recompute_layers.empty() ? c.stage_recompute_layers[s]
             : c.recompute_layers < 0          ? layers[s]
                                               : std::min(c.recompute_layers, layers[s]);
  return out;
}

inline bool all_recomputed(const ParallelConfig& c, const ModelSpec& model) {
  if (c.recompute != RecomputeMode::kFull || !has_stage_detail(c)) return true;
  const std::vector<int> layers = layers_per_stage(c, model);
  return recomputed_per_stage(c, layers) == layers;
}

// Selective recompute of other modules than Megatron's default core attention.
inline bool has_module_list(const ParallelConfig& c) {
  return c.recompute == RecomputeMode::kSelective && c.recompute_modules != kDefaultRecomputeModules;
}

// Why the framework does not reduce gradients the way `g` models (runs_grad_sync is false).
std::string grad_sync_reason(Framework f, int pp, GradSync g);

// One framework's rules: each refusal of `in` goes to `v`, and the function returns at the first
// one when `v` collects none.
void megatron(const Input& in, Verdict& v);    // megatron_support.cc
void torchtitan(const Input& in, Verdict& v);  // torchtitan_support.cc
void deepspeed(const Input& in, Verdict& v);   // deepspeed_support.cc

}  // namespace paratune::launch::support_detail
