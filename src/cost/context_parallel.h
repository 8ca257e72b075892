// Context parallelism: ring attention (Megatron-Core / Transformer Engine's P2P CP with the
// load-balanced causal split). Internal to the cost module.
//
// The sequence is cut into 2·cp chunks and rank i keeps chunks i and 2cp-1-i, so every rank does the
// same causal work (Megatron-Core's get_batch_on_this_cp_rank). Attention then runs cp steps: step 0
// on the rank's own chunks, then cp-1 steps on the key/value chunks passed around the ring, each
// step's transfer overlapping the previous step's kernel (Liu et al. 2023, Ring Attention; TE
// AttnFuncWithCPAndKVP2P). What CP costs even when the ring is hidden:
//   - smaller kernels: each step attends to a block of seq/(2cp) keys instead of the whole causal
//     sequence (seq/2 on average), and flash attention is slower on short key blocks
//     (Device::attention_half_kv_tokens);
//   - the correction pass: every step's partial output is merged into the running output with the
//     log-sum-exp rescaling (forward: read/write the FP32 output and LSE; backward: accumulate dQ and
//     pass dK/dV in FP32), all memory-bound;
//   - interference: the hidden transfers take SMs and HBM bandwidth (Calibration::overlap_interference);
//   - buffers: send/receive K/V blocks, double-buffered.
#pragma once

namespace paratune::cost_detail {

struct Device;

struct RingAttentionInput {
  int cp = 1;
  double seq_len = 0;
  bool causal = true;
  double tokens = 0;            // query tokens of one micro-batch on this rank (mbs·seq/cp)
  double heads = 0;             // query heads on this rank
  double kv_heads = 0;          // key/value heads on this rank
  double qk_dim = 0, v_dim = 0;
  double attention_forward_s = 0;   // the rank's attention kernels, forward, without CP effects
  double attention_backward_s = 0;
  double kv_step_s = 0;             // one ring step's K/V transfer (latency + bytes / bandwidth)
};

struct RingAttentionCost {
  double extra_forward_s = 0, extra_backward_s = 0;      // correction passes (compute)
  double exposed_forward_s = 0, exposed_backward_s = 0;  // ring transfers not hidden
  double hidden_s = 0;                                   // transfers hidden behind the kernels
  double buffer_bytes = 0;                               // K/V send/receive buffers
};

// The key/value block one attention kernel call sees: seq/2 on average for a causal mask without
// CP, seq/(2cp) per ring step with it (seq and seq/cp without a causal mask).
double attention_kv_block_tokens(int cp, double seq_len, bool causal);

RingAttentionCost ring_attention_cost(const Device& device, const RingAttentionInput& in);

}  // namespace paratune::cost_detail
