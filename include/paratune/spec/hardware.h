// GPUs and clusters. Figures are datasheet numbers (dense, i.e. without 2:4 sparsity); what a real
// kernel achieves of them is the Calibration's business (cost/calibration.h), not the spec's.
#pragma once

#include <string>

#include "paratune/spec/enums.h"

namespace paratune {

struct GpuSpec {
  std::string name;
  double memory_bytes = 0;  // usable device memory as nvidia-smi reports it ("Total")
  // Dense tensor-core peak per precision, FLOP/s. 0 = the chip does not support that precision.
  double peak_bf16_flops_per_s = 0;
  double peak_fp16_flops_per_s = 0;
  double peak_fp8_flops_per_s = 0;
  double peak_fp32_flops_per_s = 0;   // plain FP32 (CUDA cores), used for nothing GEMM-heavy
  double hbm_bandwidth_bytes_per_s = 0;

  // Peak for the GEMMs of training at this precision; throws Error if the chip lacks it.
  [[nodiscard]] double peak_flops_per_s(Precision precision) const;
};

// Bandwidths are per GPU and per direction: the rate at which one GPU can send to its peers over
// that link class (NVLink/NVSwitch inside a node; its share of the node's NICs across nodes).
struct ClusterSpec {
  std::string name;
  GpuSpec gpu;
  int nodes = 1;
  int gpus_per_node = 8;
  double intra_node_bandwidth_bytes_per_s = 0;
  double inter_node_bandwidth_bytes_per_s = 0;
  double intra_node_latency_s = 0;
  double inter_node_latency_s = 0;

  [[nodiscard]] int num_gpus() const { return nodes * gpus_per_node; }
};

void validate(const GpuSpec& gpu);
void validate(const ClusterSpec& cluster);

}  // namespace paratune
