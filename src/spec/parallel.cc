#include "paratune/spec/parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <utility>

namespace paratune {
namespace {

const std::vector<std::string>& config_keys() {
  static const std::vector<std::string> keys{
      "dp",        "tp",        "pp",        "vpp",   "cp",           "ep",
      "etp",       "mbs",       "sp",        "zero",  "op",           "recompute",
      "recompute_layers", "recompute_modules", "offload_modules", "stage_layers", "schedule", "grad_sync", "overlap_grad_reduce",
      "overlap_param_gather", "tp_comm_overlap", "overlap_p2p", "ep_overlap", "dispatcher", "account_embedding",
      "account_loss", "layout"};
  return keys;
}

int parse_int(std::string_view key, std::string_view value) {
  int out = 0;
  const auto* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, out);
  if (ec == std::errc::result_out_of_range)
    throw Error(fmt::format("{}: '{}' is out of range (a 32-bit integer, at most {})", key, value,
                            std::numeric_limits<int>::max()));
  if (ec != std::errc() || ptr != end)
    throw Error(fmt::format("{}: '{}' is not an integer", key, value));
  return out;
}

bool parse_bool(std::string_view key, std::string_view value) {
  if (value == "true" || value == "1" || value == "on" || value == "yes") return true;
  if (value == "false" || value == "0" || value == "off" || value == "no") return false;
  throw Error(fmt::format("{}: '{}' is not a boolean (true/false)", key, value));
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::vector<int> parse_int_list(std::string_view key, std::string_view value) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t end = value.find_first_of("/:", start);
    if (end == std::string_view::npos) end = value.size();
    out.push_back(parse_int(key, trim(value.substr(start, end - start))));
    start = end + 1;
  }
  return out;
}

// "core_attn+moe_act": module names joined by '+' (',' separates the config's keys; Megatron-LM's
// own flags take them space-separated), for recompute_modules and offload_modules alike. "none" (or
// nothing) is the empty set, which Megatron-Core accepts as selective recompute of nothing
// (Megatron-Bridge skills/nemo-mbridge-perf-activation-recompute/SKILL.md: "an empty list is
// accepted as an explicit control").
template <typename Module>
unsigned parse_module_set(std::string_view value) {
  unsigned out = 0;
  if (value.empty() || value == "none") return out;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t end = value.find('+', start);
    if (end == std::string_view::npos) end = value.size();
    const std::string_view name = trim(value.substr(start, end - start));
    const unsigned bit = 1u << static_cast<unsigned>(parse_enum<Module>(name));
    if ((out & bit) != 0)
      throw Error(fmt::format("{}: '{}' is named twice in '{}'", EnumNames<Module>::kWhat, name, value));
    out |= bit;
    start = end + 1;
  }
  return out;
}

// The names of a module set, in the enum's (Megatron-Core's) order.
template <typename Module>
std::vector<std::string> module_set_names(unsigned modules) {
  std::vector<std::string> out;
  for (const auto& [module, name] : EnumNames<Module>::kTable)
    if ((modules & (1u << static_cast<unsigned>(module))) != 0) out.emplace_back(name);
  return out;
}

template <typename Module>
std::string module_set_text(unsigned modules) {
  const std::vector<std::string> names = module_set_names<Module>(modules);
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, "+"));
}

std::string recompute_modules_text(unsigned modules) { return module_set_text<RecomputeModule>(modules); }

// The most symbols a layout may expand to: Llama-3.1-405B's 126 layers on 16 x 8 stages are a few
// hundred; the cap stops "t*2000000000" before it allocates.
constexpr std::size_t kMaxLayoutSymbols = 1 << 20;

// Megatron's layout text with its repetitions expanded (R13.1; layout.py's from_str does the same
// with regular expressions, innermost group first): "(tt|)*2t*3" -> "tt|tt|ttt".
class LayoutExpander {
 public:
  explicit LayoutExpander(std::string_view text) : text_(text) {}

  std::string expand() {
    std::string out = sequence();
    if (pos_ < text_.size()) fail(fmt::format("')' at position {} closes no '('", pos_));
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(fmt::format("layout: '{}': {} (Megatron-LM --pipeline-model-parallel-layout syntax: stages "
                            "separated by '|', E t m L, X*n and (...)*n)",
                            text_, why));
  }
  // Symbols and groups up to a ')' or the end.
  std::string sequence() {
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != ')') {
      const char ch = text_[pos_];
      if (ch == ',' || ch == ' ') {  // Megatron ignores commas; spaces read as nothing too
        ++pos_;
        continue;
      }
      std::string item;
      if (ch == '(') {
        ++pos_;
        item = sequence();
        if (pos_ >= text_.size()) fail("a '(' is never closed");
        ++pos_;  // ')'
        if (pos_ >= text_.size() || text_[pos_] != '*') fail(fmt::format("a group (...) must be followed by *n"));
      } else if (ch == 'E' || ch == 't' || ch == 'm' || ch == 'L' || ch == '|') {
        item = std::string(1, ch);
        ++pos_;
      } else {
        fail(fmt::format("'{}' at position {} is not one of E t m L | ( ) * ,", ch, pos_));
      }
      const int n = repeat();
      if (item.size() * static_cast<std::size_t>(n) + out.size() > kMaxLayoutSymbols)
        fail(fmt::format("it expands to more than {} symbols", kMaxLayoutSymbols));
      // An empty group repeated is nothing: "()*66666666" must not loop 66 M times (found by
      // fuzz/parallel_config).
      if (!item.empty())
        for (int i = 0; i < n; ++i) out += item;
    }
    return out;
  }
  // "*n" after a symbol or group; 1 when there is none.
  int repeat() {
    if (pos_ >= text_.size() || text_[pos_] != '*') return 1;
    const std::size_t begin = ++pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    int n = 0;
    const auto [ptr, ec] = std::from_chars(text_.data() + begin, text_.data() + pos_, n);
    if (begin == pos_ || ec != std::errc() || ptr != text_.data() + pos_)
      fail(fmt::format("'*' at position {} must be followed by a count", begin - 1));
    if (n < 1) fail(fmt::format("the count *{} at position {} must be >= 1", n, begin - 1));
    return n;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

std::vector<std::string> recompute_module_names(unsigned modules) { return module_set_names<RecomputeModule>(modules); }
std::vector<std::string> offload_module_names(unsigned modules) { return module_set_names<OffloadModule>(modules); }
std::string offload_modules_text(unsigned modules) { return module_set_text<OffloadModule>(modules); }

// Megatron-Core's rules for --recompute-modules (Megatron-Bridge skills/nemo-mbridge-perf-activation-
// recompute/SKILL.md, "Compatibility and Validation"; data/frameworks/megatron-lm-rules.md R19.4):
// the list needs selective granularity; each module needs the part of the model it recomputes.
// `mlp` needs nothing: it recomputes the dense MLP layers and is a no-op on MoE layers.
void check_recompute_modules(const ParallelConfig& c, const ModelSpec& model, const TrainingSpec& training) {
  const unsigned m = c.recompute_modules;
  if (m == kDefaultRecomputeModules) return;
  // Formatted only for an error: the planner's bounds resolve hundreds of thousands of valid sets.
  const auto text = [m] { return recompute_modules_text(m); };
  if (c.recompute != RecomputeMode::kSelective)
    throw Error(fmt::format("recompute_modules={} requires recompute=selective, got recompute={} (Megatron-LM: "
                            "--recompute-modules needs --recompute-granularity selective)",
                            text(), to_string(c.recompute)));
  auto has = [m](RecomputeModule x) { return (m & recompute_module_bit(x)) != 0; };
  for (const RecomputeModule x : {RecomputeModule::kMoeAct, RecomputeModule::kMoe})
    if (has(x) && !model.moe)
      throw Error(fmt::format("recompute_modules={}: {} recomputes part of the MoE layers; '{}' is dense", text(),
                              to_string(x), model.name));
  if (has(RecomputeModule::kMlaUpProj) && !model.mla)
    throw Error(fmt::format("recompute_modules={}: mla_up_proj recomputes the multi-latent attention's "
                            "up-projections; '{}' has no MLA",
                            text(), model.name));
  if (has(RecomputeModule::kSharedExperts) && (!model.moe || model.moe->num_shared_experts == 0))
    throw Error(fmt::format("recompute_modules={}: shared_experts recomputes the MoE layers' shared experts; '{}' "
                            "has none",
                            text(), model.name));
  if (has(RecomputeModule::kMoe) && c.ep_overlap)
    throw Error(fmt::format("recompute_modules={}: the moe module cannot be combined with ep_overlap=true (the "
                            "backward replay would repeat the overlapped dispatch/combine; Megatron-LM R17.1)",
                            text()));
  // torchtitan's per-op selective checkpointing saves a fixed list of ops; it has no modules.
  if (training.per_op_selective_recompute)
    throw Error(fmt::format("recompute_modules={}: per_op_selective_recompute (torchtitan's op-level selective "
                            "checkpointing) has no module list; only Megatron-Core's selective recompute does",
                            text()));
}

void check_offload_modules(const ParallelConfig& c, const ModelSpec& model, const ClusterSpec& cluster,
                           const TrainingSpec& training) {
  const unsigned m = c.offload_modules;
  if (m == 0) return;
  auto fail = [&](std::string_view rule) {
    throw Error(fmt::format("offload_modules={}: {}", offload_modules_text(m), rule));
  };
  auto has = [m](OffloadModule x) { return (m & offload_module_bit(x)) != 0; };
  if (c.recompute == RecomputeMode::kFull)
    fail("recompute=full keeps only each layer's input, which it recomputes from; there is nothing to offload");
  if (training.per_op_selective_recompute)
    fail("activation offload is Megatron-Core's (--fine-grained-activation-offloading); per_op_selective_recompute "
         "is torchtitan's checkpointing");
  if (has(OffloadModule::kAttnProj) && !has(OffloadModule::kCoreAttn))
    fail("attn_proj needs core_attn too (Megatron-LM: the projection's input is core attention's output, which "
         "core_attn.backward() needs)");
  if (has(OffloadModule::kCoreAttn) && !has(OffloadModule::kAttnProj) && c.recomputes(RecomputeModule::kCoreAttn))
    fail("core_attn is recomputed (recompute_modules), and Megatron-Core runs a checkpointed core attention without "
         "the offload: it would offload nothing");
  if (has(OffloadModule::kAttnNorm) && !model.mla)
    fail(fmt::format("attn_norm: '{}' uses standard attention, whose input norm Megatron-Core fuses into the QKV "
                     "linear (no norm module of its own to offload; offload qkv_linear)",
                     model.name));
  for (const OffloadModule x : {OffloadModule::kMlpNorm, OffloadModule::kExpertFc1, OffloadModule::kMoeAct})
    if (has(x) && !model.moe)
      fail(fmt::format("{} offloads part of the MoE layers; '{}' is dense (a dense MLP fuses its norm into fc1)",
                       to_string(x), model.name));
  if ((has(OffloadModule::kExpertFc1) || has(OffloadModule::kMoeAct)) && c.recomputes(RecomputeModule::kMoe))
    fail("the moe module is recomputed whole, so nothing inside it is saved to offload (Megatron-LM refuses "
         "expert_fc1 and moe_act with --recompute-modules moe)");
  if (cluster.gpu.host_link_bandwidth_bytes_per_s <= 0)
    fail(fmt::format("the GPU '{}' has no host_link_bandwidth (its link to host memory, e.g. \"50GB/s\" for PCIe "
                     "5.0 x16); give it in the cluster file's gpu object",
                     cluster.gpu.name));
}

std::vector<LayoutStage> parse_pipeline_layout(std::string_view text) {
  const std::string symbols = LayoutExpander(text).expand();
  auto fail = [&](const std::string& why) {
    throw Error(fmt::format("layout: '{}': {} (Megatron-LM R13.3)", text, why));
  };
  if (symbols.empty()) fail("it holds no stage");
  std::vector<LayoutStage> stages(1);
  bool mtp_seen = false;
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    LayoutStage& s = stages.back();
    switch (symbols[i]) {
      case '|': stages.emplace_back(); break;
      case 'E':
        if (i != 0) fail("the embedding E must be the first symbol, and appear once");
        s.embedding = true;
        break;
      case 'L':
        if (i + 1 != symbols.size()) fail("the loss L must be the last symbol, and appear once");
        s.loss = true;
        break;
      case 'm':
        mtp_seen = true;
        ++s.mtp;
        break;
      default:  // 't'
        if (mtp_seen) fail("a decoder layer t comes after an MTP layer m (MTP layers follow every decoder layer)");
        ++s.layers;
        break;
    }
  }
  if (!stages.front().embedding) fail("the first symbol must be the embedding E");
  if (!stages.back().loss) fail("the last symbol must be the loss L");
  return stages;
}

std::string to_string(const std::vector<LayoutStage>& layout) {
  auto stage_text = [](const LayoutStage& s) {
    auto symbol = [](char ch, int n) { return n == 0 ? std::string() : n == 1 ? std::string(1, ch) : fmt::format("{}*{}", ch, n); };
    return (s.embedding ? "E" : "") + symbol('t', s.layers) + symbol('m', s.mtp) + (s.loss ? "L" : "");
  };
  // A run of k >= 2 equal stages, each followed by another stage, is written "(stage|)*k".
  std::string out;
  const std::size_t n = layout.size();
  for (std::size_t i = 0; i < n;) {
    std::size_t k = 1;
    while (i + k + 1 < n && layout[i + k] == layout[i]) ++k;
    const std::string s = stage_text(layout[i]);
    if (k >= 2) {
      out += fmt::format("({}|)*{}", s, k);
    } else {
      out += s;
      if (i + 1 < n) out += '|';
    }
    i += k;
  }
  return out;
}

std::vector<int> recomputed_layers_per_stage(const ParallelConfig& p) {
  std::vector<int> out(p.stage_layers.size(), 0);
  if (p.recompute != RecomputeMode::kFull) return out;
  for (std::size_t s = 0; s < out.size(); ++s)
    out[s] = !p.stage_recompute_layers.empty() ? p.stage_recompute_layers[s]
             : p.recompute_layers < 0          ? p.stage_layers[s]
                                               : std::min(p.recompute_layers, p.stage_layers[s]);
  return out;
}

std::vector<int> even_stage_layers(int layers, int stages) {
  std::vector<int> out(static_cast<std::size_t>(stages), layers / stages);
  for (int i = 0; i < layers % stages; ++i) ++out[static_cast<std::size_t>(i)];
  return out;
}

ParallelConfig parse_parallel_config(std::string_view text, ParallelConfig c) {
  std::map<std::string, std::string> seen;  // key -> its value, as written
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = trim(text.substr(start, end - start));
    start = end + 1;
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw Error(fmt::format("config: '{}' is not key=value", item));
    const std::string key(trim(item.substr(0, eq)));
    const std::string_view value = trim(item.substr(eq + 1));
    if (key == "dp") c.dp = parse_int(key, value);
    else if (key == "tp") c.tp = parse_int(key, value);
    else if (key == "pp") c.pp = parse_int(key, value);
    else if (key == "vpp") c.vpp = parse_int(key, value);
    else if (key == "cp") c.cp = parse_int(key, value);
    else if (key == "ep") c.ep = parse_int(key, value);
    else if (key == "etp") c.etp = parse_int(key, value);
    else if (key == "mbs") c.mbs = parse_int(key, value);
    else if (key == "sp" || key == "sequence_parallel") c.sequence_parallel = parse_bool(key, value);
    else if (key == "zero") c.zero = parse_int(key, value);
    else if (key == "op") c.op = parse_int(key, value);
    else if (key == "recompute") c.recompute = parse_enum<RecomputeMode>(value);
    else if (key == "recompute_layers") {
      // One count for every stage ("4"), or one per stage ("2/4/4/0").
      if (value.find('/') != std::string_view::npos) {
        c.stage_recompute_layers = parse_int_list(key, value);
        c.recompute_layers = -1;
      } else {
        c.recompute_layers = parse_int(key, value);
        // -1 is the struct's "every layer"; as text that is said by leaving the key out (to_string
        // does), so a negative count would not survive a round trip (found by fuzzing).
        if (c.recompute_layers < 0)
          throw Error(fmt::format("recompute_layers: {} must be >= 0 (leave it out to recompute every layer)", value));
        c.stage_recompute_layers.clear();
      }
    }
    else if (key == "recompute_modules") c.recompute_modules = parse_module_set<RecomputeModule>(value);
    else if (key == "offload_modules") c.offload_modules = parse_module_set<OffloadModule>(value);
    else if (key == "stage_layers") c.stage_layers = parse_int_list(key, value);
    else if (key == "schedule") c.schedule = parse_enum<Schedule>(value);
    else if (key == "grad_sync") c.grad_sync = parse_enum<GradSync>(value);
    else if (key == "overlap_grad_reduce") c.overlap_grad_reduce = parse_bool(key, value);
    else if (key == "overlap_param_gather") c.overlap_param_gather = parse_bool(key, value);
    else if (key == "tp_comm_overlap") c.tp_comm_overlap = parse_bool(key, value);
    else if (key == "overlap_p2p") c.overlap_p2p = parse_bool(key, value);
    else if (key == "ep_overlap") c.ep_overlap = parse_bool(key, value);
    else if (key == "dispatcher") c.dispatcher = parse_enum<MoeDispatcher>(value);
    else if (key == "account_embedding") c.account_embedding = parse_bool(key, value);
    else if (key == "account_loss") c.account_loss = parse_bool(key, value);
    else if (key == "layout") c.layout = value.empty() ? std::vector<LayoutStage>{} : parse_pipeline_layout(value);
    else throw Error("config: " + unknown_name_message("key", key, config_keys()));
    // A key given twice is a mistake (which did the user mean?), not "the last one wins".
    const std::string canonical = key == "sequence_parallel" ? "sp" : key;
    if (const auto [it, fresh] = seen.emplace(canonical, std::string(value)); !fresh)
      throw Error(fmt::format("{} is given twice ({}={}, then {}={})", key, canonical, it->second, key, value));
  }
  return c;
}

std::string to_string(const ParallelConfig& c) {
  std::string out = fmt::format("dp={},tp={},pp={},vpp={},cp={},ep={},etp={},mbs={},sp={},zero={},op={},recompute={}",
                                c.dp, c.tp, c.pp, c.vpp, c.cp, c.ep, c.expert_tp(), c.mbs,
                                c.sequence_parallel, c.zero, c.op, to_string(c.recompute));
  if (c.recompute == RecomputeMode::kFull && !c.stage_recompute_layers.empty())
    out += ",recompute_layers=" + fmt::format("{}", fmt::join(c.stage_recompute_layers, "/"));
  else if (c.recompute == RecomputeMode::kFull && c.recompute_layers >= 0)
    out += fmt::format(",recompute_layers={}", c.recompute_layers);
  if (c.recompute == RecomputeMode::kSelective && c.recompute_modules != kDefaultRecomputeModules)
    out += ",recompute_modules=" + recompute_modules_text(c.recompute_modules);
  if (c.offload_modules != 0) out += ",offload_modules=" + offload_modules_text(c.offload_modules);
  if (c.account_embedding) out += ",account_embedding=true";
  if (c.account_loss) out += ",account_loss=true";
  if (!c.layout.empty())
    out += ",layout=" + to_string(c.layout);
  else if (!c.stage_layers.empty() && !c.account_embedding && !c.account_loss)
    out += ",stage_layers=" + fmt::format("{}", fmt::join(c.stage_layers, "/"));
  out += fmt::format(",schedule={},grad_sync={}", to_string(c.schedule), to_string(c.grad_sync));
  if (c.ep_overlap) out += ",ep_overlap=true";
  if (c.dispatcher != MoeDispatcher::kAllToAll) out += ",dispatcher=" + to_string(c.dispatcher);
  // The overlap switches where they differ from the defaults: the text must reproduce the
  // configuration (a plan's printed --config, a study's stored one).
  const ParallelConfig defaults;
  if (c.overlap_grad_reduce != defaults.overlap_grad_reduce) out += fmt::format(",overlap_grad_reduce={}", c.overlap_grad_reduce);
  if (c.overlap_param_gather != defaults.overlap_param_gather)
    out += fmt::format(",overlap_param_gather={}", c.overlap_param_gather);
  if (c.tp_comm_overlap != defaults.tp_comm_overlap) out += fmt::format(",tp_comm_overlap={}", c.tp_comm_overlap);
  if (c.overlap_p2p != defaults.overlap_p2p) out += fmt::format(",overlap_p2p={}", c.overlap_p2p);
  return out;
}

// The schedules that fold the pipeline into a V: rank r holds chunks r and 2·pp-1-r, so the loss is
// computed by rank 0's chunk 1 (sim/schedules.cc, VShapeSchedule).
namespace {
bool v_shaped(Schedule s) { return s == Schedule::kZeroBubbleV || s == Schedule::kDualPipeV; }
}  // namespace

std::vector<int> chunk_layers(const ParallelConfig& c) {
  if (!c.layout.empty()) {
    std::vector<int> out;
    for (const LayoutStage& s : c.layout) out.push_back(s.layers);
    return out;
  }
  const int v = c.vpp;
  std::vector<int> out(static_cast<std::size_t>(c.pp * v));
  for (int r = 0; r < c.pp; ++r) {
    const int e = (r == 0 && c.account_embedding) ? 1 : 0, l = (r == c.pp - 1 && c.account_loss) ? 1 : 0;
    const int per_chunk = (c.stage_layers[static_cast<std::size_t>(r)] + e + l) / v;
    for (int ch = 0; ch < v; ++ch)
      out[static_cast<std::size_t>(ch) * c.pp + r] = per_chunk - (ch == 0 ? e : 0) - (ch == v - 1 ? l : 0);
  }
  return out;
}

std::vector<int> chunk_mtp_layers(const ParallelConfig& c, const ModelSpec& model) {
  std::vector<int> out(static_cast<std::size_t>(c.pp) * c.vpp, 0);
  if (!c.layout.empty()) {
    for (std::size_t k = 0; k < c.layout.size() && k < out.size(); ++k) out[k] = c.layout[k].mtp;
  } else if (!out.empty()) {
    // With the loss: the last chunk of the last rank, or a V's chunk 1 of rank 0 (sim/schedule.h).
    out[v_shaped(c.schedule) ? static_cast<std::size_t>(c.pp) : out.size() - 1] = model.mtp_layers;
  }
  return out;
}

std::vector<StageMesh> parse_stage_meshes(std::string_view text) {
  std::vector<StageMesh> meshes;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    std::string item(text.substr(begin, comma - begin));
    std::erase_if(item, [](char c) { return c == ' ' || c == '(' || c == ')'; });
    const std::size_t x = item.find('x');
    StageMesh mesh;
    auto number = [&](std::string_view digits, int& out) {
      const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
      return ec == std::errc() && ptr == digits.data() + digits.size() && out >= 1;
    };
    if (x == std::string::npos || !number(std::string_view(item).substr(0, x), mesh.dp) ||
        !number(std::string_view(item).substr(x + 1), mesh.tp))
      throw Error(fmt::format("stage mesh {} '{}' must be DPxTP with positive integers, e.g. 4x2 (in '{}')",
                              meshes.size(), item, text));
    meshes.push_back(mesh);
    begin = comma + 1;
  }
  return meshes;
}

ParallelConfig resolve(const ParallelConfig& config, const ModelSpec& model, const ClusterSpec& cluster,
                       const TrainingSpec& training) {
  validate(model, training);
  ParallelConfig c = config;
  auto positive = [](std::string_view key, int value) {
    if (value < 1) throw Error(fmt::format("{}={} must be >= 1", key, value));
  };
  positive("dp", c.dp);
  positive("tp", c.tp);
  positive("pp", c.pp);
  positive("vpp", c.vpp);
  positive("cp", c.cp);
  positive("ep", c.ep);
  positive("mbs", c.mbs);
  if (c.etp < 0) throw Error(fmt::format("etp={} must be >= 0 (0 = same as tp)", c.etp));

  // Ranges first, so that no product below can wrap (dp=536870913 x tp=8 is not 8 GPUs): each degree
  // at most the GPU count, the micro-batch at most the batch, vpp at most the layers.
  const std::int64_t gpus = cluster.num_gpus();
  for (const auto& [key, value] : {std::pair<std::string_view, int>{"dp", c.dp}, {"tp", c.tp}, {"pp", c.pp},
                                   {"cp", c.cp}, {"ep", c.ep}, {"etp", c.etp}})
    if (value > gpus)
      throw Error(fmt::format("{}={} exceeds the cluster's {} GPUs ({} node{} x {})", key, value, gpus, cluster.nodes,
                              cluster.nodes == 1 ? "" : "s", cluster.gpus_per_node));
  if (c.mbs > training.global_batch)
    throw Error(fmt::format("mbs={} exceeds global_batch={} (a micro-batch is part of the batch)", c.mbs,
                            training.global_batch));
  if (c.vpp > model.num_layers)
    throw Error(fmt::format("vpp={} exceeds num_layers={} (each virtual stage holds layers)", c.vpp, model.num_layers));
  if (c.num_gpus() != gpus)
    throw Error(fmt::format("dp*tp*pp*cp = {}*{}*{}*{} = {:.0f} must equal the cluster's GPU count {} ({} node{} x {})",
                            c.dp, c.tp, c.pp, c.cp, static_cast<double>(c.dp) * c.tp * c.pp * c.cp, gpus,
                            cluster.nodes, cluster.nodes == 1 ? "" : "s", cluster.gpus_per_node));
  if (model.num_attention_heads % c.tp != 0)
    throw Error(fmt::format("tp={} does not divide num_attention_heads={}", c.tp, model.num_attention_heads));
  if (!model.mla && model.kv_heads() % c.tp != 0 && c.tp % model.kv_heads() != 0)
    throw Error(fmt::format("tp={} and num_kv_heads={}: one must divide the other", c.tp, model.kv_heads()));
  if (model.ffn_hidden_size % c.tp != 0)
    throw Error(fmt::format("tp={} does not divide ffn_hidden_size={}", c.tp, model.ffn_hidden_size));
  if (c.sequence_parallel && c.tp == 1) c.sequence_parallel = false;  // SP is a no-op without TP
  if (training.fp8_param_gather && c.zero == 0)
    throw Error("zero=0 with fp8_param_gather: FP8 parameters need a sharded optimizer or FSDP (zero >= 1; "
                "Megatron-LM --fp8-param-gather needs the distributed optimizer, R20.3)");
  if (training.seq_len % (c.cp * (c.cp > 1 ? 2 : 1)) != 0)
    throw Error(fmt::format("cp={} requires seq_len={} divisible by 2*cp (load-balanced causal split)", c.cp,
                            training.seq_len));
  if (c.sequence_parallel && (training.seq_len / c.cp) % c.tp != 0)
    throw Error(fmt::format("sequence parallelism needs seq_len/cp={} divisible by tp={}", training.seq_len / c.cp, c.tp));

  if (model.moe) {
    if (model.moe->num_experts % c.ep != 0)
      throw Error(fmt::format("ep={} does not divide moe.num_experts={}", c.ep, model.moe->num_experts));
    // Megatron-Core (MoE parallel folding): the expert grid etp x ep x edp x pp tiles all ranks, so
    // etp·ep must divide dp·cp·tp (data/frameworks/megatron-lm-rules.md R1.3).
    const std::int64_t dense_ranks = static_cast<std::int64_t>(c.dp) * c.cp * c.tp;
    if (dense_ranks % (static_cast<std::int64_t>(c.ep) * c.expert_tp()) != 0)
      throw Error(fmt::format("ep={} x etp={} must divide dp*cp*tp={} (the expert grid etp x ep x edp tiles the "
                              "ranks of a pipeline stage)",
                              c.ep, c.expert_tp(), dense_ranks));
    if (model.moe->expert_ffn_hidden_size % c.expert_tp() != 0)
      throw Error(fmt::format("etp={} does not divide moe.expert_ffn_hidden_size={}", c.expert_tp(),
                              model.moe->expert_ffn_hidden_size));
  } else {
    if (c.ep != 1) throw Error(fmt::format("ep={} requires an MoE model; '{}' is dense", c.ep, model.name));
  }

  if (training.global_batch % c.dp != 0)
    throw Error(fmt::format("global_batch={} is not divisible by dp={}", training.global_batch, c.dp));
  const std::int64_t dp_mbs = static_cast<std::int64_t>(c.dp) * c.mbs;
  if (training.global_batch % dp_mbs != 0)
    throw Error(fmt::format("global_batch={} does not split into whole micro-batches: dp*mbs = {}*{} = {} must divide it",
                            training.global_batch, c.dp, c.mbs, dp_mbs));
  const int microbatches = c.num_microbatches(training);

  if (c.zero < 0 || c.zero > 3) throw Error(fmt::format("zero={} must be 0, 1, 2 or 3", c.zero));
  if (c.op < 0) throw Error(fmt::format("op={} must be >= 0", c.op));
  if (c.zero == 0 && c.op > 1) throw Error(fmt::format("op={} requires zero >= 1 (optimizer sharding)", c.op));
  if (c.zero > 0) {
    if (c.op == 0) c.op = c.dp;
    if (c.dp % c.op != 0) throw Error(fmt::format("op={} does not divide dp={}", c.op, c.dp));
  } else {
    c.op = 1;
  }

  if (c.pp > model.num_layers)
    throw Error(fmt::format("pp={} exceeds num_layers={}", c.pp, model.num_layers));
  // Schedules and model chunks per rank (sim/schedules.cc: each schedule's own rules).
  if (c.vpp > 1 && c.pp == 1) throw Error(fmt::format("vpp={} requires pp > 1", c.vpp));
  if (c.vpp > 1 && c.schedule == Schedule::kOneFOneB) c.schedule = Schedule::kInterleaved1F1B;
  const bool v_shape = v_shaped(c.schedule);
  const bool looped_chunks = c.schedule == Schedule::kInterleaved1F1B || c.schedule == Schedule::kInterleavedZeroBubble;
  if (c.vpp > 1 && !looped_chunks && !v_shape)
    throw Error(fmt::format("vpp={} requires schedule=interleaved-1f1b, interleaved-zb, zb-v or dualpipev, got {}",
                            c.vpp, to_string(c.schedule)));
  if (looped_chunks && c.vpp < 2)
    throw Error(fmt::format("schedule={} requires vpp > 1", to_string(c.schedule)));
  if (v_shape && c.vpp != 2)
    throw Error(fmt::format("schedule={} runs exactly two model chunks per rank (a V): vpp must be 2, got {}",
                            to_string(c.schedule), c.vpp));
  if (c.schedule == Schedule::kInterleaved1F1B && microbatches % c.pp != 0)
    throw Error(fmt::format("interleaved 1F1B needs the number of micro-batches ({}) to be a multiple of pp={}",
                            microbatches, c.pp));
  if (c.schedule == Schedule::kInterleavedZeroBubble && microbatches % std::max(1, microbatches / c.pp) != 0)
    throw Error(fmt::format("interleaved-zb needs the number of micro-batches ({}) to be a multiple of "
                            "max(1, micro-batches / pp) = {} (PyTorch's interleaved schedules run whole rounds)",
                            microbatches, std::max(1, microbatches / c.pp)));
  if (c.schedule == Schedule::kDualPipeV && microbatches < 2 * c.pp)
    throw Error(fmt::format("dualpipev needs at least 2*pp = {} micro-batches, got {}", 2 * c.pp, microbatches));
  if (c.schedule == Schedule::kDualPipe &&
      (c.pp < 2 || c.pp % 2 != 0 || microbatches % 2 != 0 || microbatches < 2 * c.pp))
    throw Error(fmt::format("dualpipe needs an even pp >= 2 and an even number of micro-batches >= 2*pp (its two "
                            "directions each take half), got pp={} and {} micro-batches",
                            c.pp, microbatches));
  if ((v_shape || c.schedule == Schedule::kDualPipe || c.schedule == Schedule::kInterleavedZeroBubble) &&
      (!c.layout.empty() || c.account_embedding || c.account_loss))
    throw Error(fmt::format("schedule={}: layout and account_embedding/account_loss describe Megatron-LM's stages "
                            "(its schedules are 1F1B and interleaved 1F1B); give stage_layers instead",
                            to_string(c.schedule)));
  // pp <= 2^24 (GPUs), vpp < 2^31: pp*vpp is exact in 64 bits, and so is its product with the
  // micro-batches once it is at most kMaxPipelineSlots.
  if (const std::int64_t chunks = static_cast<std::int64_t>(c.pp) * c.vpp;
      chunks > kMaxPipelineSlots || chunks * microbatches > kMaxPipelineSlots)
    throw Error(fmt::format("pp*vpp*micro-batches = {}*{}*{} = {:.0f} pipeline slots; at most {} (the replay tracks "
                            "each: fewer micro-batches, from a larger mbs or dp)",
                            c.pp, c.vpp, microbatches, static_cast<double>(chunks) * microbatches, kMaxPipelineSlots));

  if (!c.layout.empty()) {
    // Megatron-LM's --pipeline-model-parallel-layout (R13): the chunks as given, uneven ones too.
    const std::string text = to_string(c.layout);
    const std::int64_t stages = static_cast<std::int64_t>(c.pp) * c.vpp;
    if (static_cast<std::int64_t>(c.layout.size()) != stages)
      throw Error(fmt::format("layout: '{}' has {} stages but pp*vpp = {}*{} = {} (stage s runs on rank s % pp as "
                              "chunk s / pp: a layout has pp*vpp stages, R13.2)",
                              text, c.layout.size(), c.pp, c.vpp, stages));
    if (c.account_embedding || c.account_loss)
      throw Error(fmt::format("layout: '{}' cannot be combined with account_embedding/account_loss (R13.4)", text));
    int layers = 0, mtp = 0, mtp_stages = 0;
    std::vector<int> per_rank(static_cast<std::size_t>(c.pp), 0);
    for (std::size_t k = 0; k < c.layout.size(); ++k) {
      const LayoutStage& s = c.layout[k];
      layers += s.layers;
      per_rank[k % static_cast<std::size_t>(c.pp)] += s.layers;
      if (s.mtp == 0) continue;
      mtp += s.mtp;
      ++mtp_stages;
      if (k + static_cast<std::size_t>(c.pp) < c.layout.size())
        throw Error(fmt::format("layout: '{}': the MTP layers are in stage {} (rank {}, chunk {}), not in the last "
                                "chunk of their rank (R13.3)",
                                text, k, k % static_cast<std::size_t>(c.pp), k / static_cast<std::size_t>(c.pp)));
    }
    if (layers != model.num_layers)
      throw Error(fmt::format("layout: '{}' holds {} decoder layers t but the model has num_layers={} (R13.3)", text,
                              layers, model.num_layers));
    if (mtp != model.mtp_layers)
      throw Error(fmt::format("layout: '{}' holds {} MTP layers m but the model has mtp_layers={} (R13.3)", text, mtp,
                              model.mtp_layers));
    if (mtp_stages > 1)
      throw Error(fmt::format("layout: '{}': the MTP layers m are spread over {} stages; they sit together in one "
                              "(R13.3)",
                              text, mtp_stages));
    // Megatron accepts empty stages ("...||L"); paratune's pipeline model needs a decoder layer on
    // every rank (stage_layers >= 1 below).
    for (std::size_t r = 0; r < per_rank.size(); ++r)
      if (per_rank[r] < 1)
        throw Error(fmt::format("layout: '{}' leaves pipeline rank {} without decoder layers (Megatron accepts "
                                "that; paratune's cost model needs at least one per rank)",
                                text, r));
    if (!config.stage_layers.empty() && config.stage_layers != per_rank)
      throw Error(fmt::format("layout: '{}' cannot be combined with stage_layers={} (the layout sets each rank's "
                              "layers: {})",
                              text, fmt::join(config.stage_layers, "/"), fmt::join(per_rank, "/")));
    c.stage_layers = per_rank;
  }
  const int e = c.account_embedding ? 1 : 0, l = c.account_loss ? 1 : 0;
  if (e + l > 0) {
    // Megatron-LM R11: (L + e + l) % pp == 0 and, with vpp, ((L + e + l)/pp) % vpp == 0; not with
    // explicit (uneven first/last) stage layers.
    const int slots = model.num_layers + e + l;
    if (slots % c.pp != 0 || (slots / c.pp) % c.vpp != 0)
      throw Error(fmt::format("account_embedding/account_loss: num_layers + {} = {} layer slots do not split evenly "
                              "over pp={} and vpp={}",
                              e + l, slots, c.pp, c.vpp));
    const int per_rank = slots / c.pp;
    if (per_rank / c.vpp - (c.pp == 1 ? e + l : std::max(e, l)) < 1 && c.vpp > 1)
      throw Error(fmt::format("account_embedding/account_loss: {} layer slots per chunk leave a chunk without layers",
                              per_rank / c.vpp));
    std::vector<int> layout(static_cast<std::size_t>(c.pp), per_rank);
    layout.front() -= e;
    layout.back() -= l;
    // A resolved configuration carries the layout already; any other stage_layers is an error.
    if (!config.stage_layers.empty() && config.stage_layers != layout)
      throw Error("account_embedding/account_loss cannot be combined with stage_layers (Megatron-LM R11.4)");
    c.stage_layers = layout;
  }
  if (c.stage_layers.empty()) {
    if (model.num_layers % (c.pp * c.vpp) != 0 && c.vpp > 1)
      throw Error(fmt::format("num_layers={} is not divisible by pp*vpp={} (interleaving needs equal chunks)",
                              model.num_layers, c.pp * c.vpp));
    c.stage_layers = even_stage_layers(model.num_layers, c.pp);
  } else {
    if (static_cast<int>(c.stage_layers.size()) != c.pp)
      throw Error(fmt::format("stage_layers has {} entries but pp={}", c.stage_layers.size(), c.pp));
    const std::int64_t total = std::accumulate(c.stage_layers.begin(), c.stage_layers.end(), std::int64_t{0});
    if (total != model.num_layers)
      throw Error(fmt::format("stage_layers add up to {} but the model has num_layers={}", total, model.num_layers));
    for (std::size_t i = 0; i < c.stage_layers.size(); ++i) {
      if (c.stage_layers[i] < 1)
        throw Error(fmt::format("stage_layers[{}]={} must be >= 1", i, c.stage_layers[i]));
      // The embedding / loss slot of the account flags is the one allowed remainder; a layout sets
      // each chunk itself (uneven chunks allowed).
      const int slot = (i == 0 ? e : 0) + (i + 1 == c.stage_layers.size() ? l : 0);
      if (c.layout.empty() && (c.stage_layers[i] + slot) % c.vpp != 0)
        throw Error(fmt::format("stage_layers[{}]={} is not divisible by vpp={}", i, c.stage_layers[i], c.vpp));
    }
  }
  if (c.ep_overlap) {
    // Megatron-Core's conditions for --overlap-moe-expert-parallel-comm (transformer_config.py; R17);
    // DualPipe overlaps a forward and a backward of two micro-batches by design (DeepSeek-V3 Sec.
    // 3.2.1, the "overlapped forward & backward" of dualpipe.py), whatever vpp.
    if (c.ep < 2) throw Error(fmt::format("ep_overlap=true requires ep > 1, got ep={}", c.ep));
    if (c.recompute == RecomputeMode::kFull) throw Error("ep_overlap=true cannot be combined with recompute=full");
    if (c.pp > 1 && c.vpp < 2 && c.schedule != Schedule::kDualPipe)
      throw Error(fmt::format("ep_overlap=true with pp={} requires an interleaved schedule (vpp > 1) or DualPipe",
                              c.pp));
  }
  if (c.dispatcher != MoeDispatcher::kAllToAll && (c.ep < 2 || !model.moe))
    throw Error(fmt::format("dispatcher={} routes tokens between expert-parallel ranks: it needs a MoE model and ep > 1, "
                            "got ep={}",
                            to_string(c.dispatcher), c.ep));
  check_recompute_modules(c, model, training);
  check_offload_modules(c, model, cluster, training);
  if (c.recompute_layers < -1)
    throw Error(fmt::format("recompute_layers={} must be >= 0, or -1 for every layer", c.recompute_layers));
  if (c.recompute != RecomputeMode::kFull && c.recompute_layers >= 0 && config.recompute_layers >= 0)
    throw Error(fmt::format("recompute_layers={} requires recompute=full", c.recompute_layers));
  // One count is a cap per stage (uneven stages recompute min(count, layers)); above every stage's
  // layers it caps nothing, and is more likely a slip than "every layer" (which is said by leaving it out).
  if (c.recompute_layers >= 0 && config.recompute_layers >= 0 && !c.stage_layers.empty()) {
    const int most = *std::max_element(c.stage_layers.begin(), c.stage_layers.end());
    if (c.recompute_layers > most)
      throw Error(fmt::format("recompute_layers={} is more than any stage's layers (at most {}): leave it out to "
                              "recompute every layer",
                              c.recompute_layers, most));
  }
  if (!c.stage_recompute_layers.empty()) {
    if (c.recompute != RecomputeMode::kFull) throw Error("per-stage recompute_layers requires recompute=full");
    if (static_cast<int>(c.stage_recompute_layers.size()) != c.pp)
      throw Error(fmt::format("recompute_layers has {} entries but pp={}", c.stage_recompute_layers.size(), c.pp));
    for (std::size_t i = 0; i < c.stage_recompute_layers.size(); ++i)
      if (c.stage_recompute_layers[i] < 0 || c.stage_recompute_layers[i] > c.stage_layers[i])
        throw Error(fmt::format("recompute_layers[{}]={} must be between 0 and the stage's {} layers", i,
                                c.stage_recompute_layers[i], c.stage_layers[i]));
  }
  return c;
}

}  // namespace paratune
