#include "paratune/spec/presets.h"

#include "paratune/spec/error.h"
#include "paratune/spec/units.h"

namespace paratune {
namespace {

using units::kMiB;
constexpr double kTera = 1e12;
constexpr double kGBps = 1e9;
constexpr double kUs = 1e-6;

// Builder for dense decoder models; fields not set keep ModelSpec defaults.
struct M {
  ModelSpec s;
  M(std::string name, int layers, int hidden, int heads, int ffn, int vocab) {
    s.name = std::move(name);
    s.num_layers = layers;
    s.hidden_size = hidden;
    s.num_attention_heads = heads;
    s.num_kv_heads = heads;
    s.head_dim = hidden / heads;
    s.ffn_hidden_size = ffn;
    s.vocab_size = vocab;
  }
  M& kv(int n) { s.num_kv_heads = n; return *this; }
  M& head_dim(int d) { s.head_dim = d; return *this; }
  // Llama family: SwiGLU, RMSNorm, RoPE, no biases, untied output layer.
  M& llama() { s.gated_mlp = true; s.norm = NormKind::kRMSNorm; s.position_embedding = PositionEmbedding::kRotary; return *this; }
  // GPT-2/GPT-3 family: GeLU MLP, LayerNorm and every linear layer with bias (q/k/v included, as
  // a model file's `bias` implies), learned positions, tied output, dropout.
  M& gpt(int positions) {
    s.norm = NormKind::kLayerNorm; s.bias = true; s.qkv_bias = true; s.tie_embeddings = true; s.dropout = true;
    s.position_embedding = PositionEmbedding::kLearned; s.max_position_embeddings = positions;
    return *this;
  }
  M& tied() { s.tie_embeddings = true; return *this; }
  M& qkv_bias() { s.qkv_bias = true; return *this; }
  M& moe(int experts, int top_k, int expert_ffn, int shared = 0, int shared_ffn = 0, int first_dense = 0) {
    s.moe = MoeSpec{experts, top_k, expert_ffn, shared, shared_ffn, first_dense, 1};
    return *this;
  }
  ModelPreset published(double total, double active, std::string source) {
    return ModelPreset{s, total, active > 0 ? active : total, std::move(source)};
  }
};

ModelPreset bert(std::string name, int layers, int hidden, int heads, double published, std::string source) {
  M m(std::move(name), layers, hidden, heads, 4 * hidden, 30522);
  m.gpt(512);
  m.s.causal = false;
  m.s.type_vocab_size = 2;
  m.s.pooler = true;
  return m.published(published, 0, std::move(source));
}

std::vector<ModelPreset> make_model_presets() {
  std::vector<ModelPreset> p;
  const char* gpt2_src = "Radford et al. 2019; Hugging Face openai-community/gpt2* config.json (exact counts)";
  p.push_back(M("gpt2", 12, 768, 12, 3072, 50257).gpt(1024).published(124.44e6, 0, gpt2_src));
  p.push_back(M("gpt2-medium", 24, 1024, 16, 4096, 50257).gpt(1024).published(354.82e6, 0, gpt2_src));
  p.push_back(M("gpt2-large", 36, 1280, 20, 5120, 50257).gpt(1024).published(774.03e6, 0, gpt2_src));
  p.push_back(M("gpt2-xl", 48, 1600, 25, 6400, 50257).gpt(1024).published(1557.61e6, 0, gpt2_src));
  p.push_back(M("gpt3-175b", 96, 12288, 96, 49152, 50257).gpt(2048).published(
      175.0e9, 0, "Brown et al. 2020, Table 2.1 (n_params 175.0B, n_layers 96, d_model 12288, n_heads 96, n_ctx 2048)"));
  // BERT: the paper rounds to 110M/340M; we compare against the released checkpoints' exact counts
  // including the MLM pre-training head (BertForPreTraining): 110.1M and 336.2M.
  p.push_back(bert("bert-base", 12, 768, 12, 110.1e6, "Devlin et al. 2019 (110M); google-bert/bert-base-uncased"));
  p.push_back(bert("bert-large", 24, 1024, 16, 336.2e6, "Devlin et al. 2019 (340M, rounded); google-bert/bert-large-uncased"));
  {
    // GPT-J: rotary on 64 of 256 head dims, untied output layer, biases on the MLP.
    M m("gpt-j-6b", 28, 4096, 16, 16384, 50400);
    m.s.bias = true;
    m.s.position_embedding = PositionEmbedding::kRotary;
    p.push_back(m.published(6.053e9, 0, "EleutherAI/gpt-j-6b model card: 6,053,381,344 parameters"));
  }
  const char* llama2 = "Touvron et al. 2023 (Llama 2); meta-llama/Llama-2-*-hf config.json";
  p.push_back(M("llama2-7b", 32, 4096, 32, 11008, 32000).llama().published(6.74e9, 0, llama2));
  p.push_back(M("llama2-13b", 40, 5120, 40, 13824, 32000).llama().published(13.02e9, 0, llama2));
  p.push_back(M("llama2-70b", 80, 8192, 64, 28672, 32000).llama().kv(8).published(68.98e9, 0, llama2));
  const char* llama3 = "Llama 3 Herd of Models (2024) Table 3; meta-llama/Meta-Llama-3(.1)-* config.json";
  p.push_back(M("llama3-8b", 32, 4096, 32, 14336, 128256).llama().kv(8).published(8.03e9, 0, llama3));
  p.push_back(M("llama3-70b", 80, 8192, 64, 28672, 128256).llama().kv(8).published(70.55e9, 0, llama3));
  p.push_back(M("llama3.1-8b", 32, 4096, 32, 14336, 128256).llama().kv(8).published(8.03e9, 0, llama3));
  p.push_back(M("llama3.1-70b", 80, 8192, 64, 28672, 128256).llama().kv(8).published(70.55e9, 0, llama3));
  p.push_back(M("llama3.1-405b", 126, 16384, 128, 53248, 128256).llama().kv(8).published(405.85e9, 0, llama3));
  p.push_back(M("qwen2-1.5b", 28, 1536, 12, 8960, 151936).llama().kv(2).tied().qkv_bias().published(
      1.54e9, 0, "Qwen2 technical report (2024); Qwen/Qwen2-1.5B config.json"));
  const char* mixtral = "Mistral AI (2024) Mixtral of Experts; mistralai/Mixtral-*-v0.1 config.json";
  p.push_back(M("mixtral-8x7b", 32, 4096, 32, 14336, 32000).llama().kv(8).moe(8, 2, 14336).published(46.7e9, 12.9e9, mixtral));
  p.push_back(M("mixtral-8x22b", 56, 6144, 48, 16384, 32768).llama().kv(8).moe(8, 2, 16384).published(141e9, 39e9, mixtral));
  p.push_back(M("qwen3-30b-a3b", 48, 2048, 32, 6144, 151936).llama().kv(4).head_dim(128).moe(128, 8, 768).published(
      30.5e9, 3.3e9, "Qwen3 technical report (2025); Qwen/Qwen3-30B-A3B config.json"));
  // Every layer MoE (intermediate_size 12288 is no layer's); untied embeddings.
  p.push_back(M("qwen3-235b-a22b", 94, 4096, 64, 12288, 151936).llama().kv(4).head_dim(128).moe(128, 8, 1536).published(
      235e9, 22e9, "Qwen3 technical report (2025); Qwen/Qwen3-235B-A22B config.json"));
  {
    // DeepSeek-V3: MLA attention, 1 shared + 256 routed experts (top 8), first 3 layers dense.
    // The published 671B excludes the 14B multi-token-prediction module (685B on the hub).
    M m("deepseek-v3", 61, 7168, 128, 18432, 129280);
    m.llama().moe(256, 8, 2048, 1, 2048, 3);
    m.s.mla = MlaSpec{1536, 512, 64, 128, 128};
    m.s.head_dim = 192;
    m.s.mtp_layers = 1;  // config.json num_nextn_predict_layers = 1 (Sec. 2.2, trained with D = 1)
    m.s.moe->route_groups = 8;      // config.json n_group: node-limited routing (Sec. 2.1.2),
    m.s.moe->route_group_topk = 4;  // topk_group: a token reaches at most 4 nodes
    p.push_back(m.published(671e9, 37e9, "DeepSeek-V3 technical report (2024) Sec. 4.2; deepseek-ai/DeepSeek-V3 config.json"));
  }
  return p;
}

GpuSpec gpu(std::string name, double memory_mib, double bf16_tflops, double fp16_tflops, double fp8_tflops,
            double fp32_tflops, double hbm_gbps, double host_link_gbps, double board_power_w = 0) {
  return GpuSpec{.name = std::move(name),
                 .memory_bytes = memory_mib * kMiB,
                 .peak_bf16_flops_per_s = bf16_tflops * kTera,
                 .peak_fp16_flops_per_s = fp16_tflops * kTera,
                 .peak_fp8_flops_per_s = fp8_tflops * kTera,
                 .peak_fp32_flops_per_s = fp32_tflops * kTera,
                 .hbm_bandwidth_bytes_per_s = hbm_gbps * kGBps,
                 .host_link_bandwidth_bytes_per_s = host_link_gbps * kGBps,
                 .board_power_w = board_power_w};
}

// Datasheet figures, dense (no 2:4 sparsity). Memory is the total nvidia-smi reports where known.
//   V100 SXM2 32GB: 125 TFLOP/s FP16 tensor, no BF16/FP8, 900 GB/s (NVIDIA V100 datasheet).
//   A100 SXM 40/80GB: 312 BF16/FP16, 1555 / 2039 GB/s (NVIDIA A100 datasheet).
//   H100 SXM5 80GB: 989.4 BF16/FP16, 1978.9 FP8, 3.35 TB/s (NVIDIA H100 datasheet).
//   H800 SXM5: same chip and HBM as H100 SXM, NVLink cut to 400 GB/s (bidirectional).
//   RTX A5000: 111.1 dense tensor TFLOP/s (222.2 sparse), 24 GB GDDR6, 768 GB/s.
//   RTX 3080 10GB: 59.5 FP16/BF16 tensor TFLOP/s with FP32 accumulate (GA102 whitepaper), 760 GB/s.
// Board power, where a source this project cites states it (the peaks are for it; a lower power
// limit scales them, GpuSpec::power_limit_w): H100 SXM 700 W (dgxc-benchmarking rows: "H100 80GB
// HBM3 700W", data/published-runs), H200 700 W (MLPerf system file, below), B200 1000 W (below).
//
// The Hopper-refresh and Blackwell GPUs, as collected in data/published-runs/SOURCES.md ("GPU
// datasheet figures for the new GPU types"):
//   H200 SXM: 141 GB HBM3e, 4.8 TB/s, NVLink 4 900 GB/s per GPU, 700 W (mlcommons/inference_results_v4.1
//     @a2f5d66d closed/NVIDIA/systems/H200-SXM-141GBx8_TRT.json); "the exact same compute as an H100",
//     141 GiB HBM3e (PyTorch blog on float8 rowwise training on 2K H200s, Crusoe); so the H100 dense
//     peaks, 989 BF16 / 1979 FP8 (dgxc-benchmarking README.md @841f5466, "Peak Theoretical
//     Throughput", non-sparse), kept at the H100 preset's 989.4 / 1978.9. Memory 143771 MiB is the
//     nvidia-smi total this preset has carried (140.4 GiB, between the cited 141 GB and 141 GiB); it is
//     not itself in the sources above.
//   B200 (DGX/HGX B200, 1000 W): 2250 BF16, 4500 FP8 (NVFP4 9000, not modelled), 180 GB HBM3e
//     ("8x B200 180 GB"), 7.7 TB/s, NVLink 5 1.8 TB/s per GPU (dgxc-benchmarking README.md
//     @841f5466: "Peak Theoretical Throughput" and "B200 Reference Architecture").
//   GB200 (NVL72): 2450 BF16, 4900 FP8 (NVFP4 9800), 186 GB HBM3e, 8 TB/s, NVLink 5 1.8 TB/s per GPU
//     (dgxc-benchmarking README.md @841f5466: "Peak Theoretical Throughput" and "GB200 Reference
//     Architecture"; the v25.05.04 README @6be5ea0 gives 16 TB/s and NVLink 3.6 TB/s per 2-GPU superchip).
//   B300 (DGX B300, 1100 W): 2250 BF16, 4500 FP8 (NVFP4 13500), 270 GB HBM3e ("8x B300 270 GB"),
//     7.7 TB/s, NVLink 5 1.8 TB/s per GPU; SpectrumX 8x 800 Gb/s compute links per node
//     (dgxc-benchmarking README.md @841f5466: "Peak Theoretical Throughput" and "B300 Reference
//     Architecture"). The dense BF16/FP8 peaks are the B200's: Blackwell Ultra adds NVFP4 rate.
//   GB300 (NVL72): 2450 BF16, 4900 FP8 (NVFP4 14700), 279 GB HBM3e per GPU, 8 TB/s, NVLink 5 1.8 TB/s
//     per GPU, "TDP configurable up to 1,400 W" (same README, "GB300 Reference Architecture"); the
//     README does not say at which power its peaks hold, so no board power is set.
//   B200, GB200, B300 and GB300 memory: the sources give no nvidia-smi total, so memory is the datasheet figure
//   as GB x 1e9 bytes (180e9, 186e9). For H100/H200 the nvidia-smi total exceeds GB x 1e9 (H200:
//   150.8e9 bytes for "141 GB"), so these two presets may understate usable memory by a few percent.
// Host link (GPU <-> host memory, per direction; what activation offload moves over), assumed, not
// measured: 0.8 of the link's per-direction rate after encoding, the share pinned copies commonly
// reach (PCIe framing and flow control take the rest): PCIe 3.0 x16 15.8 GB/s -> 12.6 (V100 SXM2),
// 4.0 x16 31.5 -> 25.2 (A100, RTX), 5.0 x16 63 -> 50.4 (H100, H800, H200, B200, B300). GB200 and GB300: NVLink-C2C,
// 900 GB/s both directions between one Grace CPU and its two GPUs (dgxc-benchmarking README.md
// @841f5466, "GB200 Reference Architecture"), so 225 GB/s per GPU per direction -> 180. A cluster
// file's "host_link_bandwidth" replaces it (a measured figure is better).
//   FP16 peaks equal BF16 on all of them (same tensor-core rate); FP32 (CUDA-core) peaks for B200 and
//   GB200 are not in the sources read and are left 0: nothing GEMM-heavy uses them.
std::vector<GpuSpec> make_gpu_presets() {
  // Datasheet memory in GB (1e9 bytes) where the nvidia-smi total is unknown.
  auto datasheet_gb = [](GpuSpec g, double gigabytes) {
    g.memory_bytes = gigabytes * 1e9;
    return g;
  };
  return {gpu("v100-32gb", 32768, 0, 125, 0, 15.7, 900, 12.6),
          gpu("a100-40gb", 40960, 312, 312, 0, 19.5, 1555, 25.2),
          gpu("a100-80gb", 81920, 312, 312, 0, 19.5, 2039, 25.2),
          gpu("h100-sxm", 81559, 989.4, 989.4, 1978.9, 66.9, 3350, 50.4, 700),
          gpu("h800", 81559, 989.4, 989.4, 1978.9, 66.9, 3350, 50.4, 700),
          gpu("h200", 143771, 989.4, 989.4, 1978.9, 66.9, 4800, 50.4, 700),
          datasheet_gb(gpu("b200", 0, 2250, 2250, 4500, 0, 7700, 50.4, 1000), 180),
          datasheet_gb(gpu("gb200", 0, 2450, 2450, 4900, 0, 8000, 180), 186),
          datasheet_gb(gpu("b300", 0, 2250, 2250, 4500, 0, 7700, 50.4, 1100), 270),
          datasheet_gb(gpu("gb300", 0, 2450, 2450, 4900, 0, 8000, 180), 279),
          gpu("rtx-a5000", 24564, 111.1, 111.1, 0, 27.8, 768, 25.2),
          gpu("rtx-3080", 10240, 59.5, 59.5, 0, 29.8, 760, 25.2)};
}

ClusterPreset node(std::string name, const char* gpu_name, int gpus, double intra_gbps, double inter_gbps,
                   double intra_us, double inter_us, std::string source, int nvlink_domain_gpus = 0) {
  ClusterSpec c;
  c.name = std::move(name);
  c.gpu = find_gpu_preset(gpu_name);
  c.nodes = 1;
  c.gpus_per_node = gpus;
  c.intra_node_bandwidth_bytes_per_s = intra_gbps * kGBps;
  c.inter_node_bandwidth_bytes_per_s = inter_gbps * kGBps;
  c.intra_node_latency_s = intra_us * kUs;
  c.inter_node_latency_s = inter_us * kUs;
  c.nvlink_domain_gpus = nvlink_domain_gpus;
  return ClusterPreset{c, std::move(source)};
}

// Bandwidths per GPU per direction. Latencies are per ring step (NCCL small-message figures are a
// few microseconds inside a node and ~5-10 us across InfiniBand). Every preset is one node on one
// non-blocking fabric (nodes_per_pod = 0); a cluster file describes pods (examples/).
// The first preset with a GPU is that GPU's reference node (reference_node_for_gpu).
std::vector<ClusterPreset> make_cluster_presets() {
  return {
      node("dgx-1-v100", "v100-32gb", 8, 150, 6.25, 3, 8,
           "DGX-1V: NVLink2 6 links x 25 GB/s per GPU; 4x EDR 100 Gb/s per 8 GPUs"),
      node("dgx-2", "v100-32gb", 16, 150, 6.25, 3, 8,
           "DGX-2: NVSwitch 150 GB/s per GPU per direction; 8x EDR 100 Gb/s per 16 GPUs"),
      node("dgx-a100", "a100-80gb", 8, 300, 25, 2, 6,
           "DGX A100 640GB: NVLink3 600 GB/s bidirectional per GPU; 8x HDR 200 Gb/s (one per GPU)"),
      node("dgx-a100-40gb", "a100-40gb", 8, 300, 25, 2, 6, "DGX A100 320GB: as dgx-a100 with 40GB GPUs"),
      node("dgx-h100", "h100-sxm", 8, 450, 50, 2, 6,
           "DGX H100: NVLink4 900 GB/s bidirectional per GPU; 8x ConnectX-7 NDR 400 Gb/s (one per GPU)"),
      node("hgx-h800", "h800", 8, 200, 50, 2, 6, "HGX H800: NVLink 400 GB/s bidirectional per GPU; 8x 400 Gb/s"),
      node("dgx-h200", "h200", 8, 450, 50, 2, 6,
           "DGX H200: NVLink4 18 links, 900 GB/s bidirectional per GPU; 8x 400 Gb/s InfiniBand compute links "
           "(one per GPU; mlcommons/inference_results_v4.1 @a2f5d66d H200-SXM-141GBx8_TRT.json lists 10x 400 Gb IB "
           "per node, of which we count the 8 compute links, as on DGX H100; the torchtitan 2K-H200 cluster "
           "has 400 Gb/s RDMA per GPU)"),
      node("dgx-b200", "b200", 8, 900, 50, 2, 6,
           "DGX B200: NVLink5 18 links, 1.8 TB/s bidirectional per GPU; InfiniBand 8x 400 Gb/s compute links per "
           "node, one per GPU (dgxc-benchmarking README.md @841f5466, B200 Reference Architecture). Latencies "
           "assumed as DGX H100"),
      node("gb200-nvl72", "gb200", 4, 900, 50, 2, 6,
           "GB200 NVL72 compute tray (Slurm node): 4 GPUs (2 superchips); NVLink5 1.8 TB/s bidirectional per GPU "
           "across a 72-GPU NVLink domain of 18 trays (dgxc-benchmarking README.md @841f5466, GB200 Reference "
           "Architecture; tray size: Megatron-LM skills/mcore-onboard-gb200-1node-tests @d98e8a64). ASSUMPTION: "
           "one 400 Gb/s ConnectX-7 scale-out NIC per GPU; the sources read do not state the scale-out "
           "network. Latencies assumed as DGX H100",
           72),
      node("dgx-b300", "b300", 8, 900, 100, 2, 6,
           "DGX B300: NVLink5 1.8 TB/s bidirectional per GPU; SpectrumX 8x 800 Gb/s compute links per node, one "
           "per GPU (dgxc-benchmarking README.md @841f5466, B300 Reference Architecture). Latencies assumed as "
           "DGX H100"),
      node("gb300-nvl72", "gb300", 4, 900, 100, 2, 6,
           "GB300 NVL72 compute tray (Slurm node): 4 GPUs (2 superchips); NVLink5 1.8 TB/s bidirectional per GPU "
           "across a 72-GPU NVLink domain (dgxc-benchmarking README.md @841f5466, GB300 Reference Architecture; "
           "tray and rack as GB200 NVL72). ASSUMPTION: one 800 Gb/s scale-out NIC per GPU, as the same README's "
           "DGX B300 has; it does not state the GB300 scale-out network. Latencies assumed as DGX H100",
           72),
      node("workstation-rtx-a5000", "rtx-a5000", 4, 25, 3.125, 5, 15,
           "4x RTX A5000 on PCIe 4.0 x16 (~25 GB/s); 100 GbE shared by 4 GPUs"),
      node("workstation-rtx-3080", "rtx-3080", 4, 20, 1.25, 5, 20,
           "4x RTX 3080 on PCIe 4.0 (no P2P, ~20 GB/s through the host); 40 GbE shared by 4 GPUs"),
  };
}

template <typename T, typename NameOf>
std::vector<std::string> names_of(const std::vector<T>& items, NameOf name_of) {
  std::vector<std::string> out;
  out.reserve(items.size());
  for (const auto& item : items) out.push_back(name_of(item));
  return out;
}

}  // namespace

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> presets = make_model_presets();
  return presets;
}
const std::vector<GpuSpec>& gpu_presets() {
  static const std::vector<GpuSpec> presets = make_gpu_presets();
  return presets;
}
const std::vector<ClusterPreset>& cluster_presets() {
  static const std::vector<ClusterPreset> presets = make_cluster_presets();
  return presets;
}

std::vector<std::string> model_preset_names() {
  return names_of(model_presets(), [](const ModelPreset& p) { return p.spec.name; });
}
std::vector<std::string> gpu_preset_names() {
  return names_of(gpu_presets(), [](const GpuSpec& g) { return g.name; });
}
std::vector<std::string> cluster_preset_names() {
  return names_of(cluster_presets(), [](const ClusterPreset& c) { return c.node.name; });
}

const ModelPreset& find_model_preset(std::string_view name) {
  for (const auto& p : model_presets())
    if (p.spec.name == name) return p;
  const auto names = model_preset_names();
  throw Error(unknown_name_message("model preset", name, names) + " (or give a path to a model file)");
}

const GpuSpec& find_gpu_preset(std::string_view name) {
  for (const auto& g : gpu_presets())
    if (g.name == name) return g;
  const auto names = gpu_preset_names();
  throw Error(unknown_name_message("GPU preset", name, names));
}

const ClusterPreset& find_cluster_preset(std::string_view name) {
  for (const auto& c : cluster_presets())
    if (c.node.name == name) return c;
  const auto names = cluster_preset_names();
  throw Error(unknown_name_message("cluster preset", name, names) + " (or NAME:NODES, GPUxCOUNT, or a cluster file)");
}

const ClusterPreset& reference_node_for_gpu(std::string_view gpu_name) {
  for (const auto& c : cluster_presets())
    if (c.node.gpu.name == gpu_name) return c;  // first preset with this GPU is its reference node
  throw Error("no reference node for GPU '" + std::string(gpu_name) + "'");
}

}  // namespace paratune
