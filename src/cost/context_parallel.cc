#include "context_parallel.h"

#include <algorithm>

#include "device.h"

namespace paratune::cost_detail {

double attention_kv_block_tokens(int cp, double seq_len, bool causal) {
  return seq_len / (cp * (causal ? 2.0 : 1.0));
}

RingAttentionCost ring_attention_cost(const Device& d, const RingAttentionInput& in) {
  RingAttentionCost out;
  if (in.cp <= 1) return out;
  const double steps = in.cp - 1;
  // Correction pass per ring step (TE's flash_attn_fwd_out_correction / the backward's FP32
  // accumulations): forward reads and writes the FP32 output and LSE and reads the step's BF16
  // partial output (4 + 4 + 2 bytes per output element); backward accumulates dQ in FP32 (8 bytes
  // per query element) and passes dK/dV in FP32 (read + write, 8 bytes per key/value element).
  const double out_elements = in.tokens * in.heads * in.v_dim;
  const double q_elements = in.tokens * in.heads * in.qk_dim;
  const double kv_elements = in.tokens * in.kv_heads * (in.qk_dim + in.v_dim);
  out.extra_forward_s = steps * 10 * out_elements / d.hbm_bytes_per_s;
  out.extra_backward_s = steps * (8 * q_elements + 8 * kv_elements) / d.hbm_bytes_per_s;
  // Step k+1's K/V arrive while step k's kernel runs: cp-1 transfers, each hidden behind one step
  // (1/cp of the attention). Backward passes K/V and dK/dV (twice the bytes) behind each step.
  const double forward_step = in.attention_forward_s / in.cp;
  const double backward_step = in.attention_backward_s / in.cp;
  out.exposed_forward_s = steps * std::max(0.0, in.kv_step_s - forward_step);
  out.exposed_backward_s = steps * std::max(0.0, 2 * in.kv_step_s - backward_step);
  out.hidden_s = steps * (std::min(in.kv_step_s, forward_step) + std::min(2 * in.kv_step_s, backward_step));
  // Send and receive buffers for K/V and, backward, dK/dV (BF16, double-buffered).
  out.buffer_bytes = 2 * 2 * kv_elements * kActivationBytes;
  return out;
}

}  // namespace paratune::cost_detail
