#include "paratune/spec/presets.h"

#include <gtest/gtest.h>

#include "paratune/spec/io.h"

namespace paratune {
namespace {

// Datasheet figures (dense) from data/published-runs/SOURCES.md, "GPU datasheet figures for the new
// GPU types".
TEST(GpuPresets, BlackwellDatasheetFigures) {
  const GpuSpec& b200 = find_gpu_preset("b200");
  EXPECT_DOUBLE_EQ(b200.peak_bf16_flops_per_s, 2250e12);
  EXPECT_DOUBLE_EQ(b200.peak_fp16_flops_per_s, 2250e12);
  EXPECT_DOUBLE_EQ(b200.peak_fp8_flops_per_s, 4500e12);
  EXPECT_DOUBLE_EQ(b200.memory_bytes, 180e9);
  EXPECT_DOUBLE_EQ(b200.hbm_bandwidth_bytes_per_s, 7.7e12);
  const GpuSpec& gb200 = find_gpu_preset("gb200");
  EXPECT_DOUBLE_EQ(gb200.peak_bf16_flops_per_s, 2450e12);
  EXPECT_DOUBLE_EQ(gb200.peak_fp16_flops_per_s, 2450e12);
  EXPECT_DOUBLE_EQ(gb200.peak_fp8_flops_per_s, 4900e12);
  EXPECT_DOUBLE_EQ(gb200.memory_bytes, 186e9);
  EXPECT_DOUBLE_EQ(gb200.hbm_bandwidth_bytes_per_s, 8e12);
}

// Blackwell Ultra (dgxc-benchmarking README @841f5466): the B200's and GB200's dense BF16/FP8 peaks
// with more memory; both are Blackwell (MXFP8 tensor cores, no CUDA_DEVICE_MAX_CONNECTIONS rule).
TEST(GpuPresets, BlackwellUltraDatasheetFigures) {
  const GpuSpec& b300 = find_gpu_preset("b300");
  EXPECT_DOUBLE_EQ(b300.peak_bf16_flops_per_s, 2250e12);
  EXPECT_DOUBLE_EQ(b300.peak_fp8_flops_per_s, 4500e12);
  EXPECT_DOUBLE_EQ(b300.memory_bytes, 270e9);
  EXPECT_DOUBLE_EQ(b300.hbm_bandwidth_bytes_per_s, 7.7e12);
  EXPECT_DOUBLE_EQ(b300.board_power_w, 1100);
  const GpuSpec& gb300 = find_gpu_preset("gb300");
  EXPECT_DOUBLE_EQ(gb300.peak_bf16_flops_per_s, 2450e12);
  EXPECT_DOUBLE_EQ(gb300.peak_fp8_flops_per_s, 4900e12);
  EXPECT_DOUBLE_EQ(gb300.memory_bytes, 279e9);
  EXPECT_DOUBLE_EQ(gb300.hbm_bandwidth_bytes_per_s, 8e12);
  for (const char* name : {"b200", "gb200", "b300", "gb300"}) EXPECT_EQ(gpu_generation(name), "blackwell") << name;
  for (const char* name : {"h100-sxm", "h800", "h200"}) EXPECT_EQ(gpu_generation(name), "hopper") << name;
  EXPECT_EQ(gpu_generation("a100-80gb"), "ampere");
  EXPECT_EQ(gpu_generation("my-own-gpu"), "other");
}

TEST(GpuPresets, H200IsH100ComputeWithMoreAndFasterMemory) {
  const GpuSpec& h200 = find_gpu_preset("h200");
  const GpuSpec& h100 = find_gpu_preset("h100-sxm");
  EXPECT_DOUBLE_EQ(h200.peak_bf16_flops_per_s, h100.peak_bf16_flops_per_s);
  EXPECT_DOUBLE_EQ(h200.peak_fp8_flops_per_s, h100.peak_fp8_flops_per_s);
  EXPECT_NEAR(h200.peak_bf16_flops_per_s, 989e12, 1e12);
  EXPECT_NEAR(h200.peak_fp8_flops_per_s, 1979e12, 1e12);
  EXPECT_DOUBLE_EQ(h200.hbm_bandwidth_bytes_per_s, 4.8e12);
  EXPECT_GT(h200.memory_bytes, 141e9);                               // 141 GB ...
  EXPECT_LT(h200.memory_bytes, 141.0 * 1024 * 1024 * 1024);          // ... up to 141 GiB
}

TEST(GpuPresets, EveryPresetValidates) {
  for (const auto& g : gpu_presets()) EXPECT_NO_THROW(validate(g)) << g.name;
  for (const auto& c : cluster_presets()) EXPECT_NO_THROW(validate(c.node)) << c.node.name;
}

TEST(ClusterPresets, DgxB200) {
  const ClusterPreset& p = find_cluster_preset("dgx-b200");
  const ClusterSpec& c = p.node;
  EXPECT_EQ(c.gpu.name, "b200");
  EXPECT_EQ(c.gpus_per_node, 8);
  EXPECT_EQ(c.scale_up_gpus(), 8);
  EXPECT_DOUBLE_EQ(c.intra_node_bandwidth_bytes_per_s, 900e9);  // 1.8 TB/s bidirectional
  EXPECT_DOUBLE_EQ(c.inter_node_bandwidth_bytes_per_s, 50e9);   // 8x 400 Gb/s per 8 GPUs
  EXPECT_NE(p.source.find("@841f5466"), std::string::npos);
}

TEST(ClusterPresets, Gb200Nvl72) {
  const ClusterPreset& p = find_cluster_preset("gb200-nvl72");
  const ClusterSpec& c = p.node;
  EXPECT_EQ(c.gpu.name, "gb200");
  EXPECT_EQ(c.gpus_per_node, 4);  // one compute tray, as Slurm sees it
  EXPECT_EQ(c.nvlink_domain_gpus, 72);
  EXPECT_EQ(c.scale_up_gpus(), 72);
  EXPECT_DOUBLE_EQ(c.intra_node_bandwidth_bytes_per_s, 900e9);
  EXPECT_DOUBLE_EQ(c.inter_node_bandwidth_bytes_per_s, 50e9);
  EXPECT_NE(p.source.find("ASSUMPTION"), std::string::npos);  // the scale-out NIC is not in the sources
}

TEST(ClusterPresets, DgxB300AndGb300Nvl72) {
  const ClusterSpec& b300 = find_cluster_preset("dgx-b300").node;
  EXPECT_EQ(b300.gpu.name, "b300");
  EXPECT_EQ(b300.gpus_per_node, 8);
  EXPECT_EQ(b300.scale_up_gpus(), 8);
  EXPECT_DOUBLE_EQ(b300.intra_node_bandwidth_bytes_per_s, 900e9);
  EXPECT_DOUBLE_EQ(b300.inter_node_bandwidth_bytes_per_s, 100e9);  // 8x 800 Gb/s per 8 GPUs
  const ClusterPreset& p = find_cluster_preset("gb300-nvl72");
  EXPECT_EQ(p.node.gpu.name, "gb300");
  EXPECT_EQ(p.node.gpus_per_node, 4);
  EXPECT_EQ(p.node.scale_up_gpus(), 72);
  EXPECT_NE(p.source.find("ASSUMPTION"), std::string::npos);  // the scale-out NIC is not in the sources
  EXPECT_EQ(reference_node_for_gpu("b300").node.name, "dgx-b300");
  EXPECT_EQ(reference_node_for_gpu("gb300").node.name, "gb300-nvl72");
}

TEST(ClusterPresets, DgxH200) {
  const ClusterSpec& c = find_cluster_preset("dgx-h200").node;
  EXPECT_EQ(c.gpu.name, "h200");
  EXPECT_EQ(c.gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(c.intra_node_bandwidth_bytes_per_s, 450e9);  // NVLink 4, 900 GB/s bidirectional
  EXPECT_DOUBLE_EQ(c.inter_node_bandwidth_bytes_per_s, 50e9);   // 400 Gb/s per GPU
}

TEST(ClusterPresets, ReferenceNodes) {
  EXPECT_EQ(reference_node_for_gpu("b200").node.name, "dgx-b200");
  EXPECT_EQ(reference_node_for_gpu("gb200").node.name, "gb200-nvl72");
  EXPECT_EQ(reference_node_for_gpu("h200").node.name, "dgx-h200");
  EXPECT_EQ(reference_node_for_gpu("h100-sxm").node.name, "dgx-h100");
  EXPECT_THROW(reference_node_for_gpu("tpu-v5"), Error);
}

TEST(ClusterPresets, ShorthandsOnTheNewNodes) {
  const ClusterSpec rack = load_cluster("gb200-nvl72:18");
  EXPECT_EQ(rack.num_gpus(), 72);
  EXPECT_EQ(rack.scale_up_gpus(), 72);
  const ClusterSpec gb = load_cluster("gb200x128");
  EXPECT_EQ(gb.nodes, 32);
  EXPECT_EQ(gb.gpus_per_node, 4);
  EXPECT_EQ(gb.scale_up_gpus(), 72);
  const ClusterSpec b = load_cluster("b200x64");
  EXPECT_EQ(b.nodes, 8);
  EXPECT_EQ(b.scale_up_gpus(), 8);
  EXPECT_EQ(load_cluster("dgx-b200:4").num_gpus(), 32);
}

}  // namespace
}  // namespace paratune
