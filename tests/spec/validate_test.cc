// validate(ClusterSpec): the scale-up domain and scale-out fields (the other specs' rules are
// exercised through the file loaders in io_test.cc).
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "paratune/spec/hardware.h"
#include "paratune/spec/presets.h"

namespace paratune {
namespace {

std::string error_of(const std::function<void()>& f) {
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
  EXPECT_EQ(error_of([&] { validate(c); }),
            "nvlink_domain_gpus: 70 must be 0 (one node) or a multiple of gpus_per_node 4");
  c.nvlink_domain_gpus = -8;
  EXPECT_NE(error_of([&] { validate(c); }).find("nvlink_domain_gpus: -8 must be 0"), std::string::npos);
}

TEST(ClusterValidation, PodsHoldWholeDomains) {
  ClusterSpec c = tray_cluster();
  c.nodes_per_pod = 144;  // a SuperPOD scalable unit of 8 NVL72 racks
  EXPECT_NO_THROW(validate(c));
  c.nodes_per_pod = 10;  // 40 GPUs: not whole 72-GPU racks
  EXPECT_EQ(error_of([&] { validate(c); }),
            "nodes_per_pod: 10 nodes x 4 GPUs = 40 GPUs must be a whole number of 72-GPU NVLink domains "
            "(nvlink_domain_gpus)");
  c.nodes_per_pod = -1;
  EXPECT_NE(error_of([&] { validate(c); }).find("nodes_per_pod: -1 must be >= 0"), std::string::npos);
}

TEST(ClusterValidation, OversubscriptionAtLeastOne) {
  ClusterSpec c = find_cluster_preset("dgx-h100").node;
  c.pod_oversubscription = 0.5;
  EXPECT_EQ(error_of([&] { validate(c); }), "pod_oversubscription: 0.5 must be a finite number >= 1 (1 = non-blocking)");
  c.pod_oversubscription = 2;
  EXPECT_NO_THROW(validate(c));
}

}  // namespace
}  // namespace paratune
