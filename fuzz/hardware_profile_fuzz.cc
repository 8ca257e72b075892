// Hardware profiles (`--profile`, cost/hardware_profile.h): what `paratune profile` measured, read
// back from a file the user may have edited or truncated.
// Properties of an accepted profile: every measured time is finite, > 0 and ordered
// p10 <= median <= p90 (the reader's rule), and every measured shape is positive.
#include <cmath>

#include "fuzz_target.h"
#include "paratune/cost/hardware_profile.h"
#include "paratune/spec/io.h"

namespace {

void require_time(const std::optional<paratune::MeasuredTime>& time) {
  using paratune::fuzz::require;
  if (!time) return;
  require(std::isfinite(time->median_s) && time->median_s > 0, "a measured median is finite and > 0");
  require(time->p10_s <= time->median_s && time->median_s <= time->p90_s, "p10 <= median <= p90");
  require(time->repetitions >= 1, "a measured time has at least one repetition");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace paratune;
  return fuzz::expect_result_or_error([&] {
    const nlohmann::json doc = parse_document(fuzz::as_text(data, size), "profile.json", DocumentFormat::kJson);
    const HardwareProfile profile = parse_hardware_profile(doc, "profile.json");
    for (const MeasuredGemm& g : profile.gemms) {
      fuzz::require(g.m >= 1 && g.n >= 1 && g.k >= 1, "a GEMM's m, n and k are >= 1");
      require_time(g.time);
    }
    for (const MeasuredAttention& a : profile.attention) {
      fuzz::require(a.batch >= 1 && a.seq_len >= 1 && a.heads >= 1 && a.head_dim >= 1, "attention sizes are >= 1");
      require_time(a.forward);
      require_time(a.backward);
    }
    for (const MeasuredCollective& c : profile.collectives) {
      fuzz::require(c.ranks >= 1 && c.bytes > 0, "a collective has ranks and bytes");
      require_time(c.time);
    }
    for (const MeasuredElementwise& e : profile.elementwise) require_time(e.time);
    require_time(profile.launch_overhead);
    require_time(profile.sync_overhead);
    if (profile.step) require_time(profile.step->time);
    if (profile.memory_bandwidth_bytes_per_s)
      fuzz::require(std::isfinite(*profile.memory_bandwidth_bytes_per_s) && *profile.memory_bandwidth_bytes_per_s > 0,
                    "the copy bandwidth is finite and > 0");
  });
}
