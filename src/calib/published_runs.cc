#include "paratune/calib/published_runs.h"

#include <fmt/format.h>
#include <nlopt.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "paratune/cost/model_stats.h"
#include "paratune/spec/presets.h"
#include "paratune/spec/units.h"

namespace paratune {
namespace {

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}
bool contains(const std::string& haystack, const std::string& needle) {
  return lower(haystack).find(lower(needle)) != std::string::npos;
}

const std::vector<std::string> kRequiredColumns{
    "row_id", "source_id", "model", "num_layers", "hidden_size", "num_attention_heads", "num_kv_heads",
    "ffn_hidden_size", "vocab_size", "seq_length", "gpu_type", "total_gpus", "gpus_per_node", "interconnect",
    "model_parallel_total", "tp", "pp", "dp", "vpp", "micro_batch_size", "global_batch_size",
    "activation_recompute", "sequence_parallel", "zero_or_distributed_optimizer", "precision", "framework",
    "iteration_time_s", "tflops_per_gpu", "tflops_basis", "mfu_pct", "tokens_per_s_per_gpu"};

std::optional<double> number(const PublishedRun& run, const std::string& column) {
  const std::string text = run.get(column);
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v))
    throw Error(fmt::format("row {}: {}: '{}' is not a number", run.id(), column, text));
  return v;
}

int integer(const PublishedRun& run, const std::string& column, int fallback) {
  const auto v = number(run, column);
  if (!v) return fallback;
  if (*v != std::floor(*v) || *v < 0)
    throw Error(fmt::format("row {}: {}: '{}' is not a non-negative integer", run.id(), column, run.get(column)));
  return static_cast<int>(*v);
}

std::vector<int> divisors_up_to(int n, int limit) {
  std::vector<int> out;
  for (int d = 1; d <= std::min(n, limit); ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// GPU preset from the free-text gpu_type: "A100 80GB (Selene ...)", "h100_80gb", "V100 (DGX-2)".
const GpuSpec& gpu_for(const PublishedRun& run, std::vector<std::string>& assumptions) {
  const std::string g = lower(run.get("gpu_type"));
  if (contains(g, "v100")) return find_gpu_preset("v100-32gb");
  if (contains(g, "h800")) return find_gpu_preset("h800");
  if (contains(g, "h200")) return find_gpu_preset("h200");
  if (contains(g, "h100")) return find_gpu_preset("h100-sxm");
  if (contains(g, "a100")) {
    if (contains(g, "80")) return find_gpu_preset("a100-80gb");
    if (contains(g, "40")) return find_gpu_preset("a100-40gb");
    assumptions.push_back("A100 memory size not stated: a100-40gb (DGX A100 shipped with 40GB GPUs in 2020)");
    return find_gpu_preset("a100-40gb");
  }
  throw Error(fmt::format("row {}: gpu_type: '{}' matches no GPU preset (known: {})", run.id(), run.get("gpu_type"),
                          join(gpu_preset_names())));
}

ClusterSpec cluster_for(const PublishedRun& run, std::vector<std::string>& assumptions) {
  const GpuSpec& gpu = gpu_for(run, assumptions);
  const std::string description = run.get("gpu_type") + " " + run.get("interconnect");
  ClusterSpec c = contains(description, "dgx-2") ? find_cluster_preset("dgx-2").node
                                                  : reference_node_for_gpu(gpu.name).node;
  c.gpu = gpu;
  c.gpus_per_node = integer(run, "gpus_per_node", c.gpus_per_node);
  // "1600 Gbps node-node interconnect (RoCE)": the node's NIC bandwidth, shared by its GPUs.
  const std::string interconnect = run.get("interconnect");
  if (const auto pos = lower(interconnect).find("gbps"); pos != std::string::npos) {
    std::size_t start = pos;
    while (start > 0 && (std::isdigit(static_cast<unsigned char>(interconnect[start - 1])) || interconnect[start - 1] == ' ' ||
                         interconnect[start - 1] == '.'))
      --start;
    const double node_gbps = std::strtod(interconnect.substr(start, pos - start).c_str(), nullptr);
    if (node_gbps > 0) {
      c.inter_node_bandwidth_bytes_per_s = node_gbps * 1e9 / 8 / c.gpus_per_node;
      assumptions.push_back(fmt::format("inter-node {} Gb/s per node shared by {} GPUs", node_gbps, c.gpus_per_node));
    }
  }
  const int gpus = integer(run, "total_gpus", 0);
  if (gpus < 1) throw Error(fmt::format("row {}: total_gpus: missing", run.id()));
  if (gpus < c.gpus_per_node) {
    c.gpus_per_node = gpus;
    c.nodes = 1;
  } else {
    if (gpus % c.gpus_per_node != 0)
      throw Error(fmt::format("row {}: total_gpus {} is not a whole number of {}-GPU nodes", run.id(), gpus,
                              c.gpus_per_node));
    c.nodes = gpus / c.gpus_per_node;
  }
  c.name = fmt::format("{} x {}", gpus, gpu.name);
  return c;
}

ModelSpec model_for(const PublishedRun& run, std::vector<std::string>& assumptions) {
  ModelSpec m;
  m.name = run.get("model");
  m.num_layers = integer(run, "num_layers", 0);
  m.hidden_size = integer(run, "hidden_size", 0);
  m.num_attention_heads = integer(run, "num_attention_heads", 0);
  if (m.num_attention_heads == 0 && m.hidden_size > 0) {
    m.num_attention_heads = m.hidden_size / 128;
    assumptions.push_back(fmt::format("num_attention_heads not stated: hidden/128 = {}", m.num_attention_heads));
  }
  m.num_kv_heads = integer(run, "num_kv_heads", m.num_attention_heads);
  m.head_dim = m.num_attention_heads > 0 ? m.hidden_size / m.num_attention_heads : 0;
  m.vocab_size = integer(run, "vocab_size", 0);
  if (m.vocab_size == 0) {
    m.vocab_size = 32000;
    assumptions.push_back("vocab_size not stated: 32000 (Llama-2 tokenizer)");
  }
  const bool llama = contains(m.name, "llama");
  m.ffn_hidden_size = integer(run, "ffn_hidden_size", 4 * m.hidden_size);
  if (llama) {
    m.gated_mlp = true;
    m.norm = NormKind::kRMSNorm;
    m.position_embedding = PositionEmbedding::kRotary;
  } else if (contains(m.name, "mpt")) {
    // MPT: ALiBi (no position table), LayerNorm without bias, no biases, tied embeddings.
    m.norm = NormKind::kLayerNorm;
    m.position_embedding = PositionEmbedding::kNone;
    m.tie_embeddings = true;
  } else {
    // Megatron GPT: learned positions, LayerNorm and biases, tied embeddings, dropout 0.1.
    m.norm = NormKind::kLayerNorm;
    m.bias = true;
    m.qkv_bias = true;
    m.tie_embeddings = true;
    m.dropout = true;
    m.position_embedding = PositionEmbedding::kLearned;
    m.max_position_embeddings = integer(run, "seq_length", 2048);
    assumptions.push_back("GPT architecture: GeLU MLP, learned positions, tied embeddings, dropout (Megatron defaults)");
  }
  validate(m);
  return m;
}

}  // namespace

std::string PublishedRun::get(const std::string& column) const {
  const auto it = fields.find(column);
  if (it == fields.end()) return "";
  std::string v = it->second;
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
  std::size_t i = 0;
  while (i < v.size() && std::isspace(static_cast<unsigned char>(v[i]))) ++i;
  return v.substr(i);
}

std::vector<std::map<std::string, std::string>> read_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open file", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false, field_started = false;
  int line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (ch == '\n') ++line;
        field += ch;
      }
      continue;
    }
    if (ch == '"' && !field_started) {
      quoted = field_started = true;
    } else if (ch == ',') {
      record.push_back(field);
      field.clear();
      field_started = false;
    } else if (ch == '\n' || ch == '\r') {
      if (ch == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      record.push_back(field);
      field.clear();
      field_started = false;
      if (!(record.size() == 1 && record[0].empty())) records.push_back(record);
      record.clear();
      ++line;
    } else {
      field += ch;
      field_started = true;
    }
  }
  if (quoted) throw Error(fmt::format("{}: line {}: unterminated quoted field", path, line));
  if (field_started || !record.empty()) {
    record.push_back(field);
    records.push_back(record);
  }
  if (records.empty()) throw Error(fmt::format("{}: empty CSV file (no header)", path));
  std::vector<std::map<std::string, std::string>> rows;
  const auto& header = records.front();
  for (std::size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() != header.size())
      throw Error(fmt::format("{}: record {} has {} fields but the header has {}", path, r + 1, records[r].size(),
                              header.size()));
    std::map<std::string, std::string> row;
    for (std::size_t k = 0; k < header.size(); ++k) row[header[k]] = records[r][k];
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<PublishedRun> read_published_runs(const std::string& path) {
  const auto rows = read_csv(path);
  std::vector<PublishedRun> runs;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i == 0)
      for (const auto& column : kRequiredColumns)
        if (!rows[0].count(column))
          throw Error(fmt::format("{}: missing column '{}' (needs the columns of published_runs.csv)", path, column));
    runs.push_back(PublishedRun{rows[i], static_cast<int>(i) + 2});
  }
  return runs;
}

double megatron_sc21_flops(const ModelSpec& m, double batch, double seq) {
  const double L = m.num_layers, h = m.hidden_size, V = m.vocab_size;
  return 96 * batch * seq * L * h * h * (1 + seq / (6 * h) + V / (16 * L * h));
}

double megatron_flops(const ModelSpec& m, double batch, double seq) {
  const double L = m.num_layers, h = m.hidden_size, V = m.vocab_size;
  const double query_ratio = static_cast<double>(m.head_size()) * m.num_attention_heads / h;
  const double kv_ratio = static_cast<double>(m.kv_heads()) / m.num_attention_heads;
  const double experts = m.moe ? m.moe->top_k : 1;
  const double gated = m.gated_mlp ? 1.5 : 1.0;
  const double ffn = m.moe ? m.moe->expert_ffn_hidden_size : m.ffn_hidden_size;
  return 12 * batch * seq * L * h * h *
         ((1 + kv_ratio + seq / h) * query_ratio + ffn / h * experts * gated + V / (2 * L * h));
}

double torchtitan_flops(const ModelSpec& m, double batch, double seq) {
  const ParamCounts c = count_parameters(m);
  const double non_embedding = c.total - static_cast<double>(m.vocab_size) * m.hidden_size;
  const double per_token = 6 * non_embedding + 12.0 * m.num_layers * m.num_attention_heads * m.head_size() * seq;
  return per_token * batch * seq;
}

RunSetup setup_for_run(const PublishedRun& run) {
  RunSetup s;
  try {
    std::vector<std::string>& why = s.assumptions;
    s.model = model_for(run, why);
    s.cluster = cluster_for(run, why);
    const std::string source = run.get("source_id");
    const std::string framework = run.get("framework");
    const bool megatron = contains(framework, "megatron");
    const bool fsdp = contains(run.get("zero_or_distributed_optimizer"), "fsdp") ||
                      contains(run.get("zero_or_distributed_optimizer"), "full_shard");
    const bool early_megatron = megatron && (contains(framework, "2020") || contains(framework, "2021"));

    s.training.seq_len = integer(run, "seq_length", 0);
    s.training.global_batch = integer(run, "global_batch_size", 0);
    if (s.training.seq_len < 1 || s.training.global_batch < 1)
      throw Error("seq_length and global_batch_size are required");
    s.training.precision = s.cluster.gpu.peak_bf16_flops_per_s > 0 ? Precision::kBF16 : Precision::kFP16;
    s.training.flash_attention = !early_megatron;
    if (early_megatron) why.push_back("no flash attention (predates it; Megatron fused softmax)");
    // Composer FSDP mixed precision: PURE gathers and reduces in bf16; DEFAULT keeps fp32
    // parameters (gathered in fp32) and reduces gradients in bf16.
    if (contains(run.get("precision"), "pure")) s.training.fp32_grad_accumulation = false;
    if (contains(run.get("precision"), "default")) {
      s.training.fp32_grad_accumulation = false;
      s.training.fp32_param_gather = true;
      why.push_back("Composer MixedPrecision DEFAULT: fp32 parameter all-gather, bf16 gradient reduce-scatter");
    }

    ParallelConfig& c = s.config;
    const int gpus = s.cluster.num_gpus();
    int tp = integer(run, "tp", 0), pp = integer(run, "pp", 0);
    const int mp = integer(run, "model_parallel_total", 0);
    if (tp == 0 && pp == 0 && mp > 0) {
      // Megatron READMEs: "for numbers larger than 8, typically tensor parallel of size 8 was used".
      tp = std::min(mp, s.cluster.gpus_per_node);
      pp = mp / tp;
      why.push_back(fmt::format("model-parallel {} split as tp={} x pp={}", mp, tp, pp));
    }
    if (tp == 0 && pp == 0 && fsdp) tp = pp = 1;
    if (tp > 0) s.tp_choices = {tp};
    if (pp > 0) s.pp_choices = {pp};
    if (tp == 0) {
      s.tp_choices = {1, 2, 4, 8};
      why.push_back("tp not stated: searched 1..8");
    }
    if (pp == 0) {
      s.pp_choices = divisors_up_to(gpus, 32);
      why.push_back("pp not stated: searched");
    }
    c.dp = 0;  // derived per candidate
    if (fsdp) {
      c.zero = 3;
      c.overlap_param_gather = true;
    } else if (megatron && !early_megatron) {
      c.zero = 1;  // overlap-param-gather implies the distributed optimizer
      why.push_back("distributed optimizer (zero=1), overlapped grad reduce / param gather / TP comm (source notes)");
    } else {
      c.zero = 0;
      // The 2020 README's DP scaling (8.3B: 1.343 s on 8 GPUs, 1.380 s on 1024) leaves no room for
      // an exposed 4 GB gradient all-reduce: it overlapped with the backward (torch DDP buckets).
      c.overlap_grad_reduce = true;
      why.push_back("DP gradient all-reduce overlapped with backward (implied by the published DP scaling)");
    }
    c.tp_comm_overlap = megatron && !early_megatron;
    const int mbs = integer(run, "micro_batch_size", 0);
    if (mbs > 0) s.mbs_choices = {mbs};
    else {
      s.mbs_choices = {1, 2, 4, 8, 16};
      why.push_back("micro-batch size not stated: searched 1..16");
    }
    const std::string rc = lower(run.get("activation_recompute"));
    if (rc.empty()) {
      if (early_megatron) {
        s.recompute_choices = {RecomputeMode::kFull};
        why.push_back("full activation recompute (SC'21 Eq. 3 assumes it)");
      } else {
        s.recompute_choices = {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull};
        why.push_back("recompute not stated: searched none/selective/full");
      }
    } else if (contains(rc, "per layer") || (contains(rc, "per op") && contains(framework, "torchtitan"))) {
      // torchtitan selective per-layer AC checkpoints every 2nd layer fully.
      s.recompute_choices = {RecomputeMode::kFull};
      c.recompute_layers = s.model.num_layers / 2;
      why.push_back("torchtitan selective AC: per-layer checkpoints every 2nd layer; per-op saves every other matmul "
                    "output: both recompute about half the forward, modelled as half the layers fully recomputed");
    } else if (contains(rc, "selective")) {
      s.recompute_choices = {RecomputeMode::kSelective};
    } else if (contains(rc, "full")) {
      s.recompute_choices = {RecomputeMode::kFull};
    } else {
      s.recompute_choices = {RecomputeMode::kNone};
    }
    const std::string sp = lower(run.get("sequence_parallel"));
    if (!sp.empty()) s.sp_choices = {sp == "true" || sp == "yes" || sp == "1"};
    else if (megatron && !early_megatron) {
      s.sp_choices = {false, true};
      why.push_back("sequence parallelism not stated: searched");
    } else s.sp_choices = {false};
    const int vpp = integer(run, "vpp", 0);
    if (vpp > 0) s.vpp_choices = {vpp};
    else if (megatron) {
      s.vpp_choices = {0};  // 0 = every divisor of the layers per stage up to 8, per candidate pp
      why.push_back("interleaving (vpp) not stated: searched");
    } else s.vpp_choices = {1};

    // The metric: time first, then basis-free tokens/s, then TFLOP/s and MFU in the source's basis.
    const std::string basis = lower(run.get("tflops_basis"));
    s.flops_basis = source == "S1" || contains(basis, "sc21") ? "megatron-sc21"
                    : contains(framework, "torchtitan")       ? "torchtitan"
                    : megatron                                ? "megatron"
                                                              : "paratune";
    if (source == "S1") why.push_back("S1 TFLOP/s basis assumed SC'21 Eq. 3 (it reproduces the published numbers)");
    if (auto v = number(run, "iteration_time_s")) s.metric = "iteration_time_s", s.published = *v;
    else if (auto tok = number(run, "tokens_per_s_per_gpu")) s.metric = "tokens_per_s_per_gpu", s.published = *tok;
    else if (auto tf = number(run, "tflops_per_gpu")) s.metric = "tflops_per_gpu", s.published = *tf;
    else if (auto mfu = number(run, "mfu_pct")) s.metric = "mfu", s.published = *mfu / 100;
    else throw Error("no metric to compare (iteration_time_s, tokens_per_s_per_gpu, tflops_per_gpu, mfu_pct all empty)");
    if (s.flops_basis == "paratune" && (s.metric == "tflops_per_gpu" || s.metric == "mfu"))
      throw Error(fmt::format("tflops_basis '{}' is not a FLOP convention paratune knows", run.get("tflops_basis")));
  } catch (const Error& e) {
    throw e.with_context("row " + run.id());
  }
  return s;
}

RowResult evaluate_run(const RunSetup& s, const std::string& row_id, const Calibration& calibration) {
  RowResult r;
  r.row_id = row_id;
  r.model = s.model.name;
  r.metric = s.metric;
  r.published = s.published;
  r.assumptions = s.assumptions;
  const int gpus = s.cluster.num_gpus();
  std::optional<Estimate> best_fit, best_any;
  for (int tp : s.tp_choices)
    for (int pp : s.pp_choices) {
      if (gpus % (tp * pp) != 0) continue;
      std::vector<int> vpp_choices = s.vpp_choices;
      if (vpp_choices == std::vector<int>{0}) vpp_choices = divisors_up_to(s.model.num_layers % pp == 0 ? s.model.num_layers / pp : 1, 8);
      for (int mbs : s.mbs_choices)
        for (int vpp : vpp_choices)
          for (RecomputeMode rc : s.recompute_choices)
            for (bool sp : s.sp_choices) {
              if (vpp > 1 && pp == 1) continue;
              if (sp && tp == 1) continue;
              ParallelConfig c = s.config;
              c.tp = tp;
              c.pp = pp;
              c.dp = gpus / (tp * pp);
              c.mbs = mbs;
              c.vpp = vpp;
              c.recompute = rc;
              c.sequence_parallel = sp;
              if (rc != RecomputeMode::kFull) c.recompute_layers = -1;
              try {
                Estimate e = estimate(s.model, s.cluster, s.training, c, calibration);
                auto& slot = e.fits ? best_fit : best_any;
                if (!slot || e.iteration_time_s < slot->iteration_time_s) slot = std::move(e);
              } catch (const Error&) {
                // an invalid combination of searched axes: not a candidate
              }
            }
    }
  const Estimate* chosen = best_fit ? &*best_fit : best_any ? &*best_any : nullptr;
  if (!chosen) throw Error(fmt::format("row {}: no valid configuration among the stated and searched axes", row_id));
  r.fits = chosen->fits;
  if (!chosen->fits) r.assumptions.push_back("no searched configuration fits in memory; fastest shown");
  r.config = to_string(chosen->config);
  const double tokens = static_cast<double>(s.training.global_batch) * s.training.seq_len;
  const double time = chosen->iteration_time_s;
  const double peak = s.cluster.gpu.peak_flops_per_s(s.training.precision);
  double basis_flops = chosen->model_flops;
  if (s.flops_basis == "megatron-sc21") basis_flops = megatron_sc21_flops(s.model, s.training.global_batch, s.training.seq_len);
  else if (s.flops_basis == "megatron") basis_flops = megatron_flops(s.model, s.training.global_batch, s.training.seq_len);
  else if (s.flops_basis == "torchtitan") basis_flops = torchtitan_flops(s.model, s.training.global_batch, s.training.seq_len);
  if (s.metric == "iteration_time_s") r.predicted = time;
  else if (s.metric == "tokens_per_s_per_gpu") r.predicted = tokens / time / gpus;
  else if (s.metric == "tflops_per_gpu") r.predicted = basis_flops / time / gpus / 1e12;
  else r.predicted = basis_flops / time / gpus / peak;
  r.abs_pct_error = 100 * std::abs(r.predicted - r.published) / r.published;
  return r;
}

ValidationReport validate_runs(const std::vector<PublishedRun>& runs, const Calibration& calibration) {
  ValidationReport report;
  double sum = 0;
  for (const auto& run : runs) {
    try {
      const RunSetup s = setup_for_run(run);
      report.rows.push_back(evaluate_run(s, run.id(), calibration));
      sum += report.rows.back().abs_pct_error;
      report.max_abs_pct_error = std::max(report.max_abs_pct_error, report.rows.back().abs_pct_error);
    } catch (const Error& e) {
      report.skipped.emplace_back(run.id(), e.what());
    }
  }
  if (!report.rows.empty()) report.mean_abs_pct_error = sum / report.rows.size();
  return report;
}

namespace {

// The fitted coefficients, as a vector for the optimiser, with their bounds.
struct FitParameter {
  const char* name;
  double lower, upper;
  double Calibration::*field;  // nullptr for per-GPU GEMM efficiency
  std::vector<std::string> gpus;
};

std::vector<FitParameter> fit_parameters() {
  return {
      {"gemm_efficiency v100", 0.4, 1.0, nullptr, {"v100-32gb"}},
      {"gemm_efficiency a100", 0.4, 1.0, nullptr, {"a100-40gb", "a100-80gb"}},
      {"gemm_efficiency h100", 0.4, 1.0, nullptr, {"h100-sxm", "h800", "h200"}},
      {"gemm_half_efficiency_dim", 0, 512, &Calibration::gemm_half_efficiency_dim, {}},
      {"attention_efficiency", 0.2, 1.0, &Calibration::attention_efficiency, {}},
      {"hbm_efficiency", 0.4, 1.0, &Calibration::hbm_efficiency, {}},
      {"inter_node_bandwidth_efficiency", 0.3, 1.0, &Calibration::inter_node_bandwidth_efficiency, {}},
      {"intra_node_bandwidth_efficiency", 0.3, 1.0, &Calibration::intra_node_bandwidth_efficiency, {}},
      {"layer_overhead_s", 0, 2e-4, &Calibration::layer_overhead_s, {}},
      {"dp_overlap", 0, 1, &Calibration::dp_overlap, {}},
  };
}

Calibration apply(const Calibration& base, const std::vector<FitParameter>& params, const std::vector<double>& x) {
  Calibration c = base;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (params[i].field) c.*(params[i].field) = x[i];
    for (const auto& gpu : params[i].gpus) c.gemm_efficiency_by_gpu[gpu] = x[i];
  }
  return c;
}

}  // namespace

CalibrationFit fit_calibration(const std::vector<PublishedRun>& runs, const Calibration& start) {
  CalibrationFit fit;
  fit.before = validate_runs(runs, start);
  std::vector<std::pair<std::string, RunSetup>> setups;
  for (const auto& run : runs) {
    try {
      setups.emplace_back(run.id(), setup_for_run(run));
    } catch (const Error&) {
      // listed as skipped by validate_runs
    }
  }
  fit.rows_used = static_cast<int>(setups.size());
  if (setups.empty()) throw Error("calibrate: no row of the CSV can be estimated");
  const auto params = fit_parameters();
  std::vector<double> x, lower, upper;
  for (const auto& p : params) {
    x.push_back(p.field ? start.*(p.field) : start.gemm_efficiency_for(p.gpus.front()));
    lower.push_back(p.lower);
    upper.push_back(p.upper);
    x.back() = std::clamp(x.back(), p.lower, p.upper);
  }
  struct State {
    const Calibration* start;
    const std::vector<FitParameter>* params;
    const std::vector<std::pair<std::string, RunSetup>>* setups;
    int evaluations = 0;
  } state{&start, &params, &setups};
  auto objective = [](const std::vector<double>& v, std::vector<double>&, void* data) -> double {
    auto* st = static_cast<State*>(data);
    ++st->evaluations;
    const Calibration c = apply(*st->start, *st->params, v);
    double sum = 0, worst = 0;
    for (const auto& [id, setup] : *st->setups) {
      double error = 100;
      try {
        error = evaluate_run(setup, id, c).abs_pct_error;
      } catch (const Error&) {
      }
      sum += error;
      worst = std::max(worst, error);
    }
    return sum / st->setups->size() + 0.5 * worst;
  };
  nlopt::opt optimizer(nlopt::LN_BOBYQA, static_cast<unsigned>(x.size()));
  optimizer.set_lower_bounds(lower);
  optimizer.set_upper_bounds(upper);
  optimizer.set_min_objective(objective, &state);
  optimizer.set_xtol_rel(1e-4);
  optimizer.set_maxeval(600);
  double best = 0;
  try {
    optimizer.optimize(x, best);
  } catch (const nlopt::roundoff_limited&) {
    // converged as far as floating point allows; x holds the best point
  }
  fit.calibration = apply(start, params, x);
  fit.parameters_fitted = static_cast<int>(params.size());
  fit.evaluations = state.evaluations;
  fit.after = validate_runs(runs, fit.calibration);
  return fit;
}

nlohmann::json to_json(const ValidationReport& r) {
  nlohmann::json rows = nlohmann::json::array(), skipped = nlohmann::json::array();
  for (const auto& row : r.rows)
    rows.push_back({{"row_id", row.row_id},
                    {"model", row.model},
                    {"metric", row.metric},
                    {"published", row.published},
                    {"predicted", row.predicted},
                    {"abs_pct_error", row.abs_pct_error},
                    {"config", row.config},
                    {"fits", row.fits},
                    {"assumptions", row.assumptions}});
  for (const auto& [id, reason] : r.skipped) skipped.push_back({{"row_id", id}, {"reason", reason}});
  return {{"rows", rows},
          {"skipped", skipped},
          {"mean_abs_pct_error", r.mean_abs_pct_error},
          {"max_abs_pct_error", r.max_abs_pct_error}};
}

std::string format_validation(const ValidationReport& r) {
  std::string out = fmt::format("{:>6}  {:<28} {:<20} {:>11} {:>11} {:>7}  {}\n", "row", "model", "metric", "published",
                                "predicted", "|err|%", "configuration estimated");
  for (const auto& row : r.rows)
    out += fmt::format("{:>6}  {:<28} {:<20} {:>11.4g} {:>11.4g} {:>7.1f}  {}{}\n", row.row_id, row.model.substr(0, 28),
                       row.metric, row.published, row.predicted, row.abs_pct_error, row.config,
                       row.fits ? "" : " (does not fit)");
  for (const auto& [id, reason] : r.skipped) out += fmt::format("{:>6}  skipped: {}\n", id, reason);
  out += fmt::format("\n{} rows estimated, {} skipped; mean |error| {:.2f}%, max {:.2f}%\n", r.rows.size(),
                     r.skipped.size(), r.mean_abs_pct_error, r.max_abs_pct_error);
  out += "assumptions per row: --json lists them\n";
  return out;
}

}  // namespace paratune
