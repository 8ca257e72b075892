#include "paratune/cost/model_stats.h"

namespace paratune {

LayerParams layer_params(const ModelSpec& m, bool moe_layer) {
  const double h = m.hidden_size;
  const double heads = m.num_attention_heads;
  const double norm_params = m.norm == NormKind::kLayerNorm ? 2 * h : h;  // gain (+ bias)
  LayerParams p;
  if (m.mla) {
    // DeepSeek-V2 Sec. 2.1.2: W_DQ, W_UQ (or W_Q), W_DKV + W_KR, W_UK + W_UV, W_O, and RMSNorms
    // on the two latent vectors.
    const MlaSpec& a = *m.mla;
    const double qk_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
    const double q = a.q_lora_rank > 0 ? h * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * heads * qk_dim
                                       : h * heads * qk_dim;
    const double kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank +
                      a.kv_lora_rank * heads * (a.qk_nope_head_dim + a.v_head_dim);
    p.attention = q + kv + heads * a.v_head_dim * h;
  } else {
    const double q_dim = heads * m.head_size();
    const double kv_dim = static_cast<double>(m.kv_heads()) * m.head_size();
    p.attention = h * (q_dim + 2 * kv_dim) + q_dim * h;
    if (m.qkv_bias) p.attention += q_dim + 2 * kv_dim;
    if (m.bias) p.attention += h;
  }
  p.norms = 2 * norm_params;
  auto mlp = [&](double ffn) {
    double w = (m.gated_mlp ? 3 : 2) * h * ffn;
    if (m.bias) w += (m.gated_mlp ? 2 : 1) * ffn + h;
    return w;
  };
  if (moe_layer) {
    const MoeSpec& e = *m.moe;
    p.router = h * e.num_experts;
    p.routed_expert = mlp(e.expert_ffn_hidden_size);
    p.shared_experts = e.num_shared_experts * mlp(e.shared_ffn());
  } else {
    p.dense_mlp = mlp(m.ffn_hidden_size);
  }
  return p;
}

ParamCounts count_parameters(const ModelSpec& m) {
  const double h = m.hidden_size;
  ParamCounts c;
  c.embedding = static_cast<double>(m.vocab_size) * h;
  if (m.position_embedding == PositionEmbedding::kLearned) c.embedding += static_cast<double>(m.max_position_embeddings) * h;
  c.embedding += static_cast<double>(m.type_vocab_size) * h;
  const double norm_params = m.norm == NormKind::kLayerNorm ? 2 * h : h;
  double final_norms = norm_params;                  // final norm (BERT: the embedding LayerNorm)
  if (!m.tie_embeddings) c.output_layer = static_cast<double>(m.vocab_size) * h + (m.bias ? m.vocab_size : 0);
  if (m.pooler) c.output_layer += h * h + h;
  if (!m.causal) {
    // BERT pre-training heads: MLM transform (dense + LayerNorm), decoder bias, NSP classifier.
    c.output_layer += h * h + h + norm_params + m.vocab_size + 2 * h + 2;
  }
  const LayerParams dense = layer_params(m, false);
  c.dense_layer_params = dense.non_expert();
  double total = c.embedding + c.output_layer + final_norms;
  double active = total;
  if (m.moe) {
    const LayerParams moe = layer_params(m, true);
    c.moe_layer_params = moe.non_expert() + m.moe->num_experts * moe.routed_expert;
    const int moe_layers = m.num_moe_layers();
    const int dense_layers = m.num_layers - moe_layers;
    total += dense_layers * c.dense_layer_params + moe_layers * c.moe_layer_params;
    active += dense_layers * c.dense_layer_params + moe_layers * (moe.non_expert() + m.moe->top_k * moe.routed_expert);
  } else {
    total += m.num_layers * c.dense_layer_params;
    active = total;
  }
  c.total = total;
  c.active = active;
  if (m.mtp_layers > 0) {
    const bool moe_kind = m.is_moe_layer(m.num_layers);  // the layer after the last decoder layer
    const LayerParams layer = layer_params(m, moe_kind);
    const double own = 2 * norm_params + 2 * h * h;  // enorm + hnorm, eh_proj
    c.mtp_layer_params = own + layer.non_expert() + (moe_kind ? m.moe->num_experts * layer.routed_expert : 0);
    c.mtp_layer_active = own + layer.non_expert() + (moe_kind ? m.moe->top_k * layer.routed_expert : 0);
  }
  return c;
}

double forward_flops_per_token(const ModelSpec& m, int seq_len) {
  const ParamCounts c = count_parameters(m);
  // GEMM parameters: everything active except embedding lookups; a tied output layer still runs
  // a vocab x hidden GEMM.
  double gemm_params = c.active - c.embedding;
  if (m.tie_embeddings) gemm_params += static_cast<double>(m.vocab_size) * m.hidden_size;
  const double qk_dim = m.mla ? m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim : m.head_size();
  const double v_dim = m.mla ? m.mla->v_head_dim : m.head_size();
  const double causal = m.causal ? 0.5 : 1.0;
  // MTP: each layer's own GEMMs and the shared output head once more (vocab x hidden).
  gemm_params += m.mtp_layers * (c.mtp_layer_active + static_cast<double>(m.vocab_size) * m.hidden_size);
  const double attention =
      2.0 * seq_len * (qk_dim + v_dim) * m.num_attention_heads * causal * (m.num_layers + m.mtp_layers);
  return 2 * gemm_params + attention;
}

}  // namespace paratune
