"""`python3 -m paratune.profile` (docs/profile.md) on the CPU with tiny plans: the profile's format and fields
for a dense and an MoE plan, collectives over 4 local processes with Gloo, and every kind of bad plan."""

import copy
import json
import os
import re
import subprocess
import sys

import pytest

from paratune import profile

DATA = os.path.join(os.path.dirname(__file__), "..", "data")

DENSE_STEP = {"layers": 2, "hidden_size": 32, "ffn_hidden_size": 48, "heads": 4, "kv_heads": 2, "vocab_size": 50,
              "seq_len": 16, "micro_batch": 2, "gated_mlp": True, "moe": None, "steps": 4}
MOE = {"experts": 4, "top_k": 2, "expert_ffn_hidden_size": 24, "shared_experts": 1}


def tiny_plan(**changes):
    plan = {
        "format": "paratune-profile-plan", "version": 1, "model": "tiny", "model_fingerprint": "f00d",
        "gpu": "cpu", "precision": "bf16", "warmup": 1, "repetitions": 3,
        "gemms": [{"id": "qkv", "m": 64, "n": 96, "k": 32, "dtype": "bf16", "count": 1},
                  {"id": "mlp", "m": 64, "n": 48, "k": 32, "dtype": "fp16", "count": 2},
                  {"id": "qkv/fp8", "m": 64, "n": 96, "k": 32, "dtype": "fp8", "count": 1}],
        "attention": [{"id": "attn/s32", "batch": 1, "seq_len": 32, "heads": 4, "kv_heads": 2, "head_dim": 16,
                       "causal": True},
                      {"id": "attn/s16/full", "batch": 2, "seq_len": 16, "heads": 2, "kv_heads": 2,
                       "head_dim": 8, "causal": False}],
        "elementwise": [{"id": "norm", "kind": "rmsnorm", "rows": 64, "cols": 32},
                        {"id": "act", "kind": "swiglu", "rows": 64, "cols": 48},
                        {"id": "perm", "kind": "permute", "rows": 128, "cols": 32},
                        {"id": "res", "kind": "add", "rows": 64, "cols": 32}],
        "memory_bandwidth_bytes": 1 << 20,
        "collectives": [{"id": "ar", "op": "all_reduce", "ranks": 2, "bytes": 4096},
                        {"id": "ar1", "op": "all_reduce", "ranks": 1, "bytes": 4096}],
        "step": copy.deepcopy(DENSE_STEP),
    }
    plan.update(changes)
    return plan


def write(tmp_path, plan, name="plan.json"):
    path = tmp_path / name
    path.write_text(json.dumps(plan) if not isinstance(plan, str) else plan)
    return str(path)


def run_profile(tmp_path, plan, *flags, out="profile.json"):
    """(exit code, stderr, the profile or None)."""
    plan_path = write(tmp_path, plan)
    out_path = str(tmp_path / out)
    done = subprocess.run([sys.executable, "-m", "paratune.profile", "--plan", plan_path, "--out", out_path,
                           "--device", "cpu", *flags], capture_output=True, text=True, timeout=240)
    result = json.load(open(out_path)) if os.path.exists(out_path) else None
    return done.returncode, done.stderr, result


def check_timing(t, repetitions):
    assert t["repetitions"] == repetitions
    assert 0 < t["p10_s"] <= t["median_s"] <= t["p90_s"], t


def parameters(step):
    """The decoder's parameter count from its shapes (embedding, attention, norms, MLP or experts, head)."""
    h, v = step["hidden_size"], step["vocab_size"]
    head_dim = h // step["heads"]
    attention = h * step["heads"] * head_dim + 2 * h * step["kv_heads"] * head_dim + step["heads"] * head_dim * h
    matrices = 3 if step["gated_mlp"] else 2
    if step["moe"] is None:
        mlp = matrices * h * step["ffn_hidden_size"]
    else:
        m = step["moe"]
        mlp = h * m["experts"] + (m["experts"] + m["shared_experts"]) * matrices * h * m["expert_ffn_hidden_size"]
    return 2 * v * h + h + step["layers"] * (attention + mlp + 2 * h)


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dense")
    plan = tiny_plan()
    code, err, result = run_profile(tmp, plan)
    assert code == 0, err
    assert sorted(os.listdir(tmp)) == ["plan.json", "profile.json"], "a temporary file was left behind"
    return plan, result


def test_the_profile_has_every_section_in_the_plans_order(dense):
    plan, p = dense
    assert p["format"] == "paratune-hardware-profile" and p["version"] == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", p["created_utc"])
    assert p["plan"] == {"model": "tiny", "model_fingerprint": "f00d", "gpu": "cpu", "precision": "bf16"}
    d = p["device"]
    assert d["backend"] == "cpu" and d["world_size"] == 1 and d["nodes"] == 1 and d["collective_backend"] is None
    assert d["torch"] and d["cpu"] and d["threads"] >= 1 and d["name"]
    for key in ("cuda", "nccl", "driver", "power_limit_w", "sm_clock_mhz", "memory_clock_mhz"):
        assert key in d
    for section in ("gemms", "attention", "elementwise", "collectives"):
        assert [e["id"] for e in p[section]] == [e["id"] for e in plan[section]]


def test_gemms_run_in_fp32_on_the_cpu_and_fp8_is_skipped_with_its_reason(dense):
    plan, p = dense
    qkv, mlp, fp8 = p["gemms"]
    for measured, asked in ((qkv, plan["gemms"][0]), (mlp, plan["gemms"][1])):
        assert {k: measured[k] for k in asked} == asked
        assert measured["measured_dtype"] == "fp32"
        check_timing(measured, 3)
        assert measured["flop_per_s"] == pytest.approx(2 * asked["m"] * asked["n"] * asked["k"] / measured["median_s"])
    assert "median_s" not in fp8 and "CPU" in fp8["skipped"]


def test_attention_forward_and_backward_name_their_kernel(dense):
    plan, p = dense
    for measured, asked in zip(p["attention"], plan["attention"]):
        assert {k: measured[k] for k in asked} == asked
        assert measured["kernel"] in ("explicit matmul-softmax-matmul", "sdpa-cpu", "sdpa-cpu, enable_gqa",
                                      "sdpa-cpu, k/v repeated")
        check_timing(measured["forward"], 3)
        check_timing(measured["backward"], 3)


def test_elementwise_bandwidth_and_overheads(dense):
    plan, p = dense
    moved = {"rmsnorm": (2 * 64 * 32 + 32) * 4, "swiglu": 3 * 64 * 48 * 4, "permute": 2 * 128 * 32 * 4 + 128 * 8,
             "add": 3 * 64 * 32 * 4}
    for measured in p["elementwise"]:
        assert measured["dtype"] == "fp32" and measured["bytes_moved"] == moved[measured["kind"]]
        check_timing(measured, 3)
    bandwidth = p["memory_bandwidth"]
    assert bandwidth["bytes_moved"] == 2 << 20
    check_timing(bandwidth, 3)
    assert bandwidth["bytes_per_s"] == pytest.approx(bandwidth["bytes_moved"] / bandwidth["median_s"])
    check_timing(p["launch_overhead"], 100)
    assert "synchronously" in p["sync_overhead"]["skipped"] and "median_s" not in p["sync_overhead"]


def test_one_process_skips_the_collectives_with_the_reason(dense):
    _, p = dense
    ar, ar1 = p["collectives"]
    assert "median_s" not in ar and "exceed the world size 1" in ar["skipped"]
    assert "median_s" not in ar1 and "one rank" in ar1["skipped"]


def test_the_step_trains_the_decoder_the_plan_describes(dense):
    plan, p = dense
    step = p["step"]
    assert {k: step[k] for k in plan["step"]} == plan["step"]
    check_timing(step, 4)
    assert step["max_memory_allocated_bytes"] is None and step["dtype"] == "float32"
    assert step["parameters"] == parameters(plan["step"])
    losses = step["losses"]
    assert len(losses) == 5  # the warm-up step and 4 timed ones, on one fixed batch
    assert all(b < a for a, b in zip(losses, losses[1:])), losses


def test_an_moe_step_trains_its_experts(tmp_path):
    step = dict(DENSE_STEP, moe=MOE, steps=3)
    plan = tiny_plan(gemms=[], attention=[], elementwise=[], collectives=[], step=step, repetitions=1)
    code, err, p = run_profile(tmp_path, plan)
    assert code == 0, err
    assert p["gemms"] == [] and p["attention"] == [] and p["collectives"] == []
    assert p["step"]["moe"] == MOE and p["step"]["parameters"] == parameters(step)
    check_timing(p["step"], 3)
    losses = p["step"]["losses"]
    assert all(b < a for a, b in zip(losses, losses[1:])), losses


@pytest.mark.parametrize("emulated", ["", "all_gather,reduce_scatter,all_to_all"])
def test_collectives_over_four_processes_with_gloo(tmp_path, emulated, monkeypatch):
    monkeypatch.setenv("PARATUNE_PROFILE_EMULATE", emulated)  # the emulations' results are checked too
    sizes = {"all_reduce": 4096, "all_gather": 4000, "reduce_scatter": 8192, "all_to_all": 4096, "send_recv": 1000}
    collectives = [{"id": f"{op}/{ranks}", "op": op, "ranks": ranks, "bytes": size}
                   for op, size in sizes.items() for ranks in ((2,) if op == "send_recv" else (2, 4))]
    collectives += [{"id": "odd", "op": "all_reduce", "ranks": 3, "bytes": 4096},
                    {"id": "big", "op": "all_gather", "ranks": 8, "bytes": 4096},
                    {"id": "one", "op": "all_reduce", "ranks": 1, "bytes": 4096}]
    plan = tiny_plan(gemms=[], attention=[], elementwise=[], collectives=collectives, step=None)
    code, err, p = run_profile(tmp_path, plan, "--nproc", "4")
    assert code == 0, err
    assert sorted(os.listdir(tmp_path)) == ["plan.json", "profile.json"]
    d = p["device"]
    assert d["world_size"] == 4 and d["collective_backend"] == "gloo" and d["nodes"] == 1
    assert p["step"] is None
    measured = {e["id"]: e for e in p["collectives"]}
    assert [e["id"] for e in p["collectives"]] == [e["id"] for e in collectives]
    for e in collectives[:-3]:
        got = measured[e["id"]]
        assert "skipped" not in got, got
        assert {k: got[k] for k in e} == e
        assert got["groups"] == 4 // e["ranks"]
        check_timing(got, 3)
        # whole fp32 chunks per rank, at least the plan's bytes
        assert got["measured_bytes"] >= e["bytes"] and got["measured_bytes"] % (4 * e["ranks"]) == 0
        assert got["implementation"]
    assert "emulated" in measured["reduce_scatter/2"]["implementation"]  # Gloo has no reduce_scatter
    assert ("emulated" in measured["all_to_all/4"]["implementation"]) == bool(emulated)
    assert ("list of chunks" in measured["all_gather/4"]["implementation"])  # nor all_gather_into_tensor
    assert "do not divide the world size 4" in measured["odd"]["skipped"] and "median_s" not in measured["odd"]
    assert "exceed the world size 4" in measured["big"]["skipped"]
    assert "one rank" in measured["one"]["skipped"]


# --- bad input ----------------------------------------------------------------------------------------------

def mutate(path, value):
    """A copy of tiny_plan() with the field at `path` (keys and indexes) set to `value` (or removed: DELETE)."""
    plan = tiny_plan(step=dict(DENSE_STEP, moe=dict(MOE)))
    target = plan
    for key in path[:-1]:
        target = target[key]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return plan


DELETE = object()
BAD_PLANS = [  # (field path, value, the message after "FILE: ")
    (("format",), "paratune-study", r'format: "paratune-study": must be "paratune-profile-plan"'),
    (("version",), 2, r"version: 2: must be 1 "),
    (("version",), DELETE, r"version: missing: must be 1 "),
    (("precision",), "int8", r'precision: "int8": must be one of bf16, fp16, fp8'),
    (("warmup",), -1, r"warmup: -1: must be an integer >= 0"),
    (("repetitions",), 2.0, r"repetitions: 2.0: must be an integer >= 1"),
    (("memory_bandwidth_bytes",), True, r"memory_bandwidth_bytes: true: must be a positive integer"),
    (("gemms",), {}, r"gemms: \{\}: must be a list"),
    (("gemms", 0, "m"), -4, r'gemms\[0\] \(id "qkv"\): m: -4: must be a positive integer'),
    (("gemms", 1, "k"), "32", r'gemms\[1\] \(id "mlp"\): k: "32": must be a positive integer'),
    # Beyond what the profile's reader takes (a 10**30 reached PyTorch: a TypeError ended the measurement).
    (("gemms", 0, "m"), 10**30, r'gemms\[0\] \(id "qkv"\): m: 1000000000000000000000000000000: must be a '
                                r"positive integer \(at most 2\^53\)"),
    (("attention", 0, "batch"), 2**31, r'attention\[0\] \(id "attn/s32"\): batch: 2147483648: must be a positive '
                                       r"integer \(at most 2147483647\)"),
    (("gemms", 0, "dtype"), "int4", r'gemms\[0\] \(id "qkv"\): dtype: "int4": must be one of bf16, fp16, fp32, fp8'),
    (("gemms", 2, "count"), 0, r'gemms\[2\] \(id "qkv/fp8"\): count: 0: must be a positive integer'),
    (("gemms", 1, "id"), "qkv", r'gemms\[1\] \(id "qkv"\): id: "qkv": must be unique among the gemms entries'),
    (("gemms", 0, "id"), "", r'gemms\[0\]: id: "": must be a non-empty string'),
    (("gemms", 0), [1, 2], r"gemms\[0\]: \[1, 2\]: must be an object \(a gemms entry\)"),
    (("attention", 0, "seq_len"), 0, r'attention\[0\] \(id "attn/s32"\): seq_len: 0: must be a positive integer'),
    (("attention", 0, "kv_heads"), 3, r'attention\[0\] \(id "attn/s32"\): kv_heads: 3: must divide heads \(4\)'),
    (("attention", 1, "causal"), "yes", r'attention\[1\] \(id "attn/s16/full"\): causal: "yes": must be true or '
                                        r"false"),
    (("elementwise", 1, "kind"), "gelu", r'elementwise\[1\] \(id "act"\): kind: "gelu": must be one of rmsnorm, '
                                         r"swiglu, permute, add"),
    (("elementwise", 0, "rows"), None, r'elementwise\[0\] \(id "norm"\): rows: null: must be a positive integer'),
    (("collectives", 0, "op"), "broadcast", r'collectives\[0\] \(id "ar"\): op: "broadcast": must be one of '
                                            r"all_reduce, all_gather, reduce_scatter, all_to_all, send_recv"),
    (("collectives", 0, "bytes"), -1, r'collectives\[0\] \(id "ar"\): bytes: -1: must be a positive integer'),
    (("collectives", 0, "group"), 2, r'collectives\[0\] \(id "ar"\): group: not a field of a collectives entry'),
    (("step", "layers"), 0, r"step: layers: 0: must be a positive integer"),
    (("step", "gated_mlp"), 1, r"step: gated_mlp: 1: must be true or false"),
    (("step", "heads"), 5, r"step: heads: 5: must divide hidden_size \(32\)"),
    (("step", "moe", "top_k"), 5, r"step: moe: top_k: 5: must be at most experts \(4\)"),
    (("step", "moe", "shared_experts"), -1, r"step: moe: shared_experts: -1: must be an integer >= 0"),
    (("step", "moe", "experts"), DELETE, r"step: moe: experts: missing: must be a positive integer"),
    (("step", "moe"), 4, r"step: moe: 4: must be an object \(a moe\)"),
    (("step",), DELETE, r"step: missing: must be given"),
    (("extra",), 1, r"extra: not a field of a profile plan"),
]


@pytest.mark.parametrize("path,value,message", BAD_PLANS, ids=["/".join(map(str, p)) + f"={v!r}"[:30]
                                                                for p, v, _ in BAD_PLANS])
def test_a_bad_plan_names_the_file_the_field_the_value_and_the_rule(tmp_path, path, value, message):
    plan_path = write(tmp_path, mutate(path, value))
    with pytest.raises(profile.PlanError) as error:
        profile.read_plan(plan_path)
    assert re.match(re.escape(plan_path) + ": " + message, str(error.value)), str(error.value)


@pytest.mark.parametrize("text,message", [
    ("{\"format\": ", r"not JSON: Expecting value at line 1 column 12"),
    ("[1]", r"\[1\]: a plan must be a JSON object"),
    ('{"format": NaN}', r"NaN: not a number JSON allows"),
    ('{"format": "paratune-profile-plan", "format": "x"}', r'field "format" is given twice'),
])
def test_a_plan_that_is_not_a_plan_is_refused(tmp_path, text, message):
    plan_path = write(tmp_path, text)
    with pytest.raises(profile.PlanError, match="^" + re.escape(plan_path) + ": " + message):
        profile.read_plan(plan_path)


def test_a_shape_too_large_for_any_allocation_is_skipped_and_the_others_measured(tmp_path):
    # rows x cols = 10^20 elements: PyTorch's "Storage size calculation overflowed" used to end the whole run.
    plan = tiny_plan(gemms=[], attention=[], collectives=[], step=None,
                     elementwise=[{"id": "huge", "kind": "add", "rows": 10**10, "cols": 10**10},
                                  {"id": "res", "kind": "add", "rows": 8, "cols": 8}])
    code, err, result = run_profile(tmp_path, plan)
    assert code == 0, err
    huge, small = result["elementwise"]
    assert "overflow" in huge["skipped"] and "median_s" not in huge, huge
    assert small["median_s"] > 0 and "skipped" not in small, small


def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path):
    cases = [
        (mutate(("gemms", 0, "m"), 0), [], {}, 'gemms[0] (id "qkv"): m: 0: must be a positive integer'),
        (mutate(("version",), 7), [], {}, "version: 7: must be 1"),
        (tiny_plan(), ["--out", str(tmp_path / "no-such-folder" / "p.json")], {}, "cannot write in"),
        (tiny_plan(), ["--nproc", "0"], {}, "--nproc: '0': must be a positive integer"),
        (tiny_plan(), [], {"WORLD_SIZE": "two"}, "environment WORLD_SIZE: 'two': must be an integer >= 1"),
        (tiny_plan(), ["--nproc", "2"], {"WORLD_SIZE": "2", "RANK": "0"}, "--nproc 2: not under torchrun"),
    ]
    for plan, flags, env, message in cases:
        plan_path = write(tmp_path, plan)
        args = [sys.executable, "-m", "paratune.profile", "--plan", plan_path, "--out", str(tmp_path / "p.json")]
        done = subprocess.run(args + flags, capture_output=True, text=True, timeout=60, env=dict(os.environ, **env))
        assert done.returncode == 2, done.stderr
        assert message in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert not os.path.exists(tmp_path / "p.json")
    missing = subprocess.run([sys.executable, "-m", "paratune.profile", "--plan", str(tmp_path / "none.json"),
                              "--out", str(tmp_path / "p.json")], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "none.json: cannot read the plan: No such file" in missing.stderr


def test_without_pytorch_one_line_says_to_install_it(tmp_path):
    plan_path = write(tmp_path, tiny_plan())
    code = ("import runpy, sys; sys.modules['torch'] = None; "  # import torch fails as where it is not installed
            f"sys.argv = ['profile', '--plan', {plan_path!r}, '--out', {str(tmp_path / 'p.json')!r}]; "
            "runpy.run_module('paratune.profile', run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "paratune.profile: PyTorch is not installed: install it (Debian: apt-get install python3-torch; "
        "elsewhere: pip install torch)"]


def test_the_measurer_runs_where_paratune_is_not_built(tmp_path):
    """A GPU node with PyTorch and a checkout, no build: the package's sources alone (no compiled module) on the
    path. The measurer runs; any other import of paratune still fails, naming the missing module."""
    sources = os.path.join(os.path.dirname(__file__), "..", "..", "python")
    assert not any(name.startswith("_core") for name in os.listdir(os.path.join(sources, "paratune")))
    env = dict(os.environ, PYTHONPATH=sources)
    plan_path, out = write(tmp_path, tiny_plan()), tmp_path / "p.json"
    done = subprocess.run([sys.executable, "-m", "paratune.profile", "--plan", plan_path, "--out", str(out)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["format"] == "paratune-hardware-profile"
    other = subprocess.run([sys.executable, "-c", "import paratune"], capture_output=True, text=True, timeout=60,
                           env=env)
    assert other.returncode == 1 and "No module named 'paratune._core'" in other.stderr


def test_the_hand_written_llama3_8b_cpu_plan_is_valid():
    plan = profile.read_plan(os.path.join(DATA, "profile-plan-llama3-8b-cpu.json"))
    assert plan["model"] == "llama3-8b" and plan["step"]["layers"] == 2


def test_estimate_and_plan_price_with_a_profile(cli, tmp_path):
    """`profile=` on estimate and plan (as `--profile` on the CLI): a profile whose GEMMs all took one second
    makes the step far slower and says so in `predicted_by`; another model's profile is refused by name."""
    import paratune

    setup = ["--model", "llama3-8b", "--cluster", "dgx-h100:1", "--seq-len", "4096", "--global-batch", "8"]
    code, out, err = cli("profile", *setup, "--config", "dp=8,mbs=1", "--plan-only", "--out",
                         str(tmp_path / "h100.json"))
    assert code == 0, err
    plan = json.loads((tmp_path / "h100.plan.json").read_text())
    measured = {
        "format": "paratune-hardware-profile", "version": 1,
        "plan": {key: plan[key] for key in ("model", "model_fingerprint", "gpu", "precision")},
        "device": {"backend": "cuda", "name": "made up for the test", "world_size": 8, "nodes": 1},
        "gemms": [dict(g, median_s=1.0, p10_s=1.0, p90_s=1.0, repetitions=1) for g in plan["gemms"]],
    }
    path = tmp_path / "h100.json"
    path.write_text(json.dumps(measured))
    fitted = paratune.estimate("llama3-8b", "dgx-h100:1", "dp=8,mbs=1", 4096, 8)
    slow = paratune.estimate("llama3-8b", "dgx-h100:1", "dp=8,mbs=1", 4096, 8, profile=str(path))
    assert slow.iteration_time_s > 10 * fitted.iteration_time_s
    assert slow.to_dict()["predicted_by"]["profile"]["file"] == str(path)
    assert "profile" not in fitted.to_dict()["predicted_by"]
    with pytest.raises(paratune.Error, match="profile: .*measured for model 'llama3-8b'"):
        paratune.estimate("llama2-7b", "dgx-h100:1", "dp=8,mbs=1", 4096, 8, profile=str(path))
    with pytest.raises(paratune.Error, match="profile"):
        paratune.plan("llama3-8b", "dgx-h100:1", 4096, 8, profile=str(tmp_path / "missing.json"))
