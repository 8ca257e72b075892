// GPUs and clusters. Figures are datasheet numbers (dense, i.e. without 2:4 sparsity); what a real
// kernel achieves of them is the Calibration's business (cost/calibration.h), not the spec's.
#pragma once

#include <cstdint>
#include <string>

#include "paratune/spec/enums.h"

namespace paratune {

// The most GPUs one cluster may have: 2^24 = 16,777,216, far above the largest clusters built and
// small enough that GPU counts, parallel degrees and the products of degrees the cost model and the
// planner form stay exact in 32-bit integers. validate(ClusterSpec) enforces it (nodes x
// gpus_per_node, nvlink_domain_gpus, nodes_per_pod x gpus_per_node).
inline constexpr int kMaxGpus = 1 << 24;

struct GpuSpec {
  std::string name;
  double memory_bytes = 0;  // usable device memory as nvidia-smi reports it ("Total")
  // Dense tensor-core peak per precision, FLOP/s. 0 = the chip does not support that precision.
  double peak_bf16_flops_per_s = 0;
  double peak_fp16_flops_per_s = 0;
  double peak_fp8_flops_per_s = 0;
  double peak_fp32_flops_per_s = 0;   // plain FP32 (CUDA cores), used for nothing GEMM-heavy
  double hbm_bandwidth_bytes_per_s = 0;
  // The GPU's link to host memory, bytes/s per direction, as a pinned-memory copy reaches it (what
  // activation offload moves over). 0 = not known: offload is refused. Presets: presets.cc.
  double host_link_bandwidth_bytes_per_s = 0;
  // The board power the datasheet peaks are for, W (0 = not known), and a lower limit the GPUs are
  // set to run at (nvidia-smi -pl; 0 = the board power). Under a limit the tensor cores clock down:
  // the cost model scales the compute peaks by (limit / board)^Calibration::power_clock_exponent.
  double board_power_w = 0;
  double power_limit_w = 0;

  // Peak for the GEMMs of training at this precision; throws Error if the chip lacks it.
  [[nodiscard]] double peak_flops_per_s(Precision precision) const;
};

// The architecture generation of a GPU, from its preset name: "volta", "ampere", "hopper" (H100,
// H800, H200), "blackwell" (B200, GB200, B300, GB300), or "other" for a GPU no preset names. The one
// place that says which chips share tensor-core features (MXFP8, CUDA_DEVICE_MAX_CONNECTIONS) and a
// prediction class.
std::string gpu_generation(const std::string& gpu_name);
inline std::string gpu_generation(const GpuSpec& gpu) { return gpu_generation(gpu.name); }

// Bandwidths are per GPU and per direction: the rate at which one GPU can send to its peers over
// that link class (NVLink/NVSwitch inside the scale-up domain; its share of the node's NICs across
// domains).
//
// Three levels of fabric, innermost first:
//   1. The scale-up (NVLink) domain: `scale_up_gpus()` GPUs that share one NVLink/NVSwitch fabric and
//      talk at `intra_node_*`. By default one node (DGX/HGX: 8 GPUs); a GB200 NVL72 rack is 72 GPUs
//      on 18 compute trays of 4, and Slurm sees each tray as a node (gpus_per_node = 4,
//      nvlink_domain_gpus = 72).
//   2. The scale-out network, `inter_node_*`: between domains, each GPU at its share of its node's
//      NICs. Inside a pod (`nodes_per_pod` nodes) it is non-blocking.
//   3. Between pods the network may be oversubscribed by `pod_oversubscription`.
//
// Rank placement (an assumption the cost model relies on): Megatron-LM numbers ranks consecutively
// over the nodes of the allocation, so the cost model treats each block of scale_up_gpus()
// consecutive ranks as one NVLink domain and each block of nodes_per_pod * gpus_per_node consecutive
// ranks as one pod. On GB200 NVL72 NVIDIA's recipes ask Slurm for whole racks (`--segment`); with
// 72-GPU domains a power-of-two group (64 ranks, say) can straddle two racks, and the model prices
// that straddle (cost/collectives.h, place_group). A job placed with --segment=16 (16 trays = 64 GPUs
// per rack) is described by nvlink_domain_gpus = 64.
struct ClusterSpec {
  std::string name;
  GpuSpec gpu;
  int nodes = 1;
  int gpus_per_node = 8;  // GPUs per node as the scheduler sees it (a GB200 compute tray: 4)
  double intra_node_bandwidth_bytes_per_s = 0;  // inside the NVLink domain, per GPU per direction
  double inter_node_bandwidth_bytes_per_s = 0;  // between domains, per GPU per direction
  double intra_node_latency_s = 0;              // per ring step inside the NVLink domain
  double inter_node_latency_s = 0;              // per ring step across the network

  // GPUs that share one NVLink/NVSwitch fabric; 0 = gpus_per_node (the node is the domain).
  // Must be 0 or a multiple of gpus_per_node. GB200 NVL72: 72 (18 trays of 4).
  int nvlink_domain_gpus = 0;

  // Scale-out topology. A "pod" is a group of nodes whose NICs sit under one non-blocking leaf/rail
  // group (with its spine): e.g. a DGX SuperPOD scalable unit of 32 DGX nodes (NVIDIA DGX SuperPOD
  // reference architecture, DGX H100 / B200: 32 nodes per SU, one leaf switch per rail per SU).
  // 0 = every node sits on one non-blocking fabric. If > 0, nodes_per_pod * gpus_per_node must be
  // a multiple of scale_up_gpus() (a pod holds whole NVLink domains).
  int nodes_per_pod = 0;
  // >= 1. A collective whose group spans more than one pod runs its inter-node steps at
  // inter_node_bandwidth / pod_oversubscription (the uplinks between pods are the slowest links
  // of the ring or tree). 1 = non-blocking between pods too (a full fat tree).
  double pod_oversubscription = 1;
  // true: rail-optimized network (DGX SuperPOD RA): NIC i of every node hangs off the leaf switch of
  // "rail" i. Rings and trees connect same-index GPUs and stay on a rail; all-to-all traffic to a GPU
  // of another index crosses rails, which NCCL routes over NVLink to the peer-rail GPU first (PXN),
  // an extra NVLink hop the model charges as intra-node volume. false: all of a node's NICs under
  // the same leaf (or a flat fabric): no PXN hop. See cost/collectives.h.
  bool rail_optimized = true;

  // In 64 bits, so that an unchecked spec cannot wrap (validate() keeps it <= kMaxGpus).
  [[nodiscard]] std::int64_t num_gpus() const { return static_cast<std::int64_t>(nodes) * gpus_per_node; }
  // GPUs of one NVLink domain: nvlink_domain_gpus, or gpus_per_node when that is 0.
  [[nodiscard]] int scale_up_gpus() const { return nvlink_domain_gpus > 0 ? nvlink_domain_gpus : gpus_per_node; }
  // GPUs of one pod (0 = no pods: one non-blocking fabric).
  [[nodiscard]] std::int64_t pod_gpus() const {
    return nodes_per_pod > 0 ? static_cast<std::int64_t>(nodes_per_pod) * gpus_per_node : 0;
  }
};

// Every figure finite and in range (memory, bandwidths > 0; peaks, latencies >= 0), the GPU count
// at most kMaxGpus. Throws Error naming the field, the value and the rule.
void validate(const GpuSpec& gpu);
void validate(const ClusterSpec& cluster);

}  // namespace paratune
