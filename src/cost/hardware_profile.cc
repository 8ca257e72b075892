// Reading and checking a hardware profile (paratune/cost/hardware_profile.h; docs/profile.md).
#include "paratune/cost/hardware_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <utility>

#include "../spec/json_reader.h"
#include "paratune/spec/error.h"
#include "paratune/spec/io.h"

namespace paratune {

const char* to_string(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::kBF16: return "bf16";
    case GemmDtype::kFP16: return "fp16";
    case GemmDtype::kFP32: return "fp32";
    case GemmDtype::kFP8: return "fp8";
  }
  return "?";
}

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all_reduce";
    case CollectiveOp::kAllGather: return "all_gather";
    case CollectiveOp::kReduceScatter: return "reduce_scatter";
    case CollectiveOp::kAllToAll: return "all_to_all";
    case CollectiveOp::kSendRecv: return "send_recv";
  }
  return "?";
}

namespace {
namespace profile_reading {

using detail::JsonReader;

// Sizes and counts: whole numbers from 1 to 2^53 (exact in a double).
double positive_whole(JsonReader& r, const std::string& key) {
  if (!r.has(key)) r.fail(key, "is required");
  const double v = r.get_double(key, 0);
  if (!(std::isfinite(v) && v >= 1 && v <= 9007199254740992.0 && v == std::floor(v)))
    r.fail(key, fmt::format("{} must be a whole number from 1 to 2^53", v));
  return v;
}

int positive_int(JsonReader& r, const std::string& key) {
  const int v = r.require_int(key);
  if (v < 1) r.fail(key, fmt::format("{} must be at least 1", v));
  return v;
}

// A timing's four fields, read from `r` (an entry, or a nested timing object): seconds finite and
// > 0 up to a day, p10 <= median <= p90, repetitions >= 1.
MeasuredTime timing(JsonReader& r) {
  MeasuredTime t;
  for (const char* key : {"median_s", "p10_s", "p90_s"})
    if (!r.has(key)) r.fail(key, "is required (or give `skipped` with the reason)");
  t.median_s = r.get_double("median_s", 0);
  t.p10_s = r.get_double("p10_s", 0);
  t.p90_s = r.get_double("p90_s", 0);
  for (const auto& [key, v] : {std::pair{"median_s", t.median_s}, {"p10_s", t.p10_s}, {"p90_s", t.p90_s}})
    if (!(std::isfinite(v) && v > 0 && v <= 86400)) r.fail(key, fmt::format("{} must be a time in seconds, > 0 and at most a day", v));
  if (!(t.p10_s <= t.median_s && t.median_s <= t.p90_s))
    r.fail("median_s", fmt::format("p10_s {} <= median_s {} <= p90_s {} does not hold", t.p10_s, t.median_s, t.p90_s));
  t.repetitions = positive_int(r, "repetitions");
  return t;
}

// An entry's timing, unless it says why it was skipped.
std::optional<MeasuredTime> timing_unless_skipped(JsonReader& r, std::string& skipped) {
  skipped = r.get_string("skipped", "");
  if (!skipped.empty()) return std::nullopt;
  return timing(r);
}

std::optional<MeasuredTime> nested_timing(JsonReader& r, const std::string& key) {
  const nlohmann::json* object = r.get_object(key);
  if (!object) r.fail(key, "is required (or give `skipped` with the reason)");
  JsonReader t(*object, r.context() + ": " + key, {"median_s", "p10_s", "p90_s", "repetitions"});
  MeasuredTime time = timing(t);
  t.finish();
  return time;
}

std::string entry_context(const std::string& context, const std::string& list, std::size_t index, const nlohmann::json& e) {
  if (e.is_object() && e.contains("id") && e["id"].is_string())
    return fmt::format("{}: {}[{}] ({})", context, list, index, e["id"].get<std::string>());
  return fmt::format("{}: {}[{}]", context, list, index);
}

const nlohmann::json& list_of(const nlohmann::json& document, const std::string& context, const std::string& key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  if (!document.contains(key) || document[key].is_null()) return kEmpty;
  if (!document[key].is_array()) throw Error(fmt::format("{}: {}: must be a list", context, key));
  return document[key];
}

template <typename Entry, typename Read>
std::vector<Entry> read_list(const nlohmann::json& document, const std::string& context, const std::string& key,
                             const std::vector<std::string>& keys, Read read) {
  std::vector<Entry> out;
  const nlohmann::json& list = list_of(document, context, key);
  for (std::size_t i = 0; i < list.size(); ++i) {
    JsonReader r(list[i], entry_context(context, key, i, list[i]), keys);
    Entry e = read(r);
    r.finish();
    out.push_back(std::move(e));
  }
  return out;
}

const std::vector<std::string> kTimingKeys = {"median_s", "p10_s", "p90_s", "repetitions"};
std::vector<std::string> with_timing(std::vector<std::string> keys) {
  keys.insert(keys.end(), kTimingKeys.begin(), kTimingKeys.end());
  keys.emplace_back("skipped");
  keys.emplace_back("note");
  return keys;
}

// Fields the measurer writes for people (its kernel's name, a rate, a note): accepted, not used.
void accept_informative(JsonReader& r, std::initializer_list<const char*> keys) {
  for (const char* key : keys) r.get_object(key);
}

// What GEMM and element-wise entries share: the id, sizes that are whole numbers, the fields the
// measurer writes for people, and the timing (or why it was skipped).
template <typename Entry>
void read_sized_entry(JsonReader& r, Entry& e, std::initializer_list<std::pair<const char*, double Entry::*>> sizes,
                      std::initializer_list<const char*> informative) {
  e.id = r.get_string("id", "");
  for (const auto& [key, field] : sizes) e.*field = positive_whole(r, key);
  accept_informative(r, informative);
  e.time = timing_unless_skipped(r, e.skipped);
}

// Each entry once: a second entry of the same id, or (where `shape` gives one) of a shape measured
// already, would be priced by whichever the pricing meets first -- the other silently unused, or a
// collective scaled from the wrong one of two times at one size.
template <typename Entry, typename Shape>
void refuse_repeats(const std::vector<Entry>& entries, const std::string& context, const std::string& list,
                    Shape shape) {
  std::map<std::string, std::size_t> ids, shapes;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    const std::string where = e.id.empty() ? fmt::format("{}: {}[{}]", context, list, i)
                                           : fmt::format("{}: {}[{}] ({})", context, list, i, e.id);
    if (!e.id.empty()) {
      const auto [at, fresh] = ids.emplace(e.id, i);
      if (!fresh)
        throw Error(fmt::format("{}: id: '{}' is also the id of {}[{}]: each entry is given once", where, e.id, list,
                                at->second));
    }
    if (std::string s = shape(e); !s.empty()) {
      const auto [at, fresh] = shapes.emplace(std::move(s), i);
      if (!fresh)
        throw Error(fmt::format("{}: measures {}, as {}[{}] ({}) does: each shape is measured once", where, at->first,
                                list, at->second, entries[at->second].id));
    }
  }
}

GemmDtype gemm_dtype(JsonReader& r, const std::string& key) {
  const std::string text = r.get_string(key, "");
  for (GemmDtype d : {GemmDtype::kBF16, GemmDtype::kFP16, GemmDtype::kFP32, GemmDtype::kFP8})
    if (text == to_string(d)) return d;
  r.fail(key, fmt::format("'{}' is not a GEMM dtype (bf16, fp16, fp32, fp8)", text));
}

CollectiveOp collective_op(JsonReader& r) {
  const std::string text = r.get_string("op", "");
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
                          CollectiveOp::kAllToAll, CollectiveOp::kSendRecv})
    if (text == to_string(op)) return op;
  r.fail("op", fmt::format("'{}' is not a collective (all_reduce, all_gather, reduce_scatter, all_to_all, send_recv)", text));
}

}  // namespace profile_reading
}  // namespace

HardwareProfile parse_hardware_profile(const nlohmann::json& document, const std::string& source) {
  using namespace profile_reading;
  JsonReader top(document, source,
                 {"format", "version", "created_utc", "plan", "device", "gemms", "attention", "elementwise",
                  "memory_bandwidth", "launch_overhead", "sync_overhead", "collectives", "step", "duration_s"});
  const std::string format = top.get_string("format", "");
  if (format != kHardwareProfileFormat)
    top.fail("format", fmt::format("'{}' is not '{}' (is this a file `paratune profile` wrote?)", format, kHardwareProfileFormat));
  const int version = top.require_int("version");
  if (version != kHardwareProfileVersion)
    top.fail("version", fmt::format("{} is not {}, the version this paratune reads (profile again with this version)", version,
                                    kHardwareProfileVersion));
  HardwareProfile p;
  p.source = source;
  p.created_utc = top.get_string("created_utc", "");

  const nlohmann::json* plan = top.get_object("plan");
  if (!plan) top.fail("plan", "is required");
  JsonReader pr(*plan, source + ": plan", {"model", "model_fingerprint", "gpu", "precision"});
  p.model = pr.get_string("model", "");
  p.model_fingerprint = pr.get_string("model_fingerprint", "");
  p.gpu = pr.get_string("gpu", "");
  for (const auto& [key, value] : {std::pair{"model", &p.model}, {"model_fingerprint", &p.model_fingerprint}, {"gpu", &p.gpu}})
    if (value->empty()) pr.fail(key, "is required");
  // Required: a profile measured in fp8 read as bf16 would price the wrong kernels.
  if (!pr.has("precision")) pr.fail("precision", "is required (bf16, fp16 or fp8: what the profile was measured in)");
  p.precision = pr.get_enum<Precision>("precision", Precision::kBF16);
  pr.finish();

  const nlohmann::json* device = top.get_object("device");
  if (!device || !device->is_object()) top.fail("device", "is required: a mapping (backend, name, versions)");
  p.device = *device;
  // At most kMaxGpus ranks, as a cluster: a collective's group is placed on nodes of world_size /
  // nodes ranks, in time and memory that grow with it.
  auto device_int = [&](const char* key, int most) {
    if (!device->contains(key)) return 1;
    const std::optional<int> v = detail::json_int((*device)[key]);
    if (!v || *v < 1 || *v > most)
      throw Error(fmt::format("{}: device: {}: {} must be a whole number from 1 to {}", source, key,
                              (*device)[key].dump(), most));
    return *v;
  };
  p.world_size = device_int("world_size", kMaxGpus);
  p.nodes = device_int("nodes", p.world_size);
  // Shown in `paratune profile`'s table: text, when given.
  for (const char* key : {"backend", "name"})
    if (device->contains(key) && !(*device)[key].is_string())
      throw Error(fmt::format("{}: device: {}: {} is not a string", source, key, (*device)[key].dump()));

  p.gemms = read_list<MeasuredGemm>(
      document, source, "gemms",
      with_timing({"id", "m", "n", "k", "dtype", "measured_dtype", "count", "kernel", "flop_per_s"}),
      [](JsonReader& r) {
        MeasuredGemm g;
        g.dtype = gemm_dtype(r, "dtype");
        g.measured_dtype = r.get_string("measured_dtype", to_string(g.dtype));
        read_sized_entry(r, g, {{"m", &MeasuredGemm::m}, {"n", &MeasuredGemm::n}, {"k", &MeasuredGemm::k}},
                         {"count", "kernel", "flop_per_s", "note"});
        return g;
      });
  refuse_repeats(p.gemms, source, "gemms", [](const MeasuredGemm& g) {
    return fmt::format("the GEMM {}x{}x{} in {}", g.m, g.n, g.k, to_string(g.dtype));
  });
  p.attention = read_list<MeasuredAttention>(
      document, source, "attention",
      {"id", "batch", "seq_len", "heads", "kv_heads", "head_dim", "causal", "kernel", "forward", "backward", "skipped", "note",
       "dtype"},
      [](JsonReader& r) {
        MeasuredAttention a;
        a.id = r.get_string("id", "");
        a.batch = positive_int(r, "batch");
        a.seq_len = positive_int(r, "seq_len");
        a.heads = positive_int(r, "heads");
        a.kv_heads = positive_int(r, "kv_heads");
        a.head_dim = positive_int(r, "head_dim");
        a.causal = r.get_bool("causal", true);
        a.kernel = r.get_string("kernel", "");
        accept_informative(r, {"note", "dtype"});
        a.skipped = r.get_string("skipped", "");
        if (a.skipped.empty()) {
          a.forward = nested_timing(r, "forward");
          a.backward = nested_timing(r, "backward");
        }
        return a;
      });
  p.elementwise = read_list<MeasuredElementwise>(
      document, source, "elementwise", with_timing({"id", "kind", "rows", "cols", "bytes_moved", "dtype", "kernel"}),
      [](JsonReader& r) {
        MeasuredElementwise e;
        e.kind = r.get_string("kind", "");
        e.bytes_moved = r.get_double("bytes_moved", 0);
        if (!(std::isfinite(e.bytes_moved) && e.bytes_moved >= 0))
          r.fail("bytes_moved", fmt::format("{} must be a number of bytes >= 0", e.bytes_moved));
        read_sized_entry(r, e, {{"rows", &MeasuredElementwise::rows}, {"cols", &MeasuredElementwise::cols}},
                         {"note", "dtype", "kernel"});
        return e;
      });
  refuse_repeats(p.elementwise, source, "elementwise", [](const MeasuredElementwise&) { return std::string(); });
  refuse_repeats(p.attention, source, "attention", [](const MeasuredAttention&) { return std::string(); });
  p.collectives = read_list<MeasuredCollective>(
      document, source, "collectives",
      with_timing({"id", "op", "ranks", "bytes", "groups", "dtype", "implementation", "measured_bytes"}),
      [world_size = p.world_size](JsonReader& r) {
        MeasuredCollective c;
        c.id = r.get_string("id", "");
        c.op = collective_op(r);
        c.ranks = positive_int(r, "ranks");
        c.bytes = positive_whole(r, "bytes");
        accept_informative(r, {"groups", "note", "dtype", "implementation", "measured_bytes"});
        c.time = timing_unless_skipped(r, c.skipped);
        // The measurer skips what its world cannot run: a time for more ranks than it had was not measured.
        if (c.time && c.ranks > world_size)
          r.fail("ranks", fmt::format("{} must be at most the device's world_size ({}): a collective runs on the "
                                      "measurer's ranks",
                                      c.ranks, world_size));
        return c;
      });
  refuse_repeats(p.collectives, source, "collectives", [](const MeasuredCollective& c) {
    return fmt::format("{} of {} bytes on {} ranks", to_string(c.op), c.bytes, c.ranks);
  });

  if (const nlohmann::json* bw = top.get_object("memory_bandwidth")) {
    JsonReader r(*bw, source + ": memory_bandwidth", with_timing({"bytes_moved", "bytes_per_s", "bytes"}));
    std::string skipped;
    if (timing_unless_skipped(r, skipped)) {
      const double rate = r.get_double("bytes_per_s", 0);
      // Memory-bound kernels are priced at this rate: below 1 MB/s a step's copies would take longer
      // than any prediction can say (seconds overflow to infinity at 1e-300 B/s), above 1 PB/s they
      // would be free.
      if (!(std::isfinite(rate) && rate >= 1e6 && rate <= 1e15))
        r.fail("bytes_per_s", fmt::format("{} must be a rate from 1e6 to 1e15 bytes per second", rate));
      p.memory_bandwidth_bytes_per_s = rate;
    }
    accept_informative(r, {"bytes_moved", "bytes", "note"});
    r.finish();
  }
  for (const auto& [key, field] : {std::pair{"launch_overhead", &p.launch_overhead}, {"sync_overhead", &p.sync_overhead}}) {
    if (const nlohmann::json* o = top.get_object(key)) {
      JsonReader r(*o, source + ": " + key, with_timing({}));
      std::string skipped;
      *field = timing_unless_skipped(r, skipped);
      accept_informative(r, {"note"});
      r.finish();
    }
  }
  if (const nlohmann::json* s = top.get_object("step")) {
    // The plan's step description is echoed: its keys are read for what the table needs.
    JsonReader r(*s, source + ": step",
                 with_timing({"layers", "hidden_size", "ffn_hidden_size", "heads", "kv_heads", "vocab_size", "seq_len",
                              "micro_batch", "gated_mlp", "moe", "steps", "max_memory_allocated_bytes", "dtype", "head_dim",
                              "losses", "parameters", "attention"}));
    MeasuredStep step;
    step.layers = positive_int(r, "layers");
    step.micro_batch = positive_int(r, "micro_batch");
    step.seq_len = positive_int(r, "seq_len");
    step.vocab_size = r.get_int("vocab_size", 0);
    if (step.vocab_size < 0) r.fail("vocab_size", fmt::format("{} must be >= 1", step.vocab_size));
    step.dtype = r.get_string("dtype", "");
    step.time = timing_unless_skipped(r, step.skipped);
    if (r.has("max_memory_allocated_bytes")) {
      const double bytes = r.get_double("max_memory_allocated_bytes", 0);
      if (!(std::isfinite(bytes) && bytes > 0)) r.fail("max_memory_allocated_bytes", fmt::format("{} must be > 0 bytes", bytes));
      step.max_memory_allocated_bytes = bytes;
    } else {
      r.get_double("max_memory_allocated_bytes", 0);
    }
    // The plan's step, echoed, and what the measurer adds for people.
    accept_informative(r, {"hidden_size", "ffn_hidden_size", "heads", "kv_heads", "steps", "head_dim", "gated_mlp", "moe",
                           "losses", "parameters", "attention", "note"});
    r.finish();
    p.step = step;
  }
  for (const char* list : {"gemms", "attention", "elementwise", "collectives"}) top.get_object(list);  // read above
  accept_informative(top, {"duration_s"});
  top.finish();
  return p;
}

HardwareProfile read_hardware_profile(const std::string& path) { return parse_hardware_profile(read_document(path), path); }

std::string model_fingerprint(const ModelSpec& m) {
  // FNV-1a (64 bit) over the shape fields, in a fixed order.
  std::string shape = fmt::format("h{} a{} kv{} d{} f{} g{} v{} b{} qb{} c{}", m.hidden_size, m.num_attention_heads, m.kv_heads(),
                                  m.head_size(), m.ffn_hidden_size, m.gated_mlp, m.vocab_size, m.bias, m.qkv_bias, m.causal);
  if (m.moe)
    shape += fmt::format(" moe{}/{}/{}/{}/{}", m.moe->num_experts, m.moe->top_k, m.moe->expert_ffn_hidden_size,
                         m.moe->num_shared_experts, m.moe->shared_ffn());
  if (m.mla)
    shape += fmt::format(" mla{}/{}/{}/{}/{}", m.mla->q_lora_rank, m.mla->kv_lora_rank, m.mla->qk_rope_head_dim,
                         m.mla->qk_nope_head_dim, m.mla->v_head_dim);
  std::uint64_t hash = 14695981039346656037ULL;
  for (const unsigned char c : shape) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", hash);
}

namespace {
std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}
}  // namespace

void check_profile_applies(const HardwareProfile& profile, const ModelSpec& model, const ClusterSpec& cluster,
                           const TrainingSpec& training) {
  if (lowercase(profile.gpu) != lowercase(cluster.gpu.name))
    throw Error(fmt::format("{}: measured on GPU '{}', but the cluster's GPU is '{}': a profile prices only the GPU it was "
                            "measured on (profile this one with `paratune profile`)",
                            profile.source, profile.gpu, cluster.gpu.name));
  if (profile.model_fingerprint != model_fingerprint(model))
    throw Error(fmt::format("{}: measured for model '{}' (shape fingerprint {}), but this model '{}' has other layer shapes "
                            "(fingerprint {}): its GEMMs were not measured",
                            profile.source, profile.model, profile.model_fingerprint, model.name, model_fingerprint(model)));
  if (profile.precision != training.precision)
    throw Error(fmt::format("{}: measured in {}, but this training runs in {}: profile it in {}", profile.source,
                            to_string(profile.precision), to_string(training.precision), to_string(training.precision)));
}

}  // namespace paratune
