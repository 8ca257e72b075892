// validate(ClusterSpec): the scale-up domain and scale-out fields, the GPU count and non-finite
// figures (the other specs' rules are exercised through the file loaders in io_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "paratune/spec/hardware.h"
#include "paratune/spec/presets.h"

namespace paratune {
namespace {

std::string validation_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

ClusterSpec tray_cluster() {
  ClusterSpec c = find_cluster_preset("gb200-nvl72").node;
  c.nodes = 36;
  return c;
}

TEST(ClusterValidation, NvlinkDomainIsWholeNodes) {
  ClusterSpec c = tray_cluster();
  EXPECT_NO_THROW(validate(c));
  c.nvlink_domain_gpus = 0;  // the node is the domain
  EXPECT_NO_THROW(validate(c));
  EXPECT_EQ(c.scale_up_gpus(), 4);
  c.nvlink_domain_gpus = 64;  // --segment=16: 16 trays per rack
  EXPECT_NO_THROW(validate(c));
  c.nvlink_domain_gpus = 70;
  EXPECT_EQ(validation_error_of([&] { validate(c); }),
            "nvlink_domain_gpus: 70 must be 0 (one node) or a multiple of gpus_per_node 4");
  c.nvlink_domain_gpus = -8;
  EXPECT_NE(validation_error_of([&] { validate(c); }).find("nvlink_domain_gpus: -8 must be 0"), std::string::npos);
}

TEST(ClusterValidation, PodsHoldWholeDomains) {
  ClusterSpec c = tray_cluster();
  c.nodes_per_pod = 144;  // a SuperPOD scalable unit of 8 NVL72 racks
  EXPECT_NO_THROW(validate(c));
  c.nodes_per_pod = 10;  // 40 GPUs: not whole 72-GPU racks
  EXPECT_EQ(validation_error_of([&] { validate(c); }),
            "nodes_per_pod: 10 nodes x 4 GPUs = 40 GPUs must be a whole number of 72-GPU NVLink domains "
            "(nvlink_domain_gpus)");
  c.nodes_per_pod = -1;
  EXPECT_NE(validation_error_of([&] { validate(c); }).find("nodes_per_pod: -1 must be >= 0"), std::string::npos);
}

TEST(ClusterValidation, OversubscriptionAtLeastOne) {
  ClusterSpec c = find_cluster_preset("dgx-h100").node;
  c.pod_oversubscription = 0.5;
  EXPECT_EQ(validation_error_of([&] { validate(c); }), "pod_oversubscription: 0.5 must be a finite number >= 1 (1 = non-blocking)");
  c.pod_oversubscription = 2;
  EXPECT_NO_THROW(validate(c));
}

TEST(ClusterValidation, GpuCountIsCheckedInSixtyFourBits) {
  ClusterSpec c = find_cluster_preset("dgx-h100").node;
  c.nodes = 536870913;  // x 8 = 2^32 + 8: wrapped in 32 bits, this was an 8-GPU cluster
  EXPECT_EQ(c.num_gpus(), 4294967304);
  EXPECT_EQ(validation_error_of([&] { validate(c); }),
            "nodes: 536870913 nodes x 8 GPUs per node = 4294967304 GPUs; paratune models at most 16777216 GPUs");
  c.nodes = kMaxGpus / 8;
  EXPECT_NO_THROW(validate(c));
  c.nodes = kMaxGpus / 8 + 1;
  EXPECT_NE(validation_error_of([&] { validate(c); }).find("paratune models at most 16777216 GPUs"), std::string::npos);
  c.nodes = 16;
  c.nodes_per_pod = std::numeric_limits<int>::max();  // pod_gpus() must not wrap either
  EXPECT_NE(validation_error_of([&] { validate(c); }).find("nodes_per_pod: 2147483647 nodes x 8 GPUs = 17179869176 GPUs per pod"),
            std::string::npos);
  c.nodes_per_pod = 0;
  c.nvlink_domain_gpus = 8 * (kMaxGpus / 8 + 1);
  EXPECT_NE(validation_error_of([&] { validate(c); }).find("nvlink_domain_gpus: 16777224 must be at most 16777216"),
            std::string::npos);
}

TEST(ClusterValidation, NanAndInfinityAreErrorsNamingTheField) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const ClusterSpec base = find_cluster_preset("dgx-h100").node;
  struct Case {
    std::function<void(ClusterSpec&, double)> set;
    std::string field;
  };
  const std::vector<Case> cases{
      {[](ClusterSpec& c, double v) { c.gpu.memory_bytes = v; }, "gpu.memory"},
      {[](ClusterSpec& c, double v) { c.gpu.hbm_bandwidth_bytes_per_s = v; }, "gpu.hbm_bandwidth"},
      {[](ClusterSpec& c, double v) { c.gpu.peak_bf16_flops_per_s = v; }, "gpu.peak_bf16_tflops"},
      {[](ClusterSpec& c, double v) { c.gpu.peak_fp8_flops_per_s = v; }, "gpu.peak_fp8_tflops"},
      {[](ClusterSpec& c, double v) { c.intra_node_bandwidth_bytes_per_s = v; }, "intra_node_bandwidth"},
      {[](ClusterSpec& c, double v) { c.inter_node_bandwidth_bytes_per_s = v; }, "inter_node_bandwidth"},
      {[](ClusterSpec& c, double v) { c.intra_node_latency_s = v; }, "intra_node_latency"},
      {[](ClusterSpec& c, double v) { c.inter_node_latency_s = v; }, "inter_node_latency"},
      {[](ClusterSpec& c, double v) { c.pod_oversubscription = v; }, "pod_oversubscription"}};
  for (const Case& k : cases)
    for (double bad : {nan, inf, -inf}) {
      ClusterSpec c = base;
      c.nodes = 2;
      k.set(c, bad);
      const std::string e = validation_error_of([&] { validate(c); });
      EXPECT_EQ(e.rfind(k.field + ": ", 0), 0u) << k.field << " = " << bad << ": " << e;
      EXPECT_NE(e.find("finite"), std::string::npos) << e;
    }
}

}  // namespace
}  // namespace paratune
