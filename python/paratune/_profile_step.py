"""The training step of ``python3 -m paratune.profile`` (docs/profile.md): a reduced-depth Llama-style decoder
(token embedding; `layers` blocks of RMSNorm, causal attention with grouped-query heads and RoPE, RMSNorm and a
SwiGLU MLP or a top-k routed mixture of experts; final RMSNorm; LM head; cross-entropy), trained with AdamW
on one fixed batch: one warm-up step, then `steps` timed ones. The blocks follow Meta's reference Llama
(github.com/meta-llama/llama3, llama/model.py: RMSNorm, apply_rotary_emb, Attention, FeedForward); the MoE
layer routes each token to its top-k experts by softmax gates renormalised over the k (Mixtral, Jiang et al.
2024, eq. 1), plus always-on shared experts (DeepSeekMoE, Dai et al. 2024, eq. 9) and the Switch
Transformer's load-balancing loss (Fedus et al. 2021, eqs. 4-6).

Precision: bf16 (or fp16, with a loss scaler) autocast over fp32 weights on CUDA, as mixed-precision training
does; fp8 plans run the step in bf16 (fp8 training needs Transformer Engine, which this measurer does not
require). On the CPU the step runs in fp32. The profile names the dtype that ran.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

LEARNING_RATE = 1e-3  # AdamW's, the same in every profile: the step's time does not depend on it
WEIGHT_DECAY = 0.1
BETAS = (0.9, 0.95)
ROPE_THETA = 500000.0  # Llama 3's
NORM_EPS = 1e-5
INIT_STD = 0.02
LOAD_BALANCE_COEFFICIENT = 1e-2


def has_sdpa():
    return hasattr(F, "scaled_dot_product_attention")  # PyTorch >= 2.0


def explicit_attention(q, k, v, causal):
    """softmax(q k^T / sqrt(d) + causal mask) v, the scores and softmax in fp32; k/v repeated to q's heads."""
    repeat = q.shape[1] // k.shape[1]
    if repeat > 1:
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
    scores = torch.matmul(q, k.transpose(-2, -1)).float() / math.sqrt(q.shape[-1])
    if causal:
        seq = q.shape[2]
        mask = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.matmul(scores.softmax(-1).to(v.dtype), v)


def sdpa(q, k, v, causal, native_gqa):
    """PyTorch's scaled_dot_product_attention; GQA by its enable_gqa (PyTorch >= 2.5) or k/v repeated."""
    if native_gqa:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    repeat = q.shape[1] // k.shape[1]
    if repeat > 1:
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def core_attention(q, k, v):
    """Causal attention as the step runs it: SDPA (its default backend choice) where PyTorch has it."""
    if has_sdpa():
        return sdpa(q, k, v, True, False)
    return explicit_attention(q, k, v, True)


def rms_norm(x, weight, eps):
    """x * rsqrt(mean(x^2) + eps) * weight over the last dimension, the mean in fp32 (llama/model.py RMSNorm)."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * weight


class RmsNorm(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))

    def forward(self, x):
        return rms_norm(x, self.weight, NORM_EPS)


def rope_tables(seq_len, head_dim, device):
    """cos and sin of position * theta^(-2i/d) for i < d/2 (RoFormer, Su et al. 2021, eq. 34), (seq, d/2)."""
    inverse = 1.0 / (ROPE_THETA ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    angles = torch.outer(torch.arange(seq_len, device=device).float(), inverse)
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin):
    """Rotates each pair (x[2i], x[2i+1]) of x (batch, heads, seq, d) by its position's angle."""
    pairs = x.float().unflatten(-1, (-1, 2))
    even, odd = pairs[..., 0], pairs[..., 1]
    rotated = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
    return rotated.flatten(-2).type_as(x)


def _linear(inputs, outputs):
    return nn.Linear(inputs, outputs, bias=False)


class Attention(nn.Module):
    def __init__(self, hidden, heads, kv_heads, head_dim=None):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim or hidden // heads
        self.wq = _linear(hidden, heads * self.head_dim)
        self.wk = _linear(hidden, kv_heads * self.head_dim)
        self.wv = _linear(hidden, kv_heads * self.head_dim)
        self.wo = _linear(heads * self.head_dim, hidden)

    def forward(self, x, cos, sin):
        batch, seq, _ = x.shape
        q = self.wq(x).view(batch, seq, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        o = core_attention(apply_rope(q, cos, sin), apply_rope(k, cos, sin), v)
        return self.wo(o.transpose(1, 2).reshape(batch, seq, -1))


class Mlp(nn.Module):
    """w2(silu(w1 x) * w3 x) when gated (SwiGLU, Shazeer 2020), else w2(gelu(w1 x))."""

    def __init__(self, hidden, ffn, gated):
        super().__init__()
        self.w1 = _linear(hidden, ffn)
        self.w3 = _linear(hidden, ffn) if gated else None
        self.w2 = _linear(ffn, hidden)

    def forward(self, x):
        if self.w3 is None:
            return self.w2(F.gelu(self.w1(x)))
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    """Top-k routed experts: each token's output is the sum over its k experts of gate * expert(token), the
    gates a softmax over the router's logits renormalised over the k; S shared experts see every token (one
    MLP of S x F hidden units: the same function as S MLPs of F summed). Dispatch by a loop over the experts
    (index_select of their tokens, index_add of the results), as an unfused implementation runs it."""

    def __init__(self, hidden, moe, gated):
        super().__init__()
        self.top_k = moe["top_k"]
        self.router = _linear(hidden, moe["experts"])
        self.experts = nn.ModuleList(Mlp(hidden, moe["expert_ffn_hidden_size"], gated)
                                     for _ in range(moe["experts"]))
        shared = moe["shared_experts"] * moe["expert_ffn_hidden_size"]
        self.shared = Mlp(hidden, shared, gated) if shared else None

    def forward(self, x):
        tokens = x.reshape(-1, x.shape[-1])
        probabilities = self.router(tokens).float().softmax(-1)
        gates, chosen = probabilities.topk(self.top_k, dim=-1)
        gates = gates / gates.sum(-1, keepdim=True)
        out = torch.zeros(tokens.shape, dtype=torch.float32, device=x.device)
        for e, expert in enumerate(self.experts):
            token, slot = (chosen == e).nonzero(as_tuple=True)
            if token.numel() == 0:
                continue
            y = expert(tokens.index_select(0, token)).float() * gates[token, slot].unsqueeze(-1)
            out = out.index_add(0, token, y)
        if self.shared is not None:
            out = out + self.shared(tokens).float()
        # Switch Transformer: experts * sum_i (fraction of routed slots to i) * (mean router probability of i)
        experts = probabilities.shape[-1]
        fraction = F.one_hot(chosen, experts).float().sum((0, 1)) / chosen.numel()
        balance = experts * (fraction * probabilities.mean(0)).sum()
        return out.view(x.shape).type_as(x), balance


class Block(nn.Module):
    def __init__(self, step):
        super().__init__()
        hidden = step["hidden_size"]
        self.attention_norm = RmsNorm(hidden)
        self.attention = Attention(hidden, step["heads"], step["kv_heads"], step.get("head_dim"))
        self.mlp_norm = RmsNorm(hidden)
        self.moe = step["moe"] is not None
        self.mlp = (MoE(hidden, step["moe"], step["gated_mlp"]) if self.moe
                    else Mlp(hidden, step["ffn_hidden_size"], step["gated_mlp"]))

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        if self.moe:
            y, balance = self.mlp(self.mlp_norm(h))
            return h + y, balance
        return h + self.mlp(self.mlp_norm(h)), None


class Decoder(nn.Module):
    def __init__(self, step):
        super().__init__()
        self.embedding = nn.Embedding(step["vocab_size"], step["hidden_size"])
        self.blocks = nn.ModuleList(Block(step) for _ in range(step["layers"]))
        self.norm = RmsNorm(step["hidden_size"])
        self.head = _linear(step["hidden_size"], step["vocab_size"])
        for name, p in self.named_parameters():
            if not name.endswith("weight") or p.dim() < 2:
                continue
            nn.init.normal_(p, std=INIT_STD)

    def loss(self, tokens, targets):
        x = self.embedding(tokens)
        cos, sin = rope_tables(tokens.shape[1], self.blocks[0].attention.head_dim, tokens.device)
        balance = torch.zeros((), device=tokens.device)
        for block in self.blocks:
            x, b = block(x, cos, sin)
            if b is not None:
                balance = balance + b
        logits = self.head(self.norm(x))
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))
        return loss + LOAD_BALANCE_COEFFICIENT * balance


def step_dtype(ctx, precision):
    if not ctx.cuda:
        return torch.float32
    return torch.float16 if precision == "fp16" else torch.bfloat16


def measure_step(ctx, step, summary):
    """The plan's step echoed with the timed steps' median and spread, the peak of
    torch.cuda.max_memory_allocated over model, optimizer and steps (null on the CPU), the dtype that ran,
    the parameter count and every step's loss (the warm-up's first; they fall on the fixed batch)."""
    precision = ctx.plan["precision"]
    dtype = step_dtype(ctx, precision)
    if ctx.cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(ctx.device)
    torch.manual_seed(0)
    if hasattr(torch.device, "__enter__"):  # PyTorch >= 2.0: built on the device (no slow CPU init of a big model)
        with ctx.device:
            model = Decoder(step)
    else:
        model = Decoder(step).to(ctx.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, betas=BETAS, weight_decay=WEIGHT_DECAY)
    batch = torch.randint(0, step["vocab_size"], (step["micro_batch"], step["seq_len"] + 1), device=ctx.device)
    tokens, targets = batch[:, :-1], batch[:, 1:]
    scaler = None
    if dtype == torch.float16:  # loss scaling, as fp16 training needs
        scaler = torch.amp.GradScaler("cuda") if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()
    losses = []

    def train_step(_):
        optimizer.zero_grad(set_to_none=True)
        if dtype == torch.float32:
            loss = model.loss(tokens, targets)
        else:
            with torch.autocast(device_type="cuda", dtype=dtype):
                loss = model.loss(tokens, targets)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        losses.append(loss.detach())

    samples = ctx.time(train_step, warmup=1, repetitions=step["steps"])
    out = dict(step)
    out.update(summary(samples))
    out["max_memory_allocated_bytes"] = torch.cuda.max_memory_allocated(ctx.device) if ctx.cuda else None
    out["dtype"] = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}[dtype]
    if precision == "fp8" and ctx.cuda:
        out["note"] = "fp8 training needs Transformer Engine: the step ran in bf16"
    out["parameters"] = sum(p.numel() for p in model.parameters())
    out["attention"] = "sdpa" if has_sdpa() else "explicit matmul-softmax-matmul"
    out["losses"] = [float(x) for x in losses]
    return out

