"""load_model, load_cluster, estimate, plan, simulate, launch_args: the library the CLI uses, from Python."""

import json
import os
import threading
import time

import pytest

import paratune


def test_models_load_from_a_preset_a_file_a_hf_config_and_a_dict(tmp_path, examples):
    preset = paratune.load_model("llama3-8b")
    assert preset.name == "llama3-8b"
    from_file = paratune.load_model(os.path.join(examples, "tiny-moe.yaml"))
    assert from_file.to_dict()["num_layers"] > 0
    hf = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 8,
          "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000,
          "max_position_embeddings": 4096}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(hf))
    from_hf = paratune.load_model(path)  # an os.PathLike
    assert from_hf.to_dict()["num_layers"] == 8
    from_dict = paratune.load_model(hf)
    assert from_dict.to_dict()["hidden_size"] == 1024
    # Our own format as a dict round-trips.
    assert paratune.load_model(preset.to_dict()).to_dict() == preset.to_dict()
    summary = preset.summary(8192)
    assert 7.5e9 < summary["total_params"] < 8.5e9


def test_clusters_load_from_shorthands_and_dicts():
    cluster = paratune.load_cluster("dgx-h100:2")
    assert cluster.num_gpus == 16 and cluster.gpus_per_node == 8 and cluster.nodes == 2
    assert paratune.load_cluster("h100x64").num_gpus == 64
    assert paratune.load_cluster(cluster.to_dict()).to_dict() == cluster.to_dict()
    assert "llama3-70b" in paratune.presets()["models"]


def test_estimate_agrees_with_the_cli(cli):
    e = paratune.estimate("llama3-8b", "dgx-h100:2", "dp=4,tp=2,pp=2,mbs=1", 8192, 256)
    code, out, err = cli("estimate", "--model", "llama3-8b", "--cluster", "dgx-h100:2", "--config", "dp=4,tp=2,pp=2,mbs=1",
                         "--seq-len", "8192", "--global-batch", "256", "--json")
    assert code == 0, err
    from_cli = json.loads(out)
    d = e.to_dict()
    assert d["iteration_time_s"] == from_cli["iteration_time_s"]
    assert d["peak_memory_bytes"] == from_cli["peak_memory_bytes"]
    assert d["predicted_by"]["kind"] == "model prediction"
    assert e.config.startswith("dp=4,tp=2,pp=2")
    assert 0 < e.mfu < 1 and e.fits and e.tokens_per_s > 0
    # A dict configuration is the same configuration.
    same = paratune.estimate("llama3-8b", "dgx-h100:2", {"dp": 4, "tp": 2, "pp": 2, "mbs": 1}, 8192, 256)
    assert same.iteration_time_s == e.iteration_time_s
    # Model and Cluster objects are taken as they are.
    model, cluster = paratune.load_model("llama3-8b"), paratune.load_cluster("dgx-h100:2")
    assert paratune.estimate(model, cluster, "dp=4,tp=2,pp=2,mbs=1", 8192, 256).iteration_time_s == e.iteration_time_s
    # Training options change the prediction as the CLI's flags do.
    fp8 = paratune.estimate("llama3-8b", "dgx-h100:2", "dp=4,tp=2,pp=2,mbs=1", 8192, 256, precision="fp8")
    assert fp8.iteration_time_s < e.iteration_time_s


def test_plan_returns_ranked_plans_like_the_cli(cli):
    result = paratune.plan("llama3-8b", "dgx-h100:2", 8192, 256, top=3, threads=2, fix={"pp": 1})
    assert 1 <= len(result) <= 3
    times = [p.iteration_time_s for p in result.plans]
    assert times == sorted(times)
    assert all("pp=1" in p.config for p in result.plans)
    code, out, err = cli("plan", "--model", "llama3-8b", "--cluster", "dgx-h100:2", "--seq-len", "8192",
                         "--global-batch", "256", "--top", "3", "--fix", "pp=1", "--json")
    assert code == 0, err
    from_cli = json.loads(out)
    assert [p["iteration_time_s"] for p in from_cli["plans"]] == times
    assert result.to_dict()["plans"][0]["config"] == from_cli["plans"][0]["config"]
    assert result.best.to_dict()["iteration_time_s"] == times[0]
    assert result[0].estimate.fits
    page = result.to_html()
    assert page.startswith("<!DOCTYPE html>") and "paratune plan: llama3-8b on dgx-h100:2" in page


def test_simulate_gives_the_timeline_events(cli):
    sim = paratune.simulate("llama3-8b", "dgx-h100:2", "dp=2,tp=2,pp=4,mbs=1", 8192, 64, schedule="1f1b")
    events = sim.events
    kinds = {e["kind"] for e in events}
    assert {"F", "B", "optimizer"} <= kinds
    assert {e["stage"] for e in events} == {0, 1, 2, 3}
    assert all(e["end_s"] >= e["start_s"] >= 0 for e in events)
    assert max(e["end_s"] for e in events) <= sim.iteration_time_s + 1e-9
    d = sim.to_dict()
    assert d["schedule"] == "1f1b" and len(d["stages"]) == 4
    assert sim.fits and d["fits"] is True
    # GPipe holds every micro-batch's activations: 224 GiB a stage, on 80 GB GPUs.
    gpipe = paratune.simulate("llama3-8b", "dgx-h100:2", "dp=4,tp=2,pp=2,mbs=1", 8192, 64, schedule="gpipe")
    assert not gpipe.fits and gpipe.to_dict()["fits"] is False
    assert gpipe.fits == paratune.estimate("llama3-8b", "dgx-h100:2", "dp=4,tp=2,pp=2,mbs=1,schedule=gpipe", 8192,
                                           64).fits
    code, out, err = cli("simulate", "--model", "llama3-8b", "--cluster", "dgx-h100:2", "--config", "dp=2,tp=2,pp=4,mbs=1",
                         "--seq-len", "8192", "--global-batch", "64", "--schedule", "1f1b", "--json")
    assert code == 0, err
    assert d == json.loads(out)  # to_dict() is `simulate --json`, field for field
    page = sim.to_html()
    assert page.startswith("<!DOCTYPE html>") and "paratune simulate: llama3-8b on dgx-h100:2" in page
    assert sim.chrome_trace()["traceEvents"]
    # The replay is the estimate's pipeline: the same iteration time.
    e = paratune.estimate("llama3-8b", "dgx-h100:2", "dp=2,tp=2,pp=4,mbs=1", 8192, 64)
    assert sim.iteration_time_s == pytest.approx(e.iteration_time_s, rel=1e-12)


def test_launch_args_for_the_best_plan():
    result = paratune.plan("llama3-8b", "dgx-h100:2", 8192, 256, top=1, framework="megatron")
    launch = paratune.launch_args(result, "megatron")
    assert "--tensor-model-parallel-size" in str(launch)
    assert launch.framework.startswith("megatron@")
    titan = paratune.launch_args(result.best, "torchtitan")
    assert "[parallelism]" in titan.text
    with pytest.raises(paratune.Error, match="framework"):
        paratune.launch_args(result, "jax")


def test_plan_ranks_what_a_framework_runs_by_default():
    # "any" (the default, or None): every plan runs on a framework; "none": the whole space.
    for framework in ("any", None):
        result = paratune.plan("mixtral-8x7b", "dgx-h100:4", 4096, 256, top=3, framework=framework)
        assert len(result.to_dict()["searched_within"]) == 2  # torchtitan has no Mixtral flavor (T10)
        assert "torchtitan" in result.to_dict()["not_searched"]
        for p in result.to_dict()["plans"]:
            assert p["frameworks"], p["config"]["text"]
    whole = paratune.plan("mixtral-8x7b", "dgx-h100:4", 4096, 256, top=3, framework="none")
    assert whole.to_dict()["searched_within"] == []
    with pytest.raises(paratune.Error, match="framework"):
        paratune.plan("mixtral-8x7b", "dgx-h100:4", 4096, 256, framework="jax")


def test_launch_args_refuses_a_plan_the_framework_cannot_run_as_planned():
    # Hybrid sharding over 8 of dp=16 (op=8): torchtitan's HSDP runs it, Megatron-LM cannot.
    e = paratune.estimate("llama3-8b", "dgx-h100:2", "dp=16,mbs=1,zero=2,op=8", 8192, 256)
    with pytest.raises(paratune.Error, match=r"launch_args: megatron@\S+ cannot run dp=16.* as planned: zero=2 with "
                                             r"op=8 < dp=16.*plan\(\.\.\., framework='megatron'\)"):
        paratune.launch_args(e, "megatron")
    nearest = paratune.launch_args(e, "megatron", allow_unsupported=True)
    assert any("op=8" in line for line in nearest.cannot_express), nearest.cannot_express
    assert "[parallelism]" in paratune.launch_args(e, "torchtitan").text


def test_bad_input_raises_errors_with_the_clis_messages(cli, tmp_path):
    with pytest.raises(paratune.Error) as caught:
        paratune.estimate("llama3-8b", "dgx-h100:1", "dp=2,tp=3", 4096, 64)
    code, _, err = cli("estimate", "--model", "llama3-8b", "--cluster", "dgx-h100:1", "--config", "dp=2,tp=3",
                       "--seq-len", "4096", "--global-batch", "64")
    assert code == 2
    # The CLI names its flag (--config), the module its argument (config); the rest is the same.
    assert str(caught.value) in err.replace("--config", "config")
    with pytest.raises(paratune.Error, match="unknown model preset 'llama9'"):
        paratune.load_model("llama9")
    bad = tmp_path / "model.json"
    bad.write_text('{"model_type": "llama", "num_hidden_layers": 4294967312}')
    with pytest.raises(paratune.Error, match=str(bad)):
        paratune.load_model(bad)
    with pytest.raises(paratune.Error, match="memory_margin"):
        paratune.estimate("llama3-8b", "dgx-h100:1", "dp=8,tp=1", 4096, 64, memory_margin=-1)
    with pytest.raises(paratune.Error, match="seq_len"):
        paratune.estimate("llama3-8b", "dgx-h100:1", "tp=1", 0, 64)
    with pytest.raises(paratune.Error, match=r"unknown keyword argument 'precison' \(did you mean 'precision'\?\)"):
        paratune.estimate("llama3-8b", "dgx-h100:1", "dp=8,tp=1", 4096, 64, precison="fp8")
    with pytest.raises(paratune.Error, match="precision"):
        paratune.plan("llama3-8b", "dgx-h100:1", 4096, 64, precision="fp4")
    with pytest.raises(paratune.Error, match="top"):
        paratune.plan("llama3-8b", "dgx-h100:1", 4096, 64, top=0)
    assert issubclass(paratune.Error, ValueError)


def test_plan_releases_the_gil():
    """A Python thread keeps running while plan() searches."""
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    thread = threading.Thread(target=ticker)
    thread.start()
    calls = []  # (start, end) of each plan() call
    try:
        time.sleep(0.05)
        # As many searches as make 0.2 s inside plan() (one takes 0.05-0.2 s, by machine): with the GIL
        # held, the ticker could not run inside any of them.
        while sum(end - start for start, end in calls) < 0.2:
            start = time.monotonic()
            paratune.plan("llama3-70b", "dgx-h100:16", 8192, 1024, top=5, threads=1)
            calls.append((start, time.monotonic()))
    finally:
        stop.set()
        thread.join()
    inside = sum(end - start for start, end in calls)
    during = [t for t in ticks if any(start < t < end for start, end in calls)]
    assert len(during) >= 10, f"{len(during)} ticks in {inside:.3f} s inside {len(calls)} plan() calls"


def test_results_have_the_attributes_users_reach_for_and_say_what_they_are():
    # Issue 39 item 10: plan(...).best.mfu raised (it was best.estimate.mfu only), and no result had a repr
    # worth printing.
    result = paratune.plan("llama3-8b", "dgx-h100:2", 8192, 256, top=2, fix={"pp": 1})
    best = result.best
    for name in ("iteration_time_s", "tokens_per_s", "mfu", "tflops_per_gpu", "bubble_fraction", "peak_memory_bytes",
                 "memory_limit_bytes", "fits", "reason"):
        assert getattr(best, name) == getattr(best.estimate, name), name
    assert 0 < best.mfu < 1 and best.tokens_per_s > 0 and 0 < best.peak_memory_bytes <= best.memory_limit_bytes
    gib = best.peak_memory_bytes / 2**30
    assert repr(best) == (f"<paratune.Plan {best.config}: {best.iteration_time_s:.4g} s/iteration, "
                          f"{best.tokens_per_s:.0f} tokens/s, MFU {100 * best.mfu:.1f}%, peak {gib:.1f} GiB of "
                          f"{best.memory_limit_bytes / 2**30:.1f} GiB>")
    assert repr(result).startswith(f"<paratune.PlanResult: {len(result)} plans, best {best.config}: ")
    assert repr(best.estimate).startswith(f"<paratune.Estimate {best.config}: ")
    nothing = paratune.plan("llama3-70b", "h100x1", 8192, 256, top=1)
    assert len(nothing) == 0 and nothing.best is None
    assert repr(nothing).startswith("<paratune.PlanResult: nothing fits (closest: ") and "see .advice" in repr(nothing)

    sim = paratune.simulate("llama3-8b", "dgx-h100:2", "dp=2,tp=2,pp=4,mbs=1", 8192, 64, schedule="1f1b")
    stages = sim.to_dict()["stages"]
    assert sim.peak_memory_bytes == max(s["peak_memory_bytes"] for s in stages)
    assert sim.tokens_per_s == pytest.approx(8192 * 64 / sim.iteration_time_s)
    assert repr(sim).startswith(f"<paratune.Simulation {sim.config}: {sim.iteration_time_s:.4g} s/iteration, bubble ")

    launch = paratune.launch_args(best, "megatron", allow_unsupported=True)
    assert repr(launch).startswith(f"<paratune.Launch {launch.framework}: ")
