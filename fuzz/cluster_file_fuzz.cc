// Cluster files (YAML or JSON, `--cluster FILE`): the GPU (a preset name or its fields with units),
// the links, the topology fields and validate().
// Property: a cluster read back from its own JSON (to_json) is the same cluster.
#include "fuzz_target.h"
#include "paratune/spec/io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace paratune;
  return fuzz::expect_result_or_error([&] {
    const nlohmann::json doc = parse_document(fuzz::as_text(data, size), "cluster.yaml", DocumentFormat::kYaml);
    const ClusterSpec cluster = cluster_from_json(doc, "cluster.yaml");
    fuzz::check_round_trip(cluster, [](const nlohmann::json& j) { return cluster_from_json(j, "round trip"); }, "cluster");
  });
}
