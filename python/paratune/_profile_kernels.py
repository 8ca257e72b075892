"""The measurements of ``python3 -m paratune.profile`` (docs/profile.md): each kind of kernel the plan lists,
the collectives over the world, and the training step (_profile_step.py), on CUDA (NCCL between processes)
or on the CPU (Gloo). Imported by paratune/profile.py only once the plan was read and checked.

Timing (docs/profile.md, "Timing"): `warmup` untimed runs, then `repetitions` timed ones, each on its own;
CUDA runs are timed with CUDA events around the run (the GPU's time), host-side costs (launch, synchronize)
and collectives with time.perf_counter after synchronizing, and CPU runs with time.perf_counter (PyTorch's
CPU operations are synchronous). Each result gives the median and the 10th and 90th percentiles.
"""

import datetime
import math
import os
import platform
import socket
import subprocess
import sys
import time
import traceback
import warnings

import torch
import torch.distributed as dist
import torch.nn.functional as F

from . import _profile_step

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
LAUNCH_REPETITIONS = 100  # launch and synchronize: tiny, so many repetitions are cheap
LAUNCHES_PER_REPETITION = 20  # back-to-back launches per timed repetition (one is below the timer's noise)
RMSNORM_EPS = 1e-5
ONE_RANK = "a collective over one rank moves no data"
# Collectives measured by their emulation even where the backend has them (comma-separated ops): for the
# tests, which check each emulation's result on a backend that has the collective.
EMULATED = set(filter(None, os.environ.get("PARATUNE_PROFILE_EMULATE", "").split(",")))


def summary(samples):
    """Median and 10th/90th percentiles (linear interpolation between the sorted samples, as numpy's default)."""
    s = sorted(samples)

    def quantile(q):
        pos = q * (len(s) - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    return {"median_s": quantile(0.5), "p10_s": quantile(0.1), "p90_s": quantile(0.9), "repetitions": len(s)}


class Context:
    """Where and how this process measures: the device, its rank in the world, the plan's repetitions."""

    def __init__(self, plan, device, rank, world, local_rank):
        self.plan = plan
        self.device = device
        self.cuda = device.type == "cuda"
        self.rank, self.world, self.local_rank = rank, world, local_rank
        self.warmup, self.repetitions = plan["warmup"], plan["repetitions"]
        self.groups = {}  # ranks per group -> this rank's process group

    def dtype(self, name):
        """The torch dtype a plan's dtype runs in here: PyTorch's CPU backend has no fp16 GEMM and only slow
        bf16 paths, so on the CPU every floating-point kernel runs in fp32 (and the profile says so)."""
        return DTYPES[name] if self.cuda else torch.float32

    def compute_dtype(self):
        """The plan's precision for kernels other than GEMMs (attention and element-wise passes run in bf16
        in fp8 training as well)."""
        return self.dtype("fp16" if self.plan["precision"] == "fp16" else "bf16")

    def synchronize(self):
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def time(self, run, prepare=None, warmup=None, repetitions=None, host=False):
        """Seconds of each timed call of run(state); prepare() (untimed) makes each call's state. host=True
        times on the host (perf_counter after synchronizing) also on CUDA: for host-side costs."""
        warmup = self.warmup if warmup is None else warmup
        repetitions = self.repetitions if repetitions is None else repetitions
        samples = []
        for i in range(warmup + repetitions):
            seconds = self.time_once(run, prepare() if prepare else None, host)
            if i >= warmup:
                samples.append(seconds)
        return samples

    def time_once(self, run, state=None, host=False):
        """Seconds of run(state): CUDA events around it on the GPU (unless host), else perf_counter."""
        if self.cuda and not host:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run(state)
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3
        self.synchronize()
        begin = time.perf_counter()
        run(state)
        return time.perf_counter() - begin

    def log(self, text):
        if self.rank == 0:
            print(f"paratune.profile: {text}", file=sys.stderr, flush=True)


def _out_of_memory(error):
    """CUDA's "CUDA out of memory" (torch.cuda.OutOfMemoryError), the CPU allocator's "can't allocate", or a
    shape no allocation could hold: PyTorch's "Storage size calculation overflowed" for sizes whose product
    passes 2^63 (each size of a plan is at most 2^53, their product is not bounded)."""
    text = str(error).lower()
    return (isinstance(error, MemoryError) or "out of memory" in text or "can't allocate memory" in text
            or "overflow" in text)


def _guarded(ctx, entry, measure, echo=None):
    """One local entry measured, or written back (`echo`, else the entry) with "skipped" when the device ran
    out of memory (a plan may list shapes larger than this device holds); other errors are bugs: they
    propagate."""
    try:
        return measure(ctx, entry)
    except (RuntimeError, MemoryError) as e:
        if not _out_of_memory(e):
            raise
        if ctx.cuda:
            torch.cuda.empty_cache()
        reason = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        return dict(entry if echo is None else echo, skipped=f"out of memory on {ctx.device.type}: {reason}")


def _rate(amount, seconds):
    """amount per second; null when the timer saw no time (below its resolution)."""
    return amount / seconds if seconds > 0 else None


def _ms(seconds):
    return f"{seconds * 1e3:.3f} ms"


# --- GEMMs ---------------------------------------------------------------------------------------------------

def gemm(ctx, e):
    out = dict(e)
    if e["dtype"] == "fp8":
        return _fp8_gemm(ctx, e, out)
    dtype = ctx.dtype(e["dtype"])
    a = torch.randn(e["m"], e["k"], device=ctx.device, dtype=dtype)
    b = torch.randn(e["k"], e["n"], device=ctx.device, dtype=dtype)
    c = torch.empty(e["m"], e["n"], device=ctx.device, dtype=dtype)
    samples = ctx.time(lambda _: torch.mm(a, b, out=c))
    out["measured_dtype"] = DTYPE_NAMES[dtype]
    out["kernel"] = "torch.mm"
    out.update(summary(samples))
    out["flop_per_s"] = _rate(2.0 * e["m"] * e["n"] * e["k"], out["median_s"])
    return out


def _fp8_unavailable(ctx):
    if not ctx.cuda:
        return "fp8 GEMMs run through torch._scaled_mm on a CUDA GPU; this run is on the CPU"
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        return f"PyTorch {torch.__version__} has no torch._scaled_mm with float8_e4m3fn"
    major, minor = torch.cuda.get_device_capability(ctx.device)
    if (major, minor) < (8, 9):
        return f"this GPU (compute capability {major}.{minor}) has no fp8 tensor cores (8.9 or later)"
    return None


def _fp8_gemm(ctx, e, out):
    reason = _fp8_unavailable(ctx)
    if reason:
        return dict(out, skipped=reason)
    # e4m3 inputs with unit scales and a bf16 result, as Transformer Engine's forward GEMMs; _scaled_mm wants
    # B column-major. The keyword call works for PyTorch 2.1-2.3 (which returns (out, amax)) and 2.4+.
    a = torch.randn(e["m"], e["k"], device=ctx.device).to(torch.float8_e4m3fn)
    b = torch.randn(e["n"], e["k"], device=ctx.device).to(torch.float8_e4m3fn).t()
    one = torch.ones((), device=ctx.device, dtype=torch.float32)

    def run(_):
        torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    try:
        run(None)
    except (RuntimeError, TypeError) as error:
        if _out_of_memory(error):
            raise
        return dict(out, skipped=f"torch._scaled_mm refused m={e['m']} n={e['n']} k={e['k']}: "
                                 f"{str(error).splitlines()[0][:200]}")
    out["measured_dtype"] = "fp8"
    out["kernel"] = "torch._scaled_mm (e4m3, bf16 out)"
    out.update(summary(ctx.time(run)))
    out["flop_per_s"] = _rate(2.0 * e["m"] * e["n"] * e["k"], out["median_s"])
    return out


# --- attention -----------------------------------------------------------------------------------------------

def _sdpa_backends():
    """(name, context manager factory) for each SDPA backend to try: flash, memory-efficient, cuDNN (where this
    PyTorch has it), math."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel  # PyTorch >= 2.3
        names = [("sdpa-flash", "FLASH_ATTENTION"), ("sdpa-efficient", "EFFICIENT_ATTENTION"),
                 ("sdpa-cudnn", "CUDNN_ATTENTION"), ("sdpa-math", "MATH")]
        return [(name, (lambda b=getattr(SDPBackend, member): sdpa_kernel(b))) for name, member in names
                if hasattr(SDPBackend, member)]
    except ImportError:
        flags = [("sdpa-flash", (True, False, False)), ("sdpa-efficient", (False, True, False)),
                 ("sdpa-math", (False, False, True))]
        return [(name, (lambda f=f: torch.backends.cuda.sdp_kernel(enable_flash=f[0], enable_mem_efficient=f[1],
                                                                     enable_math=f[2])))
                for name, f in flags]


def attention_kernels(ctx, q, k, v, causal):
    """[(name, forward)] of every core-attention kernel that runs these tensors, forward and backward: on CUDA
    each fused SDPA backend that takes the shape (flash, memory-efficient, cuDNN; the math backend only when
    none does), on the CPU SDPA, and where PyTorch lacks SDPA the explicit matmul-softmax-matmul. Frameworks
    pick different ones (Megatron through Transformer Engine runs cuDNN's fused attention on Hopper,
    torchtitan SDPA's default), so attention() measures each and keeps the fastest. GQA: SDPA's enable_gqa
    where it has it, else k/v repeated to the query heads."""
    if not _profile_step.has_sdpa():
        return [("explicit matmul-softmax-matmul", lambda: _profile_step.explicit_attention(q, k, v, causal))]
    grouped = q.shape[1] != k.shape[1]  # GQA: fewer k/v heads than query heads
    ways = [True, False] if grouped else [False]  # native_gqa: SDPA's enable_gqa first, else k/v repeated
    backends = _sdpa_backends() if ctx.cuda else [("sdpa-cpu", None)]
    found = []
    for name, backend in backends:
        if name == "sdpa-math" and found:
            continue  # the unfused fallback, measured only when no fused kernel runs
        for native_gqa in ways:
            def forward(backend=backend, native_gqa=native_gqa):
                if backend is None:
                    return _profile_step.sdpa(q, k, v, causal, native_gqa)
                with backend():
                    return _profile_step.sdpa(q, k, v, causal, native_gqa)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    forward().backward(torch.ones_like(q))
            except (RuntimeError, TypeError) as error:
                if _out_of_memory(error):
                    raise
                continue
            finally:
                q.grad = k.grad = v.grad = None
            gqa = "" if not grouped else (", enable_gqa" if native_gqa else ", k/v repeated")
            found.append((name + gqa, forward))
            break
    if not found:
        raise RuntimeError(f"no SDPA backend ran q {tuple(q.shape)} k/v {tuple(k.shape)}")
    return found


def _time_attention(ctx, forward, grad, q, k, v):
    """(forward samples, backward samples): each repetition times a forward, which keeps what its backward
    needs as in training, then that backward."""
    forward_samples, backward_samples = [], []
    for i in range(ctx.warmup + ctx.repetitions):
        q.grad = k.grad = v.grad = None
        result = {}
        forward_seconds = ctx.time_once(lambda _: result.setdefault("o", forward()))
        backward_seconds = ctx.time_once(lambda _: result["o"].backward(grad))
        if i >= ctx.warmup:
            forward_samples.append(forward_seconds)
            backward_samples.append(backward_seconds)
    return summary(forward_samples), summary(backward_samples)


def attention(ctx, e):
    dtype = ctx.compute_dtype()
    shape = (e["batch"], e["heads"], e["seq_len"], e["head_dim"])
    kv_shape = (e["batch"], e["kv_heads"], e["seq_len"], e["head_dim"])
    q = torch.randn(shape, device=ctx.device, dtype=dtype, requires_grad=True)
    k = torch.randn(kv_shape, device=ctx.device, dtype=dtype, requires_grad=True)
    v = torch.randn(kv_shape, device=ctx.device, dtype=dtype, requires_grad=True)
    grad = torch.randn(shape, device=ctx.device, dtype=dtype)
    measured = []  # (forward + backward median, name, forward, backward)
    for name, forward in attention_kernels(ctx, q, k, v, e["causal"]):
        fwd, bwd = _time_attention(ctx, forward, grad, q, k, v)
        measured.append((fwd["median_s"] + bwd["median_s"], name, fwd, bwd))
    _, kernel, fwd, bwd = min(measured, key=lambda m: m[0])
    out = dict(e, kernel=kernel, dtype=DTYPE_NAMES[dtype], forward=fwd, backward=bwd)
    if len(measured) > 1:
        out["note"] = "fastest of: " + "; ".join(
            f"{name} {f['median_s'] * 1e3:.3f} ms forward, {b['median_s'] * 1e3:.3f} ms backward"
            for _, name, f, b in measured)
    return out


# --- element-wise passes, memory bandwidth, launch and synchronize -------------------------------------------

def elementwise(ctx, e):
    dtype = ctx.compute_dtype()
    rows, cols = e["rows"], e["cols"]
    size = torch.tensor([], dtype=dtype).element_size()
    x = torch.randn(rows, cols, device=ctx.device, dtype=dtype)
    kind = e["kind"]
    if kind == "rmsnorm":  # x * rsqrt(mean(x^2) + eps) * w over cols: read x and w, write the result
        w = torch.randn(cols, device=ctx.device, dtype=dtype)
        if hasattr(F, "rms_norm"):  # PyTorch >= 2.4
            kernel, run = "torch.nn.functional.rms_norm", lambda _: F.rms_norm(x, (cols,), w, RMSNORM_EPS)
        else:
            kernel, run = "eager (pow, mean, rsqrt, mul)", lambda _: _profile_step.rms_norm(x, w, RMSNORM_EPS)
        moved = (2 * rows * cols + cols) * size
    elif kind == "swiglu":  # silu(a) * b: read a and b, write the result
        b = torch.randn(rows, cols, device=ctx.device, dtype=dtype)
        kernel, run = "eager (silu, mul)", lambda _: F.silu(x) * b
        moved = 3 * rows * cols * size
    elif kind == "permute":  # MoE token permutation: rows gathered by a random permutation
        index = torch.randperm(rows, device=ctx.device)
        y = torch.empty_like(x)
        kernel, run = "index_select", lambda _: torch.index_select(x, 0, index, out=y)
        moved = 2 * rows * cols * size + rows * index.element_size()
    else:  # add: the residual connection
        b = torch.randn(rows, cols, device=ctx.device, dtype=dtype)
        y = torch.empty_like(x)
        kernel, run = "add", lambda _: torch.add(x, b, out=y)
        moved = 3 * rows * cols * size
    out = dict(e, dtype=DTYPE_NAMES[dtype], kernel=kernel, bytes_moved=moved)
    out.update(summary(ctx.time(run)))
    return out


def memory_bandwidth(ctx, size):
    """A copy of `size` bytes into another buffer: 2 x size bytes moved (read and written)."""
    src = torch.empty(size, device=ctx.device, dtype=torch.uint8).random_(0, 256)
    dst = torch.empty_like(src)
    out = {"bytes": size, "bytes_moved": 2 * size}
    out.update(summary(ctx.time(lambda _: dst.copy_(src))))
    out["bytes_per_s"] = _rate(out["bytes_moved"], out["median_s"])
    return out


def launch_overhead(ctx):
    """Launch to launch of one tiny kernel (a one-element add), on the host: each repetition times
    LAUNCHES_PER_REPETITION back-to-back launches on an idle device and reports the time per launch."""
    x = torch.zeros(1, device=ctx.device)

    def burst(_):
        for _ in range(LAUNCHES_PER_REPETITION):
            x.add_(1.0)

    samples = ctx.time(burst, warmup=10, repetitions=LAUNCH_REPETITIONS, host=True)
    return summary([s / LAUNCHES_PER_REPETITION for s in samples])


def sync_overhead(ctx):
    """torch.cuda.synchronize() on an idle device, timed on the host."""
    if not ctx.cuda:
        return {"skipped": "the CPU backend runs every operation synchronously: there is no device to synchronize"}
    return summary(ctx.time(lambda _: torch.cuda.synchronize(ctx.device), warmup=10,
                            repetitions=LAUNCH_REPETITIONS, host=True))


# --- collectives -----------------------------------------------------------------------------------------------

class Collectives:
    """The plan's collectives over the world: groups of `ranks` consecutive ranks run each one at the same
    time; each rank times every repetition after a barrier of the world, and a repetition's time is the
    slowest rank's. Before timing, each collective runs once on small known values and its result is checked
    on every rank (so an emulation below is checked too)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.groups = {}
        self.native = {}  # op -> whether the backend has it (found by calling it, on every rank alike)

    def group(self, ranks):
        """(this rank's group or None for the world, its members): new_group is called by every rank for
        every group, in the same order, as torch.distributed requires."""
        if ranks == self.ctx.world:
            return None, list(range(ranks))
        if ranks not in self.groups:
            mine = None
            for first in range(0, self.ctx.world, ranks):
                members = list(range(first, first + ranks))
                g = dist.new_group(members)
                if self.ctx.rank in members:
                    mine = (g, members)
            self.groups[ranks] = mine
        return self.groups[ranks]

    def barrier(self):
        if self.ctx.cuda:
            dist.barrier(device_ids=[self.ctx.device.index])
        else:
            dist.barrier()

    def all_agree(self, ok):
        flag = torch.tensor([1 if ok else 0], device=self.ctx.device, dtype=torch.int32)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        return bool(flag.item())

    def measure(self, e):
        ctx, ranks, op = self.ctx, e["ranks"], e["op"]
        if ranks > ctx.world:
            return dict(e, skipped=f"ranks {ranks} exceed the world size {ctx.world}")
        if ctx.world % ranks:
            return dict(e, skipped=f"ranks {ranks} do not divide the world size {ctx.world}")
        if ranks == 1:
            return dict(e, skipped=ONE_RANK)
        group, members = self.group(ranks)
        me = members.index(ctx.rank)
        # Checked once on small exact values, then the plan's size in the measuring dtype.
        check = self.run_op(op, group, members, me, *self.buffers(op, ranks, 4 * ranks, torch.float32, fill=True))
        if not self.all_agree(check is None):
            reason = check or "another rank's result was wrong"
            return dict(e, skipped=f"{op} over {ranks} ranks gave a wrong result: {reason}")
        dtype = ctx.compute_dtype() if ctx.cuda else torch.float32  # Gloo reduces in fp32
        size = torch.tensor([], dtype=dtype).element_size()
        elements = -(-e["bytes"] // (size * ranks)) * ranks  # whole chunks per rank, rounded up
        try:
            buffers = self.buffers(op, ranks, elements, dtype, fill=False)
            ok = True
        except (RuntimeError, MemoryError) as error:
            if not _out_of_memory(error):
                raise
            ok = False
        if not self.all_agree(ok):
            return dict(e, skipped=f"out of memory for {e['bytes']} bytes on some rank")
        implementation = self.implementation(op)

        def prepare():
            self.barrier()

        samples = ctx.time(lambda _: self.run_op(op, group, members, me, *buffers), prepare=prepare, host=True)
        slowest = torch.tensor(samples, dtype=torch.float64, device=ctx.device)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        out = dict(e, groups=ctx.world // ranks, implementation=implementation, dtype=DTYPE_NAMES[dtype],
                   measured_bytes=elements * size)
        out.update(summary(slowest.tolist()))
        return out

    def buffers(self, op, ranks, elements, dtype, fill):
        """(input, output, fill) for run_op: `elements` counted as the cost model counts the bytes
        (docs/profile.md); with fill, values whose result run_op checks: rank r's input holds r + 1
        (all_reduce, all_gather, send_recv) or (r + 1) * (j + 1) in its chunk j (reduce_scatter, all_to_all)."""
        dev = self.ctx.device
        chunk = elements // ranks
        if op == "all_gather":
            inp = torch.empty(chunk, device=dev, dtype=dtype)
            out = torch.empty(elements, device=dev, dtype=dtype)
        elif op == "reduce_scatter":
            inp = torch.empty(elements, device=dev, dtype=dtype)
            out = torch.empty(chunk, device=dev, dtype=dtype)
        elif op == "all_to_all":
            inp = torch.empty(elements, device=dev, dtype=dtype)
            out = torch.empty(elements, device=dev, dtype=dtype)
        else:  # all_reduce (in place), send_recv (the message)
            inp = torch.empty(elements, device=dev, dtype=dtype)
            out = inp
        if fill:
            r = self.ctx.rank + 1
            if op in ("all_reduce", "all_gather", "send_recv"):
                inp.fill_(r)
            else:
                inp.copy_(torch.arange(1, ranks + 1, device=dev, dtype=dtype).repeat_interleave(chunk) * r)
            if out is not inp:
                out.fill_(-1)
        else:  # zeros: uninitialised memory may hold denormals, which slow a CPU reduction down
            inp.zero_()
        return inp, out, fill

    def implementation(self, op):
        return {
            "all_reduce": "all_reduce",
            "all_gather": "all_gather_into_tensor" if self.native.get(op) else "all_gather (list of chunks)",
            "reduce_scatter": "reduce_scatter_tensor" if self.native.get(op)
            else "emulated: one reduce to each rank of its chunk (the backend has no reduce_scatter)",
            "all_to_all": "all_to_all_single" if self.native.get(op)
            else "emulated: isend/irecv of each chunk (the backend has no all_to_all)",
            "send_recv": "send/recv (even rank to the next odd rank)",
        }[op]

    def try_native(self, op, call):
        """Runs the backend's own collective; False (and remembered) when the backend lacks it: Gloo in PyTorch
        1.13 raises at once on every rank, before any communication, for all_gather_into_tensor,
        reduce_scatter (both forms) and list all_to_all (all_to_all_single it has)."""
        if op in EMULATED:
            self.native[op] = False
        if self.native.get(op, True):
            try:
                call()
                self.native[op] = True
                return True
            except RuntimeError as error:
                if "support" not in str(error):
                    raise
                self.native[op] = False
        return False

    def run_op(self, op, group, members, me, inp, out, check):
        ranks = len(members)
        if op == "all_reduce":
            dist.all_reduce(inp, group=group)
            expected = [float(sum(m + 1 for m in members))]
        elif op == "all_gather":
            into = getattr(dist, "all_gather_into_tensor", None) or getattr(dist, "_all_gather_base")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if not self.try_native(op, lambda: into(out, inp, group=group)):
                    dist.all_gather(list(out.chunk(ranks)), inp, group=group)
            expected = [float(m + 1) for m in members]
        elif op == "reduce_scatter":
            into = getattr(dist, "reduce_scatter_tensor", None) or getattr(dist, "_reduce_scatter_base")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if not self.try_native(op, lambda: into(out, inp, group=group)):
                    # Each chunk reduced onto the rank that keeps it: each rank sends (ranks-1)/ranks of its
                    # input, as a ring reduce-scatter does; dist.reduce may use the input as scratch space.
                    scratch = inp.clone()
                    for j, chunk in enumerate(scratch.chunk(ranks)):
                        dist.reduce(chunk, dst=members[j], group=group)
                    out.copy_(scratch.chunk(ranks)[me])
            expected = [float((me + 1) * sum(m + 1 for m in members))]
        elif op == "all_to_all":
            if not self.try_native(op, lambda: dist.all_to_all_single(out, inp, group=group)):
                sends, receives = inp.chunk(ranks), out.chunk(ranks)
                requests = []
                for j, peer in enumerate(members):
                    if j == me:
                        receives[j].copy_(sends[j])
                    else:
                        requests.append(dist.isend(sends[j], dst=peer, group=group))
                        requests.append(dist.irecv(receives[j], src=peer, group=group))
                for request in requests:
                    request.wait()
            # chunk j of my output is member j's chunk `me`: (members[j] + 1) * (me + 1)
            expected = [float((m + 1) * (me + 1)) for m in members]
        else:  # send_recv: rank 2i sends to 2i+1
            if me == 0:
                dist.send(inp, dst=members[1])
                expected = None
            else:
                dist.recv(inp, src=members[0])
                expected = [float(members[0] + 1)]
        self.ctx.synchronize()
        if not check or expected is None:
            return None
        result = out if op != "send_recv" else inp
        parts = result.chunk(len(expected))
        got = [sorted(set(p.tolist())) for p in parts]
        if got != [[x] for x in expected]:
            return f"rank {self.ctx.rank} got {got}, expected {expected}"
        return None


# --- the whole run --------------------------------------------------------------------------------------------

def _nvidia_smi(ctx):
    """Driver, power limit and clocks from nvidia-smi (null where it is missing or says N/A). The clocks are
    the application clocks (what the SMs run at under load unless throttled), else the maximum clocks."""
    fields = ["driver_version", "power.limit", "clocks.applications.graphics", "clocks.applications.memory",
              "clocks.max.sm", "clocks.max.memory"]
    result = dict.fromkeys(fields)
    if not ctx.cuda:
        return result
    # The GPU by its UUID (PyTorch >= 2.0; right under CUDA_VISIBLE_DEVICES), else by its index.
    targets = [str(ctx.device.index)]
    uuid = getattr(torch.cuda.get_device_properties(ctx.device), "uuid", None)
    if uuid is not None:
        targets.insert(0, str(uuid) if str(uuid).startswith("GPU-") else f"GPU-{uuid}")
    for target in targets:
        try:
            done = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits",
                                   "-i", target], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return result
        if done.returncode == 0 and done.stdout.strip():
            break
    else:
        return result
    for field, value in zip(fields, done.stdout.strip().splitlines()[0].split(",")):
        value = value.strip()
        if value and "N/A" not in value and "Not Supported" not in value:
            result[field] = value
    return result


def _number(text, kind):
    try:
        return kind(float(text)) if text is not None else None
    except ValueError:
        return None


def _nccl_version():
    try:
        v = torch.cuda.nccl.version()
    except (AttributeError, RuntimeError):
        return None
    if isinstance(v, tuple):
        return ".".join(str(x) for x in v)
    # An int: NCCL_VERSION_CODE, major*10000 + minor*100 + patch since NCCL 2.9, major*1000 + minor*100 + patch
    # before (nccl.h).
    if v >= 10000:
        return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
    return f"{v // 1000}.{v % 1000 // 100}.{v % 100}"


def _cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_info(ctx):
    smi = _nvidia_smi(ctx)
    if ctx.world > 1:
        hosts = [None] * ctx.world
        dist.all_gather_object(hosts, socket.gethostname())
        nodes = len(set(hosts))
    else:
        nodes = 1
    return {
        "backend": ctx.device.type,
        "name": torch.cuda.get_device_name(ctx.device) if ctx.cuda else _cpu_name(),
        "count": torch.cuda.device_count() if ctx.cuda else 1,
        "world_size": ctx.world,
        "nodes": nodes,
        "collective_backend": str(dist.get_backend()) if ctx.world > 1 else None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": _nccl_version() if ctx.cuda else None,
        "cudnn": torch.backends.cudnn.version() if ctx.cuda else None,  # the fused attention's library
        "driver": smi["driver_version"],
        "power_limit_w": _number(smi["power.limit"], float),
        "sm_clock_mhz": _number(smi["clocks.applications.graphics"] or smi["clocks.max.sm"], int),
        "memory_clock_mhz": _number(smi["clocks.applications.memory"] or smi["clocks.max.memory"], int),
        "cpu": _cpu_name(),
        "threads": torch.get_num_threads(),
    }


def measure(ctx):
    """The profile (on rank 0; None on the others). Collectives run on every rank; the local measurements
    on rank 0 alone, while the others are done."""
    plan = ctx.plan
    began = time.perf_counter()
    device = device_info(ctx)
    collectives = []
    if plan["collectives"]:
        if ctx.world == 1:
            collectives = [dict(e, skipped=ONE_RANK if e["ranks"] == 1 else
                                f"ranks {e['ranks']} exceed the world size 1 (run under torchrun or with --nproc)")
                           for e in plan["collectives"]]
        else:
            runner = Collectives(ctx)
            for e in plan["collectives"]:
                collectives.append(runner.measure(e))
                _log_entry(ctx, "collective", collectives[-1])
    if ctx.rank != 0:
        return None
    profile = {
        "format": "paratune-hardware-profile", "version": 1,
        "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "plan": {key: plan[key] for key in ("model", "model_fingerprint", "gpu", "precision")},
        "device": device,
    }
    torch.manual_seed(0)
    for section, measure_one in (("gemms", gemm), ("attention", attention), ("elementwise", elementwise)):
        profile[section] = []
        for e in plan[section]:
            profile[section].append(_guarded(ctx, e, measure_one))
            _log_entry(ctx, section, profile[section][-1])
    profile["memory_bandwidth"] = _guarded(ctx, plan["memory_bandwidth_bytes"], memory_bandwidth,
                                           echo={"bytes": plan["memory_bandwidth_bytes"]})
    profile["launch_overhead"] = launch_overhead(ctx)
    profile["sync_overhead"] = sync_overhead(ctx)
    profile["collectives"] = collectives
    if plan["step"] is None:
        profile["step"] = None
    else:
        profile["step"] = _guarded(ctx, plan["step"], lambda c, s: _profile_step.measure_step(c, s, summary))
        _log_entry(ctx, "step", dict(profile["step"], id="step"))
    profile["duration_s"] = time.perf_counter() - began
    return profile


def _log_entry(ctx, section, entry):
    if "skipped" in entry:
        ctx.log(f"{section} {entry.get('id', '')}: skipped: {entry['skipped']}")
    elif "median_s" in entry:
        ctx.log(f"{section} {entry['id']}: {_ms(entry['median_s'])}")
    elif "forward" in entry:
        ctx.log(f"{section} {entry['id']}: forward {_ms(entry['forward']['median_s'])}, backward "
                f"{_ms(entry['backward']['median_s'])} ({entry['kernel']})")


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(local_rank, plan, device_type, nproc, port, out):
    """One process of --nproc N (torch.multiprocessing.spawn calls it with its index)."""
    from .profile import write_profile
    if device_type == "cpu":  # the node's cores shared among the processes, not each taking them all
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // nproc))
    code = _measure_and_write(plan, device_type, local_rank, nproc, local_rank, f"tcp://127.0.0.1:{port}", out,
                              write_profile)
    if code:
        sys.exit(code)


def _measure_and_write(plan, device_type, rank, world, local_rank, init_method, out, write_profile):
    if device_type == "cuda":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    ctx = Context(plan, device, rank, world, local_rank)
    try:
        if world > 1:
            dist.init_process_group("nccl" if ctx.cuda else "gloo", init_method=init_method, rank=rank,
                                    world_size=world, timeout=datetime.timedelta(minutes=60))
        profile = measure(ctx)
        if profile is not None:
            write_profile(out, profile)
            ctx.log(f"wrote {out} ({profile['duration_s']:.1f} s)")
    except Exception:  # a failure while measuring (not bad input, which was refused before): say where
        print(f"paratune.profile: rank {rank}: measuring failed:\n{traceback.format_exc()}", file=sys.stderr,
              flush=True)
        return 1
    finally:
        if world > 1 and dist.is_initialized():
            dist.destroy_process_group()
    return 0


def run(plan, args, ranks, write_profile):
    """Measures as `args` say (--device, --nproc; `ranks`: torchrun's rank, world size, local rank) and
    writes the profile; the exit code."""
    cuda = torch.cuda.is_available()
    if args.device == "cuda" and not cuda:
        print("paratune.profile: --device cuda: PyTorch sees no CUDA GPU here (torch.cuda.is_available() is "
              "false)", file=sys.stderr)
        return 2
    device_type = "cuda" if (args.device == "cuda" or (args.device == "auto" and cuda)) else "cpu"
    if args.nproc > 1:
        if device_type == "cuda" and args.nproc > torch.cuda.device_count():
            print(f"paratune.profile: --nproc {args.nproc}: more processes than this node's "
                  f"{torch.cuda.device_count()} GPUs (one GPU per process; --device cpu for Gloo on the CPU)",
                  file=sys.stderr)
            return 2
        import torch.multiprocessing as mp
        try:
            # CPU processes are forked (they inherit the imported PyTorch instead of importing it again,
            # seconds each; this process ran no PyTorch operation yet); CUDA must not be forked.
            mp.start_processes(_worker, args=(plan, device_type, args.nproc, _free_port(), args.out),
                               nprocs=args.nproc, join=True,
                               start_method="spawn" if device_type == "cuda" else "fork")
        except mp.ProcessExitedException as e:
            print(f"paratune.profile: process {e.error_index} of {args.nproc} exited with {e.exit_code}",
                  file=sys.stderr)
            return 1
        except mp.ProcessRaisedException as e:
            print(f"paratune.profile: a process failed: {e}", file=sys.stderr)
            return 1
        return 0
    rank, world, local_rank = ranks
    return _measure_and_write(plan, device_type, rank, world, local_rank, "env://", args.out, write_profile)
