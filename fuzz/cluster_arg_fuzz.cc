// `--cluster` arguments that are not files: PRESET, PRESET:NODES and GPUxCOUNT ("h100x128").
// Arguments that name a file (or whose part before ':' does) are skipped: cluster files have their
// own target, cluster_file.
#include <filesystem>
#include <string>

#include "fuzz_target.h"
#include "paratune/spec/io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace paratune;
  const std::string_view text = fuzz::as_text(data, size);
  if (text.find('/') != std::string_view::npos || text.find('\0') != std::string_view::npos) return 0;
  std::error_code ec;
  if (std::filesystem::exists(std::string(text), ec) ||
      std::filesystem::exists(std::string(text.substr(0, std::min(text.rfind(':'), text.size()))), ec))
    return 0;
  return fuzz::expect_result_or_error([&] {
    const ClusterSpec cluster = load_cluster(text);
    validate(cluster);
    fuzz::require(cluster.num_gpus() >= 1, "an accepted cluster has at least one GPU");
  });
}
