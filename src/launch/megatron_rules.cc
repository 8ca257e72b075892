// Megatron-LM's validation rules on an argument list (paratune/launch/megatron_rules.h). Rule ids
// and citations refer to data/frameworks/megatron-lm-rules.md.
#include "paratune/launch/megatron_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <set>

#include "paratune/launch/schema_check.h"

namespace paratune::launch {
namespace {

std::optional<long long> to_int(const std::string& s) {
  long long v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

class Args {
 public:
  explicit Args(const std::vector<std::string>& args) {
    for (const std::string& a : args) {
      std::vector<std::string> w = launch_arg_words(a);
      if (w.empty()) continue;
      const std::string flag = w.front();
      map_[flag] = std::vector<std::string>(w.begin() + 1, w.end());
    }
  }
  bool has(const std::string& f) const { return map_.contains(f); }
  const std::vector<std::string>& values(const std::string& f) const {
    static const std::vector<std::string> none;
    const auto it = map_.find(f);
    return it == map_.end() ? none : it->second;
  }
  std::string str(const std::string& f, const std::string& def = "") const {
    const auto& v = values(f);
    return v.empty() ? def : v.front();
  }
  // The integer value of f; absent: nullopt. A non-integer value is the schema's business (nullopt).
  std::optional<long long> opt(const std::string& f) const {
    const auto& v = values(f);
    if (v.empty()) return std::nullopt;
    return to_int(v.front());
  }
  long long num(const std::string& f, long long def) const { return opt(f).value_or(def); }

 private:
  std::map<std::string, std::vector<std::string>> map_;
};

// Expands a --pipeline-model-parallel-layout (R13.1): `X*n`, `(...)*n`, commas ignored. Returns
// nullopt when the text does not parse.
struct LayoutParser {
  const std::string& s;
  std::size_t i = 0;
  bool ok = true;
  long long count() {
    if (i >= s.size() || s[i] != '*') return 1;
    ++i;
    const std::size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (start == i) {
      ok = false;
      return 1;
    }
    return to_int(s.substr(start, i - start)).value_or(1);
  }
  std::string seq(bool nested) {
    std::string out;
    while (ok && i < s.size()) {
      const char c = s[i];
      if (c == ')') {
        if (!nested) ok = false;
        return out;
      }
      std::string item;
      if (c == '(') {
        ++i;
        item = seq(true);
        if (i >= s.size() || s[i] != ')') {
          ok = false;
          return out;
        }
        ++i;
      } else if (c == ',' || c == ' ') {
        ++i;
        continue;
      } else {
        item = std::string(1, c);
        ++i;
      }
      const long long n = count();
      if (n < 0 || n > 100000) ok = false;
      for (long long k = 0; ok && k < n; ++k) out += item;
    }
    if (nested) ok = false;
    return out;
  }
};

std::optional<std::vector<std::string>> layout_stages(const std::string& text) {
  LayoutParser p{text};
  const std::string flat = p.seq(false);
  if (!p.ok) return std::nullopt;
  std::vector<std::string> stages(1);
  for (char c : flat) {
    if (c == '|') stages.emplace_back();
    else stages.back() += c;
  }
  return stages;
}

}  // namespace

std::vector<std::string> check_megatron_rules(const std::vector<std::string>& args, std::int64_t world_size,
                                              const std::map<std::string, std::string>& environment) {
  const Args a(args);
  std::vector<std::string> v;
  auto add = [&v](std::string s) { v.push_back(std::move(s)); };

  const long long world = world_size;
  const long long tp = a.num("--tensor-model-parallel-size", 1);
  const long long pp = a.num("--pipeline-model-parallel-size", 1);
  const long long cp = a.num("--context-parallel-size", 1);
  const long long ep = a.num("--expert-model-parallel-size", 1);
  const long long etp = a.num("--expert-tensor-parallel-size", tp);  // R1.2
  const bool mfsdp = a.has("--use-megatron-fsdp");
  const bool fsdp2 = a.has("--use-torch-fsdp2");
  const long long mfsdp_version = a.num("--megatron-fsdp-version", 1);
  const bool distopt = a.has("--use-distributed-optimizer");
  const bool bf16 = a.has("--bf16"), fp16 = a.has("--fp16");
  const bool fp8 = a.has("--fp8-format");
  const bool moe_overlap = a.has("--overlap-moe-expert-parallel-comm");
  const std::string ckpt_format = a.str("--ckpt-format");
  const std::string optimizer = a.str("--optimizer", "adam");

  // R1.5: weight shards.
  long long gtp = 1;
  if (const auto s = a.opt("--tensor-parallel-num-weight-shards")) {
    if (tp > 0 && (*s < tp || *s % tp != 0))
      add(fmt::format("R1.5: --tensor-parallel-num-weight-shards {} must be a multiple of tp = {} and at least tp", *s, tp));
    else if (tp > 0)
      gtp = *s / tp;
  }
  long long egtp = 1;
  if (const auto s = a.opt("--expert-tensor-parallel-num-weight-shards")) {
    if (etp > 0 && (*s < etp || *s % etp != 0))
      add(fmt::format("R1.5: --expert-tensor-parallel-num-weight-shards {} must be a multiple of etp = {} and at least etp",
                      *s, etp));
    else if (etp > 0)
      egtp = *s / etp;
  }
  if (tp < 1 || pp < 1 || cp < 1 || ep < 1 || etp < 1 || world < 1) {
    add(fmt::format("R1.2: parallel sizes must be positive (tp {}, pp {}, cp {}, ep {}, etp {}, world {})", tp, pp, cp, ep,
                    etp, world));
    return v;
  }

  // R1.1: dense grid.
  const long long model = tp * pp * cp * gtp;
  long long dp = 0;
  if (world % model != 0)
    add(fmt::format("R1.1: world size {} is not divisible by tp×pp×cp×gtp = {}×{}×{}×{} = {}", world, tp, pp, cp, gtp,
                    model));
  else
    dp = world / model;
  // R1.3: expert grid (checked at process-group creation).
  if (const long long eg = etp * ep * pp * egtp; world % eg != 0)
    add(fmt::format("R1.3: world size {} is not divisible by etp×ep×pp×egtp = {}×{}×{}×{} = {}", world, etp, ep, pp, egtp,
                    eg));
  // R1.4: non-default rank order with pp > 1.
  if (a.has("--use-tp-pp-dp-mapping") && pp > 1 && etp * ep != tp * cp)
    add(fmt::format("R1.4: with --use-tp-pp-dp-mapping and pp > 1, etp×ep ({}) must equal tp×cp ({})", etp * ep, tp * cp));

  // R2: batch sizes.
  const std::optional<long long> mbs = a.opt("--micro-batch-size");
  if (!a.has("--micro-batch-size")) add("R2.1: --micro-batch-size is required");
  else if (mbs && *mbs <= 0) add(fmt::format("R2.1: --micro-batch-size must be > 0, is {}", *mbs));
  if (a.has("--step-batch-size-schedule") && a.has("--global-batch-size"))
    add("R2.4: --step-batch-size-schedule cannot be combined with --global-batch-size");
  std::optional<long long> num_microbatches;
  if (mbs && *mbs > 0 && dp > 0) {
    const long long gbs = a.num("--global-batch-size", *mbs * dp);  // R2.2
    const long long unit = *mbs * dp * gtp;
    if (gbs % unit != 0) {
      if (!a.has("--decrease-batch-size-if-needed"))  // R2.4: rounded down instead
        add(fmt::format("R2.3: global batch {} is not a multiple of mbs×dp×gtp = {}×{}×{} = {}", gbs, *mbs, dp, gtp, unit));
    } else {
      num_microbatches = gbs / (*mbs * dp);
    }
  }

  // R3: model shape.
  const bool has_nl = a.has("--num-layers"), has_enl = a.has("--encoder-num-layers");
  if (has_nl == has_enl) add("R3.1: exactly one of --num-layers and --encoder-num-layers must be given");
  for (const char* f : {"--hidden-size", "--num-attention-heads", "--max-position-embeddings"})
    if (!a.has(f)) add(fmt::format("R3.1: {} is required", f));
  const std::optional<long long> seq = a.has("--seq-length") ? a.opt("--seq-length") : a.opt("--encoder-seq-length");
  if (!a.has("--seq-length") && !a.has("--encoder-seq-length")) add("R3.2: --seq-length (or --encoder-seq-length) is required");
  const std::optional<long long> maxpos = a.opt("--max-position-embeddings");
  if (seq && maxpos && *maxpos < *seq)
    add(fmt::format("R3.2: --max-position-embeddings {} is smaller than the sequence length {}", *maxpos, *seq));
  const std::optional<long long> hidden = a.opt("--hidden-size"), heads = a.opt("--num-attention-heads");
  if (!a.has("--kv-channels") && hidden && heads && *heads > 0 && *hidden % *heads != 0)
    add(fmt::format("R3.3: --hidden-size {} is not divisible by --num-attention-heads {} (kv-channels defaulted)", *hidden,
                    *heads));
  {
    int sources = 0;
    if (a.has("--mock-data")) ++sources;
    if (a.has("--data-path")) ++sources;
    if (a.has("--train-data-path") || a.has("--valid-data-path") || a.has("--test-data-path")) ++sources;
    if (sources > 1) add("R3.6: give at most one data source (--mock-data, --data-path, or per-split paths)");
  }
  if (a.has("--save") && a.num("--save-interval", 0) <= 0) add("R3.7: --save requires --save-interval > 0");
  const std::optional<long long> layers = has_nl ? a.opt("--num-layers") : a.opt("--encoder-num-layers");

  // R4: heads versus tp.
  if (heads && *heads % tp != 0)
    add(fmt::format("R4.1: --num-attention-heads {} is not divisible by tp = {}", *heads, tp));
  if (a.has("--group-query-attention"))
    if (const auto groups = a.opt("--num-query-groups"); groups && *groups > 0 && *groups % tp != 0 && tp % *groups != 0)
      add(fmt::format("R4.2: --num-query-groups {} is neither a multiple nor a divisor of tp = {}", *groups, tp));

  // R5.1.
  if (fp16 && bf16) add("R5.1: --fp16 and --bf16 cannot both be given");

  // R6: CUDA_DEVICE_MAX_CONNECTIONS (Hopper assumed).
  const auto env_it = environment.find("CUDA_DEVICE_MAX_CONNECTIONS");
  const std::optional<std::string> cdmc =
      env_it == environment.end() ? std::nullopt : std::optional<std::string>(env_it->second);
  if ((tp > 1 || cp > 1) && !mfsdp && !fsdp2 && !moe_overlap && cdmc != "1")
    add(fmt::format("R6.1: tp {} / cp {} > 1 on a pre-Blackwell GPU needs CUDA_DEVICE_MAX_CONNECTIONS=1 (is {})", tp, cp,
                    cdmc ? "'" + *cdmc + "'" : "unset"));
  if ((mfsdp || fsdp2) && cdmc) {
    const auto n = to_int(*cdmc);
    if (!n || *n <= 1)
      add(fmt::format("R6.2 ({}): {} needs CUDA_DEVICE_MAX_CONNECTIONS unset or > 1 (is '{}')", mfsdp ? "R21.2" : "R21.3",
                      mfsdp ? "Megatron-FSDP" : "torch FSDP2", *cdmc));
  }

  // R7.1: SP with tp = 1 is switched off (a warning).
  const bool sp = a.has("--sequence-parallel") && tp > 1;
  // R8.1.
  if (a.has("--tp-comm-overlap") && !sp)
    add("R8.1: --tp-comm-overlap needs sequence parallelism (tp > 1 and --sequence-parallel)");

  // R10: vpp.
  const long long e = a.has("--account-for-embedding-in-pipeline-split") ? 1 : 0;
  const long long l = a.has("--account-for-loss-in-pipeline-split") ? 1 : 0;
  const bool has_layout = a.has("--pipeline-model-parallel-layout");
  const bool has_nvs = a.has("--num-virtual-stages-per-pipeline-rank");
  const bool has_nlpv = a.has("--num-layers-per-virtual-pipeline-stage");
  const bool has_first = a.has("--decoder-first-pipeline-num-layers");
  const bool has_last = a.has("--decoder-last-pipeline-num-layers");
  if (has_nvs && has_nlpv)
    add("R10.1: give at most one of --num-virtual-stages-per-pipeline-rank and --num-layers-per-virtual-pipeline-stage");
  if (has_layout && (has_nvs || has_nlpv))
    add("R13.4: --pipeline-model-parallel-layout cannot be combined with a vpp flag (R10.1)");
  if (has_nlpv && (has_first || has_last))
    add("R10.2: --num-layers-per-virtual-pipeline-stage cannot be combined with --decoder-first/last-pipeline-num-layers");
  long long vpp = 0;  // 0: no interleaving
  if (has_nvs) {
    vpp = a.num("--num-virtual-stages-per-pipeline-rank", 0);
  } else if (has_nlpv && layers) {
    const long long n = a.num("--num-layers-per-virtual-pipeline-stage", 1);
    const long long total = *layers + e + l;
    if (total % pp != 0)
      add(fmt::format("R10.1: layers {} (+ account slots) are not divisible by pp = {}", total, pp));
    else if (n <= 0 || (total / pp) % n != 0)
      add(fmt::format("R10.1: {} layers per pipeline rank are not divisible by --num-layers-per-virtual-pipeline-stage {}",
                      total / pp, n));
    else
      vpp = total / pp / n;
  }
  // R13: layout.
  if (has_layout) {
    const auto stages = layout_stages(a.str("--pipeline-model-parallel-layout"));
    if (!stages) {
      add("R13.1: --pipeline-model-parallel-layout does not parse");
    } else {
      if (stages->size() % pp != 0)
        add(fmt::format("R13.2: the layout has {} stages, not a multiple of pp = {}", stages->size(), pp));
      else if (!has_nvs && !has_nlpv)
        vpp = static_cast<long long>(stages->size()) / pp;
      std::string flat;
      for (const auto& s : *stages) flat += s;
      const auto n_of = [&flat](char c) { return std::count(flat.begin(), flat.end(), c); };
      if (flat.empty() || flat.front() != 'E' || flat.back() != 'L' || n_of('E') != 1 || n_of('L') != 1)
        add("R13.3: the layout must start with E and end with L, each exactly once");
      if (layers && n_of('t') != *layers)
        add(fmt::format("R13.3: the layout has {} decoder layers, --num-layers is {}", n_of('t'), *layers));
      if (n_of('m') != a.num("--mtp-num-layers", 0))
        add(fmt::format("R13.3: the layout has {} MTP layers, --mtp-num-layers is {}", n_of('m'), a.num("--mtp-num-layers", 0)));
    }
    if (has_first || has_last || e || l)
      add("R13.4: --pipeline-model-parallel-layout cannot be combined with the first/last or account-for flags");
    if (a.has("--hybrid-layer-pattern")) add("R13.4: --pipeline-model-parallel-layout cannot be combined with --hybrid-layer-pattern");
  }
  if (vpp == 1) vpp = 0;  // R10.3
  if (vpp > 1) {
    if (a.has("--no-overlap-p2p-communication") && pp < 3)
      add(fmt::format("R10.4: vpp with --no-overlap-p2p-communication needs pp >= 3 (pp = {})", pp));
    else if (pp < 2)
      add(fmt::format("R10.4: vpp {} needs pp >= 2 (pp = {})", vpp, pp));
    // R2.5 (runtime): with the default microbatch group, num_microbatches >= pp and % pp == 0.
    if (num_microbatches && !a.has("--microbatch-group-size-per-virtual-pipeline-stage") &&
        (*num_microbatches < pp || *num_microbatches % pp != 0))
      add(fmt::format("R2.5: interleaving needs the number of microbatches ({}) to be >= pp and a multiple of pp = {}",
                      *num_microbatches, pp));
  }

  // R11: even split and account flags.
  if ((e || l) && (has_first || has_last))
    add("R11.4: the account-for flags cannot be combined with --decoder-first/last-pipeline-num-layers");
  if (layers && !has_layout && !has_first && !has_last) {
    const long long total = *layers + e + l;
    if (total % pp != 0)
      add(fmt::format("R11.1: layers + account slots = {} is not divisible by pp = {}", total, pp));
    else if (vpp && (total / pp) % vpp != 0)
      add(fmt::format("R11.3: {} layers per pipeline rank are not divisible by vpp = {}", total / pp, vpp));
  }
  // R12: uneven first/last stages.
  if (layers && !has_layout && (has_first || has_last)) {
    const long long f = has_first ? a.num("--decoder-first-pipeline-num-layers", 0) : 0;
    const long long k = has_last ? a.num("--decoder-last-pipeline-num-layers", 0) : 0;
    if (has_first && f <= 0) add("R12.1: --decoder-first-pipeline-num-layers must be > 0");
    if (has_last && k <= 0) add("R12.1: --decoder-last-pipeline-num-layers must be > 0");
    const long long middle_stages = pp - (has_first ? 1 : 0) - (has_last ? 1 : 0);
    const long long middle_layers = *layers - f - k;
    if (middle_stages < 0 || middle_layers < 0 || (middle_stages == 0) != (middle_layers == 0))
      add(fmt::format("R12.2: {} middle layers cannot fill {} middle stages", middle_layers, middle_stages));
    else if (middle_stages > 0 && middle_layers % middle_stages != 0)
      add(fmt::format("R12.2: {} middle layers do not split evenly over {} middle stages", middle_layers, middle_stages));
    else if (vpp) {
      if (has_first && f % vpp != 0) add(fmt::format("R12.3: first-stage layers {} not divisible by vpp = {}", f, vpp));
      if (has_last && k % vpp != 0) add(fmt::format("R12.3: last-stage layers {} not divisible by vpp = {}", k, vpp));
      if (middle_stages > 0 && (middle_layers / middle_stages) % vpp != 0)
        add(fmt::format("R12.3: {} layers per middle stage not divisible by vpp = {}", middle_layers / middle_stages, vpp));
    }
  }

  // R9: data-parallel overlap.
  if (a.has("--overlap-param-gather")) {
    if (!distopt && !mfsdp && optimizer != "dist_muon")
      add("R9.1: --overlap-param-gather needs a sharded optimizer (--use-distributed-optimizer, --use-megatron-fsdp or dist_muon)");
    if (!a.has("--overlap-grad-reduce")) add("R9.1: --overlap-param-gather needs --overlap-grad-reduce");
  }
  if (a.has("--overlap-param-gather-with-optimizer-step")) {
    if (!distopt && !(mfsdp && mfsdp_version == 1))
      add("R9.2: --overlap-param-gather-with-optimizer-step needs the distributed optimizer");
    if (!a.has("--overlap-param-gather")) add("R9.2: --overlap-param-gather-with-optimizer-step needs --overlap-param-gather");
    if (!vpp) add("R9.2: --overlap-param-gather-with-optimizer-step needs interleaved PP (vpp)");
    if (ckpt_format != "torch") add("R9.2: --overlap-param-gather-with-optimizer-step needs --ckpt-format torch");
  }

  // R14: context parallelism.
  if (cp > 1 && seq && *seq % (2 * cp) != 0)
    add(fmt::format("R14.1: sequence length {} is not divisible by 2×cp = {}", *seq, 2 * cp));
  const auto& cp_types = a.values("--cp-comm-type");
  if (cp_types.size() > 1 && layers && static_cast<long long>(cp_types.size()) != *layers)
    add(fmt::format("R14.2: --cp-comm-type has {} values, needs one or num_layers = {}", cp_types.size(), *layers));
  if (std::find(cp_types.begin(), cp_types.end(), "a2a+p2p") != cp_types.end()) {
    const auto& hier = a.values("--hierarchical-context-parallel-sizes");
    if (hier.empty()) {
      add("R14.3: --cp-comm-type a2a+p2p needs --hierarchical-context-parallel-sizes");
    } else {
      long long product = 1;
      for (const auto& h : hier) product *= to_int(h).value_or(0);
      if (product != cp)
        add(fmt::format("R14.3: --hierarchical-context-parallel-sizes multiply to {}, not cp = {}", product, cp));
    }
  }
  if (a.has("--hybrid-context-parallel")) {
    if (pp > 1) add("R14.5: --hybrid-context-parallel is refused with pp > 1");
    if (mfsdp) add("R14.5: --hybrid-context-parallel is refused with Megatron-FSDP");
    if (!a.has("--calculate-per-token-loss")) add("R14.5: --hybrid-context-parallel requires --calculate-per-token-loss");
    if (a.has("--dataloader-type") && a.str("--dataloader-type") != "single")
      add("R14.5: --hybrid-context-parallel requires --dataloader-type single");
  }

  // R15: experts.
  const long long experts = a.num("--num-experts", 0);  // 0: no MoE (R15.1)
  if (ep > 1 && experts <= 0) add("R15.1: --expert-model-parallel-size > 1 requires --num-experts");
  else if (ep > 1 && experts % ep != 0)
    add(fmt::format("R15.1: --num-experts {} is not divisible by ep = {}", experts, ep));
  if (experts > 0 && !a.has("--disable-bias-linear") && etp != 1)
    add(fmt::format("R15.3: a MoE model with linear biases requires etp = 1 (etp = {})", etp));

  // R16: MoE flags.
  if (a.has("--moe-ffn-hidden-size") && experts <= 0 && !a.has("--moe-layer-freq"))
    add("R16.1: --moe-ffn-hidden-size without --num-experts");
  const std::string dispatcher = a.str("--moe-token-dispatcher-type", "allgather");
  const bool a2a_dispatcher = dispatcher == "alltoall" || dispatcher == "flex";
  std::vector<std::string> balancing = a.values("--moe-router-load-balancing-type");
  if (balancing.empty()) balancing = {"aux_loss"};
  const auto balancing_has = [&balancing](const char* t) {
    return std::find(balancing.begin(), balancing.end(), t) != balancing.end();
  };
  if (experts > 0) {
    // The score function's CLI default is softmax (cases moe_topk1_softmax, moe_expert_bias_softmax).
    const std::string score = a.str("--moe-router-score-function", "softmax");
    if (a.num("--moe-router-topk", 2) == 1 && score == "softmax" && !a.has("--moe-router-pre-softmax") &&
        !balancing_has("sinkhorn"))
      add("R16.3: top-1 routing with softmax needs --moe-router-pre-softmax (unless sinkhorn)");
    if (a.has("--moe-router-enable-expert-bias") && score != "sigmoid" && score != "sqrtsoftplus")
      add(fmt::format("R16.3: --moe-router-enable-expert-bias needs the sigmoid or sqrtsoftplus score function (is {})", score));
    if (a.has("--moe-router-group-topk")) {
      const auto groups = a.opt("--moe-router-num-groups");
      if (!groups) {
        add("R16.3: --moe-router-group-topk needs --moe-router-num-groups");
      } else {
        if (*groups <= 0 || experts % *groups != 0)
          add(fmt::format("R16.3: --num-experts {} is not divisible by --moe-router-num-groups {}", experts, *groups));
        if (a.num("--moe-router-group-topk", 0) > *groups)
          add("R16.3: --moe-router-group-topk exceeds --moe-router-num-groups");
      }
    }
    if (a.values("--moe-router-load-balancing-type").size() > 1 &&
        a.values("--moe-aux-loss-coeff").size() != a.values("--moe-router-load-balancing-type").size())
      add("R16.3: with several load-balancing types, --moe-aux-loss-coeff needs as many values");
  }
  if (a.has("--moe-enable-deepep") && dispatcher != "flex") add("R16.4: --moe-enable-deepep requires --moe-token-dispatcher-type flex");
  if (a.str("--moe-flex-dispatcher-backend") == "ncclep" && dispatcher != "flex")
    add("R16.4: the ncclep backend requires --moe-token-dispatcher-type flex");
  if (a.has("--moe-shared-expert-overlap") && !a2a_dispatcher)
    add(fmt::format("R16.6: --moe-shared-expert-overlap requires the alltoall or flex dispatcher (is {})", dispatcher));
  if (a.has("--moe-expert-capacity-factor"))
    for (const auto& t : balancing)
      if (t != "aux_loss" && t != "seq_aux_loss" && t != "global_aux_loss" && t != "none")
        add(fmt::format("R16.7: --moe-expert-capacity-factor does not work with load balancing '{}'", t));
  if (a.has("--moe-pad-expert-input-to-capacity") && !a.has("--moe-expert-capacity-factor"))
    add("R16.7: --moe-pad-expert-input-to-capacity needs --moe-expert-capacity-factor");

  // R19: recompute (values read before R17 uses them).
  std::string granularity = a.str("--recompute-granularity");
  if (granularity.empty() && a.has("--recompute-activations")) granularity = "selective";  // R19.1
  const bool has_method = a.has("--recompute-method"), has_rc_n = a.has("--recompute-num-layers");
  std::vector<std::string> modules = a.values("--recompute-modules");
  if (modules.empty()) modules = {"core_attn"};  // R19.4
  const auto module_has = [&modules](const char* m) { return std::find(modules.begin(), modules.end(), m) != modules.end(); };

  // R17: MoE communication overlap.
  if (moe_overlap) {
    if (ep <= 1) add("R17.1: --overlap-moe-expert-parallel-comm requires ep > 1");
    if (!a2a_dispatcher) add("R17.1: --overlap-moe-expert-parallel-comm requires the alltoall or flex dispatcher");
    if (!bf16 && !fp16) add("R17.1: --overlap-moe-expert-parallel-comm requires --bf16 or --fp16");
    if (granularity == "full" || has_method || has_rc_n || (a.has("--recompute-modules") && module_has("moe")))
      add("R17.1: --overlap-moe-expert-parallel-comm excludes full recompute, --recompute-method, --recompute-num-layers and "
          "the moe recompute module");
    if (a.has("--moe-shared-expert-overlap")) add("R17.1: --overlap-moe-expert-parallel-comm excludes --moe-shared-expert-overlap");
    if (a.num("--mtp-num-layers", 0) > 1) add("R17.1: --overlap-moe-expert-parallel-comm allows --mtp-num-layers of at most 1");
    if (pp > 1 && !has_nvs && !has_nlpv && !has_layout)
      add("R17.1: --overlap-moe-expert-parallel-comm with pp > 1 needs vpp");
  }
  if (a.has("--delay-wgrad-compute") && !moe_overlap)
    add("R17.2: --delay-wgrad-compute requires --overlap-moe-expert-parallel-comm");
  if (a.has("--ep-overlap-early-attn-memory-release") && !moe_overlap)
    add("R17.3: --ep-overlap-early-attn-memory-release requires --overlap-moe-expert-parallel-comm");
  if (a.has("--overlap-dispatch-backward-with-experts-wgrad") && (moe_overlap || a.has("--delay-wgrad-compute")))
    add("R17.3: --overlap-dispatch-backward-with-experts-wgrad excludes --overlap-moe-expert-parallel-comm and "
        "--delay-wgrad-compute");

  // R18.1.
  if (a.has("--multi-latent-attention") && a.has("--group-query-attention"))
    add("R18.1: --multi-latent-attention cannot be combined with --group-query-attention");

  // R19 checks.
  if (granularity == "full") {
    if (!has_method) add("R19.2: --recompute-granularity full needs --recompute-method");
    if (!has_rc_n) add("R19.2: --recompute-granularity full needs --recompute-num-layers");
  } else if (granularity == "selective") {
    if (has_method) add("R19.3: --recompute-granularity selective forbids --recompute-method");
    if (has_rc_n) add("R19.3: --recompute-granularity selective forbids --recompute-num-layers");
    static const std::set<std::string> allowed{"core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe",
                                               "shared_experts", "gdn_norm_out", "gdp_in_proj", "gdp_qkv", "mhc"};
    for (const auto& m : modules)
      if (!allowed.contains(m)) add(fmt::format("R19.4: '{}' is not a recompute module", m));
    if (module_has("moe_act") && !a.has("--moe-grouped-gemm")) add("R19.4: recompute module moe_act needs --moe-grouped-gemm");
    if (module_has("mla_up_proj") && !a.has("--multi-latent-attention"))
      add("R19.4: recompute module mla_up_proj needs --multi-latent-attention");
    if (module_has("shared_experts") && a.has("--moe-shared-expert-overlap"))
      add("R19.4: recompute module shared_experts cannot be combined with --moe-shared-expert-overlap");
    if (fp8 && a.str("--fp8-recipe", "delayed") == "delayed" && (module_has("moe_act") || module_has("layernorm")))
      add("R19.4: the delayed FP8 recipe cannot recompute moe_act or layernorm");
  }
  // R19.8: fine-grained activation offloading.
  const std::vector<std::string> offloaded = a.values("--offload-modules");
  const auto offloads = [&offloaded](const char* m) {
    return std::find(offloaded.begin(), offloaded.end(), m) != offloaded.end();
  };
  if (a.has("--fine-grained-activation-offloading")) {
    static const std::set<std::string> allowed{"attn_norm",  "qkv_linear", "core_attn", "attn_proj",      "mlp_norm",
                                               "expert_fc1", "moe_act",    "gdp_qkv",   "fused_group_mlp"};
    if (offloaded.empty()) add("R19.8: --fine-grained-activation-offloading needs --offload-modules");
    for (const auto& m : offloaded)
      if (!allowed.contains(m)) add(fmt::format("R19.8: '{}' is not an offload module", m));
    if (a.num("--cpu-offloading-num-layers", 0) > 0)
      add("R19.8: --fine-grained-activation-offloading excludes --cpu-offloading-num-layers");
    if (offloads("attn_proj") && !offloads("core_attn")) add("R19.8: offload module attn_proj needs core_attn");
    if (granularity == "selective" && a.has("--recompute-modules") && module_has("moe") &&
        (offloads("expert_fc1") || offloads("moe_act") || offloads("fused_group_mlp")))
      add("R19.8: offload modules inside the MoE layer exclude the moe recompute module");
    if (a.str("--transformer-impl", "transformer_engine") != "transformer_engine")
      add("R19.8: --fine-grained-activation-offloading needs --transformer-impl transformer_engine");
    const auto te_env = environment.find("NVTE_CPU_OFFLOAD_V1");
    if (te_env == environment.end() || te_env->second != "1")
      add("R19.8: --fine-grained-activation-offloading with Transformer Engine >= 2.10 needs NVTE_CPU_OFFLOAD_V1=1");
  } else if (!offloaded.empty()) {
    add("R19.8: --offload-modules takes effect only with --fine-grained-activation-offloading");
  }
  if (a.has("--distribute-saved-activations")) {
    if (tp <= 1 || granularity != "full" || !has_method)
      add("R19.6: --distribute-saved-activations needs tp > 1, full granularity and a recompute method");
    if (sp) add("R19.6: --distribute-saved-activations is incompatible with sequence parallelism");
  }

  // R20: FP8 / FP4.
  if (a.has("--fp8-param-gather")) {
    if (!distopt && !fsdp2 && !mfsdp)
      add("R20.3: --fp8-param-gather needs the distributed optimizer, torch FSDP2 or Megatron-FSDP");
    if (!fp8) add("R20.3: --fp8-param-gather needs --fp8-format");
  }
  if (fp8 && a.has("--fp4-format")) add("R20.4: --fp8-format and --fp4-format exclude each other");
  if (fp8) {
    const std::string recipe = a.str("--fp8-recipe", "delayed");
    if (a.has("--first-last-layers-bf16")) {
      if (recipe == "delayed") add("R20.5: --first-last-layers-bf16 cannot be used with the delayed recipe");
      if (layers && pp > 0)
        for (const char* f : {"--num-layers-at-start-in-bf16", "--num-layers-at-end-in-bf16"})
          if (const auto n = a.opt(f); n && (*n < 0 || *n > *layers / pp))
            add(fmt::format("R20.5: {} {} must lie between 0 and num_layers/pp = {}", f, *n, *layers / pp));
    }
    if (recipe == "custom" && !a.has("--fp8-quantizer-factory")) add("R20.5: the custom FP8 recipe needs --fp8-quantizer-factory");
    if (a.has("--fp8-output-proj") && recipe != "mxfp8") add("R20.5: --fp8-output-proj needs the mxfp8 recipe");
  }

  // R21: sharding.
  if (mfsdp) {
    if (ckpt_format != "fsdp_dtensor") add("R21.2: --use-megatron-fsdp requires --ckpt-format fsdp_dtensor");
    if (mfsdp_version == 2 && distopt) add("R21.2: --megatron-fsdp-version 2 forbids --use-distributed-optimizer");
    if (optimizer != "adam" && optimizer != "sgd")
      add(fmt::format("R21.2: Megatron-FSDP needs the adam or sgd optimizer (is {})", optimizer));
  } else if (ckpt_format == "fsdp_dtensor") {
    add("R21.2: --ckpt-format fsdp_dtensor is accepted only with --use-megatron-fsdp");
  }
  if (fsdp2) {
    if (pp != 1 || ep != 1) add(fmt::format("R21.3: torch FSDP2 needs pp = 1 and ep = 1 (pp {}, ep {})", pp, ep));
    if (distopt) add("R21.3: torch FSDP2 excludes the distributed optimizer");
    if (!a.has("--no-gradient-accumulation-fusion")) add("R21.3: torch FSDP2 needs --no-gradient-accumulation-fusion");
    if (!ckpt_format.empty() && ckpt_format != "torch_dist" && ckpt_format != "torch_dcp")
      add("R21.3: torch FSDP2 needs --ckpt-format torch_dist or torch_dcp");
    if (!a.has("--untie-embeddings-and-output-weights")) add("R21.3: torch FSDP2 needs --untie-embeddings-and-output-weights");
    if (fp16) add("R21.3: torch FSDP2 excludes --fp16");
    if (optimizer != "adam" && optimizer != "sgd") add("R21.4: torch FSDP2 needs the adam or sgd optimizer");
  }

  // R22.1 (process-group setup).
  if (const auto k = a.opt("--num-distributed-optimizer-instances"); k && *k > 1 && dp > 0) {
    if ((dp * cp) % *k != 0)
      add(fmt::format("R22.1: dp×cp = {} is not divisible by --num-distributed-optimizer-instances {}", dp * cp, *k));
    if (gtp > 1) add("R22.1: --num-distributed-optimizer-instances cannot be combined with gtp > 1");
  }

  // R23.1.
  if (a.has("--defer-embedding-wgrad-compute") && (pp <= 1 || a.has("--no-gradient-accumulation-fusion")))
    add("R23.1: --defer-embedding-wgrad-compute needs pp > 1 and gradient-accumulation fusion");
  return v;
}

}  // namespace paratune::launch
