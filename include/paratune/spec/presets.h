// Shipped presets: models from their published configurations, GPUs from datasheets, clusters from
// vendor reference systems. Every entry cites where its numbers come from (src/spec/presets.cc).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "paratune/spec/hardware.h"
#include "paratune/spec/model.h"

namespace paratune {

struct ModelPreset {
  ModelSpec spec;
  double published_total_params = 0;   // as published by the model's authors (see `source`)
  double published_active_params = 0;  // MoE: parameters used per token; dense: = total
  std::string source;
};

struct ClusterPreset {
  ClusterSpec node;  // one node (nodes = 1); `PRESET:N` multiplies it
  std::string source;
};

const std::vector<ModelPreset>& model_presets();
const std::vector<GpuSpec>& gpu_presets();
const std::vector<ClusterPreset>& cluster_presets();

// Lookups; throw Error listing the valid names (with a did-you-mean) when the name is unknown.
const ModelPreset& find_model_preset(std::string_view name);
const GpuSpec& find_gpu_preset(std::string_view name);
const ClusterPreset& find_cluster_preset(std::string_view name);
// The reference node for a GPU (used by the "h100x128" shorthand), e.g. h100-sxm -> dgx-h100.
const ClusterPreset& reference_node_for_gpu(std::string_view gpu_name);

std::vector<std::string> model_preset_names();
std::vector<std::string> gpu_preset_names();
std::vector<std::string> cluster_preset_names();

}  // namespace paratune
