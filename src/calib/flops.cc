// FLOP-counting conventions of the published sources, so that a predicted time converts to TFLOP/s
// or MFU the way the source computed them.
#include "paratune/calib/published_runs.h"
#include "paratune/cost/model_stats.h"

namespace paratune {

double megatron_sc21_flops(const ModelSpec& m, double batch, double seq) {
  const double L = m.num_layers, h = m.hidden_size, V = m.vocab_size;
  return 96 * batch * seq * L * h * h * (1 + seq / (6 * h) + V / (16 * L * h));
}

// Megatron-LM megatron/training/training.py num_floating_point_operations, transformer_flops(), per
// token (x batch x seq at the end). 12 = 3 passes (forward, wgrad, dgrad) x 2 FLOPs per MAC x 2 GEMMs
// of each size per block (Narayanan et al. SC'21, appendix).
//   attention (MHA/GQA):  12·L·h²·(1 + g/a + c·s/h)·(a·d/h)     g = query groups, d = head size,
//                                                              c = 1 (r0.8, NeMo Llama/GPT/Nemotron
//                                                              formulas) or 1/2 (main: causal)
//   attention (MLA):      6·L·( q_term + r_kv·(h + a·(d_nope + d_v) + 1) + h·d_rope + a·d_v·h
//                               + c·s·a·(d_nope + d_rope) + c·s·a·d_v ),
//                         q_term = r_q·(h + a·(d_nope + d_rope) + 1), or h·a·(d_nope + d_rope) without r_q
//   MLP:                  12·h·( f·γ·L_dense + (f_e·k·γ + f_shared·γ)·L_moe ),  γ = 3/2 if gated
//   MTP (per layer):      its attention and MLP as a layer of the kind of the last layer,
//                         + 6·(3h + 2h²) (norms, projection) + its own logits
//   logits:               6·h·V·(1 + mtp)
double megatron_flops(const ModelSpec& m, double batch, double seq, const MegatronFlopsOptions& options) {
  const double h = m.hidden_size, V = m.vocab_size, a = m.num_attention_heads;
  const double c = options.causal_attention_half ? 0.5 : 1.0;
  const int mtp = options.mtp_layers;
  double moe_layers = m.num_moe_layers();
  double dense_layers = m.num_layers - moe_layers;
  if (mtp > 0) {
    if (m.is_moe_layer(m.num_layers - 1)) moe_layers += mtp;
    else dense_layers += mtp;
  }
  const double L = m.num_layers + mtp;

  double attention = 0;
  if (m.mla) {
    const MlaSpec& x = *m.mla;
    const double qk = x.qk_nope_head_dim + x.qk_rope_head_dim;
    const double q_term = x.q_lora_rank > 0 ? x.q_lora_rank * (h + a * qk + 1) : h * a * qk;
    attention = 6 * L *
                (q_term + x.kv_lora_rank * (h + a * (x.qk_nope_head_dim + x.v_head_dim) + 1) + h * x.qk_rope_head_dim +
                 a * x.v_head_dim * h + c * seq * a * qk + c * seq * a * x.v_head_dim);
  } else {
    const double query_ratio = m.head_size() * a / h;
    const double kv_ratio = static_cast<double>(m.kv_heads()) / a;
    attention = 12 * L * h * h * (1 + kv_ratio + c * seq / h) * query_ratio;
  }

  const double gated = m.gated_mlp ? 1.5 : 1.0;
  double mlp = 12 * h * m.ffn_hidden_size * gated * dense_layers;
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    const double shared = static_cast<double>(e.num_shared_experts) * e.shared_ffn();
    mlp += 12 * h * (e.expert_ffn_hidden_size * e.top_k + shared) * gated * moe_layers;
  }
  const double mtp_extra = 6.0 * mtp * (3 * h + 2 * h * h);
  const double logits = 6 * h * V * (1 + mtp);
  return batch * seq * (attention + mlp + mtp_extra + logits);
}

double torchtitan_flops(const ModelSpec& m, double batch, double seq) {
  const ParamCounts c = count_parameters(m);
  const double non_embedding = c.total - static_cast<double>(m.vocab_size) * m.hidden_size;
  const double per_token = 6 * non_embedding + 12.0 * m.num_layers * m.num_attention_heads * m.head_size() * seq;
  return per_token * batch * seq;
}

}  // namespace paratune
