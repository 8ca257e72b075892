"""The routed experts' GEMMs of one MoE layer's forward, measured on one GPU, for bench/moe_expert_gemms.cc
to set beside the cost model's price of them (issue 41: "grouped GEMMs whose efficiency falls with tokens per
expert and expert width").

For each MoE model's expert shape (hidden H, expert FFN F, gated: FC1 is H -> 2F, FC2 F -> H) and each number of
local experts E (the experts one GPU holds at some expert-parallel degree) and tokens per expert T, it times the
FC1 and FC2 GEMMs of all E experts, two ways the frameworks run them:

* ``loop``: one cuBLAS GEMM per expert, back to back on one stream (Megatron-Core's TEGroupedMLP runs Transformer
  Engine's GroupedLinear, which issues one cuBLAS GEMM per expert; the sequential MLP does the same). Timed on the
  GPU from the first launch to the last completion, so it includes any gap the host leaves between launches.
* ``grouped``: ``torch._grouped_mm``, one CUTLASS grouped-GEMM kernel for all experts (torchtitan's MoE, PyTorch
  2.8 and later on Hopper). Forward, then its backward (input and weight gradients) where autograd has it.

Each way is timed twice: as PyTorch issues it (``*_ms``) and captured once in a CUDA graph and replayed
(``*_graph_ms``), which leaves the GPU's time alone; the cost model prices the host's launches apart.

Also: one small GEMM timed alone, back to back and replayed (the single-launch floor), and the host's cost to issue one
``torch.mm`` (op_issue_s's physical counterpart). Writes one JSON file; needs only PyTorch with CUDA.

    python3 bench/gpu/moe_expert_gemms.py --out moe_expert_gemms.json
"""

import argparse
import datetime
import json
import statistics
import time

import torch

# (model, hidden, expert FFN, [local experts, ...]): the local expert counts of the expert-parallel degrees the
# published runs use (128 experts at EP 1 and 8; DeepSeek-V3's 256 at EP 8 and 32; Mixtral's 8 at EP 1 and 8).
SHAPES = [
    ("qwen3-30b-a3b", 2048, 768, [128, 16]),
    ("qwen3-235b-a22b", 4096, 1536, [16]),
    ("deepseek-v3", 7168, 2048, [32, 8]),
    ("gpt-oss-120b", 2880, 2880, [16]),
    ("mixtral-8x7b", 4096, 14336, [8, 1]),
]
TOKENS_PER_EXPERT = [64, 128, 256, 512, 1024, 2048, 4096, 8192]
MAX_ELEMENTS = 3 << 30  # skip a point whose inputs, weights and outputs pass ~6 GB of bf16


def median_ms(samples):
    return statistics.median(samples) * 1e3


def gpu_time(run, warmup, repetitions):
    """Seconds per run on the GPU: CUDA events around each run, after `warmup` untimed runs."""
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repetitions):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3)
    return samples


def graph_time(run, warmup, repetitions):
    """Seconds per run of `run` captured once in a CUDA graph and replayed: the GPU's time alone, without the
    host's launches between kernels (the model prices those apart: op_issue_s)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm up (cuBLAS workspaces, autotuning) outside the capture
        run()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    return gpu_time(graph.replay, warmup, repetitions)


def replayed(out, name, run, args):
    """out[name + "_graph_ms"], or why it could not be captured."""
    try:
        out[name + "_graph_ms"] = median_ms(graph_time(run, args.warmup, args.repetitions))
    except (RuntimeError, TypeError) as error:
        out[name + "_graph_error"] = str(error).splitlines()[0][:200]
        torch.cuda.synchronize()


def measure_point(experts, tokens, hidden, ffn, args):
    dtype = torch.bfloat16
    total = experts * tokens
    x = torch.randn(total, hidden, device="cuda", dtype=dtype)
    w1 = torch.randn(experts, hidden, 2 * ffn, device="cuda", dtype=dtype) * 0.02
    w2 = torch.randn(experts, ffn, hidden, device="cuda", dtype=dtype) * 0.02
    h = torch.randn(total, ffn, device="cuda", dtype=dtype)
    out = {"experts": experts, "tokens_per_expert": tokens, "hidden": hidden, "ffn": ffn,
           "flops": 2.0 * total * hidden * 3 * ffn}

    def loop():
        for e in range(experts):
            rows = slice(e * tokens, (e + 1) * tokens)
            torch.mm(x[rows], w1[e])
            torch.mm(h[rows], w2[e])

    out["loop_ms"] = median_ms(gpu_time(loop, args.warmup, args.repetitions))
    replayed(out, "loop", loop, args)
    if hasattr(torch, "_grouped_mm"):
        offsets = torch.arange(1, experts + 1, device="cuda", dtype=torch.int32) * tokens
        try:  # some versions want the weights column-major: (E, N, K) transposed
            torch._grouped_mm(x, w1, offs=offsets)
        except (RuntimeError, TypeError):
            w1 = w1.transpose(1, 2).contiguous().transpose(1, 2)
            w2 = w2.transpose(1, 2).contiguous().transpose(1, 2)
            out["weights"] = "column-major"

        def grouped():
            torch._grouped_mm(x, w1, offs=offsets)
            torch._grouped_mm(h, w2, offs=offsets)

        try:
            out["grouped_ms"] = median_ms(gpu_time(grouped, args.warmup, args.repetitions))
        except (RuntimeError, TypeError) as error:
            out["grouped_error"] = str(error).splitlines()[0][:200]
        if "grouped_ms" in out:
            replayed(out, "grouped", grouped, args)
            xg = x.clone().requires_grad_(True)
            w1g, w2g = w1.clone().requires_grad_(True), w2.clone().requires_grad_(True)
            hg = h.clone().requires_grad_(True)
            g1 = torch.randn(total, 2 * ffn, device="cuda", dtype=dtype)
            g2 = torch.randn(total, hidden, device="cuda", dtype=dtype)
            try:
                y1 = torch._grouped_mm(xg, w1g, offs=offsets)
                y2 = torch._grouped_mm(hg, w2g, offs=offsets)

                def backward():
                    torch.autograd.grad((y1, y2), (xg, w1g, hg, w2g), (g1, g2), retain_graph=True)

                out["grouped_backward_ms"] = median_ms(gpu_time(backward, args.warmup, args.repetitions))
            except (RuntimeError, TypeError) as error:
                out["grouped_backward_error"] = str(error).splitlines()[0][:200]
    else:
        out["grouped_error"] = f"PyTorch {torch.__version__} has no torch._grouped_mm"
    return out


def floors(args):
    """The single-launch floor of a small GEMM, and the host's cost to issue one torch.mm."""
    a = torch.randn(256, 2048, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(2048, 1536, device="cuda", dtype=torch.bfloat16)
    alone = median_ms(gpu_time(lambda: torch.mm(a, b), args.warmup, 50))
    burst = 100
    back_to_back = median_ms(gpu_time(lambda: [torch.mm(a, b) for _ in range(burst)], args.warmup, 10)) / burst
    graph_each = median_ms(graph_time(lambda: [torch.mm(a, b) for _ in range(burst)], args.warmup, 10)) / burst
    issue = []
    for _ in range(10):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(burst):
            torch.mm(a, b)
        issue.append((time.perf_counter() - t0) / burst)
    torch.cuda.synchronize()
    return {"gemm": "256x1536x2048 bf16", "alone_ms": alone, "back_to_back_ms": back_to_back, "graph_ms": graph_each,
            "host_issue_us": statistics.median(issue) * 1e6}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repetitions", type=int, default=10)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("moe_expert_gemms.py: PyTorch sees no CUDA GPU")
    result = {"created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
              "warmup": args.warmup, "repetitions": args.repetitions, "floors": floors(args), "points": []}
    print(json.dumps(result["floors"]), flush=True)
    for model, hidden, ffn, local in SHAPES:
        for experts in local:
            for tokens in TOKENS_PER_EXPERT:
                total = experts * tokens
                if total * (hidden + 3 * ffn) + experts * 3 * hidden * ffn > MAX_ELEMENTS:
                    continue
                point = dict(model=model, **measure_point(experts, tokens, hidden, ffn, args))
                result["points"].append(point)
                print(json.dumps(point), flush=True)
                torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
