// ModelSpec: the architecture of a decoder (or encoder) transformer, as far as cost and memory care.
//
// Field names follow the model-spec file format (YAML/JSON), which accepts exactly these keys.
// Loading from files and Hugging Face config.json: spec/io.h. Presets: spec/presets.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "paratune/spec/enums.h"

namespace paratune {

// Mixture-of-experts feed-forward layers (Mixtral, Qwen-MoE, DeepSeek).
struct MoeSpec {
  int num_experts = 0;             // routed experts per MoE layer
  int top_k = 1;                   // routed experts each token goes to
  int expert_ffn_hidden_size = 0;  // intermediate size of one routed expert
  int num_shared_experts = 0;      // always-active experts (DeepSeek, Qwen2-MoE)
  // Intermediate size of one shared expert; 0 = expert_ffn_hidden_size. Qwen2-MoE's single shared
  // expert is wider than the routed ones (shared_expert_intermediate_size).
  int shared_expert_ffn_hidden_size = 0;
  int first_dense_layers = 0;  // leading layers with a dense MLP (DeepSeek first_k_dense_replace)
  int layer_freq = 1;          // after those, every layer_freq-th layer is MoE (1 = all)
  // Group-limited routing (DeepSeek-V3: 8 groups, top 4; HF n_group / topk_group, Megatron
  // --moe-router-num-groups / --moe-router-group-topk): a token's top_k experts come from
  // route_group_topk of route_groups equal, contiguous blocks of experts. 0 = unlimited. Laid out in
  // order over the expert ranks, a group sits on few nodes: DeepSeek-V3 sends a token to at most 4.
  int route_groups = 0;
  int route_group_topk = 0;

  // Whether decoder layer `layer` (0-based) has an MoE MLP.
  [[nodiscard]] bool is_moe_layer(int layer) const {
    return layer >= first_dense_layers && (layer - first_dense_layers) % layer_freq == 0;
  }
  [[nodiscard]] int shared_ffn() const {
    return shared_expert_ffn_hidden_size > 0 ? shared_expert_ffn_hidden_size : expert_ffn_hidden_size;
  }
};

// Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values through low-rank projections.
struct MlaSpec {
  int q_lora_rank = 0;  // 0 = queries projected directly from the hidden state
  int kv_lora_rank = 0;
  int qk_rope_head_dim = 0;  // per-head dims carrying rotary position
  int qk_nope_head_dim = 0;  // per-head dims without position
  int v_head_dim = 0;
};

struct ModelSpec {
  std::string name;
  int num_layers = 0;
  int hidden_size = 0;
  int num_attention_heads = 0;
  int num_kv_heads = 0;      // GQA/MQA key-value heads; 0 in a file means "= num_attention_heads"
  int head_dim = 0;          // 0 in a file means hidden_size / num_attention_heads
  int ffn_hidden_size = 0;   // dense MLP intermediate size (0 in a file: 4 * hidden_size)
  bool gated_mlp = false;    // SwiGLU/GeGLU: three MLP matrices instead of two
  int vocab_size = 0;
  bool tie_embeddings = false;  // output layer shares the input embedding matrix
  NormKind norm = NormKind::kLayerNorm;
  bool bias = false;      // biases on linear layers (and layernorm bias)
  bool qkv_bias = false;  // biases on the q/k/v projections only (Qwen2); implied by `bias`
  bool causal = true;     // decoder (causal mask) vs encoder
  bool dropout = false;   // dropout layers present in training (GPT-2/BERT era models)
  PositionEmbedding position_embedding = PositionEmbedding::kRotary;
  int max_position_embeddings = 0;  // rows of a learned position table
  int type_vocab_size = 0;          // BERT token-type embeddings
  bool pooler = false;              // BERT pooler (hidden x hidden dense)
  // Multi-token-prediction layers trained with the model (DeepSeek-V3 Sec. 2.2; Hugging Face
  // num_nextn_predict_layers, Megatron-LM --mtp-num-layers). Each: two RMSNorms, a 2h -> h
  // projection, one transformer layer of the model's kind and the shared output head + loss again.
  int mtp_layers = 0;
  std::optional<MoeSpec> moe;
  std::optional<MlaSpec> mla;

  [[nodiscard]] int kv_heads() const { return num_kv_heads > 0 ? num_kv_heads : num_attention_heads; }
  [[nodiscard]] int head_size() const { return head_dim > 0 ? head_dim : hidden_size / num_attention_heads; }
  [[nodiscard]] bool is_moe_layer(int layer) const { return moe && moe->is_moe_layer(layer); }
  [[nodiscard]] int num_moe_layers() const;
};

// Checks ranges and relations (heads divide hidden when head_dim is unset, top_k <= experts, ...).
// Throws Error naming the field, the value and the rule.
void validate(const ModelSpec& model);

}  // namespace paratune
